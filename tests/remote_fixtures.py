"""Real lock remotes for the remote-mode tests: bare repositories and a loopback git daemon."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pygit2
import pytest
from conftest import git
from helpers import Result, alock

from gitlocks.core.record import LockRecord


def make_bare(path: Path, **config: str) -> Path:
    """A bare repository with one commit on main, and extra ``git config`` settings."""
    git(path.parent, "init", "-q", "--bare", path.name)
    seed = path.parent / f"{path.name}-seed"
    git(path.parent, "init", "-q", seed.name)
    (seed / "README.md").write_text("shared\n")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "initial")
    git(seed, "push", "-q", path.as_uri(), "HEAD:refs/heads/main")
    for key, value in config.items():
        git(path, "config", key, value)
    return path


def make_clone(
    url: str, path: Path, *, remote_mode: bool = True, config: dict[str, str] | None = None
) -> Path:
    """A clone of ``url``, with ``git config`` settings, switched to remote mode unless told."""
    git(path.parent, "clone", "-q", url, path.name)
    for key, value in (config or {}).items():
        git(path, "config", key, value)
    if remote_mode:
        got = alock(path, "remote", "origin")
        assert got.code == 0, got.err
    return path


def remote_locks(bare: Path) -> dict[str, LockRecord]:
    """The lock records the remote holds, by id."""
    repo = pygit2.Repository(str(bare))
    found = {}
    for name in repo.references:
        if name.startswith("refs/agent-locks/"):
            blob: Any = repo[repo.references[name].target]
            record = LockRecord.from_json(blob.data)
            found[record.id] = record
    return found


def remote_events(bare: Path) -> list[dict[str, object]]:
    """Every journal event on the remote, oldest first."""
    repo = pygit2.Repository(str(bare))
    ref = repo.references.get("refs/agent-locks-meta/journal")
    if ref is None:
        return []
    events: list[dict[str, object]] = []
    walk = repo.walk(ref.target, pygit2.enums.SortMode.TOPOLOGICAL)
    for commit in walk:
        body = commit.message.partition("\n\n")[2]
        batch = []
        for line in body.splitlines():
            if line.startswith("{"):
                batch.append(json.loads(line))
        events[:0] = batch
    return events


def refs_of(path: Path) -> str:
    """Every ref of a repository with its value: a snapshot to compare."""
    return git(path, "for-each-ref", "--format=%(refname) %(objectname)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Daemon:
    """``git daemon`` serving a directory on 127.0.0.1, with pushes enabled.

    Racing tests open many connections at once, and on a loaded machine they last longer:
    the connection limit is far above what they need (git's default is 32), so a claimer
    never fails because the daemon turned it away.
    """

    MAX_CONNECTIONS = 512

    def __init__(self, base: Path) -> None:
        self.base = base
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "git",
                "daemon",
                "--enable=receive-pack",
                f"--base-path={self.base}",
                "--export-all",
                "--listen=127.0.0.1",
                f"--port={self.port}",
                "--reuseaddr",
                f"--max-connections={self.MAX_CONNECTIONS}",
                str(self.base),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"git daemon did not answer on port {self.port}")

    def stop(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=5)
        self.proc = None


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    base = tmp_path / "served"
    base.mkdir()
    served = Daemon(base)
    served.start()
    yield served
    served.stop()


def alock_cli(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """Start the installed ``git-alock`` as its own process (racing tests)."""
    full = dict(os.environ)
    full["PATH"] = os.path.dirname(sys.executable) + os.pathsep + full.get("PATH", "")
    full.update(env or {})
    return subprocess.Popen(
        ["git", "alock", *args],
        cwd=cwd,
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 60) -> Result:
    out, err = proc.communicate(timeout=timeout)
    return Result(proc.returncode, out, err)
