"""Journal events as one line of text each, for ``git alock log`` and ``watch``."""

from __future__ import annotations

from gitlocks.core.journal import COMPACTED, Event
from gitlocks.core.text import printable

_DETAIL_KEYS = ("by", "from", "reason", "text", "released", "expires_at", "pid")


def format_event(event: Event) -> str:
    """One line: time, event, holder, paths, details, and the lock id; control
    characters escaped (:func:`gitlocks.core.text.printable`)."""
    kind = str(event.get("event", "?"))
    parts = [str(event.get("at", "?")), kind]
    if event.get("local"):
        parts[1] = f"{kind} (local)"
    if kind == COMPACTED:
        parts.append(f"kept {event.get('kept', '?')} events")
        return printable(" ".join(parts))
    parts.append(str(event.get("holder", "?")))
    parts.append(" ".join(str(p) for p in event.get("paths", [])))
    for key in _DETAIL_KEYS:
        value = event.get(key)
        if value in (None, "", []):
            continue
        if isinstance(value, list):
            value = " ".join(map(str, value))
        parts.append(f'{key} "{value}"' if key in ("reason", "text") else f"{key} {value}")
    for conflict in event.get("conflicts", []):
        if isinstance(conflict, dict):
            held = " ".join(map(str, conflict.get("paths", [])))
            parts.append(f"held {held} by {conflict.get('holder', '?')}")
    if event.get("id"):
        parts.append(f"[lock {event['id']}]")
    # Reasons, notes and paths are user text: escaped, so they cannot forge a line.
    return printable(" ".join(p for p in parts if p))
