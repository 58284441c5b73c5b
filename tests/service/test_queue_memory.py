"""The queue's rules on the in-memory store (docs/design.md, section 4.7): a waiter holds no
path, only its place; nobody jumps it but its own holder's family; shared claims pass shared
waiters by; a cycle is told to its youngest member."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from support.memory_store import MemoryStore

from gitlocks.core.record import format_time
from gitlocks.core.scope import ScopeEntry
from gitlocks.identity import resolve_identity
from gitlocks.service import locks, queue
from gitlocks.service.context import Context
from gitlocks.service.results import AcquireResult

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
LATER = NOW + timedelta(minutes=5)


def ctx(store: MemoryStore, holder: str, parent: str | None = None) -> Context:
    env = {"AGENT_PARENT_ID": parent} if parent else {}
    who = resolve_identity(holder, env, harness=False)
    return Context(store=store, identity=who, clock=lambda: NOW, alive=lambda pid, start: True)


def entries(*patterns: str) -> list[ScopeEntry]:
    return [ScopeEntry(p) for p in patterns]


def wait(store: MemoryStore, holder: str, *patterns: str, shared: bool = False) -> AcquireResult:
    got = locks.acquire(ctx(store, holder), entries(*patterns), deadline=LATER, shared=shared)
    assert got.status == "waiting", got
    return got


def claim(
    store: MemoryStore, holder: str, *patterns: str, parent: str | None = None, shared: bool = False
) -> str:
    return locks.acquire(ctx(store, holder, parent), entries(*patterns), shared=shared).status


def test_a_waiter_holds_no_path_only_its_place(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    assert claim(store, "alice", "src/a.py") == "acquired"
    queued = wait(store, "bob", "src/a.py", "lib/x")
    assert [c.record.holder for c in queued.conflicts] == ["alice"]
    table = store.read_table()
    assert [r.holder for r in table.live(format_time(NOW))] == ["alice"]  # no lock of bob's
    assert [w.holder for w in table.waiters(format_time(NOW))] == ["bob"]
    [free] = locks.check(ctx(store, "carol"), entries("lib/x"))
    assert free.status == "free"  # nothing holds it: bob only waits for it
    refused = locks.acquire(ctx(store, "carol"), entries("lib/x"))
    assert refused.status == "refused"
    assert queued.waiter is not None
    assert [c.record.id for c in refused.conflicts] == [queued.waiter.id]
    assert claim(store, "carol", "docs/**") == "acquired"


def test_a_holders_family_passes_its_own_waiters_by(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    assert claim(store, "alice", "src/a.py") == "acquired"
    wait(store, "bob", "src/a.py", "lib/x")
    assert claim(store, "bob-sub", "lib/x/y.py", parent="bob") == "acquired"
    assert claim(store, "bob", "lib/x/z.py") == "acquired"
    assert claim(store, "carol", "lib/x/w.py") == "refused"


def test_shared_claims_pass_shared_waiters_by(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    assert claim(store, "alice", "src/a.py") == "acquired"
    wait(store, "bob", "src/a.py", "lib/x", shared=True)
    assert claim(store, "carol", "lib/x", shared=True) == "acquired"
    assert claim(store, "dave", "lib/x") == "refused"


def test_a_waiter_is_granted_in_its_turn_and_leaves_the_queue(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    assert claim(store, "alice", "src/**") == "acquired"
    first = wait(store, "bob", "src/a.py")
    second = wait(store, "carol", "src/**")
    assert second.waiter is not None and second.waiter.extra["queue"] == 2
    assert locks.release(ctx(store, "alice"), None).released
    carol = locks.acquire(
        ctx(store, "carol"), entries("src/**"), deadline=LATER, queued=second.waiter
    )
    assert carol.status == "waiting"  # bob is first
    bob = locks.acquire(ctx(store, "bob"), entries("src/a.py"), deadline=LATER, queued=first.waiter)
    assert bob.status == "acquired"
    assert [w.holder for w in store.read_table().waiters(format_time(NOW))] == ["carol"]


def test_a_cycle_is_told_to_the_claim_that_closes_it(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    assert claim(store, "alice", "a") == "acquired"
    assert claim(store, "bob", "b") == "acquired"
    wait(store, "alice", "b")
    told = locks.acquire(ctx(store, "bob"), entries("a"), deadline=LATER)
    assert told.status == "deadlock"
    assert [w.holder for w in told.cycle] == ["bob", "alice"]
    assert [w.holder for w in store.read_table().waiters(format_time(NOW))] == ["alice"]


def test_a_waiter_out_of_time_leaves_the_queue_refused(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    assert claim(store, "alice", "a") == "acquired"
    queued = wait(store, "bob", "a")
    gone = locks.acquire(ctx(store, "bob"), entries("a"), deadline=NOW, queued=queued.waiter)
    assert gone.status == "refused"
    assert store.read_table().waiters(format_time(NOW)) == []


def test_a_waiter_record_with_bad_fields_of_its_own_stops_nothing(tmp_path: Path) -> None:
    """``queue`` and ``wait_until`` are a waiter's own fields, which anyone may write: a
    bad one stands first in the queue and ends its wait with its record, never a crash."""
    from gitlocks.core.queue import place, wait_ends
    from gitlocks.render.locks import queue as render_queue

    store = MemoryStore(tmp_path)
    assert claim(store, "alice", "a") == "acquired"
    queued = wait(store, "bob", "a").waiter
    assert queued is not None
    for bad in ({"queue": "1", "wait_until": "soon"}, {"queue": True, "wait_until": 7}):
        odd = queued.with_changes(extra={**queued.extra, **bad})
        assert place(odd) == 0 and wait_ends(odd) == odd.expires_at
        assert "bob" in render_queue([odd], "carol", NOW)


def test_a_long_wait_renews_its_record_and_a_silent_one_leaves_within_its_life(
    tmp_path: Path,
) -> None:
    """A waiter's record lives a few minutes, renewed while its process asks: a waiter on a
    machine that crashed (nobody else can judge its process dead) leaves the queue within
    that life, not at the end of a wait of days."""
    store = MemoryStore(tmp_path)

    def at(minutes: int, holder: str) -> Context:
        who = resolve_identity(holder, {}, harness=False)
        when = NOW + timedelta(minutes=minutes)
        return Context(store=store, identity=who, clock=lambda: when, alive=lambda p, s: True)

    long = NOW + timedelta(days=2)
    assert locks.acquire(at(0, "alice"), entries("src/**"), ttl=3600).status == "acquired"
    queued = locks.acquire(at(0, "bob"), entries("src/a.py"), deadline=long)
    assert queued.status == "waiting" and queued.waiter is not None
    life = timedelta(seconds=queue.WAITER_LIFE_SECONDS)
    assert queued.waiter.expires_at == format_time(NOW + life)
    assert queued.waiter.extra["wait_until"] == format_time(long)  # what the page shows

    def asked(minutes: int) -> str:
        again = locks.acquire(
            at(minutes, "bob"), entries("src/a.py"), deadline=long, queued=queued.waiter
        )
        assert again.status == "waiting", again
        [record] = store.read_table().waiters(format_time(NOW + timedelta(minutes=minutes)))
        return record.expires_at

    assert asked(1) == format_time(NOW + life)  # most of its life left: no write
    renewed = NOW + timedelta(minutes=3)
    assert asked(3) == format_time(renewed + life)
    assert [e["event"] for e in next(store.journal(1)).events] == ["renewed"]
    # Bob's machine goes silent: past the renewed life, the queue no longer holds him.
    late = 3 + queue.WAITER_LIFE_SECONDS // 60 + 1
    assert locks.release(at(late, "alice"), None).released
    assert locks.acquire(at(late, "carol"), entries("src/a.py")).status == "acquired"


def test_a_waiter_record_never_outlives_its_wait_by_more_than_the_grace() -> None:
    end = NOW + timedelta(seconds=30)
    assert queue.waiter_expiry(NOW, end) == end + timedelta(seconds=queue.GRACE_SECONDS)
    far = NOW + timedelta(days=366)
    assert queue.waiter_expiry(NOW, far) == NOW + timedelta(seconds=queue.WAITER_LIFE_SECONDS)
