"""What a decision needs of each record before reading it whole: its ``Summary``, and the
``Summaries`` of a table, by lock id.

A large table judged from the kept verdicts (``gitlocks.git.cache``) arrives as columns,
and a claim asks only a few questions of them, each one pass over one column: so
``Summaries`` keeps the columns, makes one id's summary when asked, and keeps beside them
those put since (docs/design.md, section 4.5).
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from operator import attrgetter

from gitlocks.core.glob import compile_pattern
from gitlocks.core.queue import waiter_ids
from gitlocks.errors import InvalidPattern

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import NamedTuple

    from gitlocks.core.record import LockRecord

    class _Row(NamedTuple):
        id: str
        holder: str
        parent: str | None
        expires_at: str
        buckets: tuple[str, ...]
        landing: bool = False

else:  # the stdlib's named tuple, without loading typing
    _Row = namedtuple("_Row", "id holder parent expires_at buckets landing", defaults=(False,))


class Summary(_Row):
    """What the table needs of a record before reading it whole: who holds it until when,
    its patterns' buckets (``bucket_of``), and whether it waits for commits to land (every
    write asks, so it must find those without reading the others). A tuple, as the verdict
    cache stores a row: thousands are made on every read of a large table."""

    __slots__ = ()

    @classmethod
    def of(cls, record: LockRecord) -> Summary:
        buckets = tuple(sorted({bucket_of(p) for p in record.paths}))
        landing = bool(record.until_merged and record.awaiting)
        return cls(record.id, record.holder, record.parent, record.expires_at, buckets, landing)


Verdict = Summary | str  # what a blob holds: a record's summary, or why it is none

# The columns of ``Summaries.of_columns``: ids, holders, parents, expiries, the buckets of
# each joined by newlines (a pattern holds none), and whether each waits on a merge.
Columns = tuple[list[str], list[str], list["str | None"], list[str], list[str], list[bool]]


def bucket_of(pattern: str) -> str:
    """The first segment every path ``pattern`` covers starts with, case-folded; "" when
    it may start with anything. Two patterns in different non-empty buckets never overlap,
    so a question only reads the records of its own bucket and of ""."""
    try:  # normalised first: "./src", "lib/../src" and "src" name one subtree
        prefix = compile_pattern(pattern, False).prefix
    except InvalidPattern:
        return ""
    return prefix[0].casefold() if prefix else ""


class Summaries(MutableMapping[str, Summary]):
    """Summaries by lock id: columns as decoded, and the summaries put since.

    An id put (or deleted) that the columns hold is marked gone there, so each id is in
    one place at most, and every answer below counts the columns' ids less those gone.
    """

    def __init__(self, put: Mapping[str, Summary] | None = None) -> None:
        self._extra: dict[str, Summary] = dict(put or {})
        self._ids: list[str] = []
        self._holders: list[str] = []
        self._parents: list[str | None] = []
        self._expiries: list[str] = []
        self._buckets: list[str] = []
        self._landing: list[bool] = []
        self._gone: set[str] = set()  # ids of the columns deleted or put since
        self._rows: dict[str, int] | None = None  # id -> row, made on the first look-up

    @classmethod
    def of_columns(cls, columns: Columns) -> Summaries:
        """Summaries of ``columns`` (checked by the caller: lists of one length, of the
        types named, no id twice)."""
        new = cls()
        new._ids, new._holders, new._parents, new._expiries, new._buckets, new._landing = columns
        return new

    # --- the mapping --------------------------------------------------------------------

    def _row_index(self) -> dict[str, int]:
        rows = self._rows
        if rows is None:
            rows = self._rows = dict(zip(self._ids, range(len(self._ids)), strict=True))
        return rows

    def _row(self, lock_id: str) -> int | None:
        row = self._row_index().get(lock_id)
        return None if row is None or lock_id in self._gone else row

    def _made(self, row: int) -> Summary:
        buckets = tuple(self._buckets[row].split("\n"))
        return Summary(
            self._ids[row],
            self._holders[row],
            self._parents[row],
            self._expiries[row],
            buckets,
            self._landing[row],
        )

    def differing(self, made: Mapping[str, Summary]) -> list[str]:
        """The ids of ``made`` whose summary is not the one held here (or none is): each
        compared with its row where it has one, no summary made of the row (a listing of
        10,000 records read whole checks them all)."""
        extra, rows, gone = self._extra, self._row_index(), self._gone
        ids, holders, parents = self._ids, self._holders, self._parents
        expiries, buckets, landing = self._expiries, self._buckets, self._landing
        found = []
        for lock_id, summary in made.items():
            held = extra.get(lock_id)
            if held is not None:
                if held != summary:
                    found.append(lock_id)
                continue
            row = rows.get(lock_id)
            if (
                row is None
                or lock_id in gone
                or summary.id != ids[row]
                or summary.holder != holders[row]
                or summary.parent != parents[row]
                or summary.expires_at != expiries[row]
                or summary.landing != landing[row]
                or summary.buckets != tuple(buckets[row].split("\n"))
            ):
                found.append(lock_id)
        return found

    def __getitem__(self, lock_id: str) -> Summary:
        found = self._extra.get(lock_id)
        if found is not None:
            return found
        row = self._row(lock_id)
        if row is None:
            raise KeyError(lock_id)
        return self._made(row)

    def __setitem__(self, lock_id: str, summary: Summary) -> None:
        if lock_id not in self._extra and self._row(lock_id) is not None:
            self._gone.add(lock_id)
        self._extra[lock_id] = summary

    def put_many(self, summaries: Mapping[str, Summary]) -> None:
        """Put every one of ``summaries`` at once (a table's loose refs, by thousands)."""
        if not summaries:
            return  # most reads of a large table: no loose ref beside the packed ones
        if self._ids:
            self._gone.update(summaries.keys() & self._row_index().keys())
        if self._extra or self._ids:
            self._extra.update(summaries)
        else:  # none at all (the remote's table): a copy of a dict is one block of C
            self._extra = dict(summaries)

    def __delitem__(self, lock_id: str) -> None:
        if lock_id in self._extra:
            del self._extra[lock_id]  # a row of the columns under it is gone already
        elif self._row(lock_id) is not None:
            self._gone.add(lock_id)
        else:
            raise KeyError(lock_id)

    def __contains__(self, lock_id: object) -> bool:
        if lock_id in self._extra:
            return True
        return isinstance(lock_id, str) and self._row(lock_id) is not None

    def __len__(self) -> int:
        return len(self._ids) - len(self._gone) + len(self._extra)

    def __iter__(self) -> Iterator[str]:
        # The ids there when iteration starts, each yielded while it is still there (one put
        # again, moved from the columns to those put since, is not yielded twice).
        gone, extra = self._gone, self._extra
        rows = self._row_index() if self._ids else {}
        ids = [i for i in self._ids if i not in gone] if gone else list(self._ids)
        ids += extra
        return (i for i in ids if i in extra or (i in rows and i not in gone))

    # --- the questions of a decision, each a pass over a column ----------------------------

    def _live(self, column: list[str]) -> Iterator[tuple[str, str]]:
        """(id, value) of the columns' rows not gone."""
        pairs = zip(self._ids, column, strict=True)
        if not self._gone:
            return pairs
        gone = self._gone
        return (pair for pair in pairs if pair[0] not in gone)

    def ids(self) -> set[str]:
        if not self._ids:
            return set(self._extra)
        found = set(self._ids)
        found -= self._gone
        found.update(self._extra)
        return found

    def has_ids(self, ids: set[str]) -> bool:
        """Whether the ids of these summaries are ``ids``, no more, no fewer."""
        if not self._ids:
            return self._extra.keys() == ids  # no set made
        return len(self) == len(ids) and self.ids() == ids

    # The questions of who holds what (by holder, by bucket) leave waiters out: a waiter
    # holds no path (``core/queue.py``). Their few ids are dropped from each answer.

    def held_by(self, holder: str) -> set[str]:
        """The ids ``holder`` holds."""
        found = {i for i, h in zip(self._ids, self._holders, strict=True) if h == holder}
        found -= self._gone
        found.update(i for i, s in self._extra.items() if s.holder == holder)
        return _no_waiters(found)

    def by_holder(self) -> dict[str, set[str]]:
        """The ids of every holder, holders in the order they come."""
        groups: dict[str, set[str]] = {}
        for lock_id, holder in self._live(self._holders):
            groups.setdefault(holder, set()).add(lock_id)
        for lock_id, summary in self._extra.items():
            groups.setdefault(summary.holder, set()).add(lock_id)
        waiting = waiter_ids(self.ids())
        return {h: ids - waiting for h, ids in groups.items()} if waiting else groups

    def in_buckets(self, wanted: set[str]) -> dict[str, set[str]]:
        """The ids with a pattern in each bucket of ``wanted``."""
        found: dict[str, set[str]] = {b: set() for b in wanted}
        for lock_id, text in zip(self._ids, self._buckets, strict=True):
            if "\n" not in text:  # one bucket: most records
                if text in found:
                    found[text].add(lock_id)
                continue
            for bucket in text.split("\n"):
                if bucket in found:
                    found[bucket].add(lock_id)
        if self._gone:
            for ids in found.values():
                ids -= self._gone
        for lock_id, summary in self._extra.items():
            for bucket in summary.buckets:
                if bucket in found:
                    found[bucket].add(lock_id)
        return {b: _no_waiters(ids) for b, ids in found.items()}

    def landing(self) -> list[str]:
        """The ids of records waiting for their commits to land."""
        found = []
        if True in self._landing:
            rows = zip(self._ids, self._landing, strict=True)
            found = [i for i, w in rows if w and i not in self._gone]
        return found + [i for i, s in self._extra.items() if s.landing]

    def parent(self, lock_id: str) -> str | None:
        """The parent the record of ``lock_id`` names (KeyError when none is held)."""
        found = self._extra.get(lock_id)
        if found is not None:
            return found.parent
        row = self._row(lock_id)
        if row is None:
            raise KeyError(lock_id)
        return self._parents[row]

    def expiring(self, cutoff: str, *, after: bool) -> list[str]:
        """The ids whose ``expires_at`` is after ``cutoff`` (``after``), else at or before it
        (RFC 3339 UTC strings of one format sort as times)."""
        found = [i for i, e in self._live(self._expiries) if (e > cutoff) == after]
        return found + [i for i, s in self._extra.items() if (s.expires_at > cutoff) == after]

    def earliest(self) -> str | None:
        """The earliest ``expires_at`` (None for no summary at all)."""
        return self._bound(min)

    def latest(self) -> str | None:
        """The latest ``expires_at`` (None for no summary at all)."""
        return self._bound(max)

    def _bound(self, pick: Callable[..., str | None]) -> str | None:
        """``pick`` (``min`` or ``max``) of every ``expires_at``, at C speed."""
        extra = pick(map(_expires_at, self._extra.values()), default=None)
        if not self._ids:
            return extra  # a table of no columns (the remote's, a small one)
        column = (e for _, e in self._live(self._expiries)) if self._gone else self._expiries
        found = pick(column, default=None)
        return pick((e for e in (found, extra) if e is not None), default=None)


_expires_at = attrgetter("expires_at")


def _no_waiters(ids: set[str]) -> set[str]:
    """``ids`` less the waiters' (the set itself when it holds none: most answers)."""
    waiting = waiter_ids(ids)
    return ids - waiting if waiting else ids
