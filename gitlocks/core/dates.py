"""``datetime``'s types, taken from its C module.

``import datetime`` runs the module's whole pure-Python implementation and then replaces
its classes with the C ones from ``_datetime``: about a millisecond, in every command, for
classes never used (docs/design.md §8). These are the very classes ``datetime`` exports
(``datetime.datetime is _datetime.datetime``), so values, pickles and ``isinstance``
are unchanged. Another Python without the C module gets ``datetime``'s own.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime, timedelta, timezone
else:
    try:
        from _datetime import datetime, timedelta, timezone  # what datetime itself exports
    except ImportError:  # pragma: no cover - CPython always has it
        from datetime import datetime, timedelta, timezone  # the same classes, more slowly

__all__ = ["datetime", "timedelta", "timezone"]
