"""Attacks on a waiter's renewal (docs/design.md, section 4.7), on the in-memory store: each
a defect an outside review found, pinned by the test that found it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from gitlocks.core.scope import ScopeEntry
from gitlocks.identity import resolve_identity
from gitlocks.service import locks
from gitlocks.service.context import Context
from gitlocks.store.memory import MemoryStore

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

