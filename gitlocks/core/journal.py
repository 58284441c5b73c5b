"""The journal's format: events, commit messages, sequence numbers and retention
(docs/design.md, section 4.4). Pure: the store writes and reads journal commits.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta, timezone
from functools import lru_cache

from gitlocks.core.digest import sha1_hex
from gitlocks.core.record import format_time, parse_duration
from gitlocks.core.text import first_control, is_digits, printable
from gitlocks.core.value import Value
from gitlocks.errors import UsageError

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    Event: TypeAlias = dict[str, Any]


DEFAULT_KEEP_EVENTS = 1000
AGE_CHECK_EVERY = 1000  # with an age policy, look for old events once per this many writes
_SEQ_TRAILER = "Journal-Seq: "

COMPACTED = "compacted"
# A remote's lock ref put back as its table says: no holder's act, ``log`` names none.
REPAIRED = "repaired"
# The first event of a sharded table's local view commit (the shards' tips), never shown.
VIEW_EVENT = "shard_view"

# A journal commit's tree is the table: this marker blob as ``format``, and each lock's
# record at ``locks/<shard_of(id)>/<id>``.
TABLE_MARKER = b"gitlocks lock table, format 1\n"


@lru_cache(maxsize=1 << 16)
def shard_of(lock_id: str) -> str:
    """The subtree of ``locks/`` a lock sits in: two hex digits of a hash of its id."""
    return sha1_hex(lock_id.encode())[:2]


def summary(event: Event) -> str:
    paths = event.get("paths")
    named = " ".join(p for p in paths if isinstance(p, str)) if isinstance(paths, list) else ""
    return f"{event.get('event', '?')} {event.get('holder', '')} {named}".strip()


def message(events: Iterable[Event], seq: int) -> str:
    """A journal commit's message. The events may be another clone's, kept through a
    compaction or a view: whatever they hold, the message is UTF-8 and its first line one
    line (a hostile event must not stop every later write)."""
    events = list(events)
    head = ("; ".join(summary(e) for e in events) or "update")[:200]
    if first_control(head) is not None:  # a line break, a lone surrogate
        head = printable(head)
    body = "\n".join(map(_line, events))
    return f"{head}\n\n{body}\n\nJournal-Seq: {seq}\n"


def _line(event: Event) -> str:
    """One event as the line that carries it: every character escaped where one of them
    is a lone surrogate (spelled by an escape), which no UTF-8 message holds."""
    line = json.dumps(event, ensure_ascii=False, sort_keys=True)
    if not line.isascii():
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(event, sort_keys=True)
    return line


def parse_events(text: str) -> list[Event]:
    """The JSON events of a journal commit message (other lines are skipped)."""
    _, _, body = text.partition("\n\n")
    # "\n" only: an event's text may hold U+2028, U+2029 or U+0085, written as they are,
    # which splitlines() would also break the line at (and the event be lost).
    return json_objects(body.split("\n"))


def json_objects(lines: Iterable[str]) -> list[Event]:
    """The lines that hold a JSON object, parsed; anything else is skipped."""
    found = []
    for line in lines:
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or a hostile number or nesting
            continue
        if isinstance(event, dict):
            found.append(event)
    return found


def parse_seq(text: str) -> int:
    """The ``Journal-Seq`` of a commit message; 0 for one written without it."""
    digits = _seq_digits(text)
    return int(digits) if digits is not None else 0


def _seq_digits(text: str) -> str | None:
    """The number of the first line ``Journal-Seq: <digits>``. At most 18 digits: a
    longer number is no journal of ours (and would not even parse)."""
    for line in text.split("\n"):
        if line.startswith(_SEQ_TRAILER):
            digits = line[len(_SEQ_TRAILER) :]
            if 0 < len(digits) <= 18 and digits.isdecimal():
                return digits
    return None


def is_journal_commit(parents: int, tree_entries: int, message: str) -> bool:
    """Whether a commit is one of the journal's: an empty tree, at most one parent, and a
    ``Journal-Seq`` trailer. A journal ref moved onto anything else (a project commit,
    say) must start a fresh chain, never chain lock events onto the project's history."""
    return parents <= 1 and tree_entries == 0 and _seq_digits(message) is not None


class KeepPolicy(Value):
    __slots__ = ("events", "seconds")

    def __init__(
        self,
        events: int | None = DEFAULT_KEEP_EVENTS,
        seconds: int | None = None,
    ) -> None:
        self.events = events
        self.seconds = seconds

    @classmethod
    def from_config(cls, config_get: Callable[[str], str | None]) -> KeepPolicy:
        text = config_get("alock.journalKeep")
        if text is None or not text.strip():
            return cls()
        text = text.strip()
        if is_digits(text):
            if len(text) > 9:
                raise UsageError(f"alock.journalKeep {text[:20]!r}... is too large a count")
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
    try:
        if moment.tzinfo is None:
            moment = moment.astimezone()  # a time without a zone is local, as in git
        moment = moment.astimezone(timezone.utc)
    except (OverflowError, ValueError, OSError):  # at datetime's very ends
        moment = datetime(1970 if moment.year < 2000 else 9000, 1, 1, tzinfo=timezone.utc)
    if not 1970 <= moment.year <= 9000:  # before, or after, every event
        moment = datetime(1970 if moment.year < 1970 else 9000, 1, 1, tzinfo=timezone.utc)
    return format_time(moment)


def interleave(shared: list[Event], local: list[Event]) -> list[Event]:
    """Journal events and local refusals in one list, both oldest first: a refusal right
    after the events of the commit it was decided against (``after``; times have whole
    seconds), else by time, before events of the same second."""
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
