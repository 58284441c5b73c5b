"""Laying out a lock remote's table: sharded from the start on a new remote (``git alock
remote NAME``), and the upgrade of a single journal (``git alock remote --shards N``): one
atomic push of the format ref, the shard journals and the notice (docs/design.md 5.10).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gitlocks.core.record import LockRecord, format_time, utcnow
from gitlocks.core.shard import SHARDED_NOTICE, format_blob, record_shards
from gitlocks.errors import RemoteError, UsageError
from gitlocks.git.remote import lost_race
from gitlocks.layout import FORMAT_REF, JOURNAL_REF, MAX_SHARDS, MUTEX_TIMEOUT_SECONDS, SHARD_PREFIX
from gitlocks.store.local import Store
from gitlocks.store.remote import RemoteStore

if TYPE_CHECKING:
    from collections.abc import Collection

    from gitlocks.git.objects import Objects


@dataclass
class ShardResult:
    remote: str
    shards: int
    locks: int = 0
    already: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": "already" if self.already else "sharded",
            "remote": self.remote,
            "shards": self.shards,
            "locks": self.locks,
        }


def shard(store: Store, count: int) -> ShardResult:
    """Shard the lock remote's table into ``count`` shard journals (once: the count is
    fixed from then on). A count of 1 asks for the single journal: on a remote that keeps
    one it changes nothing, and a remote with no lock table yet is laid out with one."""
    if not 1 <= count <= MAX_SHARDS:
        raise UsageError(f"--shards takes a count from 1 to {MAX_SHARDS}, not {count}")
    remote = RemoteStore(store.repo)
    with remote.mutex(timeout=MUTEX_TIMEOUT_SECONDS + 2 * remote.timeout):
        remote.fetch()
        if is_new(remote) and lay_out(remote, count):
            return ShardResult(remote.remote, count)
        existing = remote.shard_count()
        if existing == count or (existing is None and count == 1):
            return ShardResult(remote.remote, count, already=True)
        if existing is not None:
            stated = f"{existing} shards" if existing else "a shard count it cannot read"
            raise UsageError(
                f"the lock table of {remote.remote!r} is sharded already ({stated}); "
                "the count is fixed once it is sharded"
            )
        remote.look_before_writing()
        table = remote.remote_table()
        journal = table.version
        if journal is not None and remote.journal_store.commit_of(journal) is None:
            remote._check_journal(journal)  # raises, naming the journal ref that is no journal
        split: dict[int, dict[str, str]] = {k: {} for k in range(count)}
        for lock_id, oid in table.refs.items():
            for k in held_in(table.get(lock_id), count):
                split[k][lock_id] = oid
        if not _push_layout(remote, journal, count, split, "sharded"):
            raise RemoteError(
                f"the lock remote {remote.remote!r} changed while sharding it; nothing was "
                "changed there: run git alock remote --shards again"
            )
        return ShardResult(remote.remote, count, len(table.refs))


def held_in(record: LockRecord | None, count: int) -> Collection[int]:
    """The shards of ``count`` that hold ``record``: every one for a record that cannot be
    read."""
    return record_shards(record.paths, count) if record is not None else range(count)


def is_new(remote: RemoteStore) -> bool:
    """Whether the lock remote, as last fetched, has no lock table yet: no journal, no
    format ref, no shard journal, no lock ref (probe refs aside)."""
    return (
        remote.staged_journal() is None
        and remote.shard_count() is None
        and not remote.scan_refs((remote.staging + "meta/shards/",))
        and not remote.staged_lock_refs()
    )


def lay_out(remote: RemoteStore, count: int) -> bool:
    """Lay out a new lock remote's table (``is_new``, as just fetched; the mutex held): in
    ``count`` shard journals, or for a count of 1 in one journal. True when this push laid
    it; False when another clone wrote there first (its layout stands)."""
    return _push_layout(remote, None, count, {k: {} for k in range(count)}, "created")


def _push_layout(
    remote: RemoteStore,
    journal: str | None,
    count: int,
    split: dict[int, dict[str, str]],
    kind: str,
) -> bool:
    """One atomic push that lays out the table on the single journal ``journal`` (None: on
    nothing): ``count`` shard journals holding ``split``, or, for a count of 1 on nothing,
    one journal commit holding an empty table. False on a lost race (fetched since).
    Every layout is its own (a random ``layout``), so a remote laid out again never comes
    back to values a lease holds on (docs/design.md 5.10)."""
    layout = new_layout()
    event = {
        "event": kind,
        "at": format_time(utcnow()),
        "holder": "",
        "paths": [],
        "shards": count,
        "layout": layout,
    }
    store = remote.journal_store
    leases = [f"--force-with-lease={JOURNAL_REF}:{journal or ''}"]
    leases.append(f"--force-with-lease={FORMAT_REF}:")
    if count == 1 and journal is None:
        mine = str(store.write(None, [event], {}))
        specs = [f"{mine}:{JOURNAL_REF}"]
    else:
        commits = {k: store.write(journal, [event], held) for k, held in split.items()}
        notice, fmt = sharded_markers(store.objects, journal, count, layout)
        mine = notice
        leases += [f"--force-with-lease={SHARD_PREFIX}{k}:" for k in commits]
        specs = [f"{notice}:{JOURNAL_REF}", f"{fmt}:{FORMAT_REF}"]
        specs += [f"{commit}:{SHARD_PREFIX}{k}" for k, commit in commits.items()]
    run, lines = remote._push_atomic(leases, specs)
    if run.code == 0 and lines:
        remote.fetch()
        return True
    if lines and lost_race(lines):
        remote.fetch()
        return False
    if lines:
        raise remote._refused(lines, run)
    remote.fetch()  # no answer: ask whether it landed
    if remote.staged_journal() == mine:
        return True
    if remote.staged_journal() is None:
        raise RemoteError(
            f"the push that lays out the lock table of {remote.remote!r} got no answer, and "
            "nothing is there now; nothing was changed. Try again"
        )
    return False


def new_layout() -> str:
    """A name for one layout of a remote's table, never made twice (``_push_layout``)."""
    return secrets.token_hex(8)


def sharded_markers(
    objects: Objects, parent: str | None, count: int, layout: str
) -> tuple[str, str]:
    """What marks a remote's table as kept in ``count`` shards: the notice commit its
    single journal ref moves to (on ``parent``, which every earlier version refuses to
    write over), naming the ``layout``, and the format blob."""
    notice = objects.write_commit(
        objects.write_tree([]),
        [parent] if parent is not None else [],
        f"{SHARDED_NOTICE}\nLayout: {layout}\n",
        int(utcnow().timestamp()),
    )
    return str(notice), str(objects.write_blob(format_blob(count)))
