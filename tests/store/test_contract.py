"""One contract, three stores: the repository's own refs, a shared remote (over each
transport: support/servers.py), and the in-memory twin (``gitlocks/store/base.py``). Each
test runs against each."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.memory_store import MemoryStore
from support.remote import make_clone
from support.servers import TRANSPORTS, serve

from gitlocks.core.change import Change
from gitlocks.core.journal import VIEW_EVENT
from gitlocks.core.record import LockRecord, new_lock_id
from gitlocks.core.table import Table
from gitlocks.errors import UsageError
from gitlocks.identity import resolve_identity
from gitlocks.service.context import open_context
from gitlocks.store.base import LockStore

# A factory per kind of store: each call opens another handle on the same table, as
# another process would.
Opener = Callable[[], LockStore]


@pytest.fixture(params=["local", "memory", *(f"remote-{kind}" for kind in TRANSPORTS)])
def opener(
    request: pytest.FixtureRequest, tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Opener]:
    kind: str = request.param
    who = resolve_identity("contract")
    if kind == "memory":
        shared = MemoryStore(tmp_path / "mem")
        yield lambda: shared
    elif kind == "local":
        yield lambda: open_context(repo, who).store
    else:
        with serve(kind.removeprefix("remote-"), tmp_path / "served", monkeypatch) as host:
            clone = make_clone(host.remote().url, tmp_path / "clone")
            yield lambda: open_context(clone, who).store


def record(path: str, holder: str = "alice") -> LockRecord:
    stamp = "2026-01-01T00:00:00Z"
    return LockRecord(id=new_lock_id(), holder=holder, paths=(path,), created_at=stamp,
                      renewed_at=stamp, expires_at="2099-01-01T00:00:00Z")  # fmt: skip


def put(store: LockStore, *records: LockRecord) -> None:
    events = [{"event": "acquired", "id": r.id, "holder": r.holder} for r in records]
    store.transact(lambda table: (Change(put=list(records), events=events), None))


def ids(table: Table) -> set[str]:
    return set(table.records)


def test_an_empty_store_holds_nothing(opener: Opener) -> None:
    store = opener()
    assert ids(store.read_table()) == set()
    assert store.problems() == []


def test_a_change_is_read_back_and_journaled_once(opener: Opener) -> None:
    store = opener()
    one, two = record("src/**"), record("docs/**", "bob")
    before = store.version()
    put(store, one, two)
    assert ids(opener().read_table()) == {one.id, two.id}
    assert store.version() != before
    [entry] = [e for e in store.journal() if any(ev.get("id") == one.id for ev in e.events)]
    # A sharded remote's local view commit names its shards first: no event of the table.
    told = [ev for ev in entry.events if ev.get("event") != VIEW_EVENT]
    assert {ev["id"] for ev in told} == {one.id, two.id}
    gone = [{"event": "released", "id": one.id}]
    store.transact(lambda table: (Change(delete=[one.id], events=gone), None))
    assert ids(opener().read_table()) == {two.id}
    told = [ev for ev in next(iter(store.journal())).events if ev.get("event") != VIEW_EVENT]
    assert told[0]["event"] == "released"


def test_an_empty_change_writes_nothing(opener: Opener) -> None:
    store = opener()
    put(store, record("a/**"))
    version, count = store.version(), len(list(store.journal()))
    assert store.transact(lambda table: (Change(events=[{"event": "x"}]), "answer")) == "answer"
    assert store.version() == version and len(list(store.journal())) == count


def test_decide_sees_the_table_of_the_moment(opener: Opener) -> None:
    first = record("x/**")
    put(opener(), first)
    seen: list[set[str]] = []
    opener().transact(lambda table: (seen.append(ids(table)) or Change(), None))  # type: ignore[func-returns-value]
    assert seen == [{first.id}]


def test_racing_writers_never_both_take_a_free_path(opener: Opener) -> None:
    """Compare-and-swap: each writer claims ``hot`` only if nobody holds it."""
    winners: list[str] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def claim(holder: str) -> None:
        store = opener()

        def decide(table: Table) -> tuple[Change, bool]:
            if any(r.paths == ("hot",) for r in table.records.values()):
                return Change(), False
            mine = record("hot", holder)
            return Change(put=[mine], events=[{"event": "acquired", "id": mine.id}]), True

        try:
            start.wait()
            if store.transact(decide, tries=50):
                winners.append(holder)
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=claim, args=(f"h{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(winners) == 1, winners
    assert [r.holder for r in opener().read_table().records.values()] == winners


def test_a_record_too_big_is_refused_and_nothing_is_written(opener: Opener) -> None:
    store = opener()
    version = store.version()
    huge = record("big/**").with_changes(reason="r" * 300_000)
    with pytest.raises(UsageError, match="more than the"):
        put(store, huge)
    assert store.version() == version and ids(store.read_table()) == set()
