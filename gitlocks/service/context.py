"""Who is asking, of which store, at what time; and the steps every write shares.

``Context`` travels through every verb of the service. ``event`` builds a journal event
and ``sweep`` schedules expired records for deletion: every decision starts with them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gitlocks.core.record import LockRecord, format_time, parse_duration, utcnow
from gitlocks.core.table import Table
from gitlocks.identity import Identity, process_alive
from gitlocks.layout import DEFAULT_STALE_SECONDS
from gitlocks.store.local import Change, Store


@dataclass
class Context:
    """Who is asking, of which store, at what time."""

    store: Store
    identity: Identity
    clock: Callable[[], datetime] = utcnow
    # Whether (pid, start time) is still the same running process; injectable for tests.
    alive: Callable[[int, str], bool] = process_alive
    host: str = field(default_factory=lambda: os.uname().nodename)
    stale_after: int | None = None  # seconds; None: alock.staleAfter, else 10m

    def now(self) -> datetime:
        return self.clock()

    def stale_seconds(self) -> int:
        if self.stale_after is None:
            self.stale_after = stale_after_seconds(self.store.config_get)
        return self.stale_after


def event(kind: str, record: LockRecord, now: datetime, **extra: Any) -> dict[str, Any]:
    event = {
        "event": kind,
        "at": format_time(now),
        "id": record.id,
        "holder": record.holder,
        "paths": list(record.paths),
    }
    event.update(extra)
    return event


def sweep(table: Table, now: datetime, change: Change) -> set[str]:
    """Schedule every expired record for deletion; return their ids."""
    gone = set()
    for record in table.expired(format_time(now)):
        change.delete.append(record.id)
        change.events.append(event("expired", record, now))
        gone.add(record.id)
    return gone


def live_table(ctx: Context) -> tuple[Table, list[LockRecord]]:
    """The table and its unexpired records, oldest first."""
    table = ctx.store.read_table()
    now = format_time(ctx.now())
    return table, table.live(now)


def stale_after_seconds(config_get: Callable[[str], str | None]) -> int:
    """``alock.staleAfter`` as seconds, else the 10 minute default."""
    configured = config_get("alock.staleAfter")
    if configured is None:
        return DEFAULT_STALE_SECONDS
    return parse_duration(configured, what="alock.staleAfter")
