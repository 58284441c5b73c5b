"""Is a lock's holder alive, quiet (STALE) or gone (dead, INTERRUPTED WORK)?

Pure: the caller says where it stands (``host_id``: boot and pid namespace) and how to ask
whether a process still runs. The service, ``check`` and the hooks judge through this one
class, so they judge alike (docs/design.md, section 3.3).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from gitlocks.core.record import LockRecord

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Literal, TypeAlias

    # The state of a live (unexpired) lock.
    State: TypeAlias = Literal["live", "stale", "dead", "interrupted"]


class Liveness:
    """Judges records for one decision, each session process at most once."""

    __slots__ = ("_seen", "alive", "host_id", "now", "stale_after")

    def __init__(
        self,
        host_id: str,
        alive: Callable[[int, str], bool],
        now: datetime,
        stale_after: int,
    ) -> None:
        self.host_id = host_id
        self.alive = alive
        self.now = now
        self.stale_after = stale_after
        self._seen: dict[tuple[int, str], bool] = {}

    def dead(self, record: LockRecord) -> bool:
        """Whether the record's session process is known gone: judged only in the boot and
        pid namespace that wrote it, never by host name alone."""
        key = (record.pid, record.pid_start)
        if not record.host_id or record.host_id != self.host_id or key[0] <= 0 or not key[1]:
            return False
        if key not in self._seen:
            self._seen[key] = self.alive(*key)
        return not self._seen[key]

    def quiet_seconds(self, record: LockRecord) -> float:
        return max(0.0, (self.now - record.last_active()).total_seconds())

    def state(self, record: LockRecord) -> State:
        if self.dead(record):
            return "interrupted" if record.notes else "dead"
        if self.quiet_seconds(record) >= self.stale_after:
            return "stale"
        return "live"
