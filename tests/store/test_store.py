"""The store's own promises: dead writers never wedge it, live git commands are never
robbed of their ref locks, and a cached table notices refs moved outside gitlocks."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from support.records import edit_cache

from gitlocks.core.record import LockRecord, expiry_from, format_time, utcnow
from gitlocks.core.scope import ScopeEntry
from gitlocks.errors import StoreError
from gitlocks.identity import resolve_identity
from gitlocks.layout import JOURNAL_REF, MUTEX_NAME
from gitlocks.service.context import Context
from gitlocks.service.locks import acquire
from gitlocks.store import refs as store_module
from gitlocks.store.local import Store


def _ctx(repo: Path, holder: str) -> Context:
    return Context(store=Store.discover(repo), identity=resolve_identity(holder))


def _lockfile(repo: Path, ref: str) -> Path:
    path = repo / ".git" / f"{ref}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    return path


def test_a_dead_writers_lock_files_are_cleared_at_once(repo: Path) -> None:
    ctx = _ctx(repo, "a")
    assert acquire(ctx, [ScopeEntry("one")]).status == "acquired"
    # What a writer killed inside its ref transaction leaves behind.
    leftover = _lockfile(repo, JOURNAL_REF)
    (repo / ".git" / MUTEX_NAME).write_text(json.dumps({"pid": 1, "refs": [JOURNAL_REF]}))
    assert acquire(_ctx(repo, "b"), [ScopeEntry("two")]).status == "acquired"
    assert not leftover.exists() and (repo / ".git" / MUTEX_NAME).read_text() == ""


def test_a_half_written_marker_still_recovers(repo: Path) -> None:
    assert acquire(_ctx(repo, "a"), [ScopeEntry("one")]).status == "acquired"
    leftover = _lockfile(repo, JOURNAL_REF)
    (repo / ".git" / MUTEX_NAME).write_text('{"pid": 12')
    assert acquire(_ctx(repo, "b"), [ScopeEntry("two")]).status == "acquired"
    assert not leftover.exists()


def test_a_live_git_commands_lock_is_waited_for_not_deleted(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "LOCKFILE_WAIT_SECONDS", 0.3)
    assert acquire(_ctx(repo, "a"), [ScopeEntry("one")]).status == "acquired"
    foreign = _lockfile(repo, JOURNAL_REF)  # no marker: some other git command holds it
    with pytest.raises(StoreError, match=r"journal\.lock exists"):
        acquire(_ctx(repo, "b"), [ScopeEntry("two")])
    assert foreign.exists()
    foreign.unlink()
    assert acquire(_ctx(repo, "b"), [ScopeEntry("two")]).status == "acquired"


def test_a_git_transaction_in_progress_survives_a_claim(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "LOCKFILE_WAIT_SECONDS", 0.5)
    assert acquire(_ctx(repo, "a"), [ScopeEntry("one")]).status == "acquired"
    journal = git(repo, "rev-parse", JOURNAL_REF).strip()
    head = git(repo, "rev-parse", "HEAD").strip()
    update = subprocess.Popen(
        ["git", "update-ref", "--stdin"],
        cwd=repo,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert update.stdin is not None and update.stdout is not None
    update.stdin.write(f"start\nupdate {JOURNAL_REF} {head} {journal}\nprepare\n")
    update.stdin.flush()
    assert update.stdout.readline().strip() == "start: ok"
    assert update.stdout.readline().strip() == "prepare: ok"
    with pytest.raises(StoreError, match="another git command"):
        acquire(_ctx(repo, "b"), [ScopeEntry("two")])
    update.stdin.write("commit\n")
    update.stdin.close()
    assert update.wait(timeout=10) == 0
    assert git(repo, "rev-parse", JOURNAL_REF).strip() == head


def test_cached_table_sees_a_lock_ref_moved_outside_gitlocks(repo: Path) -> None:
    ctx = _ctx(repo, "a")
    assert acquire(ctx, [ScopeEntry("docs/**")]).status == "acquired"
    now = utcnow()
    stamp = format_time(now)
    record = LockRecord(
        id="ext1",
        holder="b",
        paths=("cache",),
        created_at=stamp,
        renewed_at=stamp,
        expires_at=expiry_from(now, 600),
    )
    blob = (
        subprocess.run(
            ["git", "hash-object", "-w", "--stdin"],
            cwd=repo,
            input=record.to_json(),
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    # A fetch of lock refs, say: the journal ref does not move.
    git(repo, "update-ref", "refs/agent-locks/ext1", blob)
    assert acquire(ctx, [ScopeEntry("cache/x")]).status == "refused"


def test_an_edited_verdict_never_sweeps_a_live_lock(repo: Path) -> None:
    """The verdicts kept by blob id are a cache: one that lies stops a command, never
    decides it, and is forgotten."""
    from gitlocks.layout import CACHE_FILE

    ctx = _ctx(repo, "a")
    assert acquire(ctx, [ScopeEntry("kept/**")]).status == "acquired"
    Store.discover(repo).read_table()  # the verdicts are written
    path = repo / ".git" / CACHE_FILE

    def expired(data: dict[str, Any]) -> dict[str, Any]:
        expiries = data["summaries"]["expires_at"]
        assert expiries
        expiries[:] = ["2000-01-01T00:00:00Z"] * len(expiries)  # "expired long ago"
        return data

    edit_cache(repo / ".git", expired)
    with pytest.raises(StoreError, match="does not match what was kept"):
        acquire(_ctx(repo, "b"), [ScopeEntry("other/**")])
    assert not path.exists()
    assert acquire(_ctx(repo, "b"), [ScopeEntry("kept/x")]).status == "refused"
