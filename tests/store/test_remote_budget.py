"""Remote mode's push budget: a renewal or a commit's heartbeat pushes only when a claim has
used half its lifetime or its holder has been quiet for half of alock.staleAfter; the
guard's claims carry the session's renewals; the guard waits on the remote only for
alock.guardRemoteTimeout and tells the agent what it let through.

Pushes are counted on the remote: its pre-receive hook writes a line per push received.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from support.cli import alock
from support.harness import StandIn
from support.remote import make_bare, make_clone, remote_events

A = {"AGENT_ID": "agent-a"}


def _count_pushes(bare: Path) -> Path:
    counter = bare.parent / "pushes"
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\necho push >> '{counter}'\ncat >/dev/null\n")
    hook.chmod(0o755)
    return counter


def _pushes(counter: Path) -> int:
    return len(counter.read_text().splitlines()) if counter.exists() else 0


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    return make_bare(tmp_path / "locks.git")


@pytest.fixture
def clone(bare: Path, tmp_path: Path) -> Path:
    return make_clone(bare.as_uri(), tmp_path / "a")


@pytest.fixture
def session(clone: Path, tmp_path: Path) -> Any:
    harness = StandIn(tmp_path / "harness", "claude", cwd=clone)
    yield harness
    harness.close()


def _edit(repo: Path, path: str) -> dict[str, Any]:
    return {
        "session_id": "s-1",
        "cwd": str(repo),
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": str(repo / path), "old_string": "a", "new_string": "b"},
    }


def _stop(repo: Path) -> dict[str, Any]:
    return {"session_id": "s-1", "cwd": str(repo), "hook_event_name": "Stop"}


def _kinds(bare: Path) -> list[str]:
    return [str(e["event"]) for e in remote_events(bare)]


def test_a_stop_pushes_only_when_a_claim_needs_it_and_then_renews_all_at_once(
    bare: Path, clone: Path, session: Any
) -> None:
    # Quiet, not lifetime, makes the renewal due here: a busy machine only makes it more
    # due, and no claim can expire under a slow test (the lifetime stays 30 minutes).
    git(clone, "config", "alock.staleAfter", "16s")
    counter = _count_pushes(bare)
    assert session.guard(_edit(clone, "src/a.py")).code == 0
    assert session.guard(_edit(clone, "src/b.py")).code == 0
    assert _pushes(counter) == 2
    assert session.guard(_stop(clone)).code == 0
    assert _pushes(counter) == 2  # both claims were made just now: no push
    time.sleep(8.6)  # past half of 16s of quiet
    assert session.guard(_stop(clone)).code == 0
    assert _pushes(counter) == 3  # one push renews both
    assert _kinds(bare)[-2:] == ["renewed", "renewed"]


def test_a_claim_carries_the_sessions_renewals(bare: Path, clone: Path, session: Any) -> None:
    git(clone, "config", "alock.staleAfter", "12s")
    counter = _count_pushes(bare)
    assert session.guard(_edit(clone, "src/a.py")).code == 0
    time.sleep(3.2)  # over a quarter of 12s of quiet, counted in whole seconds
    assert session.guard(_edit(clone, "src/b.py")).code == 0
    assert _pushes(counter) == 2
    assert _kinds(bare)[-2:] == ["granted", "renewed"]  # one journal commit, one push


def test_renew_keeps_a_fresh_claim_without_a_push(bare: Path, clone: Path) -> None:
    assert alock(clone, "acquire", "src/**", **A).code == 0
    counter = _count_pushes(bare)
    kept = alock(clone, "renew", **A)
    assert kept.code == 0 and kept.word.startswith("KEPT src/**"), kept.out
    assert alock(clone, "renew", "--json", **A).json()["status"] == "kept"
    assert _pushes(counter) == 0
    longer = alock(clone, "renew", "--ttl", "2h", **A)
    assert longer.code == 0 and longer.word.startswith("RENEWED src/**")
    assert _pushes(counter) == 1


def _commit(repo: Path, message: str) -> None:
    env = {**os.environ, **A}
    subprocess.run(["git", "commit", "-q", "-m", message], cwd=repo, env=env, check=True)


def test_a_commit_heartbeat_pushes_only_when_due(bare: Path, clone: Path) -> None:
    assert alock(clone, "install-hooks").code == 0
    git(clone, "config", "alock.staleAfter", "12s")  # the lifetime stays 30 minutes
    assert alock(clone, "acquire", "src/**", **A).code == 0
    counter = _count_pushes(bare)
    (clone / "src").mkdir()
    (clone / "src" / "x.py").write_text("x\n")
    git(clone, "add", "src")
    _commit(clone, "one")
    assert _pushes(counter) == 0  # fresh: nothing anyone could want from a push
    time.sleep(6.2)  # quiet past half of 12s
    (clone / "src" / "x.py").write_text("y\n")
    git(clone, "add", "src")
    _commit(clone, "two")
    assert _pushes(counter) == 1
    assert _kinds(bare)[-1] == "renewed"


def test_the_guard_waits_briefly_on_a_slow_remote_and_tells_the_agent(
    bare: Path, clone: Path, session: Any
) -> None:
    git(clone, "config", "alock.guardRemoteTimeout", "1s")
    hook = bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nsleep 20\n")
    hook.chmod(0o755)
    got = session.guard(_edit(clone, "src/a.py"))
    assert got.code == 0, got
    told = json.loads(got.out)["hookSpecificOutput"]["additionalContext"]
    assert "src/a.py is being edited WITHOUT a claim" in told
    assert "alock.guardRemoteTimeout" in told
    hook.unlink()
    assert alock(clone, "list", "--json").json() == []


def test_a_quiet_holder_renews_before_others_would_read_it_as_stale(
    bare: Path, clone: Path, session: Any
) -> None:
    git(clone, "config", "alock.staleAfter", "12s")  # the lifetime stays 30 minutes
    counter = _count_pushes(bare)
    assert session.guard(_edit(clone, "src/a.py")).code == 0
    assert session.guard(_stop(clone)).code == 0
    assert _pushes(counter) == 1
    time.sleep(6.2)  # past half of 12s of quiet
    assert session.guard(_stop(clone)).code == 0
    assert _pushes(counter) == 2 and _kinds(bare)[-1] == "renewed"


def test_a_heartbeats_push_carries_the_holders_other_claims(bare: Path, clone: Path) -> None:
    assert alock(clone, "install-hooks").code == 0
    git(clone, "config", "alock.staleAfter", "12s")  # the lifetime stays 30 minutes
    assert alock(clone, "acquire", "src/**", **A).code == 0
    assert alock(clone, "acquire", "docs/**", **A).code == 0
    counter = _count_pushes(bare)
    time.sleep(6.2)  # both quiet past half of 12s
    (clone / "src").mkdir()
    (clone / "src" / "x.py").write_text("x\n")
    git(clone, "add", "src")
    _commit(clone, "inside src/** only")
    assert _pushes(counter) == 1
    assert _kinds(bare)[-2:] == ["renewed", "renewed"]  # docs/** rode along
