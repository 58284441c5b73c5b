"""A write keeps the verdicts of what it judged and of what it wrote, once, after it, so
the command after it (the hooks and the guard included) reads no record again; and the
cache stays small, since every command decodes its verdicts (docs/design.md, section 4.5)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path

import pytest
from conftest import git
from support.cli import alock
from support.remote import make_bare, make_clone

from gitlocks.core.judging import verdict_of
from gitlocks.core.scope import ScopeEntry
from gitlocks.core.summaries import Summary
from gitlocks.git import cache
from gitlocks.git import table as hooks_table
from gitlocks.git.objects import Objects
from gitlocks.identity import resolve_identity
from gitlocks.layout import CACHE_FILE, LOCK_PREFIX
from gitlocks.service.context import Context
from gitlocks.service.locks import acquire, release
from gitlocks.store.local import Store


def _ctx(repo: Path, holder: str) -> Context:
    return Context(store=Store.discover(repo), identity=resolve_identity(holder))


def _kept(repo: Path) -> dict[str, object]:
    """The kept verdicts as a new process reads them, by blob id."""
    cache._read.clear()
    oids, columns, reasons = cache.verdicts(str(repo / ".git")) or ([], [[]] * 6, {})
    ids, holders, parents, expiries, buckets, landing = columns
    rows = zip(
        ids,
        holders,
        parents,
        expiries,
        (tuple(b.split("\n")) for b in buckets),
        landing,
        strict=True,
    )
    return {**reasons, **dict(zip(oids, (Summary(*row) for row in rows), strict=True))}


def _lock_blobs(repo: Path) -> dict[str, str]:
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", LOCK_PREFIX)
    return dict(line.split() for line in out.splitlines())


def test_a_write_keeps_the_verdict_of_the_record_it_wrote(repo: Path) -> None:
    assert acquire(_ctx(repo, "a"), [ScopeEntry("src/**")]).status == "acquired"
    assert acquire(_ctx(repo, "b"), [ScopeEntry("docs/**")]).status == "acquired"
    verdicts = _kept(repo)
    for oid in _lock_blobs(repo).values():
        blob = git(repo, "cat-file", "blob", oid).encode()
        assert verdicts.get(oid) == verdict_of(blob)  # as any reader would judge it


def test_after_a_write_the_hooks_read_no_record(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard and the hooks never keep verdicts themselves: before, each of them read
    the record the last write made (one ``cat-file`` more) until a store command ran. Read
    neither from its loose object file nor through ``cat-file``."""
    assert acquire(_ctx(repo, "a"), [ScopeEntry("src/**")]).status == "acquired"
    assert acquire(_ctx(repo, "b"), [ScopeEntry("docs/**")]).status == "acquired"
    asked: list[list[str]] = []

    def read_many(
        self: Objects, oids: Iterable[str], *, limit: int | None = None
    ) -> dict[str, tuple[str, bytes]]:
        asked.append(list(oids))
        return {}

    monkeypatch.setattr(Objects, "read_many", read_many)
    cache._read.clear()
    table = hooks_table.read_lock_table(str(repo / ".git"), str(repo), False)
    assert sorted(table.refs) == sorted(r[len(LOCK_PREFIX) :] for r in _lock_blobs(repo))
    assert asked == []


def test_a_write_that_changes_nothing_keeps_what_it_judged(repo: Path) -> None:
    assert acquire(_ctx(repo, "a"), [ScopeEntry("src/**")]).status == "acquired"
    # A lock ref moved by another tool: its blob is judged by the next read.
    record = git(repo, "cat-file", "blob", next(iter(_lock_blobs(repo).values())))
    planted = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=repo, input=record.replace('"a"', '"c"'),
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    git(repo, "update-ref", LOCK_PREFIX + "planted", planted)
    assert acquire(_ctx(repo, "b"), [ScopeEntry("src/x")]).status == "refused"
    assert planted in _kept(repo)


def test_the_verdicts_file_stays_small(repo: Path) -> None:
    """Verdicts of blobs no table holds any more are kept only up to a margin: the file
    is decoded by every command and rewritten after every write."""
    assert acquire(_ctx(repo, "a"), [ScopeEntry("held/**")]).status == "acquired"
    ctx = _ctx(repo, "b")
    for i in range(cache.SPARE_VERDICTS + 20):  # a new record each, then none
        assert acquire(ctx, [ScopeEntry(f"n{i}/**")]).status == "acquired"
        release(ctx, None)
    current = set(_lock_blobs(repo).values())
    verdicts = _kept(repo)
    assert current <= verdicts.keys()
    assert len(verdicts) <= 2 * len(current) + cache.SPARE_VERDICTS
    assert (repo / ".git" / CACHE_FILE).stat().st_size < 64 * 1024


def test_a_write_that_fails_keeps_every_verdict(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write's table is gone when it fails: what was kept is still kept, with what it
    judged, never pruned as if no lock were current (a table of thousands read again)."""
    from gitlocks.errors import StoreError
    from gitlocks.layout import JOURNAL_REF
    from gitlocks.store import refs as store_refs

    ctx = _ctx(repo, "a")
    for i in range(cache.SPARE_VERDICTS + 10):
        assert acquire(ctx, [ScopeEntry(f"n{i}/**")]).status == "acquired"
    record = git(repo, "cat-file", "blob", next(iter(_lock_blobs(repo).values())))
    planted = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=repo, input=record.replace('"a"', '"c"'),
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    git(repo, "update-ref", LOCK_PREFIX + "planted", planted)  # judged by the next read
    monkeypatch.setattr(store_refs, "LOCKFILE_WAIT_SECONDS", 0.2)
    (repo / ".git" / f"{JOURNAL_REF}.lock").write_text("")  # some other git command's
    with pytest.raises(StoreError):
        acquire(_ctx(repo, "b"), [ScopeEntry("elsewhere/**")])
    verdicts = _kept(repo)
    assert set(_lock_blobs(repo).values()) <= verdicts.keys()


def test_a_remote_write_keeps_the_verdicts_of_what_it_read(tmp_path: Path) -> None:
    """Remote mode keeps what a write's read judged as it reads it: the remote store's
    write is no local one, and the records another clone pushed are read once, not by
    every command (the guard and the hooks included) after each claim made here."""
    bare = make_bare(tmp_path / "origin.git")
    mine = make_clone(bare.as_uri(), tmp_path / "mine", shards=1)
    theirs = make_clone(bare.as_uri(), tmp_path / "theirs")
    for i in range(3):
        assert alock(theirs, "acquire", f"theirs{i}/**", "--as", "them").code == 0
    assert alock(mine, "acquire", "mine/**", "--as", "me").code == 0
    pushed = set(_lock_blobs(theirs).values())
    assert len(pushed) == 3 and pushed <= _kept(mine).keys()
