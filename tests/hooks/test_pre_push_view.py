"""The pre-push hook in remote mode judges by a fresh view of the lock remote, or says how
old its view is: never a warning about a claim released from another clone."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

from conftest import git
from support.cli import alock, run_git
from support.remote import make_bare, make_clone
from support.servers import Host, host

ALICE = {"AGENT_ID": "alice"}
BOB = {"AGENT_ID": "bob"}

__all__ = ["host"]  # the fixture, imported so pytest finds it


def commit_inside(clone: Path) -> None:
    (clone / "src").mkdir(exist_ok=True)
    (clone / "src" / "app.py").write_text("bob's change\n")
    git(clone, "add", "-A")
    assert run_git(clone, "commit", "-q", "--no-verify", "-m", "bob", env=BOB).code == 0


def test_pre_push_fetches_the_lock_table_first(host: Host, tmp_path: Path) -> None:
    """Over each transport: the hook's fetch runs inside git's own push to the same host."""
    url = host.remote().url
    a = make_clone(url, tmp_path / "a")
    b = make_clone(url, tmp_path / "b")
    assert alock(a, "install-hooks", "--pre-push").code == 0
    assert alock(b, "acquire", "src/**", "-m", "auth", **ALICE).code == 0
    assert alock(a, "sync").code == 0  # a's view: alice holds src/**
    assert alock(b, "release", "src/**", **ALICE).code == 0  # released from the other clone
    commit_inside(a)
    pushed = run_git(a, "push", "-q", "origin", "HEAD:main", env=BOB)
    assert pushed.code == 0, pushed.err
    assert "HELD" not in pushed.err and "alice" not in pushed.err, pushed.err
    assert "could not reach" not in pushed.err
    assert git(a, "for-each-ref", "refs/agent-locks/") == ""  # the view was refreshed


def test_pre_push_still_warns_about_a_live_claim(tmp_path: Path) -> None:
    bare = make_bare(tmp_path / "shared.git")
    a = make_clone(bare.as_uri(), tmp_path / "a")
    b = make_clone(bare.as_uri(), tmp_path / "b")
    assert alock(a, "install-hooks", "--pre-push").code == 0
    commit_inside(a)
    assert alock(b, "acquire", "src/**", "-m", "auth", **ALICE).code == 0  # a never synced
    pushed = run_git(a, "push", "-q", "origin", "HEAD:main", env=BOB)
    assert pushed.code == 0 and "alock: HELD src/app.py" in pushed.err, pushed.err
    assert "by alice" in pushed.err


def test_pre_push_says_how_old_its_view_is_when_the_lock_remote_is_unreachable(
    tmp_path: Path,
) -> None:
    bare = make_bare(tmp_path / "shared.git")
    a = make_clone(bare.as_uri(), tmp_path / "a", remote_mode=False)
    b = make_clone(bare.as_uri(), tmp_path / "b")
    git(a, "remote", "add", "locks", bare.as_uri())
    assert alock(a, "remote", "locks").code == 0
    assert alock(a, "install-hooks", "--pre-push").code == 0
    assert alock(b, "acquire", "src/**", "-m", "auth", **ALICE).code == 0
    assert alock(a, "sync").code == 0
    git(a, "config", "remote.locks.url", (tmp_path / "gone.git").as_uri())
    commit_inside(a)
    pushed = run_git(a, "push", "-q", "origin", "HEAD:main", env=BOB)
    assert pushed.code == 0, pushed.err
    assert "alock: lock view from " in pushed.err and "s ago; could not reach locks" in pushed.err
    assert "alock: HELD src/app.py" in pushed.err  # judged by the view it has, and says so


def test_pre_push_in_local_mode_fetches_nothing(tmp_path: Path) -> None:
    bare = make_bare(tmp_path / "shared.git")
    a = make_clone(bare.as_uri(), tmp_path / "a", remote_mode=False)
    assert alock(a, "install-hooks", "--pre-push").code == 0
    commit_inside(a)
    pushed = run_git(a, "push", "-q", "origin", "HEAD:main", env=BOB)
    assert pushed.code == 0 and pushed.err == "", pushed.err
    assert "refs/agent-locks" not in git(a, "for-each-ref")


def test_pre_push_waits_on_a_silent_lock_remote_only_briefly(tmp_path: Path) -> None:
    """A lock remote that takes the connection and never answers: the push goes on after
    the hook's bound (a few seconds, not alock.remoteTimeout's 30), and the hook says so."""
    bare = make_bare(tmp_path / "shared.git")
    a = make_clone(bare.as_uri(), tmp_path / "a", remote_mode=False)
    git(a, "remote", "add", "locks", bare.as_uri())
    assert alock(a, "remote", "locks").code == 0
    assert alock(a, "install-hooks", "--pre-push").code == 0
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        git(a, "config", "remote.locks.url", f"git://127.0.0.1:{port}/shared.git")
        commit_inside(a)
        proc = subprocess.run(
            ["git", "push", "-q", "origin", "HEAD:main"],
            cwd=a,
            env={**os.environ, **BOB},
            capture_output=True,
            text=True,
            timeout=25,  # far more than the hook's bound, far less than alock.remoteTimeout
        )
    assert proc.returncode == 0, proc.stderr
    assert "; could not reach locks" in proc.stderr, proc.stderr
