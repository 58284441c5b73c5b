"""Helpers shared by the benchmark scripts (run them as ``python bench/NAME.py``)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path


def git(cwd: Path, *args: str) -> str:
    """Run git in ``cwd``; fail loudly; return its stdout without surrounding space."""
    proc = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return proc.stdout.strip()


def make_repo(base: Path, name: str) -> Path:
    """A new repository ``base/name`` with one commit."""
    path = base / name
    path.mkdir()
    git(path, "init", "-q")
    (path / "README.md").write_text("bench\n")
    git(path, "add", "README.md")
    git(path, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "init")
    return path


def seed_locks(repo: Path, count: int, holders: int = 7) -> None:
    """``count`` live locks on ``area<i>/**`` held by ``agent-<i % holders>``, expiring 2h
    ahead, written in one store transaction, then ``git pack-refs --all``.

    They name no session process (pid 0), so liveness never judges them dead: they live by
    their TTL, like claims made with an explicit id. 10,000 take a few seconds.
    """
    # The package's internal API (the layout of commit 23199a6), imported here only: the
    # module layout is still moving, and this function is the one place to update.
    import socket

    from gitlocks.core.change import Change
    from gitlocks.core.record import LockRecord, expiry_from, format_time, new_lock_id, utcnow
    from gitlocks.store.local import Store

    store = Store.discover(repo)
    branch, head = store.head_info()
    now = utcnow()
    stamp = format_time(now)
    ttl = 2 * 3600
    records = [
        LockRecord(
            id=f"{new_lock_id()}-{i:06d}",
            holder=f"agent-{i % holders}",
            paths=(f"area{i}/**",),
            reason=f"seeded lock {i}",
            created_at=stamp,
            renewed_at=stamp,
            expires_at=expiry_from(now, ttl),
            host=socket.gethostname(),
            worktree=str(repo),
            branch=branch,
            head=head,
            ttl=ttl,
        )
        for i in range(count)
    ]
    event = {"event": "seeded", "at": stamp, "holder": "bench", "paths": [], "count": count}
    store.transact(lambda table: (Change(put=records, events=[event]), None))
    git(repo, "pack-refs", "--all")


class GitDaemon:
    """``git daemon`` serving ``base`` on 127.0.0.1 (a free port), pushes enabled, started
    as the remote-mode tests start theirs (tests/remote_fixtures.py). A context manager:
    the daemon's process group is killed on exit."""

    MAX_CONNECTIONS = 512  # git's default is 32; racing claimers open many at once

    def __init__(self, base: Path) -> None:
        self.base = base
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        self.proc: subprocess.Popen[bytes] | None = None

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}"

    def __enter__(self) -> GitDaemon:
        self.proc = subprocess.Popen(
            ["git", "daemon", "--enable=receive-pack", f"--base-path={self.base}",
             "--export-all", "--listen=127.0.0.1", f"--port={self.port}", "--reuseaddr",
             f"--max-connections={self.MAX_CONNECTIONS}", str(self.base)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.05)
        self.__exit__()
        raise SystemExit(f"git daemon did not answer on port {self.port}")

    def __exit__(self, *exc: object) -> None:
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
