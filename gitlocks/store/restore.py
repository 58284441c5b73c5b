"""``git alock remote --restore``: a lock remote whose journal was lost (noticed by
``gitlocks.store.lost``) put back from this clone's view, merged with whatever the remote
holds now, in one compare-and-swap push (docs/design.md, section 5.8).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gitlocks.core.record import format_time, is_lock_id, utcnow
from gitlocks.errors import RemoteError, UsageError
from gitlocks.git.remote import lost_race
from gitlocks.layout import (
    FORMAT_REF,
    JOURNAL_REF,
    LOCK_PREFIX,
    MUTEX_TIMEOUT_SECONDS,
    SHARD_PREFIX,
)
from gitlocks.store.local import Store
from gitlocks.store.lost import is_ancestor, lost_view, shard_losses
from gitlocks.store.remote import RemoteStore
from gitlocks.store.upgrade import held_in, new_layout, sharded_markers


def _settled(
    remote: RemoteStore, kept: dict[str, str], tables: dict[int, dict[str, str]], lost: set[int]
) -> dict[str, str]:
    """The entries a lost shard held in the view, as the shards that did not lose them tell
    them now (a record every other shard of its claim dropped since is not put back), so
    that no record is torn across its shards."""
    loaded = remote.load(((LOCK_PREFIX + i, oid) for i, oid in sorted(kept.items())), None)
    found: dict[str, str] = {}
    for lock_id, oid in kept.items():
        where = held_in(loaded.get(lock_id), len(tables))
        others = sorted(k for k in where if k not in lost and k in tables)
        if not others:
            found[lock_id] = oid  # every shard of it was lost: the view is all there is
            continue
        now = [tables[k][lock_id] for k in others if lock_id in tables[k]]
        if now:
            found[lock_id] = now[-1]
    return found


@dataclass
class RestoreResult:
    remote: str
    restored: bool
    locks: int = 0
    journal: str | None = None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": "restored" if self.restored else "nothing",
            "remote": self.remote,
            "locks": self.locks,
            "journal": self.journal,
            "reason": self.reason,
        }


def restore(store: Store) -> RestoreResult:
    """``git alock remote --restore``: put the local view's table back on the remote."""
    remote = RemoteStore(store.repo)
    with remote.mutex(timeout=MUTEX_TIMEOUT_SECONDS + 2 * remote.timeout):
        view = remote.view_journal()
        if view is None or remote.journal_store.commit_of(view) is None:
            raise UsageError(
                f"nothing to restore: this clone has no view of {remote.remote!r}'s lock table "
                "(git alock sync makes one)"
            )
        remote.mirroring = False  # fetch the remote's state into staging only
        try:
            remote.fetch()
        finally:
            remote.mirroring = True
        if remote.shard_count() is not None or remote.journal_store.view_tips(view) is not None:
            return _restore_shards(remote, view)
        staged, current = remote.staged()
        if lost_view(remote, current) is None:
            remote.fetch()  # nothing lost: mirror it as any sync would
            return RestoreResult(remote.remote, False, reason="the remote's journal continues")
        kept = remote.mirrored()
        now_there = remote.journal_store.table(current) if current is not None else None
        merged = {**kept, **(now_there if now_there is not None else staged)}
        actual = remote.actual_lock_refs()
        event = _restored(merged, view, current)
        commit = str(remote.journal_store.write(view, [event], merged))
        leases = [f"--force-with-lease={JOURNAL_REF}:{current or ''}"]
        specs = [f"{commit}:{JOURNAL_REF}"]
        _push_restore(remote, leases, specs, actual, merged, actual.keys() | merged.keys())
        remote._mirror(actual, merged, commit, write_staging=True, table=merged, previous=current)
        return RestoreResult(remote.remote, True, len(merged), commit)


def _restored(
    table: dict[str, str], was: str, replacing: str | None, shard: int | None = None
) -> dict[str, object]:
    """The journal event of a restore: ``table`` put back from the view's ``was`` over
    ``replacing`` (in shard ``shard`` of a sharded remote)."""
    event: dict[str, object] = {
        "event": "restored",
        "at": format_time(utcnow()),
        "holder": "",
        "paths": [],
        "locks": len(table),
        "from": was,
        "replacing": replacing,
    }
    if shard is not None:
        event["shard"] = shard
    return event


def _restore_shards(remote: RemoteStore, view: str) -> RestoreResult:
    """``restore`` for a sharded remote: each shard journal that lost live claims gets a
    commit on the one the view names for it, with the view's table for it and what the
    shard holds now, all in one push with the lock refs that differ."""
    store = remote.journal_store
    staged, current = remote.staged()
    if store.view_tips(view) is not None and remote.shard_count() is None:
        return _rebuild_shards(remote, view)
    if store.view_tips(view) is None or remote.shard_count() is None:
        raise RemoteError(
            f"the lock table of {remote.remote!r} was sharded or unsharded since this clone "
            "last saw it; remote --restore puts back shard journals only onto the same "
            "shards. Nothing was changed. git alock remote --off --forget, then git alock "
            f"remote {remote.remote}, accepts the remote as it is now"
        )
    viewed = len(store.view_tips(view) or {})
    if viewed != remote.shard_count():
        raise RemoteError(
            f"the lock table of {remote.remote!r} is kept in {remote.shard_count()} shards now, "
            f"and was in {viewed} when this clone last saw it (laid out again since?); remote "
            "--restore puts back shard journals only onto the same shards. Nothing was "
            f"changed. git alock remote --off --forget, then git alock remote {remote.remote}, "
            "accepts the remote as it is now"
        )
    losses = shard_losses(remote, view, current)
    if not losses:
        remote.fetch()  # nothing lost: mirror it as any sync would
        return RestoreResult(remote.remote, False, reason="every shard journal continues")
    remote.check_format()
    now = store.view_tips(current) or {}
    for k, *_ in losses:
        remote._check_shard(k, now.get(k))  # moved onto no journal commit: never written over
    tables = remote.shard_tables(now)
    actual = remote.actual_lock_refs()
    tips = dict(now)
    written: dict[int, str] = {}
    leases: list[str] = []
    specs: list[str] = []
    touched: set[str] = set()
    lost = {k for k, *_ in losses}
    for k, was, _, _ in losses:
        merged = {**_settled(remote, store.table(was) or {}, tables, lost), **tables[k]}
        touched |= merged.keys() | tables[k].keys()
        event = _restored(merged, was, now.get(k), shard=k)
        tips[k] = written[k] = str(store.write(was, [event], merged))
        tables[k] = merged
        leases.append(f"--force-with-lease={SHARD_PREFIX}{k}:{now.get(k) or ''}")
        specs.append(f"{written[k]}:{SHARD_PREFIX}{k}")
    union = {i: v for k in sorted(tables) for i, v in tables[k].items()}
    _push_restore(remote, leases, specs, actual, union, touched)
    restored = remote.view_of(tips, union)
    moved = {f"{remote.staging}meta/shards/{k}": oid for k, oid in written.items()}
    remote._mirror(
        staged,
        union,
        restored,
        write_staging=True,
        table=union,
        previous=current,
        staged_meta=moved,
    )
    return RestoreResult(remote.remote, True, len(union), restored)


def _rebuild_shards(remote: RemoteStore, view: str) -> RestoreResult:
    """``restore`` for a sharded view of a remote whose format ref and every shard journal
    are gone: the format ref, the notice and each shard journal put back on the commit the
    view names for it, with the view's table for it and what the remote holds now (unless
    the journal ref is back on the journal the shards went on from), in one push."""
    store = remote.journal_store
    staged, current = remote.staged()
    tips = store.view_tips(view) or {}
    count = len(tips)
    gone = not remote.scan_refs((remote.staging + "meta/shards/",))
    if not gone or sorted(tips) != list(range(count)) or any(t is None for t in tips.values()):
        raise RemoteError(
            f"the lock table of {remote.remote!r} lost its {FORMAT_REF} but kept shard "
            "journals; remote --restore puts back a sharded table only where every part of "
            f"it is gone. Nothing was changed. Put {FORMAT_REF} back on the remote itself "
            f"(a blob 'shards {count}'), or git alock remote --off --forget, then git alock "
            f"remote {remote.remote}, accepts the remote as it is now"
        )
    if current is not None and store.commit_of(current) is None:
        found = store.objects.read(current)
        if found is None or found[0] != "commit":
            raise RemoteError(
                f"{JOURNAL_REF} on the lock remote {remote.remote!r} holds {current[:12]}, "
                "which is no commit (moved by hand); nothing was changed. Put it right on the "
                "remote itself"
            )
    now_there = store.table(current) if current is not None else None
    extra = now_there if now_there is not None else staged
    if current is not None and any(
        is_ancestor(remote.repo, current, str(t)) for t in tips.values()
    ):
        extra = {}  # the journal the shards went on from (a mirror of a clone from before)
    loaded = remote.load(((LOCK_PREFIX + i, oid) for i, oid in sorted(extra.items())), None)
    tables: dict[int, dict[str, str]] = {}
    written: dict[int, str] = {}
    for k in range(count):
        was = str(tips[k])
        table = {i: v for i, v in (store.table(was) or {}).items() if i not in extra}
        for lock_id, oid in extra.items():
            if k in held_in(loaded.get(lock_id), count):
                table[lock_id] = oid  # a record that cannot be read: held in every shard
        event = _restored(table, was, None, shard=k)
        tables[k] = table
        written[k] = str(store.write(was, [event], table))
    union = {i: v for k in sorted(tables) for i, v in tables[k].items()}
    notice, fmt = sharded_markers(store.objects, current, count, new_layout())
    leases = [
        f"--force-with-lease={JOURNAL_REF}:{current or ''}",
        f"--force-with-lease={FORMAT_REF}:",
    ]
    leases += [f"--force-with-lease={SHARD_PREFIX}{k}:" for k in written]
    specs = [f"{notice}:{JOURNAL_REF}", f"{fmt}:{FORMAT_REF}"]
    specs += [f"{commit}:{SHARD_PREFIX}{k}" for k, commit in written.items()]
    actual = remote.actual_lock_refs()
    _push_restore(remote, leases, specs, actual, union, actual.keys() | union.keys())
    remote.fetch()
    return RestoreResult(remote.remote, True, len(union), remote.view_journal())


def _push_restore(
    remote: RemoteStore,
    leases: list[str],
    specs: list[str],
    actual: Mapping[str, str],
    wanted: Mapping[str, str],
    ids: Iterable[str],
) -> None:
    """Push the restored journal(s) with every lock ref of ``ids`` moved from its value on
    the remote (``actual``) to ``wanted``'s, in one atomic push; never to a symbolic ref."""
    leases, specs = list(leases), list(specs)
    for lock_id in sorted(ids):
        have, want = actual.get(lock_id), wanted.get(lock_id)
        ref = LOCK_PREFIX + lock_id
        if have == want or not is_lock_id(lock_id) or ref in remote.remote_symrefs:
            continue
        leases.append(f"--force-with-lease={ref}:{have or ''}")
        specs.append(f"{want}:{ref}" if want else f":{ref}")
    run, lines = remote._push_atomic(leases, specs)
    if run.code != 0 or not lines:
        if lines and lost_race(lines):
            raise RemoteError(
                f"the lock remote {remote.remote!r} changed while restoring; nothing was "
                "changed there: run git alock remote --restore again"
            )
        raise remote._refused(lines, run)
