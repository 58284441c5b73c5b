"""Attacks on the queue of waiters (docs/design.md, section 4.7), on the in-memory store:
each a defect an outside review found, pinned by the test that found it."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from support.memory_store import MemoryStore

from gitlocks.core.scope import ScopeEntry
from gitlocks.identity import resolve_identity
from gitlocks.service import locks
from gitlocks.service.context import Context
from gitlocks.service.results import AcquireResult

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
LATER = NOW + timedelta(minutes=5)


def ctx(store: MemoryStore, holder: str) -> Context:
    who = resolve_identity(holder, {}, harness=False)
    return Context(store=store, identity=who, clock=lambda: NOW, alive=lambda pid, start: True)


def entries(*patterns: str) -> list[ScopeEntry]:
    return [ScopeEntry(p) for p in patterns]


def ask(
    store: MemoryStore, holder: str, *patterns: str, shared: bool = False, wait: bool = False
) -> AcquireResult:
    deadline = LATER if wait else None
    return locks.acquire(ctx(store, holder), entries(*patterns), shared=shared, deadline=deadline)


@pytest.mark.parametrize("again", [("src",), ("src/x",), ("src", "src/x")])
@pytest.mark.parametrize("wait", [False, True])
def test_asking_again_for_what_you_hold_is_yours_though_others_wait_for_it(
    tmp_path: Path, again: tuple[str, ...], wait: bool
) -> None:
    """A holder who asks again for its own claim (a renewal: the guard, an agent that
    forgets) or for a part of it was refused, the waiter queued behind it said to be
    served first; with --wait it was told DEADLOCK with itself. A waiter can jump no one
    by paths its holder already holds: they are not the asker's to be given."""
    store = MemoryStore(tmp_path)
    assert ask(store, "alice", "src").status == "acquired"
    assert ask(store, "bob", "src/x", wait=True).status == "waiting"
    got = ask(store, "alice", *again, wait=wait)
    assert got.status in ("already_yours", "acquired"), got.to_dict()
    assert ask(store, "carol", "src/y").status == "refused"  # alice's, as ever


def test_a_part_of_your_shared_claim_taken_exclusive_still_waits_its_turn(tmp_path: Path) -> None:
    """Only what you hold as you ask for it passes the queue by: a shared claim of yours
    does not let an exclusive claim jump a shared waiter it would then hold up."""
    store = MemoryStore(tmp_path)
    assert ask(store, "alice", "src", shared=True).status == "acquired"
    assert ask(store, "dave", "lib").status == "acquired"  # holds carol up
    assert ask(store, "carol", "src/x", "lib", shared=True, wait=True).status == "waiting"
    assert ask(store, "alice", "src/x").status == "refused"  # carol waits first for it
    assert ask(store, "alice", "src/x", shared=True).status == "acquired"


def test_a_waiter_whose_claim_its_holder_got_meanwhile_leaves_the_queue_journaled(
    tmp_path: Path,
) -> None:
    """A waiter whose holder got the same claim meanwhile (another of its processes, the
    guard) was deleted by its next look with no event: the journal showed it waiting
    forever. It leaves as every waiter does, journaled with why."""
    store = MemoryStore(tmp_path)
    assert ask(store, "alice", "lib").status == "acquired"
    queued = ask(store, "bob", "lib", wait=True)
    assert queued.waiter is not None
    assert locks.release(ctx(store, "alice"), entries("lib")).released
    assert ask(store, "bob", "lib").status == "acquired"  # bob's other process
    again = locks.acquire(ctx(store, "bob"), entries("lib"), deadline=LATER, queued=queued.waiter)
    assert again.status == "already_yours", again.to_dict()
    assert queued.waiter.id not in store.read_table().records
    told = [e for entry in store.journal() for e in entry.events if e.get("id") == queued.waiter.id]
    assert [e["event"] for e in told] == ["left_queue", "waiting"], told


def test_a_waiter_with_a_huge_place_neither_breaks_nor_jumps_the_queue(tmp_path: Path) -> None:
    """A waiter written by hand with a place of 4,300 digits made every claim that queued
    behind it crash (its place, one more, has no JSON spelling Python will write: an
    internal error), and a smaller huge one sent each later place up with it. A place past
    any real queue is read as the last there can be; the queue's order holds."""
    from gitlocks.core.queue import place

    store = MemoryStore(tmp_path)
    assert ask(store, "alice", "a").status == "acquired"
    bob = ask(store, "bob", "a", wait=True).waiter
    assert bob is not None
    data = bob.to_json().replace(b'"queue": 1', b'"queue": ' + b"9" * 4300)
    store.plant(bob.id, data)
    time.sleep(0.002)  # ids begin with the millisecond they were made: equal places' order
    carol = ask(store, "carol", "a", wait=True)
    assert carol.status == "waiting" and carol.waiter is not None
    assert place(carol.waiter) < 10**10
    dave = ask(store, "dave", "a", wait=True)
    assert [c.record.holder for c in dave.conflicts] == ["alice", "bob", "carol"]


def test_a_waiter_broken_or_swept_is_no_claim_renew_says_was_lost(tmp_path: Path) -> None:
    """renew reads back the removals of the holder's claims from the journal: a waiter
    broken by someone (or swept once its wait ran out) was told as a claim lost, BROKEN
    and exit 1, though it never held a path and its process had answered already."""
    store = MemoryStore(tmp_path)
    assert ask(store, "alice", "src").status == "acquired"
    assert ask(store, "bob", "lib").status == "acquired"
    queued = ask(store, "bob", "src", wait=True).waiter
    assert queued is not None
    broken = locks.break_locks(ctx(store, "carol"), [(queued.id, ScopeEntry(queued.id))])
    assert [r.id for r in broken.locks] == [queued.id]
    got = locks.renew(ctx(store, "bob"), None)
    assert got.lost == [], [x.id for x in got.lost]


def test_ctrl_c_as_the_claim_joins_the_queue_leaves_no_waiter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C reaches the whole foreground group, git included: a git that ends the join's
    write mid-way (after the waiter was written, in remote mode) made the wait end with
    exit 2, and its waiter stayed in the queue, where only this machine could judge it
    dead. The stopped claim takes out any waiter this very process wrote, then exits 130."""
    import os
    import signal

    from gitlocks.errors import GitlocksError
    from gitlocks.service import waiting

    store = MemoryStore(tmp_path)
    assert ask(store, "alice", "src").status == "acquired"
    real = locks.acquire

    def interrupted(*args: object, **kwargs: object) -> AcquireResult:
        real(*args, **kwargs)  # type: ignore[arg-type]
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, as the write's git ends by it
        raise GitlocksError("git --git-dir failed: -2")

    monkeypatch.setattr(locks, "acquire", interrupted)
    with pytest.raises(KeyboardInterrupt):
        waiting.acquire(ctx(store, "bob"), entries("src/x"), wait=60, interruptible=True)
    monkeypatch.setattr(locks, "acquire", real)
    assert ask(store, "carol", "src/y", wait=True).conflicts[0].record.holder == "alice"
    assert [c.record.holder for c in ask(store, "carol", "src/y").conflicts] == ["alice"]


def test_a_local_wait_looks_at_the_ref_files_and_never_asks_git(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local wait where refs are files looks at the journal ref's file (``os.stat``) every
    50 ms: asking git instead started a process per poll (thousands in a long wait) and
    backed off to a quarter of a second, so a release was seen up to five times later."""
    import threading

    from gitlocks.service import waiting
    from gitlocks.store.local import Store

    store = Store.discover(repo)
    watch = waiting.Watch(store)

    def asked() -> str | None:
        raise AssertionError("git was asked for the journal ref")

    monkeypatch.setattr(store, "version", asked)
    watch.wait(time.monotonic() + 0.3, threading.Event())
    assert watch.files and watch.last == watch.first
