"""Waiters: claims queued in the lock table until they can be granted (docs/design.md §4.7).

Pure: a waiter is a record whose id starts with ``wait-``, holding its queue place
(``"queue": N``). The table leaves waiters out of who holds a path; their order and the
wait-for graph (a cycle is a deadlock) are decided here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

from gitlocks.core.record import RecordError, canonical_time, new_lock_id

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from gitlocks.core.record import LockRecord

WAITER_PREFIX = "wait-"
_WAITER_IDS = re.compile(r"\n(wait-[^\n]*)")  # a literal start: found by a fast search


def is_waiter_id(lock_id: str) -> bool:
    """Whether ``lock_id`` names a waiter rather than a lock: decided by the id alone, so
    the table can leave waiters out without reading a record."""
    return lock_id.startswith(WAITER_PREFIX)


def waiter_ids(ids: Iterable[str]) -> set[str]:
    """The waiters' ids among ``ids`` (lock ids: no newline), found in one pass of C: asked
    of every id of a table on every claim, where a call per id cost 9 ms at 10,000 locks."""
    return set(_WAITER_IDS.findall("\n" + "\n".join(ids)))


def new_waiter_id() -> str:
    """A waiter's id: ``wait-`` and a lock id, so ids sort by the time they were made."""
    return WAITER_PREFIX + new_lock_id()


# The last place there can be: a greater one (written by hand) is read as this, so that the
# places after it stay numbers JSON writes (at most 4,300 digits) and a line can print.
LAST_PLACE = 10**9


def place(record: LockRecord) -> int:
    """The queue place a waiter took: 1 more than every overlapping waiter it met. A missing
    or bad field stands first (anyone who can write refs can jump a queue anyway)."""
    value = record.extra.get("queue")
    return min(value, LAST_PLACE) if type(value) is int and value > 0 else 0


def next_place(met: Iterable[LockRecord]) -> int:
    """The place of a waiter that meets the waiters ``met``: after every one of them."""
    return min(1 + max((place(w) for w in met), default=0), LAST_PLACE)


def wait_ends(record: LockRecord) -> str:
    """When a waiter stops waiting (``wait_until``; its record lives a little longer)."""
    value = record.extra.get("wait_until")
    try:  # any field but the known ones may hold anything: a bad one is no time
        value = canonical_time(value) if isinstance(value, str) else None
    except RecordError:
        value = None
    return value if value is not None and value < record.expires_at else record.expires_at


def ahead(mine: LockRecord | None, other: LockRecord) -> bool:
    """Whether the waiter ``other`` stands before ``mine`` (None: a claim not yet queued).
    Equal places (records written by hand) fall back to the ids, oldest first."""
    if mine is None:
        return True
    return (place(other), other.id) < (place(mine), mine.id)


def cycle_through(me: str, edges: Mapping[str, Iterable[str]]) -> list[str] | None:
    """A cycle of the wait-for graph ``edges`` (waiter id -> the ids it waits for) through
    ``me``, as a list starting at ``me``, in which ``me`` is the youngest (greatest id): of
    every member asking, exactly the youngest finds it, and is told (docs/design.md §4.7)."""
    stack: list[tuple[str, list[str]]] = [(me, [me])]
    seen: set[str] = set()
    while stack:
        node, path = stack.pop()
        for nxt in sorted(edges.get(node, ())):
            if nxt == me:
                return path
            if nxt < me and nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, [*path, nxt]))
    return None


def wait_for(
    waiters: Iterable[LockRecord],
    blockers: Callable[[LockRecord], Iterable[str]],
    by_holder: Mapping[str, list[str]],
) -> dict[str, set[str]]:
    """The wait-for graph: each waiter -> the waiters (``by_holder``) of every holder
    ``blockers(waiter)`` names as standing in its way."""
    return {
        w.id: {v for h in blockers(w) for v in by_holder.get(h, ()) if v != w.id} for w in waiters
    }
