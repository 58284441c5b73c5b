"""Attacks on the live page's server and on the newcomer fixes (landing, typo notes,
messages): each test here failed before the fix it names."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from test_ui import serve

from gitlocks.core.scope import make_entry
from gitlocks.service import typos

__all__ = ["serve"]  # the fixture, imported so pytest finds it


def _raw(port: int, request: bytes, bound: float = 30) -> bytes:
    """Send ``request`` as it is, bytes no client library would send; the answer's start."""
    with socket.create_connection(("127.0.0.1", port), timeout=bound) as sock:
        sock.sendall(request)
        return sock.recv(4096)


# --- the live page's server ---------------------------------------------------------------------


def test_an_event_stream_asked_since_a_non_ascii_digit_is_no_traceback(
    repo: Path, serve: Any
) -> None:
    """``"²".isdigit()`` holds, yet ``int("²")`` raises: the request was dropped and a
    traceback printed in the terminal that serves the page."""
    ui = serve(repo)
    token = ui.url.split("/")[3]
    host = f"Host: 127.0.0.1:{ui.port}\r\n"
    for request in (
        f"GET /{token}/events?since=\xb2 HTTP/1.1\r\n{host}\r\n",
        f"GET /{token}/events HTTP/1.1\r\n{host}Last-Event-ID: \xb2\r\n\r\n",
    ):
        answer = _raw(ui.port, request.encode("latin-1"))
        assert answer.startswith(b"HTTP/1.1 200"), answer
    _, err = ui.stop()
    assert "Traceback" not in err and "ValueError" not in err, err


def test_a_connection_that_never_sends_a_request_is_closed(repo: Path, serve: Any) -> None:
    """Any local process, token or not, could open connections and say nothing: each held
    a thread for ever."""
    ui = serve(repo)
    with socket.create_connection(("127.0.0.1", ui.port), timeout=60) as sock:
        sock.sendall(b"GET /")  # and never the rest
        assert sock.recv(4096) == b""  # closed by the server, well within the bound
    ui.stop()


# --- typo notes ---------------------------------------------------------------------------------


class Counted(list[str]):
    """The index's paths, counting how often they are read through."""

    reads = 0

    def __iter__(self) -> Iterator[str]:
        self.reads += 1
        return super().__iter__()


def test_a_claim_of_many_new_files_reads_the_index_once(tmp_path: Path) -> None:
    """An agent claiming a thousand files it is about to write paid a walk of the whole
    index per file and a difflib search each: seconds in a repository of 20,000 files."""
    files = Counted(f"pkg{d}/mod{f}.py" for d in range(20) for f in range(100))
    (tmp_path / "pkg0").mkdir()
    claim = [make_entry(f"pkg{d}/new{f}.py") for d in range(20) for f in range(50)]
    found = typos.uncovered(str(tmp_path), claim, list_files=lambda: files)
    assert [u.pattern for u in found] == [e.pattern for e in claim]
    assert found[18].closest == "pkg0/mod18.py"
    assert sum(u.closest is not None for u in found) <= typos.MAX_SUGGESTED
    assert files.reads <= 3, files.reads
