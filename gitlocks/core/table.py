"""The lock table: every record under ``refs/agent-locks/`` at one version of the store.

Pure: the store builds a table from refs, the service decides against it. The table keeps
a scope index over every pattern of every record, so that checking a claim costs time in
the number of locks it might cross, not in the number of locks that exist.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from datetime import timedelta

from gitlocks.core.judging import (
    Judged,
    Lost,
    Problem,
    ReadAgain,
    check_record,
    judge_ref,
    read_record,
    record_entries,
)
from gitlocks.core.queue import is_waiter_id, place, waiter_ids
from gitlocks.core.record import LockRecord, format_time, parse_time
from gitlocks.core.scope import ScopeEntry, ScopeIndex, entries_overlap
from gitlocks.core.summaries import Summaries, Summary, Verdict, bucket_of
from gitlocks.errors import StoreError
from gitlocks.layout import LOCK_PREFIX

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import NoReturn


def lazy_table(
    refs: Iterable[tuple[str, str]],
    *,
    known: Mapping[str, Verdict],
    read: Reader,
    version: str | None,
    ignore_case: bool,
    skew: int = 0,
    distrust: Callable[[], None] | None = None,
    judged: Judged | None = None,
    lost: Lost | None = None,
) -> tuple[Table, dict[str, Verdict]]:
    """The one loader of the lock table: of ``(ref, oid)`` lock refs, records read only
    when needed. Returns the table and the new verdicts (by blob id).

    ``known``: verdicts kept by blob id (the other blobs are read in one batch and judged
    now). ``judged``: more refs judged already, which become the table's (a ref in
    ``refs`` too is judged from ``refs``). A record read later that does not match what
    was kept stops the command, after ``distrust`` (which should forget what was kept).
    ``lost`` is told of refs whose blob is missing (docs/design.md, section 4.6): it stops
    on granted claims, or raises ``ReadAgain`` once it put them back.
    """
    refs = list(refs)
    unknown = sorted({oid for _, oid in refs if oid not in known})
    data = read(unknown) if unknown else {}
    fresh: dict[str, Verdict] = {}
    parsed: dict[str, LockRecord] = {}
    cut, get = len(LOCK_PREFIX), known.get
    added: dict[str, Summary] = {}  # put in the table's summaries at once, at the end
    absent: list[tuple[str, str]] = []  # refs whose blob is missing
    if judged is None:
        problems: list[Problem] = []
        summaries = Summaries()
        blobs: dict[str, str] = {}
    else:
        problems, summaries, blobs = judged.problems, judged.summaries, judged.blobs
        again = {ref for ref, _ in refs}
        for ref in again:
            summaries.pop(ref[cut:], None)
            blobs.pop(ref[cut:], None)
        if again and problems:
            problems = [p for p in problems if p.ref not in again]
    for ref, oid in refs:
        lock_id = ref[cut:]
        verdict = get(oid)
        if type(verdict) is Summary and verdict.id == lock_id:  # most of a large table
            blobs[lock_id], added[lock_id] = oid, verdict
            continue
        if verdict is None:
            verdict = fresh.get(oid)
        if verdict is None:
            raw, kind = data.get(oid, (None, "blob"))
            if kind != "blob" or raw is None:
                problems.append(read_record(ref, oid, raw, kind))  # type: ignore[arg-type]
                if raw is None and kind == "blob":
                    absent.append((ref, oid))
                continue
            checked = check_record(raw)
            verdict = fresh[oid] = checked if isinstance(checked, str) else Summary.of(checked)
            if not isinstance(checked, str):
                parsed[lock_id] = checked
        blobs[lock_id] = oid
        found = judge_ref(ref, oid, verdict)
        if isinstance(found, Problem):
            problems.append(found)
        else:
            added[lock_id] = found
    summaries.put_many(added)
    if absent and lost is not None:
        lost(absent)

    def load_many(ids: list[str]) -> dict[str, LockRecord]:
        found = read([blobs[i] for i in ids])
        gone = [i for i in ids if found.get(blobs[i], (None, "blob")) == (None, "blob")]
        if gone and lost is not None:
            try:
                lost([(LOCK_PREFIX + i, blobs[i]) for i in gone])
            except ReadAgain:  # put back
                found.update(read([blobs[i] for i in gone]))
        return _records(ids, found, blobs, summaries, distrust)

    table = Table(
        version=version,
        ignore_case=ignore_case,
        records=LazyRecords(summaries.ids(), load_many, parsed),
        problems=sorted(problems),  # by ref: in whatever order the refs came
        refs=blobs,
        skew=skew,
        summaries=summaries,
    )
    return table, fresh


def _records(
    ids: list[str],
    found: Mapping[str, tuple[bytes | None, str]],
    blobs: Mapping[str, str],
    summaries: Summaries,
    distrust: Callable[[], None] | None,
) -> dict[str, LockRecord]:
    """The records ``ids`` read whole (``found`` by blob), each as was kept of it."""
    records = {}
    for lock_id in ids:
        raw, _ = found.get(blobs[lock_id], (None, "blob"))
        record = check_record(raw) if raw is not None else "its blob is missing"
        if isinstance(record, str):
            _mismatch(lock_id, distrust)
        records[lock_id] = record
    made = {lock_id: Summary.of(record) for lock_id, record in records.items()}
    differing = summaries.differing(made)  # all at once: 10,000 for a listing
    if differing:
        _mismatch(differing[0], distrust)
    return records


def _mismatch(lock_id: str, distrust: Callable[[], None] | None) -> NoReturn:
    """A record read whole is not what was kept of it: forget what was kept, and stop."""
    if distrust is not None:
        distrust()
    raise StoreError(
        f"lock {lock_id} does not match what was kept of it; the kept verdicts "
        "were forgotten: run the command again"
    )


Reader = Callable[[list[str]], dict[str, tuple[bytes | None, str]]]  # oids -> (data, kind)


class LazyRecords(MutableMapping[str, LockRecord]):
    """Records by id, each read (``load_many``, in batches) the first time it is needed."""

    def __init__(
        self,
        ids: Iterable[str],
        load_many: Callable[[list[str]], dict[str, LockRecord]],
        read: Mapping[str, LockRecord] | None = None,
    ) -> None:
        # A set is kept as given (``lazy_table`` gives one made for it): a copy of 10,000
        # ids costs what making the set did.
        self._ids = ids if type(ids) is set else set(ids)
        self._read: dict[str, LockRecord] = dict(read or {})
        self._load_many = load_many

    def __getitem__(self, lock_id: str) -> LockRecord:
        record = self._read.get(lock_id)
        if record is None:
            if lock_id not in self._ids:
                raise KeyError(lock_id)
            record = self._read[lock_id] = self._load_many([lock_id])[lock_id]
        return record

    def prefetch(self, ids: Iterable[str]) -> None:
        """Read every record of ``ids`` not read yet, in one batch."""
        missing = sorted(i for i in ids if i in self._ids and i not in self._read)
        if missing:
            self._read.update(self._load_many(missing))

    def __setitem__(self, lock_id: str, record: LockRecord) -> None:
        self._ids.add(lock_id)
        self._read[lock_id] = record

    def __delitem__(self, lock_id: str) -> None:
        self._ids.remove(lock_id)
        self._read.pop(lock_id, None)

    def __contains__(self, lock_id: object) -> bool:
        return lock_id in self._ids

    def ids(self) -> set[str]:  # every id, unordered (the set itself: never to be changed)
        return self._ids

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._ids))

    def __len__(self) -> int:
        return len(self._ids)


class Table:
    """Records by id, the refs that could not be read, and the store version they came from
    (the serialisation ref's value, compared before every write).

    Records are read whole, and indexed by scope, only for the buckets a question needs
    (docs/design.md, section 4.5): a claim costs time in the locks it might cross.
    """

    __slots__ = (
        "_all_holders",
        "_by_bucket",
        "_by_holder",
        "_index",
        "_indexed",
        "ignore_case",
        "problems",
        "records",
        "refs",
        "skew",
        "summaries",
        "version",
    )

    def __init__(
        self,
        version: str | None = None,
        ignore_case: bool = False,
        records: MutableMapping[str, LockRecord] | None = None,
        problems: list[Problem] | None = None,
        refs: dict[str, str] | None = None,
        skew: int = 0,
        summaries: Summaries | None = None,
    ) -> None:
        self.version = version
        self.ignore_case = ignore_case
        self.records: MutableMapping[str, LockRecord] = {} if records is None else records
        self.problems: list[Problem] = [] if problems is None else problems
        # lock id -> blob id of every lock ref, usable or not: what a write compares.
        self.refs: dict[str, str] = {} if refs is None else refs
        # Seconds a lock outlives its ``expires_at`` here: another machine's clock wrote it.
        self.skew = skew
        if not isinstance(self.records, LazyRecords):
            self.summaries = Summaries({r.id: Summary.of(r) for r in self.records.values()})
        else:
            self.summaries = Summaries() if summaries is None else summaries
            if not self.summaries.has_ids(self.records.ids()):
                raise ValueError("a table of lazily read records needs the summary of each")
        self._index: ScopeIndex = ScopeIndex(ignore_case=ignore_case)
        self._indexed: set[str] = set()
        # Ids by holder and by bucket, each gathered from the summaries when first asked for.
        self._by_holder: dict[str, set[str]] = {}
        self._all_holders = False
        self._by_bucket: dict[str, set[str]] = {}

    def _holder_ids(self, holder: str) -> set[str]:  # the set kept: never changed by callers
        ids = self._by_holder.get(holder)
        if ids is None:
            if self._all_holders:
                return set()
            ids = self.summaries.held_by(holder)
            self._by_holder[holder] = ids
        return ids

    def _holders(self) -> dict[str, set[str]]:  # ids by holder, of every holder
        if not self._all_holders:
            self._by_holder, self._all_holders = self.summaries.by_holder(), True
        return self._by_holder

    def _bucket_ids(self, buckets: set[str]) -> set[str]:  # ids in any of ``buckets``
        wanted = {b for b in buckets if b not in self._by_bucket}
        if wanted:  # gathered in one pass
            self._by_bucket.update(self.summaries.in_buckets(wanted))
        return set().union(*(self._by_bucket[b] for b in buckets))

    def __iter__(self) -> Iterator[LockRecord]:
        return (self.records[i] for i in list(self.records))

    def __len__(self) -> int:
        return len(self.records)

    def get(self, lock_id: str) -> LockRecord | None:
        return self.records.get(lock_id)

    def put(self, record: LockRecord) -> None:
        if record.id in self.records:
            self.remove(record.id)
        self.records[record.id] = record
        summary = self.summaries[record.id] = Summary.of(record)
        if is_waiter_id(record.id):  # a waiter holds no path (core/queue.py)
            return
        self._note(summary)
        self._index_record(record)

    def remove(self, lock_id: str) -> None:
        summary = self.summaries.pop(lock_id, None)
        if lock_id in self.records:
            record = self.records[lock_id] if lock_id in self._indexed else None
            del self.records[lock_id]
            if record is not None:
                for pattern in record.paths:
                    self._index.remove((lock_id, pattern))
        self._indexed.discard(lock_id)
        if summary is None:
            return
        groups = [(self._by_holder, summary.holder)]
        groups += [(self._by_bucket, bucket) for bucket in summary.buckets]
        for group, key in groups:
            ids = group.get(key)
            if ids is not None:
                ids.discard(lock_id)
                if not ids and group is self._by_holder:
                    del group[key]

    def _note(self, summary: Summary) -> None:
        """A new summary, in the groups gathered so far (the others gather it when asked)."""
        holder = self._by_holder.get(summary.holder)
        if holder is not None:
            holder.add(summary.id)
        elif self._all_holders:
            self._by_holder[summary.holder] = {summary.id}
        for bucket in summary.buckets:
            ids = self._by_bucket.get(bucket)
            if ids is not None:
                ids.add(summary.id)

    def _index_record(self, record: LockRecord) -> None:
        for entry in record_entries(record):
            self._index.add((record.id, entry.pattern), entry)
        self._indexed.add(record.id)

    def candidates(self, entries: Iterable[ScopeEntry]) -> set[str]:
        """The ids whose records may cross ``entries``: those of their buckets and of ""."""
        buckets = {bucket_of(e.pattern) for e in entries}
        if "" in buckets:
            return self.summaries.ids() - waiter_ids(self.summaries.ids())
        return self._bucket_ids(buckets | {""})

    def prepare(self, entries: Iterable[ScopeEntry]) -> None:
        """Read, in one batch, and index every record ``entries`` can reach."""
        wanted = sorted(self.candidates(entries) - self._indexed)
        if isinstance(self.records, LazyRecords):
            self.records.prefetch(wanted)
        for lock_id in wanted:
            self._index_record(self.records[lock_id])

    def key(self, pattern: str) -> str:
        """One spelling per scope, for comparing patterns as claims: ``src/api``,
        ``src/api/`` and ``src/api/**`` name the same subtree (docs/design.md, 2.1 rule 4)."""
        while pattern.endswith("/**") and pattern != "**":
            pattern = pattern[: -len("/**")]
        return pattern.casefold() if self.ignore_case else pattern

    def keys(self, patterns: Iterable[str]) -> set[str]:
        return {self.key(p) for p in patterns}

    def landing(self) -> list[LockRecord]:
        """Records waiting for their commits to land in a branch, oldest first."""
        return [self.records[i] for i in sorted(self.summaries.landing())]

    def holders(self) -> list[str]:
        """Every holder with a record in the table (read from summaries alone)."""
        return [h for h, ids in self._holders().items() if ids]

    def held_by(self, holder: str) -> list[LockRecord]:
        return [self.records[i] for i in sorted(self._holder_ids(holder))]

    def parent_of(self, holder: str) -> str | None:
        """The parent a holder declared in any of its records."""
        for lock_id in sorted(self._holder_ids(holder)):
            parent = self.summaries.parent(lock_id)
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
        """Holders with a record whose parent chain leads to ``holder`` (an id may work
        for several leads: each of its records names its own parent)."""
        found: set[str] = set()
        for other, ids in self._holders().items():
            parents = {self.summaries.parent(i) for i in ids}
            if other != holder and any(self.leads_to(p, holder) for p in parents):
                found.add(other)
        return found

    def leads_to(self, parent: str | None, holder: str) -> bool:
        """Whether the parent chain starting at ``parent`` (a record's own ``parent``,
        then what the holders above declared) reaches ``holder``."""
        seen: set[str] = set()
        while parent and parent not in seen and len(seen) < 32:
            if parent == holder:
                return True
            seen.add(parent)
            parent = self.parent_of(parent)
        return False

    def unblocking(self, holder: str, parent: str | None) -> Friends:
        """Whose locks never block ``holder``: its own and its ancestors'. A sub-agent's
        lock does block its parent, so ``check`` and the hooks answer as ``acquire``
        decides."""
        return Friends(self, holder, parent, sub_agents=False)

    def family(self, holder: str, parent: str | None) -> Friends:
        """Whose locks are YOURS to ``holder``: its own, its ancestors', and its
        sub-agents' (each record by its own parent chain)."""
        return Friends(self, holder, parent, sub_agents=True)

    def cutoff(self, now: str) -> str:
        """The ``expires_at`` at or before which a record counts as expired at ``now``."""
        if not self.skew:
            return now
        return format_time(parse_time(now) - timedelta(seconds=self.skew))

    def is_live(self, record: LockRecord, now: str) -> bool:
        return record.expires_at > self.cutoff(now)

    def waiters(self, now: str) -> list[LockRecord]:
        """The unexpired waiters at ``now``, in queue order (place, then id)."""
        cutoff = self.cutoff(now)
        found = [self.records[i] for i in sorted(waiter_ids(self.summaries.ids()))]
        return sorted((w for w in found if w.expires_at > cutoff), key=lambda w: (place(w), w.id))

    def live(self, now: str) -> list[LockRecord]:
        """Unexpired records, oldest first; no waiter (``core/queue.py``)."""
        cutoff = self.cutoff(now)
        live = sorted(
            set(self.summaries.expiring(cutoff, after=True)) - waiter_ids(self.summaries.ids())
        )
        if isinstance(self.records, LazyRecords):
            self.records.prefetch(live)
        return [self.records[i] for i in live]

    def expired(self, now: str) -> list[LockRecord]:
        """Records expired at ``now`` (an RFC 3339 UTC time), allowing for ``skew``."""
        now = self.cutoff(now)  # RFC 3339 UTC strings of one format sort as times
        earliest = self.summaries.earliest()
        if earliest is None or earliest > now:
            return []  # the common case: one pass at C speed
        gone = sorted(self.summaries.expiring(now, after=False))
        return [self.records[i] for i in gone]

    def overlaps(self, entries: Iterable[ScopeEntry]) -> dict[str, list[tuple[str, str]]]:
        """For each record crossing ``entries``: the (entry pattern, record pattern) pairs."""
        entries = list(entries)
        self.prepare(entries)
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


class Friends:
    """Whose locks are a holder's own side, decided per record: the holder's and its
    ancestors' by holder, a sub-agent's by the record's own ``parent`` chain (an id may
    work for two leads: each record says for whom)."""

    def __init__(self, table: Table, holder: str, parent: str | None, *, sub_agents: bool):
        self.holders = {holder, *table.ancestors(holder, parent)}
        self._table = table
        self._holder = holder
        self._sub_agents = sub_agents

    def __contains__(self, record: LockRecord) -> bool:
        if record.holder in self.holders:
            return True
        return self._sub_agents and self._table.leads_to(record.parent, self._holder)


def holding(
    locks: Iterable[LockRecord], friends: Friends
) -> tuple[list[LockRecord], list[LockRecord]]:
    """Split the live locks covering one path into (theirs that hold it against you,
    yours). An exclusive lock of theirs always holds it; their shared locks hold it only
    against someone with no claim there: holding one, you share the path (docs/design.md §3.4)."""
    locks = list(locks)
    mine = [r for r in locks if r in friends]
    theirs = [r for r in locks if r not in friends and not (mine and r.shared)]
    return theirs, mine
