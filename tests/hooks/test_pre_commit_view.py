"""The pre-commit hook in remote mode reads the local view, and asks the lock remote only
once that view says a staged path is held: a commit is never refused for a claim released
from another clone, and when the remote cannot be asked the hook says how old its view is."""

from __future__ import annotations

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
    theirs = make_clone(bare.as_uri(), tmp_path / "theirs")
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
