"""Pushing to a ``git://`` daemon or a repository on this machine by speaking git's push
protocol ourselves, instead of running ``git push`` (docs/design.md §5.2, §9.15).

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
``gitlocks.git.connect.target`` says None. That module opens the connection and speaks
its pkt-lines; this one says what is said over it.
"""

from __future__ import annotations

import time

from gitlocks.core.record import is_object_id
from gitlocks.git.connect import (
    FLUSH,
    Channel,
    Daemon,
    Expired,
    Local,
    Reader,
    Target,
    Unreachable,
    parse_url,
    pkt,
    pkt_length,
    target,
)
from gitlocks.git.remote import UNREPORTED, GitRun
from gitlocks.git.run import Env, environment
from gitlocks.git.spawn import Process, TimeoutExpired

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

__all__ = ["Session", "Target", "pack_objects", "parse_url", "target"]

AGENT = "gitlocks"
BATCH_LINES = 4096  # advertised lines read at once
_SENDING = ("*", "-", "+")  # a line's flag while its command is being sent


class Session:
    """One push conversation with a remote's ``receive-pack``: opened at once, so the
    remote starts and advertises its refs while the caller decides what to push."""

    def __init__(self, where: Target, timeout: float, cwd: str | None = None) -> None:
        """``cwd``: where a relative local path starts (the worktree's top, for git)."""
        self.where = where
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.channel: Channel | None = None
        self.refs: dict[str, str] | None = None  # advertised: ref -> id
        self.caps: set[str] = set()
        self.failed: GitRun | None = None  # the connection's end, when it failed
        self.timed_out = False
        self.used = False  # taken by a push: the next opens its own
        self.sent = False  # commands went out: the remote is applying them
        self._reader: Reader | None = None  # a push's answer, read to its end on closing
        try:
            self.channel = Daemon(where, self.deadline) if where.host else Local(where, cwd)
        except Expired:
            self.timed_out = True
        except Unreachable as exc:
            self.failed = GitRun(128, "", f"fatal: {exc}\n")
        except OSError as exc:  # the request could not be sent: nothing was
            self.failed = GitRun(128, "", f"fatal: unable to connect: {exc.strerror or exc}\n")

    def advertised(self) -> dict[str, str] | None:
        """The refs the remote advertised (read now if not yet), or None when it could not
        be asked (``failed``, ``timed_out``)."""
        if self.refs is not None or self.channel is None or self.failed or self.timed_out:
            return self.refs
        reader = Reader(self.channel, self.deadline)
        refs: dict[str, str] = {}
        first = start = True  # the advertisement's first line, and first batch
        try:
            # In batches of lines, each added to ``refs`` as read: what is kept grows with
            # the refs, never with the lines (an endless stream of one ref's line). A
            # batch is what came before the reader would wait: a line git would refuse
            # is refused at once, even from a server that then says nothing.
            while not reader.ended:
                lines = reader.read_section(most=BATCH_LINES, eager=True)
                # The first ref's line carries the capabilities: read one by one to it, and
                # the rest at once where they are all "<id> <name>" (10,000 refs, 10,000
                # lines).
                nul = next((n for n, ln in enumerate(lines) if b"\0" in ln), None)
                head = nul + 1 if nul is not None else int(start)
                start = False
                rest = _plain_refs(lines[head:]) if len(lines) > head else None
                if rest is not None:
                    lines = lines[:head]
                for line in lines:
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
                    if name == "shallow" or not is_object_id(oid) or not name or " " in name:
                        if oid == "shallow" and is_object_id(name):
                            continue  # a shallow remote's boundary: nothing to us
                        # As git: what is no "<id> <name>" is no remote we understand.
                        shown = text[:64].decode("utf-8", "replace")
                        self._fail(f"fatal: protocol error: expected sha/ref, got '{shown}'")
                        return None
                    if name.startswith("refs/") or name == "HEAD":
                        refs[name] = oid
                if rest is not None:
                    refs.update(rest)
                    if first:  # its first line was the first ref's, with no capabilities
                        self.caps, first = set(), False
        except EOFError:
            self._fail(
                "fatal: Could not read from remote repository.\n\nPlease make sure you have the "
                "correct access rights\nand the repository exists."
            )
            return None
        except Expired:
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
            except (EOFError, OSError, Expired):
                pass
        channel, self.channel = self.channel, None
        return channel.close() if channel is not None else ""

    def renew(self, timeout: float) -> None:
        """Give an opened conversation ``timeout`` seconds from now: the time a write
        spent before its push (a first fetch) is not taken from the push."""
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout

    def abandon(self) -> None:
        """End a conversation that pushed nothing: a flush tells the remote so."""
        if self.channel is not None and self.refs is not None and not self.sent:
            try:
                self.channel.send(FLUSH, self.deadline)
            except (OSError, Expired):
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
            self.sent = True
            self.channel.send(bytes(request), self.deadline)
            status, err = self._report("side-band-64k" in caps)
        except Expired:
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
                    reason = "unpacker error" if unpack != "ok" else str(verdict)
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
        reader = self._reader = Reader(self.channel, self.deadline)
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
                else:  # as git: a band it does not know is a stream it cannot follow
                    said += b"fatal: protocol error: bad band #%d\n" % line[0] if line else b""
                    break
            if not sideband:
                report += FLUSH
        except EOFError:
            pass
        self._reader = None  # the stream has ended: nothing to wait for
        return _parse_report(bytes(report)), _remote_lines(said)


def _plain_refs(lines: list[bytes]) -> dict[str, str] | None:
    """The refs of advertised ``lines`` (``refs/...`` and ``HEAD``), read all at once where
    each is "<id> <name>\\n" as git writes them; None for anything else (a line of another
    shape, an error), which is then read line by line and told as git tells it."""
    pairs = [line.partition(b" ") for line in lines]
    oids = b"".join(oid for oid, _, _ in pairs)
    names = b"".join(name for _, _, name in pairs)
    if {len(oid) for oid, _, _ in pairs} not in ({40}, {64}):
        return None  # one length: SHA-1 or SHA-256 ids, never both
    if oids.translate(None, b"0123456789abcdef") or b"\0" in names or b" " in names:
        return None
    if names.count(b"\n") != len(lines) or b"\n\n" in names or names[:1] == b"\n":
        return None  # a line without its newline, with more than one, or with no name
    if b"".join([name[-1:] for _, _, name in pairs]) != b"\n" * len(pairs):
        return None  # a newline inside one name, none after the next: as many, not each one
    texts = names.decode("utf-8", "surrogateescape").split("\n")
    texts.pop()  # after the last newline
    if "shallow" in texts:
        return None
    values = oids.decode("ascii")
    step = len(pairs[0][0])
    return {
        name: values[i * step : (i + 1) * step]
        for i, name in enumerate(texts)
        if name.startswith("refs/") or name == "HEAD"
    }


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
        size = pkt_length(raw[pos : pos + 4])
        if size is None or 0 < size < 4:
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
