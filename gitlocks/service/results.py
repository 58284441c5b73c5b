"""What the service's verbs answer: plain result objects, each with its ``to_dict()``.

Imports only the pure core, so the renderers (and the hooks through them) can name these
types without loading the store or pygit2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, TypeAlias

from gitlocks.core.liveness import State
from gitlocks.core.record import LockRecord


class Conflict(NamedTuple):
    record: LockRecord
    overlapping: list[tuple[str, str]]  # (my pattern, their pattern)
    state: State = "live"  # "stale": quiet too long; "interrupted": dead, notes
    quiet_seconds: float = 0.0  # since the holder last renewed or noted

    def to_dict(self) -> dict[str, Any]:
        data = self.record.to_dict()
        data["overlapping"] = [list(pair) for pair in self.overlapping]
        data["state"] = self.state
        data["quiet_seconds"] = round(self.quiet_seconds)
        return data


AcquireStatus: TypeAlias = Literal[
    "acquired", "already_yours", "refused", "interrupted", "waiting", "deadlock"
]


@dataclass
class AcquireResult:
    """What ``acquire`` decided: the lock granted, or the conflicts that refused it.

    A claim that waits (design §4.7) is first ``waiting`` (``waiter``: its record in the
    queue; ``conflicts``: the claims and the earlier waiters in its way), then one of the
    others, or ``deadlock`` with the ``cycle`` of waiters it closed, itself first.
    ``waited``: seconds it waited, for a claim that did.
    """

    status: AcquireStatus
    lock: LockRecord | None = None
    conflicts: list[Conflict] = field(default_factory=list)
    hint: str | None = None
    waiter: LockRecord | None = None
    cycle: list[LockRecord] = field(default_factory=list)
    waited: float | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "status": self.status,
            "lock": self.lock.to_dict() if self.lock else None,
            "conflicts": [c.to_dict() for c in self.conflicts],
            "hint": self.hint,
        }
        # Only for a claim that waited: every other answer keeps its shape.
        if self.waiter is not None:
            data["waiter"] = self.waiter.to_dict()
        if self.status == "deadlock":
            data["cycle"] = [
                {"id": w.id, "holder": w.holder, "paths": list(w.paths)} for w in self.cycle
            ]
        if self.waited is not None:
            data["waited_seconds"] = round(self.waited, 1)
        return data


class Released(NamedTuple):
    record: LockRecord
    patterns: list[str]
    remaining: LockRecord | None  # what is left of the lock, or None when it is gone


@dataclass
class ReleaseResult:
    """What ``release`` gave back, and what it could not."""

    released: list[Released] = field(default_factory=list)
    not_locked: list[str] = field(default_factory=list)
    held_by_others: list[tuple[str, LockRecord]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": "released" if self.released else "not_locked",
            "released": [
                {
                    "id": r.record.id,
                    "paths": r.patterns,
                    "remaining": r.remaining.to_dict() if r.remaining else None,
                }
                for r in self.released
            ],
            "not_locked": self.not_locked,
            "held": [{"pattern": p, "lock": rec.to_dict()} for p, rec in self.held_by_others],
        }


@dataclass
class RenewResult:
    """The locks a renewal extended, and those kept as they are because more than half
    their lifetime is left (remote mode: no push for them); neither: the caller holds no
    live lock there."""

    locks: list[LockRecord] = field(default_factory=list)
    kept: list[LockRecord] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.locks or self.kept)

    def to_dict(self) -> dict[str, Any]:
        status = "renewed" if self.locks else "kept" if self.kept else "not_locked"
        return {
            "status": status,
            "locks": [r.to_dict() for r in self.locks],
            "kept": [r.to_dict() for r in self.kept],
        }


@dataclass
class NoteResult:
    """The lock a note was added to, or None when the caller holds none there."""

    pattern: str
    lock: LockRecord | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": "noted" if self.lock else "not_locked",
            "lock": self.lock.to_dict() if self.lock else None,
        }


CheckStatus: TypeAlias = Literal["free", "yours", "held"]


class CheckItem(NamedTuple):
    path: str
    status: CheckStatus
    locks: list[LockRecord]

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "status": self.status,
            "locks": [r.to_dict() for r in self.locks],
        }


@dataclass
class BreakResult:
    """The locks ``break`` removed, the unusable refs it cleared, and the ones it left."""

    locks: list[LockRecord] = field(default_factory=list)
    unusable: list[str] = field(default_factory=list)  # refs that held no usable record
    yours: list[LockRecord] = field(default_factory=list)  # targets that are the caller's

    def __bool__(self) -> bool:
        return bool(self.locks or self.unusable)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": "broken" if self else "not_locked",
            "locks": [r.to_dict() for r in self.locks],
            "unusable": self.unusable,
            "yours": [r.to_dict() for r in self.yours],
        }


@dataclass
class ResumeResult:
    """What ``resume`` did with interrupted work."""

    status: Literal["resumed", "held", "not_locked", "refused"]
    lock: LockRecord | None = None  # the taken-over lock
    previous: LockRecord | None = None  # as the dead holder left it
    held: list[LockRecord] = field(default_factory=list)  # live holders of the pattern
    conflicts: list[Conflict] = field(default_factory=list)  # what blocks the takeover

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "lock": self.lock.to_dict() if self.lock else None,
            "previous": self.previous.to_dict() if self.previous else None,
            "held": [r.to_dict() for r in self.held],
            "conflicts": [c.to_dict() for c in self.conflicts],
        }


@dataclass
class Edit:
    """One uncommitted change in a worktree, and whose claim (if any) it lies in."""

    path: str  # root-relative
    xy: str  # git status --porcelain's two status letters
    status: Literal["yours", "others", "interrupted", "unclaimed"]
    locks: list[LockRecord] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "xy": self.xy,
            "status": self.status,
            "locks": [{"id": r.id, "holder": r.holder, "paths": list(r.paths)} for r in self.locks],
        }


@dataclass
class WorktreeEdits:
    """One worktree's uncommitted edits, each placed against the claims."""

    path: str
    branch: str | None
    edits: list[Edit] = field(default_factory=list)
    error: str | None = None  # why its status could not be read
    current: bool = False  # the worktree the command runs in

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "branch": self.branch,
            "current": self.current,
            "edits": [e.to_dict() for e in self.edits],
            "error": self.error,
        }


@dataclass
class Status:
    """``status``: you, your locks, others', and every worktree's edits."""

    holder: str
    parent: str | None
    yours: list[LockRecord]
    others: list[LockRecord]
    states: dict[str, State]
    quiet: dict[str, float]
    worktrees: list[WorktreeEdits]
    # Claims waiting their turn, in queue order (design §4.7).
    waiters: list[LockRecord] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        def lock(record: LockRecord) -> dict[str, Any]:
            return {
                **record.to_dict(),
                "state": self.states[record.id],
                "quiet_seconds": round(self.quiet[record.id]),
            }

        return {
            "holder": self.holder,
            "parent": self.parent,
            "yours": [lock(r) for r in self.yours],
            "others": [lock(r) for r in self.others],
            "worktrees": [w.to_dict() for w in self.worktrees],
            "waiters": [w.to_dict() for w in self.waiters],
        }
