"""Attacks on a waiter's renewal (docs/design.md, section 4.7), on the in-memory store: each
a defect an outside review found, pinned by the test that found it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TypeVar

import pytest
from support.memory_store import MemoryStore

from gitlocks.core.change import Change
from gitlocks.core.record import format_time
from gitlocks.core.scope import ScopeEntry
from gitlocks.core.table import Table
from gitlocks.errors import RemoteError, StoreError
from gitlocks.identity import resolve_identity
from gitlocks.service import locks, queue, waiting
from gitlocks.service.context import Context
from gitlocks.service.results import AcquireResult

T = TypeVar("T")
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
LONG = NOW + timedelta(days=2)


def at(store: MemoryStore, minutes: float, holder: str) -> Context:
    who = resolve_identity(holder, {}, harness=False)
    when = NOW + timedelta(minutes=minutes)
    return Context(store=store, identity=who, clock=lambda: when, alive=lambda p, s: True)


def entries(*patterns: str) -> list[ScopeEntry]:
    return [ScopeEntry(p) for p in patterns]


def test_a_waiters_renewal_is_no_write_that_heard_of_a_lost_claim(tmp_path: Path) -> None:
    """renew tells the claims lost since the holder's own last write: a waiter's renewal,
    journaled ``renewed`` with the holder's name, was read as that write, and a lock of
    the holder broken before it was never told (exit 0, the agent editing on)."""
    store = MemoryStore(tmp_path)
    lib = locks.acquire(at(store, 0, "bob"), entries("lib")).lock
    assert lib is not None
    assert locks.acquire(at(store, 0, "alice"), entries("src"), ttl=3600).status == "acquired"
    queued = locks.acquire(at(store, 0, "bob"), entries("src"), deadline=LONG).waiter
    assert queued is not None
    broken = locks.break_locks(at(store, 1, "carol"), [(lib.id, ScopeEntry(lib.id))])
    assert [r.id for r in broken.locks] == [lib.id]
    again = locks.acquire(at(store, 3, "bob"), entries("src"), deadline=LONG, queued=queued)
    assert again.status == "waiting"
    assert [e["event"] for e in next(store.journal(1)).events] == ["renewed"]
    got = locks.renew(at(store, 4, "bob"), None)
    assert [x.id for x in got.lost] == [lib.id]


def test_a_waiter_whose_record_lapsed_while_it_could_not_ask_joins_again(tmp_path: Path) -> None:
    """A waiter that could not renew its record for five minutes (a lock remote silent
    for a while, a machine asleep, a clock that jumped) found it swept as it asked again
    and was refused, though its wait of days was not out: a wait that outlives a silent
    remote must not end at its return. It joins the queue again, at its end; a waiter
    broken by someone (its record gone before its life was out) is still refused."""
    store = MemoryStore(tmp_path)
    assert locks.acquire(at(store, 0, "alice"), entries("src"), ttl=86400).status == "acquired"
    queued = locks.acquire(at(store, 0, "bob"), entries("src"), deadline=LONG).waiter
    assert queued is not None
    silent = queue.WAITER_LIFE_SECONDS // 60 + 1
    again = locks.acquire(at(store, silent, "bob"), entries("src"), deadline=LONG, queued=queued)
    assert again.status == "waiting", again.to_dict()
    assert again.waiter is not None and again.waiter.id != queued.id
    now = format_time(NOW + timedelta(minutes=silent))
    assert [w.id for w in store.read_table().waiters(now)] == [again.waiter.id]
    # Renewed, the answer carries the record as written: the next ask judges by it.
    later = locks.acquire(
        at(store, silent + 3, "bob"), entries("src"), deadline=LONG, queued=again.waiter
    )
    assert later.waiter is not None and later.waiter.expires_at > again.waiter.expires_at
    gone = locks.break_locks(
        at(store, silent + 4, "carol"), [(later.waiter.id, ScopeEntry(later.waiter.id))]
    )
    assert gone.locks
    last = locks.acquire(
        at(store, silent + 5, "bob"), entries("src"), deadline=LONG, queued=later.waiter
    )
    assert last.status == "refused"


class Silent(MemoryStore):
    """A store read as a lock remote's that stops answering (every fetch and write fails)
    once ``down`` is set, and counts the writes asked of it meanwhile."""

    remote = "locks"

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.down = False
        self.asked = 0

    def sync(self) -> bool:
        if self.down:
            raise RemoteError("the lock remote hung up")
        return super().sync()

    def transact(self, decide: Callable[[Table], tuple[Change, T]], *, tries: int = 5) -> T:
        if self.down:
            self.asked += 1
            raise RemoteError("the lock remote hung up")
        return super().transact(decide, tries=tries)


def test_a_wait_on_a_remote_silent_to_its_end_asks_no_more_once_its_time_is_out(
    tmp_path: Path,
) -> None:
    """A wait whose lock remote never comes back ends at its time (exit 2), not a remote
    timeout or two later: out of time with the remote's last fetch failed, it asked again
    (a fetch and a push, each up to alock.remoteTimeout) and then tried to leave the queue
    (as long again), though its record expires a few seconds after its wait anyway."""
    store = Silent(tmp_path)
    assert locks.acquire(at(store, 0, "alice"), entries("src"), ttl=86400).status == "acquired"
    notes: list[str] = []

    def gone(_: AcquireResult) -> None:
        store.down = True

    with pytest.raises(RemoteError):
        waiting.acquire(
            at(store, 0, "bob"), entries("src"), wait=1, on_waiting=gone, on_note=notes.append
        )
    assert store.asked == 0, notes
    assert [n for n in notes if "expires at 2026-06-01T12:00:11Z" in n], notes  # its wait's end


def test_a_store_error_during_a_wait_ends_it_and_takes_the_waiter_out(tmp_path: Path) -> None:
    """Only a lock remote that does not answer is waited out: any other error of the store
    ends the wait at once, and the waiter leaves the queue."""
    store = Silent(tmp_path)
    assert locks.acquire(at(store, 0, "alice"), entries("src"), ttl=86400).status == "acquired"
    real = store.transact
    failed: list[int] = []

    def once(decide: Callable[[Table], tuple[Change, T]], *, tries: int = 5) -> T:
        if not failed:
            failed.append(1)
            raise StoreError("a journal this version cannot read")
        return real(decide, tries=tries)

    def joined(_: AcquireResult) -> None:
        store.sync = lambda: True  # type: ignore[method-assign]  # something moved: ask
        store.transact = once  # type: ignore[method-assign]

    with pytest.raises(StoreError):
        waiting.acquire(at(store, 0, "bob"), entries("src"), wait=30, on_waiting=joined)
    assert store.read_table().waiters(format_time(NOW)) == []
