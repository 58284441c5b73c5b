"""Agent lifecycle: is a holder alive, quiet (STALE) or gone (dead, INTERRUPTED WORK)?

States of a live (unexpired) lock, as every verb and listing sees it:

- ``live``: its holder's session process runs, or cannot be judged from here.
- ``stale``: alive, but it has neither renewed nor noted for ``alock.staleAfter``
  (default 10m). Only shown; it still blocks until its TTL runs out or it is broken.
- ``dead``: on this host, its session process is gone (pid absent, or reused by a process
  with another start time) and it left no notes. The next write that sees it releases it
  (event ``auto_released``).
- ``interrupted``: dead, but with notes: INTERRUPTED WORK. It blocks nobody's narrower
  claim; a claim of the same scope (see :func:`covers_scope`) is answered
  ``INTERRUPTED WORK`` so that the work is taken over (``resume``) or discarded
  (``break``) on purpose, never lost by accident.

Liveness is only judged on the host that wrote the record (a pid means nothing
elsewhere), and only for records whose session is known (a pid and a start time); the
rest live by their TTL alone. Judging is cheap but not free (a ``/proc`` read each), so
writers judge only the records a decision touches, through :class:`Liveness`, which
also remembers each answer for the rest of the decision.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from gitlocks.core.record import LockRecord, expiry_from, format_time, parse_duration
from gitlocks.core.scope import (
    WHOLE_TREE,
    ScopeEntry,
    entry_covers,
    has_wildcards,
    literal_path,
    path_entry,
)
from gitlocks.core.table import Table, record_entries
from gitlocks.layout import DEFAULT_STALE_SECONDS

if TYPE_CHECKING:  # locks imports this module; the reverse is needed for types only
    from gitlocks.service.locks import Conflict, Context

State = Literal["live", "stale", "dead", "interrupted"]


def stale_after_seconds(config_get: Callable[[str], str | None]) -> int:
    """``alock.staleAfter`` as seconds, else the 10 minute default."""
    configured = config_get("alock.staleAfter")
    if configured is None:
        return DEFAULT_STALE_SECONDS
    return parse_duration(configured, what="alock.staleAfter")


@dataclass
class Liveness:
    """Judges records for one decision, each session process at most once."""

    host: str
    alive: Callable[[int, str], bool]
    now: datetime
    stale_after: int
    _seen: dict[tuple[int, str], bool] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, ctx: Context) -> Liveness:
        return cls(ctx.host, ctx.alive, ctx.now(), ctx.stale_seconds())

    def judgeable(self, record: LockRecord) -> bool:
        """Whether this host can tell if the record's session process still runs."""
        return (
            bool(record.host)
            and record.host == self.host
            and record.pid > 0
            and bool(record.pid_start)
        )

    def dead(self, record: LockRecord) -> bool:
        if not self.judgeable(record):
            return False
        key = (record.pid, record.pid_start)
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


# --- "the same scope" -----------------------------------------------------------------------


def _subtree_root(pattern: str) -> str | None:
    """The literal directory a pattern's whole scope lies under ("" for the root)."""
    if pattern == WHOLE_TREE:
        return ""
    literal = []
    for segment in pattern.split("/"):
        if has_wildcards(segment):
            break
        literal.append(literal_path(segment))
    return "/".join(literal)


def _entry_contains(outer: ScopeEntry, inner: ScopeEntry, ignore_case: bool) -> bool:
    """A safe under-approximation of "outer's scope contains inner's scope"."""
    fold = str.casefold if ignore_case else str
    if fold(outer.pattern.removesuffix("/**")) == fold(inner.pattern.removesuffix("/**")):
        return outer.exact <= inner.exact or not inner.exact
    if outer.pattern == WHOLE_TREE:
        return True
    if outer.exact:
        return False  # one file contains only itself, handled above
    base = _subtree_root(inner.pattern)
    if base is None or base == "":
        return False
    # A non-exact pattern covering a path covers everything beneath it (DESIGN rule 4).
    return entry_covers(outer, base, ignore_case=ignore_case)


def covers_scope(claim: Iterable[ScopeEntry], record: LockRecord, ignore_case: bool) -> bool:
    """Whether a claim asks for the whole of a lock's scope: its "same scope".

    True when every pattern of the lock is contained in some pattern of the claim:
    the same pattern (``src/api`` and ``src/api/**`` are one), or a claim pattern that
    covers the directory the lock's pattern starts with before its first wildcard
    (``src``, ``src/*`` or ``**`` contain ``src/api/*.py``, because a pattern covers
    everything beneath what it matches). This under-approximates containment; a claim
    it misses is treated as narrower and passes the interrupted work by.
    """
    claim = list(claim)
    return all(
        any(_entry_contains(c, mine, ignore_case) for c in claim) for mine in record_entries(record)
    )


# --- writers' helpers -----------------------------------------------------------------------


def auto_release(record: LockRecord, now: datetime, change: Any, gone: set[str]) -> None:
    """Schedule a dead, note-less lock for deletion by the current write."""
    from gitlocks.service.locks import event

    change.delete.append(record.id)
    change.events.append(event("auto_released", record, now, pid=record.pid))
    gone.add(record.id)


def rebind(ctx: Context, record: LockRecord, life: Liveness) -> LockRecord:
    """My own lock, left by a dead session of mine (same id, restarted): make it mine again.

    Without this, an agent restarted under the same ``AGENT_ID`` would be told
    ALREADY YOURS for a lock that the next writer releases as dead.
    """
    session = ctx.identity.session
    if (record.pid, record.pid_start) == (session.pid, session.start_time):
        return record
    if not life.dead(record):
        return record
    return record.with_changes(
        host=session.host or ctx.host,
        pid=session.pid,
        pid_start=session.start_time,
        session=session.name,
    )


# --- resume ----------------------------------------------------------------------------------


@dataclass
class ResumeResult:
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


def _candidates(table: Table, target: str | ScopeEntry, ignore_case: bool) -> list[LockRecord]:
    """Locks named by id, holding the pattern, or whose whole scope the pattern covers."""
    if isinstance(target, str):
        record = table.get(target)
        return [record] if record is not None else []
    found = []
    for lock_id in sorted(table.overlaps([target])):
        record = table.records[lock_id]
        if target.pattern in record.paths or covers_scope([target], record, ignore_case):
            found.append(record)
    return found


def resume(ctx: Context, target: str | ScopeEntry, *, ttl: int) -> ResumeResult:
    """Take over a dead holder's lock (interrupted work) with its notes."""
    # Imported here: locks imports this module at load time.
    from gitlocks.service.locks import Conflict, event, sweep

    ident = ctx.identity
    store = ctx.store

    def decide(table: Table) -> tuple[Any, ResumeResult]:
        from gitlocks.store.local import Change

        now = ctx.now()
        life = Liveness.of(ctx)
        change = Change()
        gone = sweep(table, now, change)
        candidates = [r for r in _candidates(table, target, table.ignore_case) if r.id not in gone]
        dead = [r for r in candidates if r.holder != ident.holder and life.dead(r)]
        if not dead:
            held = [r for r in candidates if r.holder != ident.holder]
            return change, ResumeResult("held" if held else "not_locked", held=held)
        taken = dead[0]
        elders = set(table.ancestors(ident.holder, ident.parent))
        conflicts = []
        for lock_id, pairs in sorted(table.overlaps(record_entries(taken)).items()):
            other = table.records[lock_id]
            if lock_id in gone or other.id == taken.id or other.holder == ident.holder:
                continue
            if other.holder in elders or life.dead(other):
                continue
            conflicts.append(Conflict(other, pairs, state=life.state(other)))
        if conflicts:
            return change, ResumeResult("refused", previous=taken, conflicts=conflicts)
        branch, head = store.head_info()
        session = ident.session
        stamp = format_time(now)
        lock = taken.with_changes(
            holder=ident.holder,
            parent=ident.parent,
            renewed_at=stamp,
            expires_at=expiry_from(now, ttl),
            host=session.host or ctx.host,
            pid=session.pid,
            pid_start=session.start_time,
            session=session.name,
            worktree=str(store.root),
            branch=branch,
            head=head,
        )
        change.put.append(lock)
        change.events.append(event("resumed", lock, now, by=ident.holder, **{"from": taken.holder}))
        return change, ResumeResult("resumed", lock=lock, previous=taken)

    result: ResumeResult = store.transact(decide)
    return result


# --- reading ---------------------------------------------------------------------------------


def states(ctx: Context, records: Iterable[LockRecord]) -> dict[str, State]:
    """The state of each record, by id (for listings: judges every record given)."""
    life = Liveness.of(ctx)
    return {r.id: life.state(r) for r in records}


# --- status: locks and the uncommitted edits of every worktree ------------------------------


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
    path: str
    branch: str | None
    edits: list[Edit] = field(default_factory=list)
    error: str | None = None  # why its status could not be read

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "branch": self.branch,
            "edits": [e.to_dict() for e in self.edits],
            "error": self.error,
        }


@dataclass
class Status:
    holder: str
    parent: str | None
    yours: list[LockRecord]
    others: list[LockRecord]
    states: dict[str, State]
    quiet: dict[str, float]
    worktrees: list[WorktreeEdits]

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
        }


def status(ctx: Context) -> Status:
    """Your locks, others' (with their state), and where each worktree's edits lie."""
    from gitlocks.service.locks import live_table

    ident = ctx.identity
    table, live = live_table(ctx)
    life = Liveness.of(ctx)
    friends = table.family(ident.holder, ident.parent)
    states_by_id = {r.id: life.state(r) for r in live}
    yours = [r for r in live if r.holder in friends]
    others = [r for r in live if r.holder not in friends]
    claims = {r.id for r in live if states_by_id[r.id] != "dead"}
    worktrees = []
    for path, branch in _worktrees(ctx.store.root):
        tree = WorktreeEdits(path, branch)
        try:
            changes = _changes(path)
        except OSError as exc:
            tree.error = str(exc)
            changes = []
        for xy, changed in changes:
            found = _claims_covering(table, changed, claims)
            tree.edits.append(_classify(changed, xy, found, friends, states_by_id))
        worktrees.append(tree)
    quiet = {r.id: life.quiet_seconds(r) for r in live}
    return Status(ident.holder, ident.parent, yours, others, states_by_id, quiet, worktrees)


def _classify(
    path: str,
    xy: str,
    found: list[LockRecord],
    friends: set[str],
    states_by_id: dict[str, State],
) -> Edit:
    if not found:
        return Edit(path, xy, "unclaimed")
    if any(r.holder in friends for r in found):
        return Edit(path, xy, "yours", [r for r in found if r.holder in friends])
    if all(states_by_id[r.id] == "interrupted" for r in found):
        return Edit(path, xy, "interrupted", found)
    return Edit(path, xy, "others", [r for r in found if states_by_id[r.id] != "interrupted"])


def _claims_covering(table: Table, path: str, claims: set[str]) -> list[LockRecord]:
    """The records among ``claims`` whose scope covers the concrete ``path``, by id.

    A path is a file name, not typed input: one that no pattern can spell (a control
    character in its name) is decided one claim at a time instead of through the index.
    """
    entry = path_entry(path)
    if entry is not None:
        ids = [i for i in table.covering(entry) if i in claims]
    else:
        fold = table.ignore_case
        ids = [
            lock_id
            for lock_id in claims
            for entries in [record_entries(table.records[lock_id])]
            if any(entry_covers(e, path, ignore_case=fold) for e in entries)
        ]
    return [table.records[i] for i in sorted(ids)]


def _git(cwd: str, *args: str) -> bytes:
    import subprocess

    # Variables git sets for a hook would point every command at one repository.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in _GIT_KEEP}
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, check=False)
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip() or f"git {args[0]} failed"
        raise OSError(message)
    return proc.stdout


_GIT_KEEP = frozenset({"GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL", "GIT_CEILING_DIRECTORIES"})


def _worktrees(root: Path) -> list[tuple[str, str | None]]:
    """(path, branch) of every worktree of the repository, from ``git worktree list``."""
    try:
        raw = _git(str(root), "worktree", "list", "--porcelain", "-z")
    except OSError:
        return [(str(root), None)]
    found: list[tuple[str, str | None]] = []
    path: str | None = None
    branch: str | None = None
    bare = False
    for item in [*raw.split(b"\0"), b""]:
        text = item.decode("utf-8", "surrogateescape")
        if not text:  # an empty field ends a worktree's record
            if path is not None and not bare and os.path.isdir(path):
                found.append((path, branch))
            path, branch, bare = None, None, False
        elif text.startswith("worktree "):
            path = text[len("worktree ") :]
        elif text.startswith("branch "):
            branch = text[len("branch ") :].removeprefix("refs/heads/")
        elif text == "bare":
            bare = True
    return found


def _changes(worktree: str) -> list[tuple[str, str]]:
    """(XY, root-relative path) for each uncommitted change, untracked files included."""
    raw = _git(worktree, "status", "--porcelain", "-z", "--untracked-files=all")
    fields = raw.split(b"\0")
    changes = []
    i = 0
    while i < len(fields):
        item = fields[i].decode("utf-8", "surrogateescape")
        i += 1
        if len(item) < 4:
            continue
        xy, path = item[:2], item[3:]
        if "R" in xy or "C" in xy:
            i += 1  # the rename's source follows; the destination is where work lies
        changes.append((xy, path))
    return changes
