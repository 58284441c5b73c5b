"""What one write does to the lock table: records put, ids deleted, events journaled.

Pure data, in the core: the guard and the services build changes without loading a store
(and so without pygit2); every store applies them the same way (``store/base.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gitlocks.core.record import MAX_RECORD_BYTES, LockRecord
from gitlocks.errors import UsageError


@dataclass
class Change:
    """What one write does: records to create or replace, ids to delete, events to journal."""

    put: list[LockRecord] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.put or self.delete)


def check_sizes(change: Change) -> None:
    """Refuse a record too big to be read back (see ``MAX_RECORD_BYTES``)."""
    for record in change.put:
        size = len(record.to_json())
        if size > MAX_RECORD_BYTES:
            raise UsageError(
                f"the lock record would be {size} bytes, more than the {MAX_RECORD_BYTES} a "
                "record may hold: claim fewer or shorter patterns, or write shorter notes"
            )
