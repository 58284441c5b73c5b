"""Agent lifecycle: is a holder live, stale, dead or interrupted (docs/design.md, sections
3.3 and 3.6), and the writes that follow: rebind, auto-release, resume, clear the dead.

Liveness is judged only on the host that wrote a record, and only for the records a
decision touches, through :class:`Liveness`, which remembers each answer.
"""

from __future__ import annotations

from collections.abc import Iterable

from gitlocks.core.change import Change
from gitlocks.core.judging import record_entries
from gitlocks.core.liveness import Liveness
from gitlocks.core.record import LockRecord, expiry_from, format_time
from gitlocks.core.scope import WHOLE_TREE, ScopeEntry, entry_covers, literal_part
from gitlocks.core.table import Table
from gitlocks.errors import GitlocksError
from gitlocks.service.context import Context, drop, put
from gitlocks.service.results import Conflict, ResumeResult

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from datetime import datetime

    from gitlocks.core.liveness import State

# --- "the same scope" -----------------------------------------------------------------------


def _entry_contains(outer: ScopeEntry, inner: ScopeEntry, ignore_case: bool) -> bool:
    """Whether outer's scope contains inner's, under-approximated: the same pattern
    (``src/api`` and ``src/api/**`` are one), or an outer pattern covering the directory
    inner starts with before its first wildcard (``src``, ``src/*`` and ``**`` contain
    ``src/api/*.py``: a pattern covers everything beneath what it matches)."""
    fold = str.casefold if ignore_case else str
    if fold(outer.pattern.removesuffix("/**")) == fold(inner.pattern.removesuffix("/**")):
        return outer.exact <= inner.exact or not inner.exact
    if outer.pattern == WHOLE_TREE:
        return True
    if outer.exact:
        return False  # one file contains only itself, handled above
    base = "/".join(literal_part(inner.pattern))
    if not base:
        return False
    # A non-exact pattern covering a path covers everything beneath it (DESIGN rule 4).
    return entry_covers(outer, base, ignore_case=ignore_case)


def covers_scope(claim: Iterable[ScopeEntry], record: LockRecord, ignore_case: bool) -> bool:
    """Whether a claim asks for the whole of a lock's scope, its "same scope": every pattern
    of the lock is contained in one of the claim's (docs/design.md, section 3.6). Containment
    is under-approximated (``_entry_contains``); a claim it misses is treated as narrower
    and passes the interrupted work by."""
    claim = list(claim)
    return all(
        any(_entry_contains(c, mine, ignore_case) for c in claim) for mine in record_entries(record)
    )


def within(entry: ScopeEntry, record: LockRecord, ignore_case: bool) -> bool:
    """Whether ``entry``'s scope lies inside one pattern of ``record`` (under-approximated
    as ``covers_scope`` is: a part it misses is treated as outside)."""
    return any(_entry_contains(mine, entry, ignore_case) for mine in record_entries(record))


def rebind(ctx: Context, record: LockRecord, life: Liveness) -> LockRecord:
    """My own lock, left by a dead session of mine (same id, restarted): made mine again, else
    the next writer would release as dead the lock it was told is ALREADY YOURS."""
    session = ctx.identity.session
    if (record.pid, record.pid_start) == (session.pid, session.start_time):
        return record
    return record.with_changes(**ctx.session_fields()) if life.dead(record) else record


# --- resume ----------------------------------------------------------------------------------


def _candidates(table: Table, target: str | ScopeEntry, ignore_case: bool) -> list[LockRecord]:
    """Locks named by id, holding the pattern, or whose whole scope the pattern covers."""
    if isinstance(target, str):
        record = table.get(target)
        return [record] if record is not None else []
    found = []
    for lock_id in sorted(table.overlaps([target])):
        record = table.records[lock_id]
        if target.pattern in record.paths or covers_scope([target], record, ignore_case):
            found.append(record)
    return found


def resume(ctx: Context, target: str | ScopeEntry, *, ttl: int) -> ResumeResult:
    """Take over a dead holder's lock (interrupted work) with its notes."""
    ident = ctx.identity

    def decide(table: Table, now: datetime, change: Change, gone: set[str]) -> ResumeResult:
        life = ctx.liveness()
        candidates = [r for r in _candidates(table, target, table.ignore_case) if r.id not in gone]
        dead = [r for r in candidates if r.holder != ident.holder and life.dead(r)]
        if not dead:
            held = [r for r in candidates if r.holder != ident.holder]
            return ResumeResult("held" if held else "not_locked", held=held)
        taken = dead[0]
        elders = set(table.ancestors(ident.holder, ident.parent))
        conflicts = []
        for lock_id, pairs in sorted(table.overlaps(record_entries(taken)).items()):
            other = table.records[lock_id]
            if lock_id in gone or other.id == taken.id or other.holder == ident.holder:
                continue
            if other.holder in elders or life.dead(other):
                continue
            if taken.shared and other.shared:
                continue  # shared work crosses only exclusive claims, as in acquire
            conflicts.append(Conflict(other, pairs, state=life.state(other)))
        if conflicts:
            return ResumeResult("refused", previous=taken, conflicts=conflicts)
        branch, head = ctx.store.head_info()
        lock = taken.with_changes(
            holder=ident.holder,
            parent=ident.parent,
            renewed_at=format_time(now),
            expires_at=expiry_from(now, ttl),
            **ctx.session_fields(),
            worktree=str(ctx.store.root),
            branch=branch,
            head=head,
            awaiting=(),  # the commits it waited for were the previous holder's, elsewhere
        )
        put(change, "resumed", lock, now, by=ident.holder, **{"from": taken.holder})
        return ResumeResult("resumed", lock=lock, previous=taken)

    return ctx.write(decide)


# --- reading ---------------------------------------------------------------------------------


def clear_dead_before_listing(ctx: Context) -> None:
    """Before a listing, in local mode: ``clear_dead`` (docs/design.md, section 3.3). A
    listing still answers, with a warning, when that write fails (a read-only git directory)."""
    if ctx.store.config_get("alock.remote"):
        return
    table = ctx.store.read_table()
    life, now = ctx.liveness(), format_time(ctx.now())
    dead = any(life.state(r) == "dead" for r in table.live(now))
    if not dead and not any(map(life.dead, table.waiters(now))):
        return
    try:
        clear_dead(ctx)
    except GitlocksError as exc:
        ctx.warnings.append(f"dead holders' locks were not cleared: {exc}")


def clear_dead(ctx: Context) -> list[LockRecord]:
    """Release the dead holders' note-less locks in one write, journaled ``auto_released`` by
    whoever asked, and take dead waiters out of the queue (``left_queue``, ``why: dead``)."""

    def decide(table: Table, now: datetime, change: Change, gone: set[str]) -> list[LockRecord]:
        life = ctx.liveness()
        cleared = []
        for record in table.live(format_time(now)):
            if record.id not in gone and life.state(record) == "dead":
                by = ctx.identity.holder
                drop(change, gone, "auto_released", record, now, pid=record.pid, by=by)
                cleared.append(record)
        for waiter in table.waiters(format_time(now)):  # a waiter killed: out of the queue
            if waiter.id not in gone and life.dead(waiter):
                drop(change, gone, "left_queue", waiter, now, why="dead", by=ctx.identity.holder)
        return cleared

    return ctx.write(decide)


def states(ctx: Context, records: Iterable[LockRecord]) -> dict[str, State]:
    """The state of each record, by id (for listings: judges every record given)."""
    life = ctx.liveness()
    return {r.id: life.state(r) for r in records}
