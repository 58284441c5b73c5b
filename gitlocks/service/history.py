"""What became of a holder's claims, read back from the journal: for ``renew``, so that an
agent hears of the claims it lost (broken, swept, released by its lead) since its own
last write, or, for a pattern it names, whenever (docs/design.md, section 4.4)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from gitlocks.core.journal import COMPACTED
from gitlocks.core.queue import is_waiter_id
from gitlocks.core.record import LockRecord, format_time
from gitlocks.errors import GitlocksError
from gitlocks.service.results import Lost

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from gitlocks.core.journal import Event
    from gitlocks.core.scope import ScopeEntry
    from gitlocks.core.table import Table
    from gitlocks.service.context import Context

# Journal commits read back at most: the chain to a holder's last write is short for a
# holder that renews at all; the bound keeps a holder that never wrote from reading it all.
WALK_COMMITS = 1000
REMOVALS = ("broken", "expired", "auto_released", "released")
OWN_WRITES = ("granted", "renewed", "noted", "resumed", "released")


def lost_claims(
    ctx: Context,
    table: Table,
    named: Sequence[ScopeEntry] | None,
    held: Sequence[LockRecord],
    gone: Collection[str],
) -> tuple[list[Lost], list[str]]:
    """The holder's claims lost since its last write (with ``named``: those that held a
    named pattern it no longer holds, whenever), newest first; and the named patterns it
    holds no lock on and lost none here. ``held``: its claims this write renews or keeps;
    ``gone``: the ids this write sweeps (an expired claim of its own among them)."""
    me = ctx.identity.holder
    now = format_time(ctx.now())
    recent: list[Lost] = [
        Lost("expired", r.id, list(r.paths), me, now)
        for i in sorted(gone)
        if (r := table.records.get(i)) is not None and r.holder == me
    ]
    older: list[Lost] = []
    try:
        _walk(ctx, table, me, named is None, recent, older)
    except (GitlocksError, KeyError, ValueError, OSError):
        pass  # a journal that cannot be read back: the renewal still answers
    held_keys = table.keys(p for r in held for p in r.paths)
    if named is None:
        return [
            x
            for x in recent
            if not (x.event == "released" and x.by in (None, me))  # its own: no news
            # Not held again: the same lock, or all its patterns.
            and not (x.id in table.records and x.id not in gone)
            and not table.keys(x.paths) <= held_keys
        ], []
    lost: list[Lost] = []
    missing: list[str] = []
    for entry in named:
        key = table.key(entry.pattern)
        if key in held_keys:
            continue
        found = next((x for x in recent + older if key in table.keys(x.paths)), None)
        if found is None:
            missing.append(entry.pattern)
        elif all(x.id != found.id for x in lost):
            found.pattern = entry.pattern
            lost.append(found)
    return lost, missing


def _walk(
    ctx: Context, table: Table, me: str, since_only: bool, recent: list[Lost], older: list[Lost]
) -> None:
    """Collect the removals of ``me``'s claims, newest first: into ``recent`` down to (and
    including) the commit of ``me``'s last write, then into ``older``; the walk stops there
    when ``since_only``."""
    mine_seen = False
    for entry in ctx.store.journal(WALK_COMMITS, start=table.version):
        # A compaction's root holds the events of many writes: there the holder's last
        # write ends at the first older event not its own, not at the commit's end.
        merged = bool(entry.events) and entry.events[0].get("event") == COMPACTED
        wrote = False
        for found in reversed(entry.events):
            kind, holder, by = found.get("event"), found.get("holder"), found.get("by")
            # A waiter's renewal is its process asking again, which hears of no lost claim.
            own = by == me or (
                holder == me
                and kind in OWN_WRITES
                and by in (None, me)
                and not is_waiter_id(str(found.get("id")))
            )
            if merged and wrote and not own and not mine_seen:
                mine_seen = True
                if since_only:
                    return
            wrote = wrote or own
            if holder == me and kind in REMOVALS:
                lost = _lost(found)
                if lost is not None:
                    (older if mine_seen else recent).append(lost)
        if wrote:
            mine_seen = True
            if since_only:
                return


def _lost(found: Event) -> Lost | None:
    """A removal event as a ``Lost``; None for one this version cannot read (the journal
    holds events of every version and every clone: any shape must be survived)."""
    lock_id, paths, at, by = found.get("id"), found.get("paths"), found.get("at"), found.get("by")
    if not isinstance(lock_id, str) or not isinstance(paths, list) or not isinstance(at, str):
        return None
    if is_waiter_id(lock_id):
        return None  # a waiter broken or swept held no path: its process answered already
    if not all(isinstance(p, str) for p in paths):
        return None  # no patterns this version wrote: told, they would read as Python's
    released = found.get("released")
    if isinstance(released, list) and released != paths:
        return None  # part of a lock given back: the rest is still held
    return Lost(str(found["event"]), lock_id, paths, by if isinstance(by, str) else None, at)
