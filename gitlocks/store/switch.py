"""Switching a clone between local mode and remote mode, without losing a lock
(docs/design.md, section 5.6): live local locks are pushed unless one would be blocked
there, and until the switch is decided only staging moves; leaving keeps the mirrored
locks (``detached`` refs), which a switch back replaces by the remote's state.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from gitlocks.core.change import Change
from gitlocks.core.judging import record_entries
from gitlocks.core.record import LockRecord, format_time, utcnow
from gitlocks.core.table import Table
from gitlocks.errors import GitlocksError, RemoteError, UsageError
from gitlocks.git.remote import failure, no_atomic
from gitlocks.layout import (
    DEFAULT_SHARDS,
    JOURNAL_REF,
    LOCK_PREFIX,
    MAX_SHARDS,
    MUTEX_TIMEOUT_SECONDS,
    PROBE_PREFIXES,
    STAGING_PREFIX,
)
from gitlocks.store.local import Store
from gitlocks.store.remote import (
    TRIES,
    RemoteStore,
    RemoteTable,
    read_sync_times,
    write_sync_times,
)


@dataclass
class SwitchResult:
    """What ``git alock remote NAME`` did, or (``conflicts``) why it refused."""

    remote: str
    pushed: list[LockRecord] = field(default_factory=list)
    dropped_expired: list[LockRecord] = field(default_factory=list)
    conflicts: list[tuple[LockRecord, LockRecord]] = field(default_factory=list)
    on_remote: int = 0
    # Copies of the remote's locks from an earlier --off: replaced, never pushed.
    refreshed: list[LockRecord] = field(default_factory=list)
    # Of those, the ones changed here while the remote changed them too: the remote's wins.
    superseded: list[LockRecord] = field(default_factory=list)
    shards: int = 1  # the remote's table: in that many shard journals (1: one journal)
    laid_out: bool = False  # a new lock remote, whose table this switch laid out
    upgraded: bool = False  # a table kept in one journal, sharded as asked (--shards N)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": "refused" if self.conflicts else "remote",
            "remote": self.remote,
            "pushed": [r.to_dict() for r in self.pushed],
            "dropped_expired": [r.to_dict() for r in self.dropped_expired],
            "refreshed": [r.to_dict() for r in self.refreshed],
            "superseded": [r.to_dict() for r in self.superseded],
            "conflicts": [
                {"local": mine.to_dict(), "remote": theirs.to_dict()}
                for mine, theirs in self.conflicts
            ],
            "locks_on_remote": self.on_remote,
            "shards": self.shards,
            "laid_out": self.laid_out,
            "upgraded": self.upgraded,
        }


def blockers(table: Table, record: LockRecord, now: str) -> list[LockRecord]:
    """The live locks in ``table`` that would refuse ``record`` as a claim (the rule of
    ``locks.acquire``: only the claimant's own and its ancestors' locks never block)."""
    friends = {record.holder, *table.ancestors(record.holder, record.parent)}
    found = []
    for lock_id in sorted(table.overlaps(record_entries(record))):
        theirs = table.records[lock_id]
        if lock_id == record.id or theirs.holder in friends or not table.is_live(theirs, now):
            continue
        if not (record.shared and theirs.shared):  # shared claims cross only exclusive ones
            found.append(theirs)
    return found


def enable(store: Store, name: str, shards: int | None = None) -> SwitchResult:
    """Switch to remote mode on ``name``, pushing live local locks that conflict with none
    (else nothing changes locally). A new lock remote is first laid out in ``shards``
    shard journals (``DEFAULT_SHARDS`` unless given); one with a table keeps its layout."""
    remote = RemoteStore(store.repo, name, configured=store.settings)
    remote.mirroring = False  # staging only, until the switch is decided
    probe(remote, write=True)
    with remote.mutex(timeout=MUTEX_TIMEOUT_SECONDS + 2 * remote.timeout):
        staging_before = remote.staging_refs()
        try:
            result = _enable_locked(store, remote, shards)
        except BaseException:
            _restore_staging(remote, staging_before)
            raise
        if result.conflicts:
            _restore_staging(remote, staging_before)
    return result


class _LocalLocks(NamedTuple):
    """This clone's local locks as the switch sorts them."""

    expired: list[LockRecord]
    refreshed: list[LockRecord]  # copies of the remote's locks: never ours to push
    candidates: list[LockRecord]  # live locks made here: to push


def _enable_locked(store: Store, remote: RemoteStore, shards: int | None) -> SwitchResult:
    local_journal = remote.version()
    viewed_journal = remote.view_journal()
    _, staged_journal = remote.staged()
    copies, copied_journal = remote.detached_copies()
    foreign = _detached_elsewhere(remote)
    remote.fetch()
    layout = _layout(remote, shards)
    now = format_time(utcnow())
    staged, _ = remote.staged()
    local = remote.local_locks()
    # Copies of a remote's locks, never this clone's to push.
    mirrored = {(i, v) for copy in (copies, foreign, remote.mirrored()) for i, v in copy.items()}
    sorted_ = _sort_local(remote, local, staged, mirrored, now)
    decide = _adoption(remote.remote, sorted_, copies, now)
    result: SwitchResult = remote.transact_held(decide, tries=TRIES, fetched=True)
    result.shards, result.laid_out = remote.shard_count() or 1, layout
    if result.conflicts:
        return result
    # Decided: the local view becomes the remote's; the local history is kept.
    new, journal = remote.staged()
    handled = [*result.dropped_expired, *result.refreshed, *result.superseded, *result.pushed]
    old = {r.id: local[r.id] for r in handled}
    old.update({i: v for i, v in local.items() if staged.get(i) == v})
    updates = remote.view_updates(old, new, journal)
    mirrored_journals = (staged_journal, copied_journal, viewed_journal, journal)
    if local_journal is not None and local_journal not in mirrored_journals:
        updates.update(remote.keep_local_journal(local_journal))
    for ref in remote.scan_refs((STAGING_PREFIX,)):
        if "/detached/" in ref or ref.endswith("/detached-journal"):
            updates[ref] = None  # every copy is now the remote's, or dropped
    remote.set_refs(updates)
    remote.stamp_sync()
    store.config_set("alock.remote", remote.remote)
    return result


def _layout(remote: RemoteStore, shards: int | None) -> bool:
    """Lay out a new lock remote (True: this switch did), or check that one with a table
    can keep the count asked for (a single journal is upgraded after the switch)."""
    from gitlocks.store.upgrade import is_new, lay_out  # only a switch lays one out

    if shards is not None and not 1 <= shards <= MAX_SHARDS:
        raise UsageError(f"--shards takes a count from 1 to {MAX_SHARDS}, not {shards}")
    if is_new(remote) and lay_out(remote, shards or DEFAULT_SHARDS):
        return True
    existing = remote.shard_count()
    if shards is not None and existing is not None and existing != shards:
        stated = f"{existing} shards" if existing else "a shard count this gitlocks cannot read"
        kept = "one journal" if shards == 1 else f"{shards} shards"
        raise UsageError(
            f"the lock table of {remote.remote!r} is sharded already ({stated}), and the count "
            f"is fixed once it is sharded: it cannot be kept in {kept}; nothing was changed "
            f"(git alock remote {remote.remote} joins it as it is)"
        )
    return False


def _sort_local(
    remote: RemoteStore,
    local: dict[str, str],
    staged: dict[str, str],
    mirrored: set[tuple[str, str]],
    now: str,
) -> _LocalLocks:
    """Which local locks are expired, copies of a remote's, or this clone's to push."""
    found = _LocalLocks([], [], [])
    for lock_id, oid in sorted(local.items()):
        if staged.get(lock_id) == oid:
            continue  # already the remote's
        record = remote.read_record(LOCK_PREFIX + lock_id, oid)
        if not isinstance(record, LockRecord):
            continue  # not a lock record: left as it is
        if (lock_id, oid) in mirrored:
            found.refreshed.append(record)  # the remote's lock, as mirrored
        elif record.expires_at <= now:
            found.expired.append(record)
        else:
            found.candidates.append(record)
    return found


def _adoption(
    name: str, local: _LocalLocks, copies: dict[str, str], now: str
) -> Callable[[Table], tuple[Change, SwitchResult]]:
    """The decision that pushes this clone's live locks, unless one is blocked there."""

    def decide(table: Table) -> tuple[Change, SwitchResult]:
        result = SwitchResult(name, dropped_expired=local.expired, refreshed=list(local.refreshed))
        live = []
        refs = table.refs if isinstance(table, RemoteTable) else {}
        for record in local.candidates:
            # Only over the value it was copied from: an old copy never overwrites a newer one.
            if refs.get(record.id) != copies.get(record.id):
                result.superseded.append(record)
                continue
            result.conflicts.extend((record, theirs) for theirs in blockers(table, record, now))
            live.append(record)
        if result.conflicts or not live:
            result.on_remote = len(table)
            return Change(), result
        events = [
            {"event": "adopted", "at": now, "id": r.id, "holder": r.holder,
             "paths": list(r.paths), "from": "local"}
            for r in live
        ]  # fmt: skip
        result.pushed = live
        result.on_remote = len(table) + len([r for r in live if r.id not in table.records])
        return Change(put=list(live), events=events), result

    return decide


def _detached_elsewhere(remote: RemoteStore) -> dict[str, str]:
    """Lock copies kept from other lock remotes: not this clone's locks either."""
    found = {}
    for ref, oid in remote.scan_refs((STAGING_PREFIX,)).items():
        if not ref.startswith(remote.staging):
            head, sep, lock_id = ref.rpartition("/detached/")
            if sep and head and "/" not in lock_id:
                found[lock_id] = oid
    return found


def _restore_staging(remote: RemoteStore, before: dict[str, str]) -> None:
    """Put staging back as it was before a switch that did not happen."""
    now = remote.staging_refs()
    updates: dict[str, str | None] = {ref: None for ref in now if ref not in before}
    updates.update({ref: oid for ref, oid in before.items() if now.get(ref) != oid})
    remote.set_refs(updates)


@dataclass
class OffResult:
    """What switching back to local mode kept and left."""

    remote: str | None
    mirrored: int = 0
    forgotten: int = 0
    still_set: str | None = None  # alock.remote still set at another level (global config)
    invalid: str | None = None  # why alock.remote could not be used (it was unset anyway)

    def to_dict(self) -> dict[str, Any]:
        if self.invalid:
            return {"status": "local", "remote": self.remote, "invalid": self.invalid}
        if self.remote is None:
            return {"status": "local", "remote": None}
        return {
            "status": "local",
            "remote": self.remote,
            "mirrored": self.mirrored,
            "forgotten": self.forgotten,
        }


def disable(store: Store, *, forget: bool = False) -> OffResult:
    """Leave remote mode. Mirrored locks stay in the local view unless ``forget``."""
    name = store.config_get("alock.remote")
    if not name:
        return OffResult(None)
    result = OffResult(name)
    try:
        remote: RemoteStore | None = RemoteStore(store.repo, name, configured=store.settings)
    except RemoteError:  # the remote is gone from the config: nothing staged to read
        remote = None
    except GitlocksError as exc:  # an invalid name, or another invalid alock.* setting
        remote = None
        result.invalid = str(exc)
    if remote is not None:
        with remote.mutex():
            staged, journal = remote.staged()
            # Copies from an earlier switch are replaced by the current ones.
            old_copies = remote.detached_copies()[0]
            updates: dict[str, str | None] = {f"{remote.detached}{i}": None for i in old_copies}
            mirrored = remote.mirrored()
            for lock_id, oid in remote.local_locks().items():
                if oid in (staged.get(lock_id), mirrored.get(lock_id)):
                    result.mirrored += 1
                    if forget:
                        updates[LOCK_PREFIX + lock_id] = None
                        result.forgotten += 1
                    else:
                        # Remember it is the remote's copy, for a later switch back.
                        updates[f"{remote.detached}{lock_id}"] = oid
            updates.update(dict.fromkeys(remote.staging_refs(), None))
            updates[remote.view_ref] = None
            updates[remote.detached_journal] = journal
            remote.set_refs(updates)
            times = read_sync_times(store)
            times.pop(name, None)
            write_sync_times(store, times)
    store.config_unset("alock.remote")
    result.still_set = store.config_get("alock.remote")
    return result


def probe(remote: RemoteStore, *, write: bool = False) -> None:
    """Check that the remote answers and takes atomic pushes; raise ``RemoteError`` if not.
    Without ``write``: a dry-run deletion of a ref that does not exist (git still
    negotiates ``atomic``). With ``write``: a real round trip on probe refs shaped like
    ours (docs/design.md, section 5.6)."""
    run = remote._git(["ls-remote", remote.remote, JOURNAL_REF], what="ls-remote of")
    if run.code != 0:
        raise failure(run, remote.remote, "ls-remote")
    if write:
        _probe_round_trip(remote)
        return
    probe = f":{STAGING_PREFIX}probe"
    run = remote._git(
        ["push", "--dry-run", "--atomic", "--porcelain", "--no-verify", remote.remote, probe],
        what="push to",
    )
    if "does not support --atomic" in run.err:
        raise no_atomic(remote.remote)
    if run.code != 0:
        raise failure(run, remote.remote, "push --dry-run")


def _probe_round_trip(remote: RemoteStore) -> None:
    token = f"{os.getpid():x}-{os.urandom(6).hex()}"
    lock_ref, meta_ref = (f"{prefix}{token}" for prefix in PROBE_PREFIXES)
    blob = remote.objects.write_blob(b'{"gitlocks": "probe"}\n')
    commit = str(remote.journal_store.write(None, [{"event": "probe"}], {}))
    values = {lock_ref: blob, meta_ref: commit}
    for step in ("create", "delete"):
        leases = [
            f"--force-with-lease={ref}:{'' if step == 'create' else value}"
            for ref, value in values.items()
        ]
        specs = [f"{value if step == 'create' else ''}:{ref}" for ref, value in values.items()]
        run, lines = remote._push_atomic(leases, specs)
        if run.code == 0 and lines and all(ln.flag in "*-" for ln in lines):
            continue
        if not lines or "does not support --atomic" in run.err:
            raise failure(run, remote.remote, f"push (probe {step})")
        left = (
            f"Probe refs are left under {PROBE_PREFIXES[0]}{token} (and -meta); "
            "gitlocks ignores them. "
            if step == "delete"
            else ""
        )
        raise remote._refused(lines, run, left)
