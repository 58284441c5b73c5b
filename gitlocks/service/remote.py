"""Remote mode as the command line asks about it: the mode shown, and a sync."""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gitlocks.core.change import Change
from gitlocks.core.record import LockRecord
from gitlocks.core.table import Table
from gitlocks.errors import StoreError
from gitlocks.service import landing
from gitlocks.service.context import Context
from gitlocks.store.local import Store
from gitlocks.store.remote import RemoteStore, read_sync_times

if TYPE_CHECKING:
    from datetime import datetime

    from gitlocks.store.base import LockStore


@dataclass
class RemoteState:
    """Local mode (``remote`` None), or the lock remote: reachable and atomic, last synced."""

    remote: str | None
    url: str | None = None
    synced_ago: float | None = None
    shards: int | None = None  # a sharded lock table, as last fetched (docs/design.md 5.10)

    def to_dict(self) -> dict[str, Any]:
        if self.remote is None:
            return {"status": "local", "remote": None}
        return {
            "status": "remote",
            "remote": self.remote,
            "url": self.url,
            "atomic": True,
            "synced_ago": self.synced_ago,
            "shards": self.shards,
        }


@dataclass
class SyncResult:
    """What ``sync`` fetched, and the claims it released because their work landed
    (``remote`` None: local mode, where nothing is fetched and only landing is asked)."""

    remote: str | None
    changed: bool
    locks: int
    landed: list[LockRecord] = field(default_factory=list)  # released: their work landed

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": "synced",
            "remote": self.remote,
            "changed": self.changed,
            "locks": self.locks,
            "landed": [r.to_dict() for r in self.landed],
        }


def show(store: Store) -> RemoteState:
    """The mode; in remote mode the remote is probed (reachable, takes atomic pushes)."""
    name = store.config_get("alock.remote")
    if not name:
        return RemoteState(None)
    from gitlocks.store.switch import probe  # the switch's probe: sync needs none of it

    remote = RemoteStore(store.repo, configured=store.settings)
    probe(remote)
    url = store.config_get(f"remote.{name}.url")
    return RemoteState(name, url, view_age(store, name), remote.shard_count() or None)


def sync(ctx: Context) -> SyncResult:
    """Fetch the remote's lock table; then refresh the branches this machine's claims
    wait on and release, by one write, those whose work has landed there. In local mode
    there is nothing to fetch: only the landing question is asked."""
    if not ctx.store.config_get("alock.remote"):
        released = land_waiting(ctx)
        return SyncResult(None, bool(released), len(ctx.store.read_table()), released)
    remote = ctx.store
    if not isinstance(remote, RemoteStore):
        if not isinstance(remote, Store):
            raise StoreError("this lock store has no remote to sync with")
        remote = RemoteStore(remote.repo, configured=remote.settings)
        ctx = copy.copy(ctx)  # the caller's keeps its store
        ctx.store = remote
    changed = remote.sync()
    branches = landing.waiting_branches(remote.read_table(), ctx.host_id)
    if branches:
        remote.fetch_branches(branches)
    landed = _release_landed(ctx) if branches else []
    return SyncResult(remote.remote, changed, len(remote.remote_table()), landed)


def land_waiting(ctx: Context) -> list[LockRecord]:
    """Release, by one write, this machine's claims whose work has landed in their branch.
    The cheap questions first (any record of ours waiting, from the summaries; then landing,
    read-only): the store's mutex is taken only when some claim has landed."""
    table = ctx.store.read_table()
    if not landing.waiting_branches(table, ctx.host_id):
        return []
    if not landing.land(ctx.store, table, set(), ctx.host_id):
        return []
    return _release_landed(ctx)


def _release_landed(ctx: Context) -> list[LockRecord]:
    """One write that sweeps, and so releases the claims whose work has landed."""

    def decide(table: Table, now: datetime, change: Change, gone: set[str]) -> list[LockRecord]:
        found = [e["id"] for e in change.events if e["event"] == "landed"]
        return [table.records[i] for i in found]

    return ctx.write(decide)


def view_age(store: LockStore, name: str) -> float | None:
    """Seconds since the local view of ``name`` was last refreshed (None: never)."""
    if not isinstance(store, Store):
        return None  # no repository, no remote view
    synced = read_sync_times(store).get(name)
    return None if synced is None else max(0.0, time.time() - synced)
