"""The follow-up push that puts the remote's lock refs right (docs/design.md, section 5.2):
a ref it cannot put right (5.5) is never reported as repaired and never costs a second push
on every write, and ``log`` tells a repair as what it is."""

from __future__ import annotations

from pathlib import Path

from conftest import git
from support.cli import alock
from support.remote import make_bare, make_clone, remote_events, remote_locks

A = {"AGENT_ID": "agent-a"}


def count_pushes(bare: Path) -> Path:
    counter = bare.parent / "pushes"
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\necho push >> '{counter}'\ncat >/dev/null\n")
    hook.chmod(0o755)
    return counter


def pushes(counter: Path) -> int:
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def test_a_lock_ref_at_a_commit_is_never_repaired_nor_pushed_for_on_every_write(
    tmp_path: Path,
) -> None:
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a")
    assert alock(a, "acquire", "src/**", **A).code == 0
    main = git(bare, "rev-parse", "refs/heads/main").strip()
    git(bare, "update-ref", "refs/agent-locks/mallory-1", main)  # a commit every clone has
    counter = count_pushes(bare)
    for n, path in enumerate(["docs/**", "lib/**", "web/**"]):
        got = alock(a, "acquire", path, **A)
        assert got.code == 0, (got.out, got.err)
        assert pushes(counter) == n + 1, "one push per claim"
    assert git(bare, "rev-parse", "refs/agent-locks/mallory-1").strip() == main
    assert not [e for e in remote_events(bare) if e["event"] == "repaired"]


def test_log_tells_a_repair_as_no_holder_s_act(tmp_path: Path) -> None:
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a")
    assert alock(a, "acquire", "src/**", **A).code == 0
    blob = git(bare, "rev-parse", "refs/agent-locks/" + next(iter(remote_locks(bare)))).strip()
    git(bare, "update-ref", "refs/agent-locks/mallory-1", blob)  # a copy, pushed by hand
    assert alock(a, "acquire", "docs/**", **A).code == 0
    assert remote_events(bare)[-1]["event"] == "repaired"
    line = alock(a, "log").out.splitlines()[0]
    assert "repaired" in line and line.endswith("[lock mallory-1]")
    assert "None" not in line and "put back as the table holds it" in line
