"""``git daemon`` serving a directory on 127.0.0.1 with pushes enabled: the remote-mode
tests' loopback remote, and bench/'s."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path


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

    def __enter__(self) -> Daemon:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
