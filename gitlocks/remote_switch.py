"""Switching a clone between local mode and remote mode, without losing a lock.

To remote mode: live local locks are pushed to the remote, in the same compare-and-swap
push as any claim, when none of them overlaps a live lock of another holder there;
otherwise nothing changes and the reply names each conflict. To local mode: the locks
mirrored from the remote stay in the local view (they still block here until they expire)
unless the user asks to forget them.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import pygit2

from gitlocks.errors import RemoteError
from gitlocks.record import LockRecord, format_time, utcnow
from gitlocks.remote import (
    LOCAL_JOURNAL_REF,
    TRIES,
    RemoteStore,
    read_sync_times,
    write_sync_times,
)
from gitlocks.store import LOCK_PREFIX, MUTEX_TIMEOUT_SECONDS, Change, Store
from gitlocks.table import Table, record_entries


@dataclass
class SwitchResult:
    """What ``git alock remote NAME`` did, or (``conflicts``) why it refused."""

    remote: str
    pushed: list[LockRecord] = field(default_factory=list)
    dropped_expired: list[LockRecord] = field(default_factory=list)
    conflicts: list[tuple[LockRecord, LockRecord]] = field(default_factory=list)
    on_remote: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": "refused" if self.conflicts else "remote",
            "remote": self.remote,
            "pushed": [r.to_dict() for r in self.pushed],
            "dropped_expired": [r.to_dict() for r in self.dropped_expired],
            "conflicts": [
                {"local": mine.to_dict(), "remote": theirs.to_dict()}
                for mine, theirs in self.conflicts
            ],
            "locks_on_remote": self.on_remote,
        }


def _family(a: LockRecord, b: LockRecord) -> bool:
    return a.holder == b.holder or a.parent == b.holder or b.parent == a.holder


def enable(store: Store, name: str) -> SwitchResult:
    """Switch to remote mode on ``name``, pushing live local locks that conflict with none.

    Refuses (changing nothing, configuration included) when one of them overlaps a live
    lock of another holder on the remote: one of the two claims has to go first.
    """
    remote = RemoteStore(store.repo, name)
    remote.probe()
    with remote.mutex(timeout=MUTEX_TIMEOUT_SECONDS + 2 * remote.timeout):
        local_journal = remote.version()
        _, staged_journal = remote.staged()
        remote.fetch()
        now = utcnow()
        mine = remote.unpushed()
        expired = [r for r in mine if r.expires_at <= format_time(now)]
        live = [r for r in mine if r.expires_at > format_time(now)]

        def decide(table: Table) -> tuple[Change, SwitchResult]:
            result = SwitchResult(name, dropped_expired=expired)
            gone = {r.id for r in table.expired(format_time(now))}
            for record in live:
                for lock_id in sorted(table.overlaps(record_entries(record))):
                    theirs = table.records[lock_id]
                    if lock_id not in gone | {record.id} and not _family(record, theirs):
                        result.conflicts.append((record, theirs))
            if result.conflicts or not live:
                result.on_remote = len(table)
                return Change(), result
            events = [
                {"event": "adopted", "at": format_time(now), "id": r.id, "holder": r.holder,
                 "paths": list(r.paths), "from": "local"}
                for r in live
            ]  # fmt: skip
            result.pushed = live
            result.on_remote = len(table) + len([r for r in live if r.id not in table.records])
            return Change(put=list(live), events=events), result

        result = remote._transact_locked(decide, tries=TRIES, fetched=True)
        if result.conflicts:
            return result
        updates: dict[str, str | None] = {LOCK_PREFIX + r.id: None for r in expired}
        if local_journal is not None and local_journal != staged_journal:
            updates[LOCAL_JOURNAL_REF] = local_journal  # keep this clone's local history
        remote.set_refs(updates)
        store.config_set("alock.remote", name)
    return result


@dataclass
class OffResult:
    remote: str | None
    mirrored: int = 0
    forgotten: int = 0
    still_set: str | None = None  # alock.remote still set at another level (global config)


def disable(store: Store, *, forget: bool = False) -> OffResult:
    """Leave remote mode. Mirrored locks stay in the local view unless ``forget``."""
    name = store.config_get("alock.remote")
    if not name:
        return OffResult(None)
    try:
        remote = RemoteStore(store.repo, name)
    except RemoteError:  # the remote is gone from the config: nothing staged to read
        remote = None
    result = OffResult(name)
    if remote is not None:
        with remote.mutex():
            staged, journal = remote.staged()
            updates: dict[str, str | None] = {}
            for name_, oid in remote._lock_refs():
                lock_id = name_[len(LOCK_PREFIX) :]
                if staged.get(lock_id) == str(oid):
                    result.mirrored += 1
                    if forget:
                        updates[name_] = None
                        result.forgotten += 1
            updates.update({f"{remote.staging}locks/{i}": None for i in staged})
            if journal is not None:
                updates[f"{remote.staging}meta/journal"] = None
            remote.set_refs(updates)
            times = read_sync_times(store)
            times.pop(name, None)
            write_sync_times(store, times)
    with contextlib.suppress(KeyError, pygit2.GitError):
        del store.repo.config["alock.remote"]
    result.still_set = store.config_get("alock.remote")
    return result
