"""The queue of waiters, as a claim's decision meets it (docs/design.md, section 4.7):
who stands before a claim (``ahead``), a waiter's record (``waiter``), and whether its
waiting closes a cycle it is the one to be told of (``deadlock``). Pure functions of the
table, like every decision."""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from gitlocks.core import queue
from gitlocks.core.judging import record_entries
from gitlocks.core.record import LockRecord, format_time, parse_time
from gitlocks.core.scope import ScopeEntry, entries_overlap
from gitlocks.core.table import Table
from gitlocks.identity import process_start_time
from gitlocks.service import lifecycle
from gitlocks.service.context import Context, drop
from gitlocks.service.results import Conflict

GRACE_SECONDS = 10  # a waiter's record outlives its wait by this much
# A waiter's record lives at most this long unless its process renews it, as a holder's
# claim lives by its TTL: one on a machine that crashed, which nobody else can judge dead,
# leaves the queue within this, not at the end of a wait of days (docs/design.md §4.7).
WAITER_LIFE_SECONDS = 5 * 60


def waiter_expiry(now: datetime, deadline: datetime) -> datetime:
    """When a waiter's record written or renewed at ``now`` expires: a life from now, never
    past a little after the end of its wait."""
    return min(
        now + timedelta(seconds=WAITER_LIFE_SECONDS), deadline + timedelta(seconds=GRACE_SECONDS)
    )


def renewal(record: LockRecord, now: datetime, deadline: datetime) -> LockRecord | None:
    """The waiter's record renewed, once half its life is gone (and it could live longer);
    else None. In remote mode a renewal is a push: one every few minutes of a long wait."""
    expires = waiter_expiry(now, deadline)
    try:
        left = (parse_time(record.expires_at) - now).total_seconds()
    except ValueError:
        left = 0.0  # a time this version cannot read: written anew
    if left > WAITER_LIFE_SECONDS / 2 or format_time(expires) <= record.expires_at:
        return None
    return record.with_changes(expires_at=format_time(expires), renewed_at=format_time(now))


def lapsed(record: LockRecord, now: datetime, deadline: datetime) -> bool:
    """Whether a waiter gone from the table went by its own expiry (its process could not
    renew it) while its wait is not out: it joins the queue again. One broken ends its wait."""
    try:
        return parse_time(record.expires_at) <= now < deadline
    except ValueError:
        return False


TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from gitlocks.core.change import Change
    from gitlocks.core.liveness import Liveness


def crossing(table: Table, entries: list[ScopeEntry], record: LockRecord) -> list[tuple[str, str]]:
    """The (entry pattern, record pattern) pairs where ``entries`` cross ``record``."""
    theirs = record_entries(record)
    return [
        (e.pattern, t.pattern)
        for e in entries
        for t in theirs
        if entries_overlap(e, t, ignore_case=table.ignore_case)
    ]


def ahead(
    ctx: Context,
    table: Table,
    entries: list[ScopeEntry],
    life: Liveness,
    change: Change,
    gone: set[str],
    *,
    shared: bool,
    mine: LockRecord | None,
) -> list[Conflict]:
    """The live waiters of others crossing ``entries`` who stand before ``mine`` (None: a
    claim not queued). As for locks, the asker's own and its ancestors' waiters never stand in
    its way, a shared claim passes shared waiters by, and no waiter stands before a pattern the
    asker already holds as the claim asks for it. A dead waiter leaves the queue in this write."""
    now = ctx.now()
    ident = ctx.identity
    held = [r for r in table.held_by(ident.holder) if r.id not in gone and (shared or not r.shared)]
    entries = [
        e for e in entries if not any(lifecycle.within(e, r, table.ignore_case) for r in held)
    ]
    if not entries:
        return []
    friends = table.unblocking(ident.holder, ident.parent)
    found = []
    for other in table.waiters(format_time(now)):
        if other.id in gone or (mine is not None and other.id == mine.id):
            continue
        if other in friends or (shared and other.shared) or not queue.ahead(mine, other):
            continue
        pairs = crossing(table, entries, other)
        if not pairs:
            continue
        if life.dead(other):
            drop(change, gone, "left_queue", other, now, why="dead", by=ident.holder)
            continue
        found.append(Conflict(other, pairs, "live", life.quiet_seconds(other)))
    return found


def waiter(
    ctx: Context,
    table: Table,
    entries: list[ScopeEntry],
    *,
    reason: str,
    ttl: int,
    shared: bool,
    deadline: datetime,
) -> LockRecord:
    """The record of a claim that waits until ``deadline``: its process is this one (its
    end, a kill included, takes it out of the queue), and its place is 1 more than every
    overlapping waiter's, whoever's (docs/design.md §4.7)."""
    now = ctx.now()
    stamp = format_time(now)
    behind = [w for w in table.waiters(stamp) if crossing(table, entries, w)]
    pid = os.getpid()
    ident = ctx.identity
    return LockRecord(
        id=queue.new_waiter_id(),
        holder=ident.holder,
        parent=ident.parent,
        paths=tuple(e.pattern for e in entries),
        exact=tuple(e.pattern for e in entries if e.exact),
        reason=reason,
        created_at=stamp,
        renewed_at=stamp,
        # A little past the wait's end at most: the waiter says ``timeout`` itself, the sweep
        # takes one whose process could not; a long wait renews it (``renewal``).
        expires_at=format_time(waiter_expiry(now, deadline)),
        host=ctx.host,
        host_id=ctx.host_id,
        pid=pid,
        pid_start=process_start_time(pid) or "",
        session="git-alock",
        worktree=os.fspath(ctx.store.root),
        ttl=ttl,
        shared=shared,
        extra={
            "waiting": True,
            "queue": queue.next_place(behind),
            "wait_until": format_time(deadline),
        },
    )


def deadlock(
    ctx: Context, table: Table, life: Liveness, me: LockRecord, gone: set[str]
) -> list[LockRecord] | None:
    """The cycle of waiters ``me`` closes, youngest first, if it is the youngest in it (that
    one is told); else None. A waiter waits for the holders of the live claims and of the
    earlier waiters crossing it (docs/design.md, section 4.7)."""
    stamp = format_time(ctx.now())
    waiters = [w for w in table.waiters(stamp) if w.id not in gone and w.id != me.id]
    waiters = [w for w in waiters if not life.dead(w)] + [me]
    by_holder: dict[str, list[str]] = {}
    for w in waiters:
        by_holder.setdefault(w.holder, []).append(w.id)

    def blockers(w: LockRecord) -> set[str]:
        friends = table.unblocking(w.holder, w.parent)
        found = set()
        for lock_id in table.overlaps(record_entries(w)):
            record = table.records[lock_id]
            if lock_id in gone or record in friends or (w.shared and record.shared):
                continue
            if table.is_live(record, stamp) and life.state(record) in ("live", "stale"):
                found.add(record.holder)
        for other in waiters:
            if other is w or other in friends or (w.shared and other.shared):
                continue
            if queue.ahead(w, other) and crossing(table, record_entries(w), other):
                found.add(other.holder)
        return found

    cycle = queue.cycle_through(me.id, queue.wait_for(waiters, blockers, by_holder))
    if cycle is None:
        return None
    found = {w.id: w for w in waiters}
    return [found[i] for i in cycle]
