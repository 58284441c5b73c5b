"""Remote mode as the command line asks about it: the mode shown, and a sync."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from gitlocks.store.local import Store
from gitlocks.store.remote import RemoteStore, read_sync_times


@dataclass
class RemoteState:
    """Local mode (``remote`` None), or the lock remote: reachable and atomic, last synced."""

    remote: str | None
    url: str | None = None
    synced_ago: float | None = None

    def to_dict(self) -> dict[str, Any]:
        if self.remote is None:
            return {"status": "local", "remote": None}
        return {
            "status": "remote",
            "remote": self.remote,
            "url": self.url,
            "atomic": True,
            "synced_ago": self.synced_ago,
        }


@dataclass
class SyncResult:
    remote: str
    changed: bool
    locks: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": "synced",
            "remote": self.remote,
            "changed": self.changed,
            "locks": self.locks,
        }


def show(store: Store) -> RemoteState:
    """The mode; in remote mode the remote is probed (reachable, takes atomic pushes)."""
    name = store.config_get("alock.remote")
    if not name:
        return RemoteState(None)
    remote = RemoteStore(store.repo)
    remote.probe()
    return RemoteState(name, store.config_get(f"remote.{name}.url"), view_age(store, name))


def sync(store: Store) -> SyncResult:
    remote = RemoteStore(store.repo)
    changed = remote.sync()
    return SyncResult(remote.remote, changed, len(remote.remote_table()))


def view_age(store: Store, name: str) -> float | None:
    """Seconds since the local view of ``name`` was last refreshed (None: never)."""
    synced = read_sync_times(store).get(name)
    return None if synced is None else max(0.0, time.time() - synced)
