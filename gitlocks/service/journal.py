"""Reading the journal through the store (for ``log`` and ``watch``; its format is
``gitlocks.core.journal``'s, docs/design.md, section 4.4), and the local log of refusals,
which change nothing and so are appended to a file of the common git directory instead."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Sequence

from gitlocks.core.journal import COMPACTED, VIEW_EVENT, interleave, json_objects
from gitlocks.errors import GitlocksError
from gitlocks.git.files import write_atomic
from gitlocks.layout import JOURNAL_REF, REFUSALS_FILE

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from gitlocks.core.journal import Event
    from gitlocks.store.base import LockStore

REFUSALS_KEEP = 1000
# Trim the refusal log when it grows past this size (about 2 * REFUSALS_KEEP lines).
REFUSALS_TRIM_BYTES = 512 * 1024


# --- reading --------------------------------------------------------------------------------


def events(store: LockStore, *, limit: int | None = None, since: str | None = None) -> list[Event]:
    """Journal events, newest first, each with the ``commit`` that recorded it; none older
    than ``since`` (RFC 3339 UTC), at most ``limit``. With ``since`` the whole bounded chain
    is read: writers' clocks need not increase along it."""
    found: list[Event] = []
    for entry in store.journal():
        for event in reversed(entry.events):
            if event.get("event") == VIEW_EVENT:
                continue  # a sharded table's view commit names its shards: no event
            if since is not None and str(event.get("at", "")) < since:
                continue
            found.append({**event, "commit": entry.commit})
            if limit is not None and len(found) >= limit:
                return found
    return found


# --- the local refusal log ------------------------------------------------------------------


def refusals_path(store: LockStore) -> str:
    return os.path.join(store.common_dir, REFUSALS_FILE)


def append_refusal(common_dir: str, event: Event) -> None:
    """Append a refusal to the log in ``common_dir`` (the guard's denials come here with
    no store opened); best effort, never fails the command."""
    path = os.path.join(common_dir, REFUSALS_FILE)
    line = json.dumps({**event, "local": True}, ensure_ascii=False, sort_keys=True) + "\n"
    try:
        # O_APPEND: concurrent writers' lines do not interleave (each is one write).
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            os.write(fd, line.encode())
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > REFUSALS_TRIM_BYTES:
            _trim(path)
    except OSError:
        pass  # a read-only git dir must not turn a refusal into an error


def append_refusals(refusals: Sequence[tuple[str, Event]], holder: str) -> None:
    """The guard's denials, each appended to its repository's log (by common git
    directory) as ``holder``'s, after the journal commit it was decided against, which
    orders it among the journal's events of that second, as acquire's refusals are."""
    from gitlocks.git.run import Env, finish, start  # a denial's one process

    versions: dict[str, str | None] = {}
    for common_dir, found in refusals:
        if common_dir not in versions:
            ask = [f"--git-dir={common_dir}", "rev-parse", "-q", "--verify", JOURNAL_REF]
            proc = start(ask, env=Env.CLEAN, error=GitlocksError)
            said = finish(proc, ok=(0, 1), error=GitlocksError).decode().strip()
            versions[common_dir] = said or None
        append_refusal(common_dir, {**found, "holder": holder, "after": versions[common_dir]})


def _trim(path: str) -> None:
    # Replace by rename so readers never see a half-written file; a refusal appended
    # between our read and the rename is lost, which a bounded local log can afford.
    with open(path, "rb") as f:
        lines = f.read().splitlines(keepends=True)[-REFUSALS_KEEP:]
    write_atomic(path, b"".join(lines))


def refusals(store: LockStore, *, since: str | None = None) -> list[Event]:
    """Local refusals, newest first."""
    try:
        with open(refusals_path(store), encoding="utf-8", errors="replace") as f:
            raw = f.read()
    except OSError:
        return []
    found = json_objects(reversed(raw.split("\n")))  # as parse_events: newlines only
    return [e for e in found if since is None or str(e.get("at", "")) >= since]


# --- following ------------------------------------------------------------------------------


def _new_since(store: LockStore, seen: str | None, version: str) -> list[Event]:
    """Events of commits after ``seen`` up to ``version``, oldest first, each once.

    A compaction between two polls starts a new chain whose root repeats retained events
    (skipped) and names the old chain's tip as ``previous``: the walk goes on there, back to
    ``seen``, so that events written on the old chain after the last poll are not lost. When
    the walk never meets ``seen`` (nor, with nothing seen, a chain's true start), only the
    newest chain is reported."""
    chains: list[list[list[Event]]] = []  # newest chain first; each newest commit first
    start: str | None = version
    visited: set[str] = set()
    met = False
    while start is not None and start not in visited:
        visited.add(start)
        batches: list[list[Event]] = []
        previous: str | None = None
        ended_at_root = True  # a chain ending without a compaction marker
        for entry in store.journal(start=start):
            if entry.commit == seen:
                met = True
                break
            if entry.events and entry.events[0].get("event") == COMPACTED:
                marker = entry.events[0].get("previous")
                previous = marker if isinstance(marker, str) and marker else None
                ended_at_root = False
                break
            batches.append(
                [
                    {**e, "commit": entry.commit}
                    for e in entry.events
                    if e.get("event") != VIEW_EVENT
                ]
            )
        chains.append(batches)
        if met or (seen is None and ended_at_root):
            met = True
            break
        start = previous
    if not met:
        chains = chains[:1]
    return [event for batches in reversed(chains) for batch in reversed(batches) for event in batch]


def follow(
    store: LockStore,
    *,
    interval: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[list[Event]]:
    """Yield, once per poll, the events journaled (and refused, locally) since the last:
    forever, an idle poll yielding an empty list. One ref read per interval; a walk only when
    it moved."""
    seen = store.version()
    cursor = RefusalCursor(refusals_path(store))
    while True:
        batch: list[Event] = []
        version = store.version()
        if version != seen and version is not None:
            batch += _new_since(store, seen, version)
            seen = version
        yield interleave(batch, cursor.read())
        sleep(interval)


# Lines of the refusal log a cursor remembers, to find its place again after a trim.
_TAIL_LINES = 8
_TAIL_BYTES = 64 * 1024


class RefusalCursor:
    """Where a follower is in the refusal log: a byte offset, and the last lines it read.
    A trim renames a shorter file over the log, where an offset means nothing: the cursor then
    finds its remembered lines in the new file and goes on after them (all lines are new when
    the trim dropped them all)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0
        self.tail: list[bytes] = []
        size = _size(path)
        if size:
            start = max(0, size - _TAIL_BYTES)
            chunk = _read(path, start, size)
            complete, newline, _ = chunk.rpartition(b"\n")
            if newline:
                lines = complete.split(b"\n")
                if start > 0:
                    lines = lines[1:]  # the first may be cut
                self.tail = lines[-_TAIL_LINES:]
                self.offset = start + len(complete) + 1

    def read(self) -> list[Event]:
        """The complete JSON lines added since the last read, oldest first."""
        size = _size(self.path)
        if self._in_place(size):
            if size <= self.offset:
                return []
            chunk, base = _read(self.path, self.offset, size), self.offset
        else:
            chunk, base = _read(self.path, 0, size), 0
        complete, newline, _ = chunk.rpartition(b"\n")
        if not newline:
            if base == 0:
                self.offset = 0  # a rewritten file holding no complete line yet
            return []
        lines = complete.split(b"\n")
        if base == 0 and self.tail:
            lines = lines[_resume_at(lines, self.tail) :]
        self.offset = base + len(complete) + 1
        if lines:
            self.tail = (self.tail + lines)[-_TAIL_LINES:]
        return json_objects(line.decode("utf-8", "replace") for line in lines)

    def _in_place(self, size: int) -> bool:
        """Whether the file still holds what was read, so that it can go on at the offset."""
        if size < self.offset:
            return False
        if not self.tail:
            return self.offset == 0
        last = self.tail[-1] + b"\n"
        start = self.offset - len(last)
        return start >= 0 and _read(self.path, start, self.offset) == last


def _resume_at(lines: list[bytes], tail: list[bytes]) -> int:
    """Where the lines after ``tail`` start in a rewritten log: after the last place that
    holds all of ``tail``, or after a leading part of the file that ends ``tail`` (the trim
    cut into it); 0 when none of it is left."""
    for end in range(len(lines), 0, -1):
        n = min(end, len(tail))
        if lines[end - n : end] == tail[-n:] and (n == len(tail) or end == n):
            return end
    return 0


def _read(path: str, start: int, end: int) -> bytes:
    try:
        with open(path, "rb") as f:
            f.seek(start)
            return f.read(end - start)
    except OSError:
        return b""


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
