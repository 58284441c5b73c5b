"""The pre-commit hook in remote mode reads the local view, and asks the lock remote only
once that view says a staged path is held: a commit is never refused for a claim released
from another clone, and when the remote cannot be asked the hook says how old its view is."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest
from conftest import git
from support.cli import alock, run_git
from support.remote import make_bare, make_clone

ALICE = {"AGENT_ID": "alice"}
BOB = {"AGENT_ID": "bob"}


@pytest.fixture(params=[0, 8], ids=["single", "sharded"])
def clones(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, Path]:
    """(another clone, this clone in block mode, whose view has alice holding src/**)."""
    bare = make_bare(tmp_path / "locks.git")
    theirs = make_clone(bare.as_uri(), tmp_path / "theirs", shards=1)
    mine = make_clone(bare.as_uri(), tmp_path / "mine")
    if request.param:
        assert alock(theirs, "remote", "--shards", str(request.param)).code == 0
    assert alock(mine, "install-hooks").code == 0
    git(mine, "config", "alock.hookMode", "block")
    assert alock(theirs, "acquire", "src/**", "-m", "auth", **ALICE).code == 0
    assert alock(mine, "sync").code == 0
    (mine / "src").mkdir()
    (mine / "src" / "app.py").write_text("bob's change\n")
    git(mine, "add", "-A")
    return theirs, mine


def test_a_claim_released_from_another_clone_refuses_no_commit(
    clones: tuple[Path, Path],
) -> None:
    theirs, mine = clones
    assert alock(theirs, "release", "src/**", **ALICE).code == 0
    done = run_git(mine, "commit", "-q", "-m", "bob", env=BOB)
    assert done.code == 0 and "HELD" not in done.err, done.err


def test_a_live_claim_still_refuses_the_commit(clones: tuple[Path, Path]) -> None:
    _, mine = clones
    done = run_git(mine, "commit", "-q", "-m", "bob", env=BOB)
    assert done.code == 1 and "alock: HELD src/app.py by alice" in done.err, done.err
    assert "lock view" not in done.err


def test_an_unreachable_lock_remote_says_how_old_the_view_is(
    tmp_path: Path, clones: tuple[Path, Path]
) -> None:
    theirs, mine = clones
    assert alock(theirs, "release", "src/**", **ALICE).code == 0
    git(mine, "config", "remote.origin.url", (tmp_path / "gone.git").as_uri())
    done = run_git(mine, "commit", "-q", "-m", "bob", env=BOB)
    assert done.code == 1 and "alock: HELD src/app.py by alice" in done.err, done.err
    assert "alock: lock view from " in done.err and "could not reach origin" in done.err


def test_a_commit_outside_every_claim_never_asks_the_remote(
    tmp_path: Path, clones: tuple[Path, Path]
) -> None:
    _, mine = clones
    git(mine, "reset", "-q")
    (mine / "README.md").write_text("elsewhere\n")
    git(mine, "add", "README.md")
    git(mine, "config", "remote.origin.url", (tmp_path / "gone.git").as_uri())
    done = run_git(mine, "commit", "-q", "-m", "bob", env=BOB)
    assert done.code == 0 and done.err == "", done.err


def test_a_silent_lock_remote_holds_the_commit_only_briefly(clones: tuple[Path, Path]) -> None:
    """A lock remote that takes the connection and never answers: the hook judges by its
    view after its bound (a few seconds, not alock.remoteTimeout's 30), and says so."""
    _, mine = clones
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        git(mine, "config", "remote.origin.url", f"git://127.0.0.1:{port}/locks.git")
        proc = subprocess.run(
            ["git", "commit", "-q", "-m", "bob"],
            cwd=mine,
            env={**os.environ, **BOB},
            capture_output=True,
            text=True,
            timeout=25,  # far more than the hook's bound, far less than alock.remoteTimeout
        )
    assert proc.returncode == 1 and "could not reach origin" in proc.stderr, proc.stderr
