"""Sharding a lock remote's table (``git alock remote --shards N``, docs/design.md 5.10).

One atomic push, leased on the single journal: it creates the format ref (a blob
``shards N``), the N shard journals (the table split: each record in every shard its claim
can touch, each shard's first commit on the old journal, so its history goes on), and
moves ``refs/agent-locks-meta/journal`` onto a commit that is no journal commit. Every
earlier version stops writing at such a journal ref and goes on reading the lock refs,
which the push leaves as they are: no earlier client can grant a claim beside the shards.
"""

from __future__ import annotations

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
    fixed from then on)."""
    if not 1 <= count <= MAX_SHARDS:
        raise UsageError(f"--shards takes a count from 1 to {MAX_SHARDS}, not {count}")
    remote = RemoteStore(store.repo)
    with remote.mutex(timeout=MUTEX_TIMEOUT_SECONDS + 2 * remote.timeout):
        remote.fetch()
        existing = remote.shard_count()
        if existing == count:
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
            record = table.get(lock_id)
            # A record that cannot be read is held everywhere: whatever breaks or sweeps
            # it leases every shard.
            where = (
                record_shards(record.paths, count)
                if isinstance(record, LockRecord)
                else range(count)
            )
            for k in where:
                split[k][lock_id] = oid
        event = {"event": "sharded", "at": format_time(utcnow()), "holder": "", "paths": []}
        objects = remote.journal_store.objects
        commits = {
            k: remote.journal_store.write(journal, [{**event, "shards": count}], held)
            for k, held in split.items()
        }
        notice, fmt = sharded_markers(objects, journal, count)
        leases = [f"--force-with-lease={JOURNAL_REF}:{journal or ''}"]
        leases.append(f"--force-with-lease={FORMAT_REF}:")
        leases += [f"--force-with-lease={SHARD_PREFIX}{k}:" for k in commits]
        specs = [f"{notice}:{JOURNAL_REF}", f"{fmt}:{FORMAT_REF}"]
        specs += [f"{commit}:{SHARD_PREFIX}{k}" for k, commit in commits.items()]
        run, lines = remote._push_atomic(leases, specs)
        if run.code != 0 or not lines:
            if lines and lost_race(lines):
                raise RemoteError(
                    f"the lock remote {remote.remote!r} changed while sharding it; nothing was "
                    "changed there: run git alock remote --shards again"
                )
            if lines:
                raise remote._refused(lines, run)
            remote.fetch()  # no answer: ask whether it landed
            if remote.shard_count() != count:
                raise RemoteError(
                    f"the push that shards {remote.remote!r} got no answer, and the remote is "
                    "not sharded now; nothing was changed. Try again"
                )
        else:
            remote.fetch()
        return ShardResult(remote.remote, count, len(table.refs))


def sharded_markers(objects: Objects, parent: str | None, count: int) -> tuple[str, str]:
    """What marks a remote's table as kept in ``count`` shards: the notice commit its
    single journal ref moves to (on ``parent``, which every earlier version refuses to
    write over), and the format blob."""
    notice = objects.write_commit(
        objects.write_tree([]),
        [parent] if parent is not None else [],
        SHARDED_NOTICE,
        int(utcnow().timestamp()),
    )
    return str(notice), str(objects.write_blob(format_blob(count)))
