"""``git daemon`` serving a directory on 127.0.0.1 with pushes enabled: the remote-mode
tests' loopback remote, and bench/'s."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO


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


class Misreporting:
    """A ``git://`` listener that runs the real ``git receive-pack`` on ``bare`` for each
    push and rewrites the lines of its report (``unpack ok``, ``ok <ref>``...) through
    ``report`` before passing its answer on: a remote that applies a push and misreports it."""

    def __init__(self, bare: Path, report: Callable[[list[bytes]], list[bytes]]) -> None:
        self.bare = bare
        self.report = report
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"git://127.0.0.1:{self.sock.getsockname()[1]}/{bare.name}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self.sock.accept()
                threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            size = int(conn.recv(4), 16)
            while size > 4:
                size -= len(conn.recv(size - 4))
            proc = subprocess.Popen(
                ["git", "receive-pack", str(self.bare)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            assert proc.stdin is not None and proc.stdout is not None
            out, stdin = proc.stdout, proc.stdin
            conn.sendall(b"".join(iter(lambda: _packet(out), b"0000")) + b"0000")

            def feed() -> None:
                with contextlib.suppress(OSError), stdin:
                    while chunk := conn.recv(65536):
                        stdin.write(chunk)
                        stdin.flush()

            threading.Thread(target=feed, daemon=True).start()
            answer, report = bytearray(), bytearray()
            while (line := _packet(out)) not in (b"", b"0000"):
                if line[4:5] == b"\1":
                    report += line[5:]
                else:
                    answer += line
            lines = [ln[4:] for ln in iter(lambda: _packet_of(report), b"0000")]
            rewritten = b"".join(_pkt(ln) for ln in self.report(lines)) + b"0000"
            conn.sendall(bytes(answer) + _pkt(b"\1" + rewritten) + b"0000")
            proc.wait()

    def close(self) -> None:
        self.sock.close()


def _pkt(data: bytes) -> bytes:
    return b"%04x" % (len(data) + 4) + data


def _packet(stream: IO[bytes]) -> bytes:
    """One whole pkt-line read from ``stream`` (b"" at its end)."""
    head = stream.read(4)
    size = int(head, 16) if head else 0
    return head + (stream.read(size - 4) if size > 4 else b"")


def _packet_of(buffer: bytearray) -> bytes:
    """One whole pkt-line taken from the front of ``buffer`` (a flush at its end)."""
    size = int(buffer[:4] or b"0000", 16)
    line = bytes(buffer[: max(size, 4)]) or b"0000"
    del buffer[: max(size, 4)]
    return line
