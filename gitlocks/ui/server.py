"""``git alock ui``: the live page, served from this machine to this machine only.

Safety, in the order a request meets it: the socket is bound to 127.0.0.1; every path
starts with a random token, compared in constant time, and a request without it or
naming another host (DNS rebinding) gets an empty 404; only GET and HEAD exist; every
answer carries a Content-Security-Policy allowing the page's own script and style alone.

One thread (the follower) owns the store: it follows the journal as ``watch`` does and
rebuilds the view when it moved (and every few seconds while a page is open, for edits
and liveness). Request threads hand out what it built; pages hear of changes over SSE.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import secrets
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any

from gitlocks.core.text import is_digits
from gitlocks.errors import GitlocksError, UsageError
from gitlocks.service import journal
from gitlocks.service.context import Context
from gitlocks.ui import view

HOST = "127.0.0.1"
POLL_SECONDS = 0.25  # journal ref reads: new events reach the page well within a second
REFRESH_SECONDS = 5.0  # edits and liveness, while a page is open
SYNC_SECONDS = 30.0  # remote mode: fetch the lock remote's state, while a page is open
KEEPALIVE_SECONDS = 15.0
# A request must arrive whole within this long, or its connection is closed: any local
# process may open many and say nothing, or trickle a byte at a time.
IDLE_SECONDS = 10.0
BACKLOG = 500  # change messages kept for a page that reconnects
STATIC = {
    "": ("index.html", "text/html; charset=utf-8"),
    "app.js": ("app.js", "text/javascript; charset=utf-8"),
    "app.css": ("app.css", "text/css; charset=utf-8"),
}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


class Board:
    """The current view and the changes since, shared by the follower and the requests."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.cond = threading.Condition()
        self.stopped = threading.Event()
        self.seq = 0  # the number of the newest change message
        self.backlog: deque[tuple[int, bytes]] = deque(maxlen=BACKLOG)
        self.events: deque[dict[str, Any]] = deque(view.recent_events(ctx), view.JOURNAL_EVENTS)
        self.pages = 0  # open event streams
        self.sync_error: str | None = None
        self.compared: dict[str, Any] = {}
        self.memo: view.Memo = {}
        self.build_seconds = 0.0
        self.state = b""
        self._rebuild([])

    def follow(self) -> None:
        """Follow the journal until stopped, publishing each change; a store that cannot be
        read for a while is said on the page, and followed again a second later."""
        while not self.stopped.is_set():
            try:
                self._follow()
            except (GitlocksError, OSError) as exc:
                self._publish({"error": str(exc)})
                self._pause(1.0)

    def _follow(self) -> None:
        remote = bool(self.ctx.store.config_get("alock.remote"))
        refreshed = synced = time.monotonic()
        for batch in journal.follow(self.ctx.store, interval=POLL_SECONDS, sleep=self._pause):
            if self.stopped.is_set():
                return
            now = time.monotonic()
            if remote and self.pages and now - synced >= SYNC_SECONDS:
                synced = now
                self._sync()  # what it brings shows at the next poll, as any new event
            # A large table takes longer to judge: refresh it less often, so that an open
            # page never keeps the machine busy (at most a twentieth of one core).
            every = max(REFRESH_SECONDS, 20 * self.build_seconds)
            if batch or (self.pages and now - refreshed >= every):
                refreshed = now
                self._rebuild([view.event_view(e) for e in batch])

    def _pause(self, seconds: float) -> None:
        self.stopped.wait(seconds)

    def _sync(self) -> None:
        try:
            self.ctx.store.sync()
            self.sync_error = None
        except GitlocksError as exc:
            self.sync_error = str(exc)

    def _rebuild(self, events: list[dict[str, Any]]) -> None:
        started = time.monotonic()
        snap = view.snapshot(self.ctx, self.memo)
        snap["sync_error"] = self.sync_error
        compared = {k: v for k, v in snap.items() if k != "now"}
        if events or compared != self.compared:  # else nothing the page shows has changed
            self.compared = compared
            self._publish({"events": events}, snap)
        self.build_seconds = time.monotonic() - started

    def _publish(self, message: dict[str, Any], snap: dict[str, Any] | None = None) -> None:
        """Tell every page: a new state document (``snap``), new events, or an error."""
        with self.cond:
            self.seq += 1
            if snap is not None:
                self.events.extend(message["events"])
                snap["seq"] = self.seq
                snap["events"] = list(self.events)
                self.state = json.dumps(snap, separators=(",", ":")).encode()
            self.backlog.append((self.seq, _sse(self.seq, {"seq": self.seq, **message})))
            self.cond.notify_all()

    def changes(self, since: int) -> Iterator[bytes]:
        """Change messages after ``since``, as they come; a keep-alive comment when idle."""
        while not self.stopped.is_set():
            with self.cond:
                if self.seq <= since:
                    self.cond.wait(KEEPALIVE_SECONDS)
                found = [m for seq, m in self.backlog if seq > since]
                if self.backlog and self.backlog[0][0] > since + 1:
                    # Missed more than the backlog keeps: a fresh state document is due.
                    found = [_sse(self.seq, {"seq": self.seq, "events": [], "reload": True})]
                since = self.seq
            yield b"".join(found) if found else b": idle\n\n"

    def stop(self) -> None:
        self.stopped.set()
        with self.cond:
            self.cond.notify_all()


def _sse(seq: int, message: dict[str, Any]) -> bytes:
    return f"id: {seq}\nevent: change\ndata: {json.dumps(message)}\n\n".encode()


class Server(ThreadingHTTPServer):
    daemon_threads = True  # an open event stream never keeps Ctrl-C from stopping it
    allow_reuse_address = True

    def __init__(self, port: int, board: Board, token: str) -> None:
        self.board = board
        self.token = token
        self.static = {
            name: ((resources.files("gitlocks.ui") / "static" / file).read_bytes(), kind)
            for name, (file, kind) in STATIC.items()
        }
        super().__init__((HOST, port), Handler)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}/{self.token}/"


class Handler(BaseHTTPRequestHandler):
    server: Server
    protocol_version = "HTTP/1.1"
    timeout = IDLE_SECONDS

    def version_string(self) -> str:
        return "gitlocks"

    def handle_one_request(self) -> None:
        self._deadline = threading.Timer(IDLE_SECONDS, self._give_up)
        self._deadline.daemon = True
        self._deadline.start()
        try:
            super().handle_one_request()
        finally:
            self._deadline.cancel()

    def parse_request(self) -> bool:
        parsed = super().parse_request()  # the request line and headers, read whole
        self._deadline.cancel()
        return parsed

    def _give_up(self) -> None:
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def do_GET(self) -> None:
        name = self._route()
        if name is None:
            self._empty(404)
        elif name == "" and not self.path.split("?", 1)[0].endswith("/"):
            # The page's files are named relative to the token's directory.
            self._empty(308, f"/{self.server.token}/")
        elif name in self.server.static:
            body, kind = self.server.static[name]
            self._send(body, kind)
        elif name == "state":
            self._send(self.server.board.state, "application/json")
        elif name == "events":
            self._stream()
        else:
            self._empty(404)

    def do_HEAD(self) -> None:
        self._empty(404 if self._route() is None else 200)

    def _route(self) -> str | None:
        """The page's own name for what is asked, or None: no token, or a foreign host."""
        path = self.path.split("?", 1)[0]
        _, token, name = (path + "/").split("/", 2) if path.startswith("/") else ("", "", "")
        good = hmac.compare_digest(token.encode(), self.server.token.encode())
        port = self.server.server_address[1]
        host = self.headers.get("Host", "")
        if not good or host not in (f"{HOST}:{port}", f"localhost:{port}"):
            return None
        return name.rstrip("/")

    def _stream(self) -> None:
        query = self.path.partition("?")[2]
        since = 0
        for part in query.split("&"):
            key, _, value = part.partition("=")
            if key == "since" and is_digits(value):
                since = int(value[:18])
        header = self.headers.get("Last-Event-ID", "")
        if is_digits(header):
            since = max(since, int(header[:18]))
        self.send_response(200)
        self._headers("text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        board = self.server.board
        with board.cond:
            board.pages += 1
        try:
            for chunk in board.changes(since):
                self.wfile.write(chunk)
                self.wfile.flush()
        except OSError:
            pass  # the page went away
        finally:
            with board.cond:
                board.pages -= 1
            self.close_connection = True

    def _send(self, body: bytes, kind: str) -> None:
        self.send_response(200)
        self._headers(kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _empty(self, code: int, location: str = "") -> None:
        self.send_response(code)
        if location:
            self.send_header("Location", location)
        self._headers(None)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Every error as an empty answer: nothing to read for whoever asked wrongly."""
        self.close_connection = True
        self._empty(code)

    def _headers(self, kind: str | None) -> None:
        if kind is not None:
            self.send_header("Content-Type", kind)
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")  # the token stays in this tab
        self.send_header("Cache-Control", "no-store")

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the page's requests are no news for the terminal


def start(ctx: Context, port: int = 0) -> tuple[Server, Board]:
    """Build the first view, bind 127.0.0.1:``port`` (0: any free port) and start the
    follower; the caller serves (``serve_forever``) and stops both."""
    board = Board(ctx)
    try:
        server = Server(port, board, secrets.token_urlsafe(24))
    except OSError as exc:
        raise UsageError(f"cannot listen on {HOST}:{port}: {exc.strerror or exc}") from None
    threading.Thread(target=board.follow, name="gitlocks-ui-follower", daemon=True).start()
    return server, board
