"""What one write does to the lock table: records put, ids deleted, events journaled.

Pure data, in the core: the guard and the services build changes without loading a store
(and so without pygit2); every store applies them the same way (``store/base.py``).
"""

from __future__ import annotations

from gitlocks.core.record import MAX_RECORD_BYTES, LockRecord
from gitlocks.errors import UsageError

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any


class Change:
    """What one write does: records to create or replace, ids to delete, events to journal."""

    __slots__ = ("delete", "events", "put")

    def __init__(
        self,
        put: list[LockRecord] | None = None,
        delete: list[str] | None = None,
        events: list[dict[str, Any]] | None = None,
    ) -> None:
        self.put = [] if put is None else put
        self.delete = [] if delete is None else delete
        self.events = [] if events is None else events

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
