"""The lock table: every record under ``refs/agent-locks/`` at one version of the store.

Pure: the store builds a table from refs, the service decides against it. The table keeps
a scope index over every pattern of every record, so that checking a claim costs time in
the number of locks it might cross, not in the number of locks that exist.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import NamedTuple

from gitlocks.core.record import LockRecord, RecordError, format_time, parse_time, validate_holder
from gitlocks.core.scope import ScopeEntry, ScopeIndex, entries_overlap
from gitlocks.errors import InvalidHolder, InvalidPattern
from gitlocks.layout import LOCK_PREFIX

Key = tuple[str, str]  # (lock id, pattern)


class Problem(NamedTuple):
    """A ref under the lock namespace that is not a usable lock record."""

    ref: str
    oid: str
    reason: str


def read_record(ref: str, oid: str, data: bytes | None, kind: str = "blob") -> LockRecord | Problem:
    """The record a lock ref points at, or the problem that makes it unusable.

    The one place a record read from a ref is judged, for the store, the remote and the
    hooks alike: one bad record (anyone can write one) is reported and skipped, and never
    stops a command (docs/design.md, section 3).
    """

    def problem(reason: str) -> Problem:
        return Problem(ref=ref, oid=oid, reason=reason)

    if kind != "blob":
        return problem(f"points at a {kind}, not a lock record blob")
    if data is None:
        return problem("points at a missing object")
    try:
        record = LockRecord.from_json(data)
    except RecordError as exc:
        return problem(str(exc))
    if record.id != ref[len(LOCK_PREFIX) :]:
        return problem(f"record id {record.id!r} does not match its ref")
    try:
        validate_holder(record.holder, what="holder")
        record_entries(record)
    except (InvalidPattern, InvalidHolder) as exc:
        return problem(str(exc))
    return record


def load_table(
    found: Iterable[tuple[str, str, bytes | None, str]],
    *,
    version: str | None,
    ignore_case: bool,
    skew: int = 0,
) -> Table:
    """A table from ``(ref, oid, data, kind)`` of each lock ref: the one table loader."""
    records: dict[str, LockRecord] = {}
    problems: list[Problem] = []
    for ref, oid, data, kind in found:
        read = read_record(ref, oid, data, kind)
        if isinstance(read, Problem):
            problems.append(read)
        else:
            records[read.id] = read
    return Table(
        version=version, ignore_case=ignore_case, records=records, problems=problems, skew=skew
    )


def record_entries(record: LockRecord) -> list[ScopeEntry]:
    exact = set(record.exact)
    return [ScopeEntry(p, exact=p in exact) for p in record.paths]


@dataclass
class Table:
    """Records by id, the refs that could not be read, and the store version they came from.

    ``version`` is the serialisation ref's value when the table was read: the store
    compares it before every write, and uses it to know when a cached table is current.
    """

    version: str | None = None
    ignore_case: bool = False
    records: dict[str, LockRecord] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    # lock id -> object id of every blob under the lock namespace (usable or not): what a
    # write compares and what the journal commit's table tree holds.
    refs: dict[str, str] = field(default_factory=dict)
    # Seconds a lock outlives its ``expires_at`` here: in remote mode another machine's
    # clock wrote it, so nobody treats it as expired until this allowance has passed too.
    skew: int = 0
    _index: ScopeIndex[Key] = field(init=False, repr=False)
    _by_holder: dict[str, set[str]] = field(init=False, repr=False)
    # (expires_at, id), lazily pruned: RFC 3339 UTC strings of one format sort as times.
    _expiry: list[tuple[str, str]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._index = ScopeIndex(ignore_case=self.ignore_case)
        self._by_holder = {}
        self._expiry = []
        for record in self.records.values():
            self._index_record(record)

    def __iter__(self) -> Iterator[LockRecord]:
        return iter(self.records.values())

    def __len__(self) -> int:
        return len(self.records)

    def get(self, lock_id: str) -> LockRecord | None:
        return self.records.get(lock_id)

    def put(self, record: LockRecord) -> None:
        if record.id in self.records:
            self.remove(record.id)
        self.records[record.id] = record
        self._index_record(record)

    def remove(self, lock_id: str) -> None:
        record = self.records.pop(lock_id, None)
        if record is not None:
            for pattern in record.paths:
                self._index.remove((lock_id, pattern))
            ids = self._by_holder.get(record.holder)
            if ids is not None:
                ids.discard(lock_id)
                if not ids:
                    del self._by_holder[record.holder]

    def _index_record(self, record: LockRecord) -> None:
        for entry in record_entries(record):
            self._index.add((record.id, entry.pattern), entry)
        self._by_holder.setdefault(record.holder, set()).add(record.id)
        heapq.heappush(self._expiry, (record.expires_at, record.id))

    def key(self, pattern: str) -> str:
        """One spelling per scope, for comparing patterns as claims: ``src/api``,
        ``src/api/`` and ``src/api/**`` name the same subtree (docs/design.md, 2.1 rule 4)."""
        while pattern.endswith("/**") and pattern != "**":
            pattern = pattern[: -len("/**")]
        return pattern.casefold() if self.ignore_case else pattern

    def keys(self, patterns: Iterable[str]) -> set[str]:
        return {self.key(p) for p in patterns}

    def held_by(self, holder: str) -> list[LockRecord]:
        return sorted(
            (self.records[i] for i in self._by_holder.get(holder, ())), key=lambda r: r.id
        )

    def parent_of(self, holder: str) -> str | None:
        """The parent a holder declared in any of its records."""
        for lock_id in self._by_holder.get(holder, ()):
            parent = self.records[lock_id].parent
            if parent:
                return parent
        return None

    # --- families: a holder's own locks, its ancestors' and its sub-agents' ---------------

    def ancestors(self, holder: str, parent: str | None) -> list[str]:
        """The parent, its parent, ...: given for the asker, declared by records above."""
        chain: list[str] = []
        while parent and parent not in chain and parent != holder and len(chain) < 32:
            chain.append(parent)
            parent = self.parent_of(parent)
        return chain

    def descendants(self, holder: str) -> set[str]:
        """Holders whose parent chain in the table leads to ``holder``."""
        found: set[str] = set()
        for other in self._by_holder:
            seen: set[str] = set()
            parent = self.parent_of(other)
            while parent and parent not in seen:
                if parent == holder:
                    found.add(other)
                    break
                seen.add(parent)
                parent = self.parent_of(parent)
        found.discard(holder)
        return found

    def family(self, holder: str, parent: str | None) -> set[str]:
        """Holders whose locks are YOURS to ``holder``: itself, ancestors, descendants."""
        return {holder, *self.ancestors(holder, parent)} | self.descendants(holder)

    def cutoff(self, now: str) -> str:
        """The ``expires_at`` at or before which a record counts as expired at ``now``."""
        if not self.skew:
            return now
        return format_time(parse_time(now) - timedelta(seconds=self.skew))

    def is_live(self, record: LockRecord, now: str) -> bool:
        return record.expires_at > self.cutoff(now)

    def live(self, now: str) -> list[LockRecord]:
        """Unexpired records, oldest first."""
        cutoff = self.cutoff(now)
        return sorted((r for r in self if r.expires_at > cutoff), key=lambda r: r.id)

    def expired(self, now: str) -> list[LockRecord]:
        """Records expired at ``now`` (an RFC 3339 UTC time), allowing for ``skew``."""
        now = self.cutoff(now)
        heap = self._expiry
        while heap:
            stamp, lock_id = heap[0]
            record = self.records.get(lock_id)
            if record is not None and record.expires_at == stamp:
                break
            heapq.heappop(heap)  # released or renewed since: a dead heap entry
        if not heap or heap[0][0] > now:
            return []
        return [r for r in self.records.values() if r.expires_at <= now]

    def overlaps(self, entries: Iterable[ScopeEntry]) -> dict[str, list[tuple[str, str]]]:
        """For each record crossing ``entries``: the (entry pattern, record pattern) pairs."""
        found: dict[str, list[tuple[str, str]]] = {}
        for entry in entries:
            for lock_id, pattern in self._index.overlapping(entry):
                found.setdefault(lock_id, []).append((entry.pattern, pattern))
        return found

    def covering(self, entry: ScopeEntry) -> dict[str, list[str]]:
        """Records whose scope crosses one path's entry, with the patterns that do."""
        return {lid: [t for _, t in pairs] for lid, pairs in self.overlaps([entry]).items()}

    def scopes_overlap(self, a: Iterable[ScopeEntry], b: Iterable[ScopeEntry]) -> bool:
        b = list(b)
        return any(entries_overlap(x, y, ignore_case=self.ignore_case) for x in a for y in b)
