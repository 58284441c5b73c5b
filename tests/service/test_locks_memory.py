"""The lock service on the in-memory store: the rules of claims, without a repository,
in milliseconds; and a property test of the one rule that matters most, against an
independent oracle: no two holders ever hold overlapping exclusive claims."""

from __future__ import annotations

import gc
import os
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.memory_store import MemoryStore

from gitlocks import patterns_overlap
from gitlocks.core.scope import ScopeEntry
from gitlocks.identity import resolve_identity
from gitlocks.service import locks
from gitlocks.service.context import Context

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)


def ctx(store: MemoryStore, holder: str, parent: str | None = None, at: datetime = NOW) -> Context:
    env = {"AGENT_PARENT_ID": parent} if parent else {}
    who = resolve_identity(holder, env, harness=False)
    return Context(store=store, identity=who, clock=lambda: at, alive=lambda pid, start: True)


def entries(*patterns: str) -> list[ScopeEntry]:
    return [ScopeEntry(p) for p in patterns]


def test_first_writer_wins_and_the_refusal_names_the_holder(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    assert locks.acquire(ctx(store, "alice"), entries("src/api/**")).status == "acquired"
    refused = locks.acquire(ctx(store, "bob"), entries("src/api/auth.py", "docs/**"))
    assert refused.status == "refused"
    assert [c.record.holder for c in refused.conflicts] == ["alice"]
    assert locks.acquire(ctx(store, "bob"), entries("docs/**")).status == "acquired"
    again = locks.acquire(ctx(store, "alice"), entries("src/api"))
    assert again.status == "already_yours"


def test_release_renew_and_note(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    alice = ctx(store, "alice")
    assert locks.acquire(alice, entries("src/**"), ttl=60).status == "acquired"
    later = ctx(store, "alice", at=NOW + timedelta(seconds=30))
    [renewed] = locks.renew(later, None, ttl=600).locks
    assert renewed.expires_at == "2026-06-01T12:10:30Z"
    noted = locks.note(alice, ScopeEntry("src/**"), "half way").lock
    assert noted is not None and [n.text for n in noted.notes] == ["half way"]
    assert locks.release(ctx(store, "bob"), entries("src/**")).held_by_others
    assert locks.release(alice, entries("src/**")).released
    assert locks.acquire(ctx(store, "bob"), entries("src/x.py")).status == "acquired"


def test_an_expired_claim_blocks_nobody(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    assert locks.acquire(ctx(store, "alice"), entries("src/**"), ttl=60).status == "acquired"
    late = ctx(store, "bob", at=NOW + timedelta(minutes=5))
    assert locks.acquire(late, entries("src/app.py")).status == "acquired"


def test_sub_agents_siblings_and_shared_claims(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    assert locks.acquire(ctx(store, "lead"), entries("src/**")).status == "acquired"
    one = locks.acquire(ctx(store, "w1", "lead"), entries("src/api/**"))
    assert one.status == "acquired"  # inside its lead's claim
    assert locks.acquire(ctx(store, "w2", "lead"), entries("src/api/a.py")).status == "refused"
    assert locks.acquire(ctx(store, "lead"), entries("src/api/b.py")).status == "refused"
    shared = locks.acquire(ctx(store, "x"), entries("CHANGES.md"), shared=True)
    assert shared.status == "acquired"
    assert locks.acquire(ctx(store, "y"), entries("CHANGES.md"), shared=True).status == "acquired"
    assert locks.acquire(ctx(store, "z"), entries("CHANGES.md")).status == "refused"


def test_a_planted_blob_is_a_problem_never_an_error(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    store.plant("planted", b"not json")
    assert locks.acquire(ctx(store, "alice"), entries("src/**")).status == "acquired"
    assert [p.ref for p in store.read_table().problems] == ["refs/agent-locks/planted"]


PATTERNS = st.sampled_from(
    ["src/**", "src/api/**", "src/api/auth.py", "src/*.py", "src/a*", "docs/**", "**/*.md",
     "docs/guide.md", "src/web/**", "*.py", "README.md", "src/**/api"]
)  # fmt: skip
STEPS = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["acquire", "release"]),
              st.lists(PATTERNS, min_size=1, max_size=3)),
    max_size=25,
)  # fmt: skip


@settings(max_examples=60)
@given(STEPS)
def test_no_two_holders_ever_hold_overlapping_claims(
    steps: list[tuple[str, str, list[str]]],
) -> None:
    store = MemoryStore()
    for holder, verb, patterns in steps:
        me = ctx(store, holder)
        if verb == "acquire":
            locks.acquire(me, entries(*patterns))
        else:
            locks.release(me, entries(*patterns))
        live = list(store.read_table().records.values())
        for i, one in enumerate(live):
            for other in live[i + 1 :]:
                if one.holder == other.holder:
                    continue
                crossing = [
                    (p, q) for p in one.paths for q in other.paths if patterns_overlap(p, q)
                ]
                assert not crossing, (one, other)


def test_in_remote_mode_a_renewal_is_due_at_half_its_lifetime_or_a_quarter_on_a_shared_push(
    tmp_path: Path,
) -> None:
    store = MemoryStore(tmp_path)
    assert locks.acquire(ctx(store, "alice"), entries("src/**"), ttl=80).status == "acquired"
    [record] = store.read_table().held_by("alice")

    def due(seconds: int, *, share: bool = False, remote: bool = True) -> bool:
        store.remote = "origin" if remote else None
        at = ctx(store, "alice", at=NOW + timedelta(seconds=seconds))
        at.stale_after = 3600  # quiet never decides here: only the lifetime
        return at.renewal_due(record, 80, share=share)

    assert due(0, remote=False)  # local mode: a renewal is a ref write, always worth it
    assert not due(19) and not due(39)
    assert due(41)  # under half of 80 seconds left
    assert not due(19, share=True) and due(21, share=True)  # a quarter used rides along


def test_in_remote_mode_a_quiet_holder_is_due_before_others_would_read_it_stale(
    tmp_path: Path,
) -> None:
    store = MemoryStore(tmp_path)
    assert locks.acquire(ctx(store, "alice"), entries("src/**"), ttl=3600).status == "acquired"
    [record] = store.read_table().held_by("alice")
    store.remote = "origin"

    def due(seconds: int, *, share: bool = False) -> bool:
        at = ctx(store, "alice", at=NOW + timedelta(seconds=seconds))
        at.stale_after = 100
        return at.renewal_due(record, 3600, share=share)

    assert not due(49) and due(50)  # half of alock.staleAfter of quiet
    assert not due(24, share=True) and due(25, share=True)  # a quarter, on a push made anyway


def test_a_holder_that_tries_to_renew_every_half_stale_after_is_never_read_stale(
    tmp_path: Path,
) -> None:
    """Whatever the gaps between its attempts, as long as none is over half of
    alock.staleAfter, a renewal pushes before the claim has been quiet for all of it: the
    first attempt at half the quiet or more pushes, and it comes less than half after."""
    store = MemoryStore(tmp_path)
    store.remote = "origin"
    stale = 100
    assert locks.acquire(ctx(store, "alice"), entries("src/**"), ttl=3600).status == "acquired"
    at = 0
    for gap in [49, 1, 30, 45, 50, 3, 48, 2, 47, 50, 50, 12, 38, 1, 49]:
        at += gap
        when = ctx(store, "alice", at=NOW + timedelta(seconds=at))
        when.stale_after = stale
        [record] = store.read_table().held_by("alice")
        quiet = (when.now() - record.last_active()).total_seconds()
        assert quiet < stale, f"read STALE at {at}s: quiet {quiet}s"
        if when.renewal_due(record, 3600):
            assert locks.renew(when, None, ttl=3600).locks


def test_a_memory_store_made_without_a_root_takes_its_directory_with_it() -> None:
    store = MemoryStore()
    root = store.root
    assert os.path.isdir(root)
    del store
    gc.collect()
    assert not os.path.exists(root)


def test_a_test_s_temporary_files_stay_under_pytest_s_own_directory(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    base = os.path.realpath(tmp_path_factory.getbasetemp())
    assert os.path.realpath(tempfile.gettempdir()).startswith(base + os.sep)
    assert os.path.realpath(os.environ["TMPDIR"]).startswith(base + os.sep)
