"""What the service's verbs answer: plain result objects, each with its ``to_dict()``. Only
the pure core is imported, so that renderers and hooks name these without the store."""

from __future__ import annotations

from gitlocks.core.value import Value

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any, Literal, TypeAlias

    from gitlocks.core.liveness import State
    from gitlocks.core.record import LockRecord

    AcquireStatus: TypeAlias = Literal[
        "acquired", "already_yours", "refused", "interrupted", "waiting", "deadlock"
    ]
    CheckStatus: TypeAlias = Literal["free", "yours", "held"]


class Conflict(Value):
    __slots__ = ("overlapping", "quiet_seconds", "record", "state")

    def __init__(
        self,
        record: LockRecord,
        overlapping: list[tuple[str, str]],
        state: State = "live",
        quiet_seconds: float = 0.0,
    ) -> None:
        self.record = record
        self.overlapping = overlapping  # (my pattern, their pattern)
        self.state = state  # "stale": quiet too long; "interrupted": dead, notes
        self.quiet_seconds = quiet_seconds  # since the holder last renewed or noted

    def to_dict(self) -> dict[str, Any]:
        data = self.record.to_dict()
        data["overlapping"] = [list(pair) for pair in self.overlapping]
        data["state"] = self.state
        data["quiet_seconds"] = round(self.quiet_seconds)
        return data


class AcquireResult:
    """What ``acquire`` decided: the lock granted, or the conflicts that refused it. A claim
    that waits (docs/design.md, section 4.7) is first ``waiting`` (``waiter``: its record),
    then one of the others, or ``deadlock`` with the ``cycle`` it closed, itself first."""

    __slots__ = ("conflicts", "cycle", "hint", "lock", "status", "waited", "waiter")

    def __init__(
        self,
        status: AcquireStatus,
        lock: LockRecord | None = None,
        conflicts: list[Conflict] | None = None,
        hint: str | None = None,
        waiter: LockRecord | None = None,
        cycle: list[LockRecord] | None = None,
    ) -> None:
        self.status = status
        self.lock = lock
        self.conflicts = [] if conflicts is None else conflicts
        self.hint = hint
        self.waiter = waiter
        self.cycle = [] if cycle is None else cycle
        self.waited: float | None = None  # set by a claim that waited

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
            data["cycle"] = [w.brief() for w in self.cycle]
        if self.waited is not None:
            data["waited_seconds"] = round(self.waited, 1)
        return data


class Released(Value):
    __slots__ = ("patterns", "record", "remaining")

    def __init__(
        self, record: LockRecord, patterns: list[str], remaining: LockRecord | None
    ) -> None:
        self.record = record
        self.patterns = patterns
        self.remaining = remaining  # what is left of the lock, or None when it is gone


class ReleaseResult:
    """What ``release`` gave back, and what it could not."""

    __slots__ = ("held_by_others", "not_locked", "released")

    def __init__(self) -> None:
        self.released: list[Released] = []
        self.not_locked: list[str] = []
        self.held_by_others: list[tuple[str, LockRecord]] = []

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


class Lost(Value):
    """A claim of the holder's that is gone, as the journal tells it: ``event`` (broken,
    expired, auto_released, released), who did it (``by``) and when; ``pattern``: the
    named pattern it answers, if any."""

    __slots__ = ("at", "by", "event", "id", "paths", "pattern")

    def __init__(
        self,
        event: str,
        id: str,
        paths: list[str],
        by: str | None,
        at: str,
        pattern: str | None = None,
    ) -> None:
        self.event = event
        self.id = id
        self.paths = paths
        self.by = by
        self.at = at
        self.pattern = pattern

    def to_dict(self) -> dict[str, Any]:
        return {"event": self.event, "id": self.id, "paths": self.paths, "by": self.by,
                "at": self.at, "pattern": self.pattern}  # fmt: skip


class RenewResult:
    """The locks a renewal extended, and those ``kept`` as they are (not due: no push for
    them); neither: the caller holds no live lock there. ``lost``: its claims gone since its
    last write (of named patterns, whenever); ``not_locked``: named patterns never held here."""

    __slots__ = ("kept", "locks", "lost", "not_locked")

    def __init__(
        self,
        locks: list[LockRecord],
        kept: list[LockRecord],
        lost: list[Lost],
        not_locked: list[str],
    ) -> None:
        self.locks = locks
        self.kept = kept
        self.lost = lost
        self.not_locked = not_locked

    def __bool__(self) -> bool:
        return bool(self.locks or self.kept)

    def complete(self) -> bool:
        """Whether all the caller asked is renewed or kept: nothing named or held was lost."""
        return bool(self) and not self.lost and not self.not_locked

    def to_dict(self) -> dict[str, Any]:
        status = "renewed" if self.locks else "kept" if self.kept else "not_locked"
        return {
            "status": status,
            "locks": [r.to_dict() for r in self.locks],
            "kept": [r.to_dict() for r in self.kept],
            "lost": [x.to_dict() for x in self.lost],
            "not_locked": self.not_locked,
        }


class NoteResult:
    """The lock a note was added to, or None when the caller holds none there."""

    __slots__ = ("lock", "pattern")

    def __init__(self, pattern: str, lock: LockRecord | None = None) -> None:
        self.pattern = pattern
        self.lock = lock

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": "noted" if self.lock else "not_locked",
            "lock": self.lock.to_dict() if self.lock else None,
        }


class CheckItem(Value):
    __slots__ = ("locks", "path", "status")

    def __init__(self, path: str, status: CheckStatus, locks: list[LockRecord]) -> None:
        self.path = path
        self.status = status
        self.locks = locks

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "status": self.status,
            "locks": [r.to_dict() for r in self.locks],
        }


class BreakResult:
    """The locks ``break`` removed, the unusable refs it cleared, and the ones it left."""

    __slots__ = ("locks", "unusable", "yours")

    def __init__(self) -> None:
        self.locks: list[LockRecord] = []
        self.unusable: list[str] = []  # refs that held no usable record
        self.yours: list[LockRecord] = []  # targets that are the caller's

    def __bool__(self) -> bool:
        return bool(self.locks or self.unusable)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": "broken" if self else "not_locked",
            "locks": [r.to_dict() for r in self.locks],
            "unusable": self.unusable,
            "yours": [r.to_dict() for r in self.yours],
        }


class ResumeResult:
    """What ``resume`` did with interrupted work."""

    __slots__ = ("conflicts", "held", "lock", "previous", "status")

    def __init__(
        self,
        status: Literal["resumed", "held", "not_locked", "refused"],
        lock: LockRecord | None = None,
        previous: LockRecord | None = None,
        held: list[LockRecord] | None = None,
        conflicts: list[Conflict] | None = None,
    ) -> None:
        self.status = status
        self.lock = lock  # the taken-over lock
        self.previous = previous  # as the dead holder left it
        self.held = [] if held is None else held  # live holders of the pattern
        self.conflicts = [] if conflicts is None else conflicts  # what blocks the takeover

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "lock": self.lock.to_dict() if self.lock else None,
            "previous": self.previous.to_dict() if self.previous else None,
            "held": [r.to_dict() for r in self.held],
            "conflicts": [c.to_dict() for c in self.conflicts],
        }


class Edit:
    """One uncommitted change in a worktree, and whose claim (if any) it lies in."""

    __slots__ = ("locks", "path", "status", "xy")

    def __init__(
        self,
        path: str,
        xy: str,
        status: Literal["yours", "others", "interrupted", "unclaimed"],
        locks: list[LockRecord] | None = None,
    ) -> None:
        self.path = path  # root-relative
        self.xy = xy  # git status --porcelain's two status letters
        self.status = status
        self.locks = [] if locks is None else locks

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "xy": self.xy,
            "status": self.status,
            "locks": [r.brief() for r in self.locks],
        }


class WorktreeEdits:
    """One worktree's uncommitted edits, each placed against the claims."""

    __slots__ = ("branch", "current", "edits", "error", "path")

    def __init__(self, path: str, branch: str | None, current: bool) -> None:
        self.path = path
        self.branch = branch
        self.edits: list[Edit] = []
        self.error: str | None = None  # why its status could not be read
        self.current = current  # the worktree the command runs in

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "branch": self.branch,
            "current": self.current,
            "edits": [e.to_dict() for e in self.edits],
            "error": self.error,
        }


class Status:
    """``status``: you, your locks, others', and every worktree's edits."""

    __slots__ = ("holder", "others", "parent", "quiet", "states", "waiters", "worktrees", "yours")

    def __init__(
        self,
        holder: str,
        parent: str | None,
        yours: list[LockRecord],
        others: list[LockRecord],
        states: dict[str, State],
        quiet: dict[str, float],
        worktrees: list[WorktreeEdits],
        waiters: list[LockRecord],
    ) -> None:
        self.holder = holder
        self.parent = parent
        self.yours = yours
        self.others = others
        self.states = states
        self.quiet = quiet
        self.worktrees = worktrees
        self.waiters = waiters  # claims waiting their turn, in queue order (docs/design.md §4.7)

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
