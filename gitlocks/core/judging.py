"""What a lock ref holds, judged: a usable record, or the problem that makes it none
(docs/design.md, sections 3.7 and 4.5). Pure. A blob's verdict depends on its bytes alone,
so it is kept by blob id; a ref's adds whether the record's id matches the ref.
"""

from __future__ import annotations

from collections.abc import Callable

from gitlocks.core.record import LockRecord, RecordError, validate_holder
from gitlocks.core.scope import ScopeEntry
from gitlocks.core.summaries import Summaries, Summary, Verdict
from gitlocks.core.value import Value
from gitlocks.errors import InvalidHolder, InvalidPattern, StoreError
from gitlocks.layout import LOCK_PREFIX

# Told refs whose blob is missing (ref, blob id), stops on those that were granted claims.
Lost = Callable[[list[tuple[str, str]]], None]


class ReadAgain(StoreError):
    """Raised by a ``Lost`` callback that put back the records a prune took: read again."""


class Problem(Value):
    """A ref under the lock namespace that is not a usable lock record."""

    __slots__ = ("oid", "reason", "ref")

    def __init__(self, ref: str, oid: str, reason: str) -> None:
        self.ref = ref
        self.oid = oid
        self.reason = reason

    def _key(self) -> tuple[object, ...]:
        return (self.ref, self.oid, self.reason)

    def __lt__(self, other: Problem) -> bool:  # by ref, then blob: listed in that order
        return self._key() < other._key()


def read_record(ref: str, oid: str, data: bytes | None, kind: str = "blob") -> LockRecord | Problem:
    """The record a lock ref points at, or the problem that makes it unusable: one bad
    record (anyone can write one) is reported and skipped, never stops a command."""

    def problem(reason: str) -> Problem:
        return Problem(ref=ref, oid=oid, reason=reason)

    if kind != "blob":
        return problem(f"points at a {kind}, not a lock record blob")
    if data is None:
        return problem("points at a missing object")
    record = check_record(data)
    if isinstance(record, str):
        return problem(record)
    if record.id != ref[len(LOCK_PREFIX) :]:
        return problem(f"record id {record.id!r} does not match its ref")
    return record


def check_record(data: bytes) -> LockRecord | str:
    """The record a blob holds, or why it is no usable record (from the blob alone)."""
    try:
        record = LockRecord.from_json(data)
        validate_holder(record.holder, what="holder")
        record_entries(record)
    except (RecordError, InvalidPattern, InvalidHolder) as exc:
        return str(exc)
    return record


def verdict_of(data: bytes) -> Verdict:
    """What a blob of ``data`` holds, as kept by blob id: a summary, or why it is none."""
    checked = check_record(data)
    return checked if isinstance(checked, str) else Summary.of(checked)


class Judged(Value):
    """Lock refs judged already (``gitlocks.git.cache``): the usable records' summaries and
    blob ids by lock id, and the refs that hold no usable record."""

    __slots__ = ("blobs", "problems", "summaries")

    def __init__(
        self,
        summaries: Summaries,
        blobs: dict[str, str],
        problems: list[Problem],
    ) -> None:
        self.summaries = summaries
        self.blobs = blobs
        self.problems = problems


def judge_ref(ref: str, oid: str, verdict: Verdict) -> Summary | Problem:
    """The summary of the lock the blob ``oid`` under ``ref`` is, or why it is none."""
    if isinstance(verdict, str):
        return Problem(ref=ref, oid=oid, reason=verdict)
    if verdict.id != ref[len(LOCK_PREFIX) :]:
        return Problem(ref=ref, oid=oid, reason=f"record id {verdict.id!r} does not match its ref")
    return verdict


def record_entries(record: LockRecord) -> list[ScopeEntry]:
    exact = set(record.exact)
    return [ScopeEntry(p, exact=p in exact) for p in record.paths]
