"""The journal: what happened to the lock table, and what was refused.

Shared history: every write to the store moves the serialisation ref to a new commit
with an empty tree whose message is a summary line, a blank line, one JSON event per
line, and a ``Journal-Seq: N`` trailer (the commit's distance from the start of its
chain). So the journal travels with the refs (worktrees, remotes) and costs one small
commit per write.

Bounded growth: ``alock.journalKeep`` is a number of events (default 1000) or an age
(``14d``). Once a chain is twice as long as needed, the next write starts a new chain
whose root commit carries a ``compacted`` marker and the retained events, and builds on
it; the old chain becomes unreachable and git's gc reclaims it. Compaction happens once
per ``keep`` writes, so it costs a constant amount per write on average, and ordinary
operations never rewrite history (a compaction is itself a new commit, not a rewrite of
the retained ones).

Local only: refusals change nothing, so they are not committed; they are appended to
``<common git dir>/agent-locks-refusals.jsonl``, trimmed to the newest
``REFUSALS_KEEP`` lines.

Nothing here prints: the command line formats events with :func:`format_event`.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from gitlocks.core.record import format_time, parse_duration
from gitlocks.core.text import printable
from gitlocks.errors import UsageError
from gitlocks.layout import REFUSALS_FILE

if TYPE_CHECKING:  # store imports this module
    import pygit2

    from gitlocks.store.local import Store

Event = dict[str, Any]

DEFAULT_KEEP_EVENTS = 1000
# With an age policy, look for old events once per this many writes.
AGE_CHECK_EVERY = 1000
REFUSALS_KEEP = 1000
# Trim the refusal log when it grows past this size (about 2 * REFUSALS_KEEP lines).
REFUSALS_TRIM_BYTES = 512 * 1024
_SEQ_RE = re.compile(r"^Journal-Seq: (\d+)$", re.MULTILINE)
COMPACTED = "compacted"


# --- commit messages ------------------------------------------------------------------------


def summary(event: Event) -> str:
    paths = " ".join(event.get("paths", []))
    return f"{event.get('event', '?')} {event.get('holder', '')} {paths}".strip()


def message(events: Iterable[Event], seq: int) -> str:
    events = list(events)
    head = "; ".join(summary(e) for e in events) or "update"
    body = "\n".join(json.dumps(e, ensure_ascii=False, sort_keys=True) for e in events)
    return f"{head[:200]}\n\n{body}\n\nJournal-Seq: {seq}\n"


def parse_events(text: str) -> list[Event]:
    """The JSON events of a journal commit message (other lines are skipped)."""
    _, _, body = text.partition("\n\n")
    return _json_objects(body.splitlines())


def _json_objects(lines: Iterable[str]) -> list[Event]:
    """The lines that hold a JSON object, parsed; anything else is skipped."""
    found = []
    for line in lines:
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict):
            found.append(event)
    return found


def parse_seq(text: str) -> int:
    """The ``Journal-Seq`` of a commit message; 0 for one written without it."""
    match = _SEQ_RE.search(text)
    return int(match.group(1)) if match else 0


def is_journal_commit(commit: pygit2.Commit) -> bool:
    """Whether ``commit`` is one of the journal's: an empty tree, at most one parent, and
    a ``Journal-Seq`` trailer. A journal ref moved onto anything else (a project commit,
    say) must start a fresh chain, never chain lock events onto the project's history."""
    try:
        return (
            len(commit.parent_ids) <= 1
            and len(commit.tree) == 0
            and _SEQ_RE.search(commit.message) is not None
        )
    except (KeyError, ValueError, AttributeError):  # a missing tree, an odd message
        return False


# --- retention ------------------------------------------------------------------------------


class KeepPolicy(NamedTuple):
    events: int | None = DEFAULT_KEEP_EVENTS
    seconds: int | None = None

    @classmethod
    def from_config(cls, config_get: Callable[[str], str | None]) -> KeepPolicy:
        text = config_get("alock.journalKeep")
        if text is None or not text.strip():
            return cls()
        text = text.strip()
        if text.isdigit():
            if int(text) < 1:
                raise UsageError("alock.journalKeep must keep at least 1 event")
            return cls(events=int(text))
        return cls(events=None, seconds=parse_duration(text, what="alock.journalKeep"))

    def due(self, seq: int) -> bool:
        """Whether a chain whose newest commit is number ``seq`` should be compacted."""
        if self.events is not None:
            # Commits hold one event or more, so 2N commits hold at least 2N events.
            return seq >= 2 * self.events
        return seq > 0 and seq % AGE_CHECK_EVERY == 0

    def retain(self, newest_first: Iterable[Event], now: datetime) -> tuple[list[Event], bool]:
        """The events to keep, oldest first, and whether anything was dropped."""
        kept: list[Event] = []
        cutoff = (
            None if self.seconds is None else format_time(now - timedelta(seconds=self.seconds))
        )
        dropped = False
        for event in newest_first:
            if self.events is not None and len(kept) >= self.events:
                dropped = True
                break
            if cutoff is not None and str(event.get("at", "")) < cutoff:
                dropped = True
                continue
            kept.append(event)
        kept.reverse()
        return kept, dropped


def compaction_marker(now: datetime, kept: int, previous: str) -> Event:
    return {"event": COMPACTED, "at": format_time(now), "kept": kept, "previous": previous}


# --- reading --------------------------------------------------------------------------------


def events(store: Store, *, limit: int | None = None, since: str | None = None) -> list[Event]:
    """Journal events, newest first, each with the ``commit`` that recorded it.

    ``since`` is an RFC 3339 UTC time: older events are left out. The walk stops at
    ``limit`` events; with ``since`` it reads the whole (bounded) chain, because the
    event times come from writers' clocks and need not increase along the chain.
    """
    found: list[Event] = []
    for entry in store.journal():
        for event in reversed(entry.events):
            if since is not None and str(event.get("at", "")) < since:
                continue
            found.append({**event, "commit": entry.commit})
            if limit is not None and len(found) >= limit:
                return found
    return found


def since_time(text: str, now: datetime) -> str:
    """``--since``: a duration back from now (``2h``, ``1d``) or an RFC 3339 / ISO time."""
    try:
        return format_time(now - timedelta(seconds=parse_duration(text, what="--since")))
    except UsageError:
        pass
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"invalid --since {text!r}: use a duration back from now (15m, 2h, 1d) "
            "or a time such as 2025-01-31 or 2025-01-31T12:00:00Z"
        ) from None
    if moment.tzinfo is None:
        moment = moment.astimezone()  # a time without a zone is local, as in git
    return format_time(moment)


def interleave(shared: list[Event], local: list[Event]) -> list[Event]:
    """Journal events and local refusals in one list, both oldest first.

    Times have one-second resolution, so a refusal is placed by the journal commit it
    was decided against (its ``after``): right after that commit's events. One whose
    commit is not in ``shared`` goes by time, before events of the same second.
    """
    last_of: dict[str, int] = {}
    for i, event in enumerate(shared):
        last_of[str(event.get("commit"))] = i
    slots: dict[int, list[Event]] = {}
    for refusal in local:
        after = refusal.get("after")
        if after is not None and str(after) in last_of:
            slot = last_of[str(after)] + 1
        else:
            at = str(refusal.get("at", ""))
            slot = next(
                (i for i, e in enumerate(shared) if str(e.get("at", "")) >= at), len(shared)
            )
        slots.setdefault(slot, []).append(refusal)
    out: list[Event] = []
    for i in range(len(shared) + 1):
        out += slots.get(i, [])
        if i < len(shared):
            out.append(shared[i])
    return out


def merged(shared: list[Event], local: list[Event], limit: int | None) -> list[Event]:
    """Journal events and local refusals, both given and returned newest first."""
    everything = interleave(shared[::-1], local[::-1])[::-1]
    return everything if limit is None else everything[:limit]


# --- the local refusal log ------------------------------------------------------------------


def refusals_path(store: Store) -> Path:
    return store.common_dir / REFUSALS_FILE


def record_refusal(store: Store, event: Event) -> None:
    """Append a refusal to the local log; best effort, never fails the command."""
    path = refusals_path(store)
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


def _trim(path: Path) -> None:
    # Replace by rename so readers never see a half-written file; a refusal appended
    # between our read and the rename is lost, which a bounded local log can afford.
    lines = path.read_bytes().splitlines(keepends=True)[-REFUSALS_KEEP:]
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(b"".join(lines))
    os.replace(tmp, path)


def refusals(store: Store, *, since: str | None = None) -> list[Event]:
    """Local refusals, newest first."""
    try:
        raw = refusals_path(store).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    found = []
    for line in reversed(raw.splitlines()):
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict) and (since is None or str(event.get("at", "")) >= since):
            found.append(event)
    return found


# --- following ------------------------------------------------------------------------------


def _new_since(store: Store, seen: str | None, version: str) -> list[Event]:
    """Events of commits after ``seen`` up to ``version``, oldest first, each once.

    A compaction between two polls starts a new chain whose root repeats retained events
    (skipped here) and names the old chain's tip as ``previous``: the walk goes on there,
    back to ``seen``, so events written on the old chain after the last poll are not lost
    (its commits survive until gc). Old chains are used only when the walk meets ``seen``
    (or, with nothing seen yet, the chain's true start); otherwise, if ``seen`` is gone or
    another history replaced the journal, only the newest chain is reported.
    """
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
            batches.append([{**e, "commit": entry.commit} for e in entry.events])
        chains.append(batches)
        if met or (seen is None and ended_at_root):
            met = True
            break
        start = previous
    if not met:
        chains = chains[:1]
    return [event for batches in reversed(chains) for batch in reversed(batches) for event in batch]


def follow(
    store: Store,
    *,
    interval: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
    include_refusals: bool = True,
) -> Iterator[list[Event]]:
    """Yield, once per poll, the events journaled (and refused, locally) since the last.

    Forever; an idle poll yields an empty list, so the caller can stop on its own terms.
    Polling is cheap: one ref read per interval, and a walk only when it moved. The
    refusal log is followed by a :class:`RefusalCursor`.
    """
    seen = store.version()
    cursor = RefusalCursor(refusals_path(store))
    first = True
    while True:
        if not first:
            sleep(interval)
        first = False
        batch: list[Event] = []
        version = store.version()
        if version != seen and version is not None:
            batch += _new_since(store, seen, version)
            seen = version
        if include_refusals:
            batch = interleave(batch, cursor.read())
        yield batch


# Lines of the refusal log a cursor remembers, to find its place again after a trim.
_TAIL_LINES = 8
_TAIL_BYTES = 64 * 1024


class RefusalCursor:
    """Where a follower is in the refusal log: a byte offset, and the last lines it read.

    Appends are read from the offset. A trim rewrites the file (a new, shorter file
    renamed over it), so an offset means nothing there: when the bytes before the offset
    are no longer the last line read, the cursor finds its remembered lines in the new
    file and goes on after them. If a trim dropped all of them, every line left is new.
    """

    def __init__(self, path: Path) -> None:
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
        return _json_objects(line.decode("utf-8", "replace") for line in lines)

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


def _read(path: Path, start: int, end: int) -> bytes:
    try:
        with open(path, "rb") as f:
            f.seek(start)
            return f.read(end - start)
    except OSError:
        return b""


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


# --- formatting -----------------------------------------------------------------------------

_DETAIL_KEYS = ("by", "from", "reason", "text", "released", "expires_at", "pid")


def format_event(event: Event) -> str:
    """One line: time, event, holder, paths, details, and the lock id; control
    characters escaped (:func:`gitlocks.core.text.printable`)."""
    kind = str(event.get("event", "?"))
    parts = [str(event.get("at", "?")), kind]
    if event.get("local"):
        parts[1] = f"{kind} (local)"
    if kind == COMPACTED:
        parts.append(f"kept {event.get('kept', '?')} events")
        return printable(" ".join(parts))
    parts.append(str(event.get("holder", "?")))
    parts.append(" ".join(str(p) for p in event.get("paths", [])))
    for key in _DETAIL_KEYS:
        value = event.get(key)
        if value in (None, "", []):
            continue
        if isinstance(value, list):
            value = " ".join(map(str, value))
        parts.append(f'{key} "{value}"' if key in ("reason", "text") else f"{key} {value}")
    for conflict in event.get("conflicts", []):
        if isinstance(conflict, dict):
            held = " ".join(map(str, conflict.get("paths", [])))
            parts.append(f"held {held} by {conflict.get('holder', '?')}")
    if event.get("id"):
        parts.append(f"[lock {event['id']}]")
    # Reasons, notes and paths are user text: escaped, so they cannot forge a line.
    return printable(" ".join(p for p in parts if p))
