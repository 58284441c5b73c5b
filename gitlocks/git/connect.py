"""Connections to a remote's ``receive-pack``, as git opens them for a push: which remotes
gitlocks pushes to itself (``target``: a ``git://`` daemon, or a repository on this
machine, and only where ``git push`` would do nothing more), the connection to each (a TCP
connection asking the daemon for ``git-receive-pack PATH``, or ``git receive-pack PATH``
as a child, with the environment git gives it), and the pkt-lines spoken over it. Every
wait ends at a deadline. What is said over it is ``gitlocks.git.sendpack``'s
(docs/design.md §5.2).
"""

from __future__ import annotations

import _socket  # ``socket`` builds enums at import: a millisecond more
import _thread  # one thread and its wait: ``threading`` would cost a millisecond
import os
import time
from select import POLLERR, POLLHUP, POLLIN, POLLOUT, poll
from typing import NamedTuple

from gitlocks.core.text import is_digits
from gitlocks.git.run import Env, environment
from gitlocks.git.settings import parse_bool
from gitlocks.git.spawn import Process, TimeoutExpired

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from gitlocks.git.settings import Settings

DEFAULT_PORT = 9418
_CHUNK = 1 << 16

# What ``git push`` does differently when these are set, in the environment or the
# settings: such a push is left to git.
_ENV_OWNED = ("GIT_PROXY_COMMAND",)
_SETTINGS_OWNED = ("url.", "core.gitproxy", "push.gpgsign", "push.pushoption")
# Variables git clears before it runs receive-pack on a local repository, besides those
# that locate one (``Env.CLEAN``): a ``-c`` given to us is not the remote's setting.
_NOT_FOR_RECEIVE_PACK = (
    "GIT_PROTOCOL",  # git sets its own; we speak version 0
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
)


class Target(NamedTuple):
    """Where a push goes: a daemon (``host``, ``port``) serving ``path``, or, with no
    host, the repository at ``path`` on this machine. ``url`` as configured."""

    url: str
    path: str
    host: str | None = None
    port: int = DEFAULT_PORT


def target(settings: Settings, remote: str, env: Mapping[str, str]) -> Target | None:
    """Where ``remote`` is pushed to, when this module can push there as ``git push``
    would; None when the push is git's to make (see the module's docstring)."""
    if any(name in env for name in _ENV_OWNED):
        return None
    if any(settings.has_prefix(prefix) for prefix in _SETTINGS_OWNED):
        return None
    section = f"remote.{remote}."
    for key in ("receivepack", "vcs", "mirror", "pushoption", "proxy"):
        if section + key in settings:
            return None
    key = section + "pushurl" if section + "pushurl" in settings else section + "url"
    url = settings.get(key)
    if url is None or settings.repeated(key):
        return None  # git pushes to each of several URLs
    where = parse_url(url)
    if where is None or not allowed(settings, "git" if where.host else "file", env):
        return None  # git says why not
    return where


def allowed(settings: Settings, kind: str, env: Mapping[str, str]) -> bool:
    """Whether git would use the transport ``kind`` (``protocol.allow``, as git reads it:
    ``GIT_ALLOW_PROTOCOL`` alone when set; else ``protocol.<kind>.allow``, else
    ``protocol.allow``, else git's default: ``git`` always, ``file`` for the user only,
    which is anyone but ``GIT_PROTOCOL_FROM_USER=0``). An unreadable value is git's to
    report: not allowed here."""
    if "GIT_ALLOW_PROTOCOL" in env:
        return kind in env["GIT_ALLOW_PROTOCOL"].split(":")
    policy = settings.get(f"protocol.{kind}.allow") or settings.get("protocol.allow")
    policy = (policy or ("always" if kind == "git" else "user")).lower()
    if policy == "user":
        return parse_bool(env.get("GIT_PROTOCOL_FROM_USER", "1")) is True
    return policy == "always"


def parse_url(url: str) -> Target | None:
    """A ``git://`` URL, ``file:///path`` or a path, as git reads them; None for anything
    else (ssh, http, a helper's ``<name>::``), or anything git would decode or rewrite."""
    if not url or "%" in url or "\n" in url or "\0" in url:
        return None
    if url.startswith("git://"):
        rest = url[len("git://") :]
        slash = rest.find("/")
        if slash <= 0:
            return None
        hostport, path = rest[:slash], rest[slash:]
        if "@" in hostport:
            return None
        if hostport.startswith("["):  # [IPv6]:port
            close = hostport.find("]")
            if close < 0:
                return None
            host, port_text = hostport[1:close], hostport[close + 1 :].removeprefix(":")
        else:
            host, _, port_text = hostport.partition(":")
        if (
            not host
            or not host.isascii()
            or (port_text and not (is_digits(port_text) and 0 < int(port_text) < 65536))
        ):
            return None  # a name of other letters is git's to encode (IDNA)
        return Target(url, path, host, int(port_text) if port_text else DEFAULT_PORT)
    if url.startswith("file://"):
        path = url[len("file://") :]
        return Target(url, path) if path.startswith("/") else None
    colon, slash = url.find(":"), url.find("/")
    if colon >= 0 and not 0 <= slash < colon:
        return None  # host:path (scp-like ssh), or a helper's <name>::address
    if url.startswith("-"):
        return None  # an option to receive-pack: git blocks it ("strange pathname")
    return Target(url, url)


class Channel:
    """One open connection to a ``receive-pack``: bytes both ways, with a deadline."""

    def send(self, data: bytes, deadline: float) -> None:
        raise NotImplementedError

    def recv(self, deadline: float) -> bytes:
        """What arrived next (b"" at the end of the stream); ``Expired`` at the deadline."""
        raise NotImplementedError

    def said(self) -> str:
        """What the other side said on its own stderr so far."""
        return ""

    def close(self) -> str:
        """End the connection; what the other side said on its own stderr, if any."""
        raise NotImplementedError

    def kill(self) -> None:
        """End the other side too, where it is ours (a timeout)."""


class Expired(Exception):
    pass


class Unreachable(Exception):
    """The connection never opened: nothing was sent."""


def left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise Expired
    return left


def _lookup(host: bytes, port: int, deadline: float) -> list[Any]:
    """The addresses of ``host`` by the deadline (``Expired``): a name is looked up on a
    thread, left behind when the resolver does not answer in time, as ``git push`` was
    killed then. An address written as one needs no thread."""
    try:
        return _socket.getaddrinfo(host, port, 0, _socket.SOCK_STREAM, 0, _socket.AI_NUMERICHOST)
    except OSError:
        pass
    done = _thread.allocate_lock()
    done.acquire()
    found: list[Any] = []

    def ask() -> None:
        try:
            found.append(_socket.getaddrinfo(host, port, 0, _socket.SOCK_STREAM))
        except OSError as exc:
            found.append(exc)
        finally:
            done.release()

    _thread.start_new_thread(ask, ())
    if not done.acquire(timeout=left(deadline)):
        raise Expired
    if isinstance(found[0], OSError):
        raise found[0]
    return list(found[0])


class Daemon(Channel):
    """A TCP connection to a ``git daemon``, asked for ``git-receive-pack PATH``."""

    def __init__(self, where: Target, deadline: float) -> None:
        assert where.host is not None
        try:
            # As bytes: a str would load the IDNA codec (and ``re``) for an ASCII name.
            host = where.host.encode("ascii")
            found = _lookup(host, where.port, deadline)
        except OSError as exc:
            raise Unreachable(f"unable to look up {where.host} ({exc})") from None
        reason = "no address"
        self.sock: _socket.socket | None = None
        for family, kind, proto, _name, address in found:
            sock = _socket.socket(family, kind, proto)
            try:
                sock.settimeout(left(deadline))
                sock.connect(address)
            except Expired:
                sock.close()
                raise
            except TimeoutError:
                sock.close()
                raise Expired from None
            except OSError as exc:
                sock.close()
                reason = exc.strerror or str(exc)
                continue
            self.sock = sock
            break
        if self.sock is None:
            raise Unreachable(f"unable to connect to {where.host}: errno={reason}")
        # Our writes go out whole (a request, then commands and pack in one), and nothing
        # waits on a delayed acknowledgement of what the daemon sends in small writes.
        self.sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
        named = f"[{where.host}]" if ":" in where.host else where.host  # IPv6, bracketed
        hostport = named if where.port == DEFAULT_PORT else f"{named}:{where.port}"
        request = f"git-receive-pack {where.path}\0host={hostport}\0".encode()
        self.send(pkt(request), deadline)

    def send(self, data: bytes, deadline: float) -> None:
        assert self.sock is not None
        view = memoryview(data)
        while view:
            try:
                self.sock.settimeout(left(deadline))
                view = view[self.sock.send(view) :]
            except TimeoutError:
                raise Expired from None

    def recv(self, deadline: float) -> bytes:
        assert self.sock is not None
        try:
            self.sock.settimeout(left(deadline))
            if hasattr(_socket, "TCP_QUICKACK"):
                self.sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_QUICKACK, 1)
            return self.sock.recv(_CHUNK)
        except TimeoutError:
            raise Expired from None

    def close(self) -> str:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        return ""


class Local(Channel):
    """``git receive-pack PATH`` on this machine, as git runs it for a local remote."""

    def __init__(self, where: Target, cwd: str | None) -> None:
        env = environment(Env.REMOTE) or {}
        for name in [n for n in env if n.startswith(_NOT_FOR_RECEIVE_PACK)]:
            del env[name]
        try:
            self.proc = Process(["git", "receive-pack", where.path], cwd, env, session=True)
        except OSError as exc:
            raise Unreachable(f"cannot run git: {exc.strerror}") from None
        self.err = bytearray()
        self.err_fd = self.proc.stderr.fileno() if self.proc.stderr is not None else -1

    def send(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        fd = self.proc.stdin.fileno()
        while view:
            ready = self._wait(fd, POLLOUT, deadline)
            if ready:
                try:
                    view = view[os.write(fd, view[:_CHUNK]) :]
                except BrokenPipeError:
                    return  # it ended: what it said is read next

    def recv(self, deadline: float) -> bytes:
        fd = self.proc.stdout.fileno()
        while True:
            if self._wait(fd, POLLIN, deadline):
                return os.read(fd, _CHUNK)

    def _wait(self, fd: int, event: int, deadline: float) -> bool:
        """Wait until ``fd`` is ready for ``event`` (True), reading stderr meanwhile."""
        waiting = poll()
        waiting.register(fd, event)
        if self.err_fd >= 0:
            waiting.register(self.err_fd, POLLIN)
        ready = False
        for which, happened in waiting.poll(max(1, int(left(deadline) * 1000))):
            if which == self.err_fd:
                chunk = os.read(self.err_fd, _CHUNK)
                if chunk:
                    self.err += chunk
                else:
                    self.err_fd = -1  # its end: closed with the others
            elif happened & (event | POLLHUP | POLLERR):
                ready = True
        return ready

    def said(self) -> str:
        return self.err.decode("utf-8", "replace")

    def close(self) -> str:
        if self.err_fd >= 0 and self.proc.poll() is not None:
            # It has ended, so what it said last is in the pipe (a child of its that kept
            # the pipe open is waited for a tenth of a second at most).
            try:
                deadline = time.monotonic() + 0.1
                while self.err_fd >= 0:
                    self._wait(self.err_fd, POLLIN, deadline)
            except (Expired, OSError):
                pass
        self.proc.close_pipes()
        try:
            self.proc.wait(timeout=0.001)
        except TimeoutExpired:  # still applying hooks or gc: reaped later, as a dropped process
            pass
        return self.err.decode("utf-8", "replace")

    def kill(self) -> None:
        self.proc.kill_group()


def pkt_length(head: bytes) -> int | None:
    """A pkt-line's length from its four hex digits, as git reads them (``int()`` would
    also take a sign, blanks and underscores); None for anything else."""
    if len(head) != 4 or head.lower().strip(b"0123456789abcdef"):
        return None
    return int(head, 16)


def _check_heads(heads: list[bytes], start: int) -> int:
    """``EOFError`` when a length in ``heads`` from ``start`` on is of other characters than
    hex digits (a sign, a blank, an underscore: ``int()`` takes them), no pkt-line; else
    how many are checked."""
    if b"".join(heads[start:]).lower().translate(None, b"0123456789abcdef"):
        raise EOFError
    return len(heads)


def pkt(data: bytes) -> bytes:
    """One pkt-line: its length (four hex digits, itself included), then ``data``."""
    return b"%04x" % (len(data) + 4) + data


FLUSH = b"0000"


class Reader:
    """pkt-lines from a channel."""

    def __init__(self, channel: Channel, deadline: float) -> None:
        self.channel = channel
        self.deadline = deadline
        self.buffer = bytearray()
        self.ended = False  # the last ``read_section`` read its section to the end

    def _fill(self, size: int) -> bool:
        while len(self.buffer) < size:
            chunk = self.channel.recv(self.deadline)
            if not chunk:
                return False
            self.buffer += chunk
        return True

    def read_section(
        self, stop: bytes = b"ERR ", most: int | None = None, *, eager: bool = False
    ) -> list[bytes]:
        """The data of every pkt-line up to the next flush (read, not returned), or up to
        and with the first that starts with ``stop``; ``EOFError`` at the end of stream.
        ``ended`` tells whether it got there: with ``most``, it returns the first ``most``
        lines; ``eager``, the lines that came before it would wait for more (none: it
        waits). The next call reads on. As ``read`` again and again, in one pass over what
        came: an advertisement of 10,000 refs is 10,000 lines, and each length is checked
        once they are read, or before waiting for more."""
        lines: list[bytes] = []
        heads: list[bytes] = []
        checked = 0  # heads checked so far
        data = bytes(self.buffer)
        pos = 0
        self.ended = False
        try:
            while True:
                if pos + 4 > len(data):
                    if eager and lines:
                        break
                    checked = _check_heads(heads, checked)
                    data, pos = self._more(data, pos, 4), 0
                head = data[pos : pos + 4]
                try:
                    size = int(head, 16)  # it takes more than hex digits: checked below
                except ValueError:
                    raise EOFError from None
                heads.append(head)
                if size == 0:
                    pos += 4
                    self.ended = True
                    break
                if size < 4:
                    raise EOFError
                if pos + size > len(data):
                    if eager and lines:
                        heads.pop()  # read again by the next call
                        break
                    # Checked before waiting for more: a bogus length ("+fff") names bytes
                    # that may never come, and ``read`` would refuse it at once.
                    checked = _check_heads(heads, checked)
                    data, pos = self._more(data, pos, size), 0
                line = data[pos + 4 : pos + size]
                pos += size
                lines.append(line)
                if line.startswith(stop):
                    self.ended = True
                    break
                if len(lines) == most:
                    break
        finally:
            self.buffer[:] = data[pos:]
        _check_heads(heads, checked)
        return lines

    def _more(self, data: bytes, pos: int, size: int) -> bytes:
        """``data`` from ``pos``, with what the channel says next, until ``size`` bytes."""
        rest = bytearray(data[pos:])
        while len(rest) < size:
            chunk = self.channel.recv(self.deadline)
            if not chunk:
                self.buffer[:] = rest
                raise EOFError
            rest += chunk
        return bytes(rest)

    def read(self) -> bytes | None:
        """The next pkt-line's data, None at a flush; ``EOFError`` at the end of stream."""
        if not self._fill(4):
            raise EOFError
        size = pkt_length(bytes(self.buffer[:4]))
        if size is None:
            raise EOFError
        if size == 0:
            del self.buffer[:4]
            return None
        if size < 4 or not self._fill(size):
            raise EOFError
        data = bytes(self.buffer[4:size])
        del self.buffer[:size]
        return data
