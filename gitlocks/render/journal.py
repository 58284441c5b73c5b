"""Journal events as one line of text each, for ``git alock log`` and ``watch``."""

from __future__ import annotations

from gitlocks.core.journal import COMPACTED, REPAIRED
from gitlocks.core.text import printable

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from gitlocks.core.journal import Event

_DETAIL_KEYS = (
    "reason",
    "text",
    "released",
    "expires_at",
    "pid",
    "branch",
    "by_commit",
    "until_merged",
    "why",  # a waiter left the queue (design 4.7): timeout, deadlock, stopped, dead, yours
    "queue",  # a waiter's place
    "waited_as",  # a grant that ended a wait: the waiter it was
)


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
    if kind == REPAIRED:
        parts.append(f"lock ref put back as the table holds it [lock {event.get('id', '?')}]")
        return printable(" ".join(parts))
    parts.append(str(event.get("holder", "?")))
    paths, released = event.get("paths", []), event.get("released")
    if isinstance(paths, list) and isinstance(released, list) and released != paths:
        # Part of a lock: what went, then what the lock kept.
        parts.append(_words(released))
        kept = [p for p in paths if p not in released]
        if kept:
            parts.append(f"(kept {_words(kept)})")
    else:
        parts.append(_words(paths))
    acted = _acted(kind, event)
    if acted:
        parts.append(f"({acted})")
    for key in _DETAIL_KEYS:
        value = event.get(key)
        if value in (None, "", []):
            continue
        if key == "released" and isinstance(value, list):
            continue  # already on the line, as the paths released
        if key == "pid" and kind == "auto_released":
            continue  # said with who cleared it
        value = _words(value)
        if key == "by_commit":
            parts.append(f"by commit {value[:12]}")
            continue
        parts.append(f'{key} "{value}"' if key in ("reason", "text") else f"{key} {value}")
    if event.get("shared") is True:
        parts.append("shared")
    conflicts = event.get("conflicts", [])
    for conflict in conflicts if isinstance(conflicts, list) else []:
        if isinstance(conflict, dict):
            held = _words(conflict.get("paths", []))
            parts.append(f"held {held} by {conflict.get('holder', '?')}")
    if event.get("id"):
        parts.append(f"[lock {event['id']}]")
    # Reasons, notes and paths are user text: escaped, so they cannot forge a line.
    return printable(" ".join(p for p in parts if p))


# Who acted on a lock, for the events where that may be someone other than its holder:
# the line names the holder and the lock first, so the actor is said apart, with what they
# did ("expired e e/** by f" read as if f had expired it).
_ACTED = {
    "expired": "swept by {by}'s write",
    "landed": "released by {by}'s write, its work landed",
    "auto_released": "cleared by {by}'s write",
    "broken": "broken by {by}",
    "released": "released by {by}",
    "resumed": "taken over by {by}",
}


def _acted(kind: str, event: Event) -> str:
    """``swept by f's write``, ``broken by b``, ``taken over from a``: who did what to
    the holder's lock; "" when its holder acted alone."""
    by, holder, source = event.get("by"), event.get("holder"), event.get("from")
    said = []
    if by not in (None, "") and (by != holder or kind in ("expired", "landed", "auto_released")):
        said.append(_ACTED.get(kind, "by {by}").format(by=_words(by)))
    if kind == "auto_released" and event.get("pid") not in (None, ""):
        said.insert(0, f"its process {_words(event['pid'])} is gone")
    if source not in (None, ""):
        said.append(f"taken over from {_words(source)}")
    return "; ".join(said)


def _words(value: object) -> str:
    """A field as words: a list's items joined, anything else as it is (events are data
    read back from disk and from other clones: any shape must print, none may crash)."""
    if isinstance(value, list):
        return " ".join(map(str, value))
    return str(value)
