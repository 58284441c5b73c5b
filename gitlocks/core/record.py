"""The lock record: what one ref under ``refs/agent-locks/`` points at.

Pure: no git, no I/O. A record is a pretty-printed UTF-8 JSON blob with ``"format": 1``.
Times are RFC 3339 in UTC with a ``Z`` suffix, to the second.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from operator import itemgetter

from gitlocks.core.text import ALNUM, NAME_CHARS, made_of
from gitlocks.core.value import Value
from gitlocks.errors import InvalidHolder, UsageError

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any, Final, TypeVar

    T = TypeVar("T")


FORMAT = 1
MAX_TTL_SECONDS = 366 * 86400
# Records stay small: a bigger blob is no usable record (it would cost every command).
MAX_RECORD_BYTES = 256 * 1024
MIN_YEAR, MAX_YEAR = 1970, 9000  # the years a record's times may name
MAX_AWAITING = 1000  # commits a claim waits for; more is no usable record
HOLDER_RULE = "use 1 to 64 of the characters A-Z a-z 0-9 . _ -"

# The names a record holds, each matched whole (``fullmatch``: a trailing newline is no
# match, as it would be for ``$``).
_LOCK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_GENERATED_ID = re.compile(r"[0-9a-f]{11}-[0-9a-f]{10}")
_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_HOLDER = re.compile(r"[A-Za-z0-9._-]{1,64}")


def is_lock_id(text: str) -> bool:  # the last component of its ref
    return _LOCK_ID.fullmatch(text) is not None


_NAME_BYTES, _ALNUM_BYTES = NAME_CHARS.encode(), ALNUM.encode()


def lock_ids_only(table: Mapping[str, T]) -> dict[str, T]:
    """The entries of ``table`` whose key is a lock id (``is_lock_id``). A table of lock ids
    alone (every table gitlocks writes) is checked whole: its keys' characters together,
    then their lengths and first characters, each in one pass of C."""
    names = list(table)
    try:
        joined = "".join(names).encode("ascii")
        firsts = "".join(map(itemgetter(0), names)).encode("ascii")
        lengths = set(map(len, names))
    except (TypeError, UnicodeEncodeError, IndexError):  # not text, not ASCII, or empty
        pass
    else:
        if (
            not joined.translate(None, _NAME_BYTES)
            and not firsts.translate(None, _ALNUM_BYTES)
            and (not lengths or max(lengths) <= 64)
        ):
            return dict(table)
    return {k: v for k, v in table.items() if is_lock_id(k)}


def is_generated_id(text: str) -> bool:
    """The shape ``new_lock_id`` makes. Text like this names a lock, never a path."""
    return _GENERATED_ID.fullmatch(text) is not None


def is_object_id(text: str) -> bool:
    """A full object id, SHA-1 or SHA-256: the one check of every module."""
    return _OBJECT_ID.fullmatch(text) is not None


def is_holder(text: str) -> bool:
    return _HOLDER.fullmatch(text) is not None


_BRANCH_CHARS = NAME_CHARS + "/"
_NEVER_IN_BRANCH = ("..", "//", "/.", ".lock/")


def is_branch(text: str) -> bool:
    """A branch a claim waits for: a subset of what ``git check-ref-format --branch``
    accepts, checked without git (it is read from any record)."""
    return (
        0 < len(text) <= 200
        and made_of(text, _BRANCH_CHARS)
        and text[0] not in "-."
        and text[-1] not in "./"
        and text != "HEAD"
        and not text.endswith((".lock", "/HEAD"))
        and not any(bad in text for bad in _NEVER_IN_BRANCH)
    )


def validate_holder(value: str, *, what: str = "agent id") -> str:
    """Return ``value`` if it is a usable holder id, else raise ``InvalidHolder``."""
    if not isinstance(value, str) or not is_holder(value):
        raise InvalidHolder(f"invalid {what} {value!r}: {HOLDER_RULE}")
    if value in (".", ".."):
        # Allowed by the character rule, but they read as paths, not names.
        raise InvalidHolder(f"invalid {what} {value!r}: '.' and '..' are not names")
    return value


class RecordError(ValueError):
    """A blob under the lock namespace that is not a valid lock record."""


# --- time -----------------------------------------------------------------------------------


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)


def format_time(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime:
    """Parse an RFC 3339 UTC time as written by ``format_time`` (fractions tolerated)."""
    if not isinstance(text, str) or not text.endswith("Z") or len(text) > 40:
        raise RecordError(f"not an RFC 3339 UTC time: {text!r}")
    try:
        moment = datetime.fromisoformat(text[:-1])
    except ValueError as exc:
        raise RecordError(f"not an RFC 3339 UTC time: {text!r}") from exc
    if moment.tzinfo is not None:
        raise RecordError(f"not an RFC 3339 UTC time: {text!r}")
    if not MIN_YEAR <= moment.year <= MAX_YEAR:
        # Far enough from datetime's limits that no arithmetic on it (an expiry plus
        # interruptedKeep, a rounded-up fraction) can overflow, and four digits as text.
        raise RecordError(f"a time outside the years {MIN_YEAR}-{MAX_YEAR}: {text!r}")
    return moment.replace(tzinfo=timezone.utc)


def canonical_time(text: str, *, round_up: bool = False) -> str:
    """``text`` in the one spelling ``format_time`` writes, so times compare as text
    (``2030-01-01 10:00:00Z`` or a fraction would sort wrongly). An expiry with a fraction
    is rounded up: a lock must not end before its holder was told."""
    if (
        len(text) == 20
        and text[4] == text[7] == "-"
        and text[10] == "T"
        and text[13] == text[16] == ":"
        and text[19] == "Z"
        and text.isascii()
        and (text[:4] + text[5:7] + text[8:10] + text[11:13] + text[14:16] + text[17:19]).isdigit()
        and MIN_YEAR <= int(text[:4]) <= MAX_YEAR
    ):
        # Already the spelling format_time writes (nearly every time read): only whether
        # it names a real moment is left to ask, and a 30 February is refused below.
        try:
            datetime.fromisoformat(text[:-1])
        except ValueError:
            pass
        else:
            return text
    moment = parse_time(text)
    if round_up and moment.microsecond:
        moment = moment.replace(microsecond=0) + timedelta(seconds=1)
        if moment.year > MAX_YEAR:  # rounded past the last second a record may name
            raise RecordError(f"a time outside the years {MIN_YEAR}-{MAX_YEAR}: {text!r}")
    return format_time(moment)


def parse_duration(text: str, *, what: str = "duration") -> int:
    """``90``, ``90s``, ``15m``, ``2h``, ``1d`` (or ``1h30m``, spaces allowed between the
    parts) to whole seconds, at least 1."""
    match = _DURATION.fullmatch(text)
    if match is None or not any(match.groups()):
        raise UsageError(
            f"invalid {what} {text[:40]!r}: use a positive whole number of seconds or a "
            "number with a unit, e.g. 90, 90s, 15m, 2h, 1d"
        )
    groups = [g or "" for g in match.groups()]
    if any(g and len(g.lstrip("0")) > 12 for g in groups):
        raise UsageError(f"invalid {what} {text[:40]!r}...: at most 366d")  # int() would balk
    # Leading zeros stripped: int() refuses a string of more than 4300 digits.
    days, hours, minutes, seconds = (int(g.lstrip("0") or "0") for g in groups)
    total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    if total <= 0:
        raise UsageError(f"invalid {what} {text[:40]!r}: must be longer than zero")
    if total > MAX_TTL_SECONDS:
        raise UsageError(f"invalid {what} {text[:40]!r}: at most 366d")
    return total


# Days, hours, minutes and seconds, in that order, each optional, spaces allowed around
# each unit; a last number without a unit is seconds. Each run of spaces follows a number
# or a unit, never another run, so no input can make the match backtrack far.
_DURATION = re.compile(
    r"\s*(?:([0-9]+)\s*d\s*)?(?:([0-9]+)\s*h\s*)?(?:([0-9]+)\s*m\s*)?(?:([0-9]+)\s*(?:s\s*)?)?"
)


def format_duration(seconds: float) -> str:
    """A short human duration: ``45s``, ``12m``, ``3h5m``, ``2d``."""
    if seconds != seconds or seconds < 0:  # NaN (math costs a module import)
        seconds = 0
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes = round(seconds / 60)  # 1799s reads as 30m, not 29m
    if minutes < 60:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours}h" if hours else f"{days}d"


_last_ms = [0]  # the millisecond of this process's last id


def new_lock_id() -> str:
    """Unique, sortable by creation, and only ``[a-z0-9-]``: safe as one ref component.
    Two ids one process makes in one millisecond take the next for the later, so a process
    never makes an id that sorts before one it made already (the youngest of a wait cycle
    is the greatest id, design 4.7)."""
    ms = _last_ms[0] = max(time.time_ns() // 1_000_000, _last_ms[0] + 1)
    return f"{ms:011x}-{os.getpid() % 0x10000:04x}{os.urandom(3).hex()}"


# --- the record -----------------------------------------------------------------------------


class Note(Value):
    __slots__ = ("at", "text")

    def __init__(self, at: str, text: str) -> None:
        self.at = at
        self.text = text


# The fields, in the order a record's JSON holds them; all but ``extra`` are compared.
_FIELDS = (
    "id",
    "holder",
    "parent",
    "paths",
    "exact",
    "reason",
    "created_at",
    "renewed_at",
    "expires_at",
    "host",
    "pid",
    "pid_start",
    "session",
    "worktree",
    "branch",
    "head",
    "notes",
    "ttl",
    "host_id",
    "shared",
    "until_merged",
    "awaiting",
    "extra",
)
_COMPARED = tuple(name for name in _FIELDS if name != "extra")


class LockRecord(Value):
    """One lock; its fields are docs/design.md's, section 3.1 (``shared``: 3.4, and
    ``until_merged``, ``awaiting``: 6.8). Immutable: a record read once is shared by every
    question asked of its table; ``with_changes`` makes the copy a write stores."""

    __slots__ = _FIELDS

    def __init__(
        self,
        id: str,
        holder: str,
        paths: tuple[str, ...],
        created_at: str,
        renewed_at: str,
        expires_at: str,
        parent: str | None = None,
        exact: tuple[str, ...] = (),
        reason: str = "",
        host: str = "",
        pid: int = 0,
        pid_start: str = "",
        session: str = "",
        worktree: str = "",
        branch: str | None = None,
        head: str | None = None,
        notes: tuple[Note, ...] = (),
        ttl: int = 0,
        host_id: str = "",
        shared: bool = False,
        until_merged: str | None = None,
        awaiting: tuple[str, ...] = (),
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.id: Final = id
        self.holder: Final = holder
        self.paths: Final = paths
        self.created_at: Final = created_at
        self.renewed_at: Final = renewed_at
        self.expires_at: Final = expires_at
        self.parent: Final = parent
        self.exact: Final = exact
        self.reason: Final = reason
        self.host: Final = host
        self.pid: Final = pid
        self.pid_start: Final = pid_start
        self.session: Final = session
        self.worktree: Final = worktree
        self.branch: Final = branch
        self.head: Final = head
        self.notes: Final = notes
        self.ttl: Final = ttl
        self.host_id: Final = host_id
        self.shared: Final = shared
        self.until_merged: Final = until_merged
        self.awaiting: Final = awaiting
        self.extra: Final[dict[str, Any]] = {} if extra is None else extra

    def _key(self) -> tuple[object, ...]:  # every field but ``extra``
        return tuple(getattr(self, name) for name in _COMPARED)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _FIELDS)
        return f"LockRecord({shown})"

    def expires(self) -> datetime:
        return parse_time(self.expires_at)

    def last_active(self) -> datetime:
        """When the holder last showed signs of life: a renewal or a note."""
        latest = parse_time(self.renewed_at)
        for note in self.notes:
            latest = max(latest, parse_time(note.at))
        return latest

    def brief(self) -> dict[str, Any]:
        """Its id, holder and paths: how events and answers name a record."""
        return {"id": self.id, "holder": self.holder, "paths": list(self.paths)}

    def with_changes(self, **changes: Any) -> LockRecord:
        return LockRecord(**{name: changes.pop(name, getattr(self, name)) for name in _FIELDS})

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"format": FORMAT}
        for name in _COMPARED:
            value = getattr(self, name)
            data[name] = list(value) if type(value) is tuple else value
        data["notes"] = [{"at": n.at, "text": n.text} for n in self.notes]
        for key, value in self.extra.items():
            data.setdefault(key, value)
        return data

    def to_json(self) -> bytes:
        return (json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n").encode()

    @classmethod
    def from_json(cls, raw: bytes) -> LockRecord:
        if len(raw) > MAX_RECORD_BYTES:
            raise RecordError(f"a record of {len(raw)} bytes; at most {MAX_RECORD_BYTES}")
        try:
            text = raw.decode("utf-8")
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:  # bad UTF-8 or JSON, a 5,000-digit number
            raise RecordError(f"not a JSON lock record ({exc.__class__.__name__})") from exc
        if not isinstance(data, dict):
            raise RecordError("not a JSON object")
        if "\\u" in text and not _utf8(data):
            # An escape spells what the UTF-8 blob could not hold: such a record could never
            # be written back (to_json), nor printed as UTF-8 (--json).
            raise RecordError("a string holding an unpaired surrogate, which no UTF-8 text holds")
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LockRecord:
        if data.get("format") != FORMAT:
            raise RecordError(f"unsupported record format {data.get('format')!r}")
        known = _KNOWN_FIELDS
        try:
            notes = tuple(_notes(data))
            record = cls(
                id=_str(data, "id"),
                holder=_str(data, "holder"),
                parent=_opt_str(data, "parent"),
                paths=tuple(_str_list(data, "paths")),
                exact=tuple(_str_list(data, "exact", required=False)),
                reason=_str(data, "reason", default=""),
                # Every time in the one spelling format_time writes, so times compare
                # as text (see canonical_time).
                created_at=canonical_time(_str(data, "created_at")),
                renewed_at=canonical_time(_str(data, "renewed_at")),
                expires_at=canonical_time(_str(data, "expires_at"), round_up=True),
                host=_str(data, "host", default=""),
                pid=_int(data, "pid"),
                pid_start=_str(data, "pid_start", default=""),
                session=_str(data, "session", default=""),
                worktree=_str(data, "worktree", default=""),
                branch=_opt_str(data, "branch"),
                head=_opt_str(data, "head"),
                notes=tuple(Note(canonical_time(n.at), n.text) for n in notes),
                ttl=_int(data, "ttl"),
                host_id=_str(data, "host_id", default=""),
                shared=_bool(data, "shared"),
                until_merged=_opt_str(data, "until_merged"),
                awaiting=tuple(_str_list(data, "awaiting", required=False)),
                extra={k: v for k, v in data.items() if k not in known},
            )
        except (TypeError, KeyError) as exc:
            raise RecordError(str(exc)) from exc
        if not is_lock_id(record.id):
            raise RecordError(f"invalid lock id {record.id!r}")
        if not record.paths:
            raise RecordError("a lock record needs at least one path")
        if record.until_merged is not None and not is_branch(record.until_merged):
            raise RecordError(f"field 'until_merged' is no branch name: {record.until_merged!r}")
        if len(record.awaiting) > MAX_AWAITING or not all(is_object_id(c) for c in record.awaiting):
            raise RecordError(f"field 'awaiting' must list at most {MAX_AWAITING} commit ids")
        if not 0 <= record.ttl <= MAX_TTL_SECONDS:
            raise RecordError(f"field 'ttl' must be between 0 and {MAX_TTL_SECONDS} seconds")
        if record.extra and not _finite(record.extra):  # the known fields are typed above
            raise RecordError("a NaN or an infinity, which JSON has no spelling for")
        return record


def _finite(value: object) -> bool:
    """Whether ``value`` holds no NaN nor infinity: written back (--json, the MCP tools'
    answers), either would be a document a strict JSON reader refuses. Walked without
    recursion, whatever its depth."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if item - item != 0.0:  # NaN or an infinity (math costs a module import)
                return False
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def _utf8(data: object) -> bool:
    """Whether every string of ``data`` (a parsed record) can be written as UTF-8."""
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, RecursionError):  # nested too deep to write back, too
        return False
    return True


# A record's own keys: the rest is kept as "extra". Whole before any record is read (a
# set filled by the first read would be seen half filled by a second thread's).
_KNOWN_FIELDS = frozenset(_COMPARED) | {"format"}


def _str(data: dict[str, Any], key: str, default: str | None = None) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise RecordError(f"field {key!r} must be a string")
    return value


def _bool(data: dict[str, Any], key: str) -> bool:
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise RecordError(f"field {key!r} must be true or false")
    return value


def _opt_str(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise RecordError(f"field {key!r} must be a string or null")
    return value


def _int(data: dict[str, Any], key: str) -> int:
    value = data.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordError(f"field {key!r} must be an integer")
    return value


def _str_list(data: dict[str, Any], key: str, required: bool = True) -> list[str]:
    value = data.get(key, None if required else [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RecordError(f"field {key!r} must be a list of strings")
    return value


def _notes(data: dict[str, Any]) -> list[Note]:
    value = data.get("notes", [])
    if not isinstance(value, list):
        raise RecordError("field 'notes' must be a list")
    notes = []
    for item in value:
        if not isinstance(item, dict):
            raise RecordError("each note must be an object")
        notes.append(Note(at=_str(item, "at"), text=_str(item, "text")))
    return notes


def expiry_from(now: datetime, ttl_seconds: int) -> str:
    return format_time(now + timedelta(seconds=ttl_seconds))
