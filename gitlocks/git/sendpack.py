"""Pushing to a ``git://`` daemon or a repository on this machine by speaking git's push
protocol ourselves, instead of running ``git push`` (docs/design.md §5.2, §9.14).

Remote mode's pushes are always the same shape: an atomic push where every ref carries a
lease. For the two transports that need no credentials and no helper (a ``git daemon``,
and a path or ``file://`` URL, where git itself runs ``git receive-pack`` on the
repository), this module opens the connection as git would, reads the refs the remote
advertises, checks every lease against them exactly as ``git push --force-with-lease``
does, and sends the commands and a pack made by ``git pack-objects``. The remote's
``receive-pack`` is the same program either way: it locks every ref, compares each old
value under its lock and applies all or none (``atomic``), so the compare-and-swap is
the remote's, unchanged.

What it saves: the ``git push`` process and the shell it starts for a local remote, and
on a TCP connection the stalls of git's small writes (git sets no ``TCP_NODELAY``, and
each stall waits out a delayed acknowledgement: 40 ms on Linux). The refs advertised
also answer the question a write's ``ls-remote`` asked beside the push, on the same
connection.

The answer is told as ``git push --porcelain`` tells it (``GitRun``, ``PushLine``), so
everything that judges a push (``gitlocks.store.push``) judges both alike. Anything
beyond this shape (ssh, http, a remote helper, URL rewriting, protocol restrictions, a
proxy, a custom ``receive-pack``, signed pushes, push options) is left to ``git push``:
``target`` says None.
"""

from __future__ import annotations

import _socket  # ``socket`` builds enums at import: a millisecond more
import _thread  # one thread and its wait: ``threading`` would cost a millisecond
import os
import time
from select import POLLERR, POLLHUP, POLLIN, POLLOUT, poll

from gitlocks.core.plain import Row
from gitlocks.git.remote import UNREPORTED, GitRun
from gitlocks.git.run import Env, environment
from gitlocks.git.settings import parse_bool
from gitlocks.git.spawn import Process, TimeoutExpired

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any

    from gitlocks.git.settings import Settings

DEFAULT_PORT = 9418
AGENT = "gitlocks"
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


class Target(Row):
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
            or (port_text and not (port_text.isdigit() and 0 < int(port_text) < 65536))
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


class _Channel:
    """One open connection to a ``receive-pack``: bytes both ways, with a deadline."""

    def send(self, data: bytes, deadline: float) -> None:
        raise NotImplementedError

    def recv(self, deadline: float) -> bytes:
        """What arrived next (b"" at the end of the stream); ``_Timeout`` at the deadline."""
        raise NotImplementedError

    def said(self) -> str:
        """What the other side said on its own stderr so far."""
        return ""

    def close(self) -> str:
        """End the connection; what the other side said on its own stderr, if any."""
        raise NotImplementedError

    def kill(self) -> None:
        """End the other side too, where it is ours (a timeout)."""


class _Timeout(Exception):
    pass


class _Unreachable(Exception):
    """The connection never opened: nothing was sent."""


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise _Timeout
    return left


def _lookup(host: bytes, port: int, deadline: float) -> list[Any]:
    """The addresses of ``host`` by the deadline (``_Timeout``): a name is looked up on a
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
    if not done.acquire(timeout=_left(deadline)):
        raise _Timeout
    if isinstance(found[0], OSError):
        raise found[0]
    return list(found[0])


class _Daemon(_Channel):
    """A TCP connection to a ``git daemon``, asked for ``git-receive-pack PATH``."""

    def __init__(self, where: Target, deadline: float) -> None:
        assert where.host is not None
        try:
            # As bytes: a str would load the IDNA codec (and ``re``) for an ASCII name.
            host = where.host.encode("ascii")
            found = _lookup(host, where.port, deadline)
        except OSError as exc:
            raise _Unreachable(f"unable to look up {where.host} ({exc})") from None
        reason = "no address"
        self.sock: _socket.socket | None = None
        for family, kind, proto, _name, address in found:
            sock = _socket.socket(family, kind, proto)
            try:
                sock.settimeout(_left(deadline))
                sock.connect(address)
            except _Timeout:
                sock.close()
                raise
            except TimeoutError:
                sock.close()
                raise _Timeout from None
            except OSError as exc:
                sock.close()
                reason = exc.strerror or str(exc)
                continue
            self.sock = sock
            break
        if self.sock is None:
            raise _Unreachable(f"unable to connect to {where.host}: errno={reason}")
        # Our writes go out whole (a request, then commands and pack in one), and nothing
        # waits on a delayed acknowledgement of what the daemon sends in small writes.
        self.sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
        hostport = where.host if where.port == DEFAULT_PORT else f"{where.host}:{where.port}"
        if ":" in where.host:
            hostport = f"[{where.host}]" + ("" if where.port == DEFAULT_PORT else f":{where.port}")
        request = f"git-receive-pack {where.path}\0host={hostport}\0".encode()
        self.send(pkt(request), deadline)

    def send(self, data: bytes, deadline: float) -> None:
        assert self.sock is not None
        view = memoryview(data)
        while view:
            try:
                self.sock.settimeout(_left(deadline))
                view = view[self.sock.send(view) :]
            except TimeoutError:
                raise _Timeout from None

    def recv(self, deadline: float) -> bytes:
        assert self.sock is not None
        try:
            self.sock.settimeout(_left(deadline))
            if hasattr(_socket, "TCP_QUICKACK"):
                self.sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_QUICKACK, 1)
            return self.sock.recv(_CHUNK)
        except TimeoutError:
            raise _Timeout from None

    def close(self) -> str:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        return ""


class _Local(_Channel):
    """``git receive-pack PATH`` on this machine, as git runs it for a local remote."""

    def __init__(self, where: Target, cwd: str | None) -> None:
        env = environment(Env.REMOTE) or {}
        for name in [n for n in env if n.startswith(_NOT_FOR_RECEIVE_PACK)]:
            del env[name]
        try:
            self.proc = Process(["git", "receive-pack", where.path], cwd, env, session=True)
        except OSError as exc:
            raise _Unreachable(f"cannot run git: {exc.strerror}") from None
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
        for which, happened in waiting.poll(max(1, int(_left(deadline) * 1000))):
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
            except (_Timeout, OSError):
                pass
        self.proc.close_pipes()
        try:
            self.proc.wait(timeout=0.001)
        except Exception:  # still applying hooks or gc: reaped later, as a dropped process
            pass
        return self.err.decode("utf-8", "replace")

    def kill(self) -> None:
        self.proc.kill_group()


def _is_id(text: str) -> bool:
    """An object id as git writes it: 40 or 64 lowercase hexadecimal digits."""
    return len(text) in (40, 64) and not text.strip("0123456789abcdef")


def pkt(data: bytes) -> bytes:
    """One pkt-line: its length (four hex digits, itself included), then ``data``."""
    return b"%04x" % (len(data) + 4) + data


FLUSH = b"0000"
_SENDING = ("*", "-", "+")  # a line's flag while its command is being sent


class _Reader:
    """pkt-lines from a channel."""

    def __init__(self, channel: _Channel, deadline: float) -> None:
        self.channel = channel
        self.deadline = deadline
        self.buffer = bytearray()

    def _fill(self, size: int) -> bool:
        while len(self.buffer) < size:
            chunk = self.channel.recv(self.deadline)
            if not chunk:
                return False
            self.buffer += chunk
        return True

    def read(self) -> bytes | None:
        """The next pkt-line's data, None at a flush; ``EOFError`` at the end of stream."""
        if not self._fill(4):
            raise EOFError
        head = bytes(self.buffer[:4])
        if head.lower().strip(b"0123456789abcdef"):
            raise EOFError  # four hex digits, as git reads them (int() takes "+", "_", " ")
        size = int(head, 16)
        if size == 0:
            del self.buffer[:4]
            return None
        if size < 4 or not self._fill(size):
            raise EOFError
        data = bytes(self.buffer[4:size])
        del self.buffer[:size]
        return data


class Session:
    """One push conversation with a remote's ``receive-pack``: opened at once, so the
    remote starts and advertises its refs while the caller decides what to push."""

    def __init__(self, where: Target, timeout: float, cwd: str | None = None) -> None:
        """``cwd``: where a relative local path starts (the worktree's top, for git)."""
        self.where = where
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.channel: _Channel | None = None
        self.refs: dict[str, str] | None = None  # advertised: ref -> id
        self.caps: set[str] = set()
        self.failed: GitRun | None = None  # the connection's end, when it failed
        self.timed_out = False
        self.used = False
        self._reader: _Reader | None = None  # a push's answer, read to its end on closing
        try:
            self.channel = _Daemon(where, self.deadline) if where.host else _Local(where, cwd)
        except _Timeout:
            self.timed_out = True
        except _Unreachable as exc:
            self.failed = GitRun(128, "", f"fatal: {exc}\n")
        except OSError as exc:  # the request could not be sent: nothing was
            self.failed = GitRun(128, "", f"fatal: unable to connect: {exc.strerror or exc}\n")

    def advertised(self) -> dict[str, str] | None:
        """The refs the remote advertised (read now if not yet), or None when it could not
        be asked (``failed``, ``timed_out``)."""
        if self.refs is not None or self.channel is None or self.failed or self.timed_out:
            return self.refs
        reader = _Reader(self.channel, self.deadline)
        refs: dict[str, str] = {}
        try:
            first = True
            while (line := reader.read()) is not None:
                if line.startswith(b"ERR "):
                    said = line[4:].decode("utf-8", "replace").strip()
                    self._fail(f"fatal: remote error: {said}")
                    return None
                if first and line.rstrip(b"\n") == b"version 1":
                    continue  # protocol v1 says so first; its refs are v0's
                text, _, caps = line.rstrip(b"\n").partition(b"\0")
                if first:
                    self.caps = set(caps.decode("utf-8", "replace").split())
                    first = False
                oid, _, name = text.decode("utf-8", "surrogateescape").partition(" ")
                if name == "shallow" or not _is_id(oid) or not name or " " in name:
                    if oid == "shallow" and _is_id(name):
                        continue  # a shallow remote's boundary: nothing to us
                    # As git: what is no "<id> <name>" is no remote we understand.
                    shown = text[:64].decode("utf-8", "replace")
                    self._fail(f"fatal: protocol error: expected sha/ref, got '{shown}'")
                    return None
                if name.startswith("refs/") or name == "HEAD":
                    refs[name] = oid
        except EOFError:
            self._fail(
                "fatal: Could not read from remote repository.\n\nPlease make sure you have the "
                "correct access rights\nand the repository exists."
            )
            return None
        except _Timeout:
            self.timed_out = True
            return None
        except OSError as exc:
            self._fail(f"fatal: unable to read from the remote: {exc.strerror or exc}")
            return None
        self.refs = refs
        return refs

    def _fail(self, said: str) -> None:
        err = self.close()
        self.failed = GitRun(128, "", f"{err}{said}\n")

    def close(self, *, kill: bool = False) -> str:
        """End the conversation; what a local ``receive-pack`` said on its stderr. After a
        push, what the remote still sends (until its last flush) is read first, as ``git
        push`` waits for it: closing earlier could cut off its post-receive hooks. With
        ``kill`` (its time is up), a local ``receive-pack`` and all it started end now."""
        reader, self._reader = self._reader, None
        if kill and self.channel is not None:
            self.channel.kill()
            reader = None
        if reader is not None and self.channel is not None:
            try:
                while reader.read() is not None:
                    pass
            except (EOFError, OSError, _Timeout):
                pass
        channel, self.channel = self.channel, None
        return channel.close() if channel is not None else ""

    def abandon(self) -> None:
        """End a conversation that pushed nothing: a flush tells the remote so."""
        if self.channel is not None and self.refs is not None and not self.used:
            try:
                self.channel.send(FLUSH, self.deadline)
            except (OSError, _Timeout):
                pass
        self.close()

    def push(
        self,
        leases: Mapping[str, str | None],
        specs: Iterable[tuple[str | None, str]],
        zero: str,
        object_format: str,
        pack: Callable[[list[str], list[str], bool], bytes],
    ) -> GitRun | None:
        """Push ``specs`` ((new id or None to delete, ref)), each leased on ``leases``'s
        value (None: must not exist), atomically: ``git push --porcelain``'s answer, or
        None when this push is git's to make after all (the remote lacks what it needs;
        nothing was sent). ``pack(tips, known, ofs)`` makes the pack of ``tips`` less what
        ``known`` holds (``ofs``: deltas may name their base by offset). A timeout is
        raised as ``TimeoutError``."""
        self.used = True
        refs = self.advertised()
        if refs is None:
            if self.timed_out:
                raise TimeoutError
            return self.failed
        caps = self.caps
        formats = [c.removeprefix("object-format=") for c in caps if c.startswith("object-format=")]
        fmt = formats[0] if formats else "sha1"
        wanted = list(specs)
        deleting = any(new is None for new, _ in wanted)
        if fmt != object_format or "report-status" not in caps:
            self.abandon()
            return None
        if "atomic" not in caps:
            self.abandon()
            return GitRun(128, "", "fatal: the receiving end does not support --atomic push\n")
        if deleting and "delete-refs" not in caps:
            self.abandon()
            return None
        lines: list[tuple[str, str, str, str]] = []  # flag, source, ref, summary
        commands: list[tuple[str, str, str]] = []
        rejected = False
        for new, ref in wanted:
            have = refs.get(ref)
            source = new or ""
            if new is not None and have == new:
                lines.append(("=", source, ref, "[up to date]"))
                continue
            if new is None and have is None and leases.get(ref) is None:
                self.abandon()
                return None  # deleting what is not there: git's own words for it
            if have != leases.get(ref):
                lines.append(("!", source, ref, "[rejected] (stale info)"))
                rejected = True
                continue
            commands.append((have or zero, new or zero, ref))
            lines.append(("*" if have is None else "-" if new is None else "+", source, ref, ""))
        if rejected:  # as git: nothing is sent, the others fail with it (atomic)
            self.abandon()
            out = [
                ("!", source, ref, "[rejected] (atomic push failed)")
                if flag in _SENDING
                else (flag, source, ref, summary)
                for flag, source, ref, summary in lines
            ]
            said = f"error: failed to push some refs to '{self.where.url}'\n"
            return GitRun(1, _porcelain(self.where.url, out), said)
        if not commands:
            self.abandon()
            return GitRun(0, _porcelain(self.where.url, lines), "Everything up-to-date\n")
        asked = ["report-status", "atomic"]
        asked += [c for c in ("side-band-64k", "quiet") if c in caps]
        asked += [f"object-format={object_format}"] if formats else []
        asked.append(f"agent={AGENT}")
        request = bytearray()
        for n, (old, new, ref) in enumerate(commands):
            line = f"{old} {new} {ref}".encode()
            request += pkt(line + (b"\0" + " ".join(asked).encode() if n == 0 else b""))
        request += FLUSH
        if any(new != zero for _, new, _ in commands):
            tips = [new for _, new, _ in commands if new != zero]
            known = [old for old, _, _ in commands if old != zero]
            try:
                request += pack(tips, known, "ofs-delta" in caps)
            except OSError as exc:
                self.abandon()
                return GitRun(128, "", f"fatal: cannot make the pack: {exc}\n")
        assert self.channel is not None
        try:
            self.channel.send(bytes(request), self.deadline)
            status, err = self._report("side-band-64k" in caps)
        except _Timeout:
            self.close(kill=True)
            raise TimeoutError from None
        except OSError as exc:
            status, err = None, f"fatal: the remote end hung up unexpectedly ({exc.strerror})\n"
        err = self.channel.said() + err if self.channel is not None else err
        if status is None:
            # Sent, and no answer: whatever the remote said first (its hooks' words), git
            # ends with this line, and it is what tells a push that may have landed.
            self.close()
            if "fatal: the remote end hung up" not in err:
                err += "fatal: the remote end hung up unexpectedly\n"
            return GitRun(128, "", err)
        unpack, verdicts = status
        if unpack != "ok":
            err += f"error: remote unpack failed: {unpack}\n"
        out = []
        failed = unpack != "ok"
        for flag, source, ref, summary in lines:
            if flag in _SENDING:
                verdict = verdicts.get(ref)
                if verdict is None and unpack == "ok":  # as git says: the push may be in
                    out.append(("!", source, ref, f"[remote failure] ({UNREPORTED})"))
                    failed = True
                    continue
                if verdict != "ok" or unpack != "ok":
                    reason = "unpacker error" if unpack != "ok" else (verdict or "")
                    reason = reason.removeprefix("ng ").strip()
                    out.append(("!", source, ref, f"[remote rejected] ({reason})"))
                    failed = True
                    continue
                summary = {"*": "[new reference]", "-": "[deleted]", "+": "(forced update)"}[flag]
            out.append((flag, source, ref, summary))
        return GitRun(1 if failed else 0, _porcelain(self.where.url, out), err)

    def _report(self, sideband: bool) -> tuple[tuple[str, dict[str, str]] | None, str]:
        """The remote's report (its unpack status, and per ref ``ok`` or its reason) and
        what it said meanwhile (as ``remote: `` lines); None for the report when the
        connection ended before it came."""
        assert self.channel is not None
        reader = self._reader = _Reader(self.channel, self.deadline)
        said = bytearray()
        report = bytearray()
        try:
            while (line := reader.read()) is not None:
                if not sideband:
                    report += pkt(line)
                    continue
                band, data = line[:1], line[1:]
                if band == b"\1":
                    report += data
                    if _parse_report(bytes(report)) is not None:
                        # The answer is in. What follows (post-receive hooks, the remote's
                        # gc) is read when the session closes, after our own work.
                        return _parse_report(bytes(report)), _remote_lines(said)
                elif band == b"\2":
                    said += data
                elif band == b"\3":
                    said += b"fatal: " + data
                    break
            if not sideband:
                report += FLUSH
        except EOFError:
            pass
        self._reader = None  # the stream has ended: nothing to wait for
        return _parse_report(bytes(report)), _remote_lines(said)


def _remote_lines(said: bytes | bytearray) -> str:
    """What the remote said on its side band, as git prints it (``remote: `` lines)."""
    text = said.decode("utf-8", "replace").replace("\r", "\n")
    return "".join(f"remote: {line}\n" for line in text.splitlines() if line.strip())


def _parse_report(raw: bytes) -> tuple[str, dict[str, str]] | None:
    """report-status: ``unpack <status>``, then ``ok <ref>`` or ``ng <ref> <reason>``."""
    pos = 0
    unpack: str | None = None
    verdicts: dict[str, str] = {}
    while pos + 4 <= len(raw):
        try:
            size = int(raw[pos : pos + 4], 16)
        except ValueError:
            return None
        if size == 0:
            return (unpack, verdicts) if unpack is not None else None
        line = raw[pos + 4 : pos + size].decode("utf-8", "replace").rstrip("\n")
        pos += size
        if line.startswith("unpack "):
            unpack = line[len("unpack ") :]
        elif line.startswith("ok "):
            verdicts[line[3:]] = "ok"
        elif line.startswith("ng "):
            ref, _, reason = line[3:].partition(" ")
            verdicts[ref] = reason or "failed"
    return None


def _porcelain(url: str, lines: list[tuple[str, str, str, str]]) -> str:
    body = "".join(f"{flag}\t{source}:{ref}\t{summary}\n" for flag, source, ref, summary in lines)
    return f"To {url}\n{body}Done\n"


def pack_objects(
    git_dir: str, tips: list[str], known: list[str], ofs: bool, timeout: float
) -> bytes:
    """The pack ``git push`` would send: the objects reachable from ``tips`` and not from
    ``known`` (ids this repository has), made by ``git pack-objects``. ``OSError`` when
    git cannot make it, ``TimeoutError`` past ``timeout``."""
    args = ["git", "--git-dir", git_dir, "pack-objects", "--stdout", "--revs", "-q"]
    args += ["--delta-base-offset"] if ofs else []
    proc = Process(args, None, environment(Env.CLEAN), session=True)
    feed = "".join([*(f"{tip}\n" for tip in tips), *(f"^{oid}\n" for oid in known)])
    try:
        out, err = proc.communicate(feed.encode(), timeout=timeout)
    except TimeoutExpired:
        proc.kill_group()
        raise TimeoutError from None
    if proc.wait() != 0 or not out.startswith(b"PACK"):
        said = err.decode("utf-8", "replace").strip().splitlines()
        raise OSError(f"git pack-objects failed: {said[-1] if said else proc.returncode}")
    return out
