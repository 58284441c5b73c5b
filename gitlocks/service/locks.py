"""What each verb does to the lock table. Nothing here prints or exits: each write is a pure
``decide(table)`` the store runs under its mutex and applies atomically, on any backend."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from datetime import datetime

from gitlocks.core.change import Change
from gitlocks.core.claims import Claims
from gitlocks.core.judging import record_entries
from gitlocks.core.record import (
    MAX_AWAITING,
    LockRecord,
    Note,
    expiry_from,
    format_time,
    is_generated_id,
    is_lock_id,
    new_lock_id,
)
from gitlocks.core.scope import ScopeEntry
from gitlocks.core.table import Table
from gitlocks.layout import DEFAULT_TTL_SECONDS, LOCK_PREFIX
from gitlocks.service import lifecycle, queue
from gitlocks.service.context import Context, drop, event, put
from gitlocks.service.results import (
    AcquireResult,
    BreakResult,
    CheckItem,
    Conflict,
    NoteResult,
    Released,
    ReleaseResult,
    RenewResult,
)

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any

    from gitlocks.core.liveness import Liveness

MAX_NOTES = 50  # a lock keeps its latest notes; the journal keeps them all


# --- acquire ------------------------------------------------------------------------------


def acquire(
    ctx: Context,
    entries: list[ScopeEntry],
    *,
    reason: str = "",
    ttl: int = DEFAULT_TTL_SECONDS,
    shared: bool = False,
    until_merged: str | None = None,
    ride_along: Callable[[Table, datetime, Change, set[str]], None] | None = None,
    deadline: datetime | None = None,
    queued: LockRecord | None = None,
) -> AcquireResult:
    """Claim every entry or none of them (docs/design.md, sections 3.4 and 4.7).

    ``shared``: a claim other shared claims may overlap. ``until_merged``: the branch whose
    containing the holder's commits releases it (``landed``, section 6.8). ``ride_along(table,
    now, change, gone)`` adds to a granted claim's write what may share its push (the guard's
    renewals). A live waiter of another holder crossing the claim refuses it as a lock does.
    ``deadline``: a claim that may wait until then joins the queue (``waiting``, its record in
    ``waiter``) and is asked again with ``queued``, that record, until it is granted, its time
    runs out or it is the one told of a ``deadlock``."""

    def decide(table: Table, now: datetime, change: Change, gone: set[str]) -> AcquireResult:
        mine = None if queued is None or queued.id in gone else table.get(queued.id)

        def leave(why: str, result: AcquireResult) -> AcquireResult:
            if mine is not None:
                drop(change, gone, "left_queue", mine, now, why=why, by=ctx.identity.holder)
            return result

        hint = _parents_whole_scope(ctx, table, entries, gone)
        if hint is not None:
            return leave("refused", AcquireResult("refused", hint=hint))
        # Liveness is judged only here, on the records this claim crosses: a claim costs
        # time in the locks it might meet, never in the size of the table.
        life = ctx.liveness()
        conflicts, interrupted = _crossed(ctx, table, entries, life, change, gone, shared)
        conflicts += queue.ahead(ctx, table, entries, life, change, gone, shared=shared, mine=mine)
        if conflicts and deadline is not None:
            return wait(table, life, change, gone, mine, conflicts)
        if conflicts:
            return leave("refused", AcquireResult("refused", conflicts=conflicts))
        if interrupted:
            return leave("refused", AcquireResult("interrupted", conflicts=interrupted))
        own = [r for r in table.held_by(ctx.identity.holder) if r.id not in gone]
        # A claim of the other kind on the same pattern is no answer: ask for it anew.
        held = {table.key(p): r for r in own if r.shared == shared for p in r.paths}
        new = [e for e in entries if table.key(e.pattern) not in held]
        if not new:  # a waiter's holder got it meanwhile: the waiter leaves, journaled
            lock = held[table.key(entries[0].pattern)]
            return leave("yours", _already_yours(ctx, lock, life, ttl, change))
        if mine is not None:  # its turn: the waiter gives way to the lock in this write
            change.delete.append(mine.id)
        record = _new_record(ctx, new, reason, ttl, now)
        record = record.with_changes(shared=shared, until_merged=until_merged)
        kind: dict[str, Any] = {"shared": True} if shared else {}
        if until_merged:
            kind["until_merged"] = until_merged
        if mine is not None:
            kind["waited_as"] = mine.id
        put(change, "granted", record, now, reason=reason, **kind)
        if ride_along is not None:
            ride_along(table, now, change, gone)
        return AcquireResult("acquired", lock=record)

    def wait(
        table: Table,
        life: Liveness,
        change: Change,
        gone: set[str],
        mine: LockRecord | None,
        conflicts: list[Conflict],
    ) -> AcquireResult:
        """A claim that meets others and may wait: queued now (``mine`` None), still
        waiting, out of time, or told of a deadlock."""
        assert deadline is not None
        now = ctx.now()
        by = ctx.identity.holder
        if queued is not None and mine is None and not queue.lapsed(queued, now, deadline):
            return AcquireResult("refused", conflicts=conflicts)  # broken, or time out
        if mine is not None and now >= deadline:
            drop(change, gone, "left_queue", mine, now, why="timeout", by=by)
            return AcquireResult("refused", conflicts=conflicts)
        me = mine or queue.waiter(
            ctx, table, entries, reason=reason, ttl=ttl, shared=shared, deadline=deadline
        )
        cycle = queue.deadlock(ctx, table, life, me, gone)
        if cycle is not None:
            if mine is not None:
                drop(change, gone, "left_queue", mine, now, why="deadlock", by=by)
            return AcquireResult("deadlock", conflicts=conflicts, cycle=cycle)
        if mine is None:
            put(change, "waiting", me, now, queue=me.extra["queue"])
        elif (renewed := queue.renewal(mine, now, deadline)) is not None:
            # Still waiting: alive, as a renewal says of a lock.
            put(change, "renewed", renewed, now, expires_at=renewed.expires_at)
            me = renewed  # the record as written: the next ask judges a lapse by it
        return AcquireResult("waiting", conflicts=conflicts, waiter=me)

    result = ctx.write(decide)
    if result.status in ("refused", "interrupted", "deadlock"):
        _log_refusal(ctx, entries, result)
    return result


def _parents_whole_scope(
    ctx: Context, table: Table, entries: list[ScopeEntry], gone: set[str]
) -> str | None:
    """A hint when a sub-agent asks for exactly a parent's whole scope, else None."""
    ident = ctx.identity
    requested = table.keys(e.pattern for e in entries)
    for elder in table.ancestors(ident.holder, ident.parent):
        for record in table.held_by(elder):
            if record.id not in gone and table.keys(record.paths) == requested:
                return (
                    f"{elder} (your parent) holds exactly {' '.join(record.paths)}: "
                    "claim a narrower part of it for your own work"
                )
    return None


def _crossed(
    ctx: Context,
    table: Table,
    entries: list[ScopeEntry],
    life: Liveness,
    change: Change,
    gone: set[str],
    shared: bool = False,
) -> tuple[list[Conflict], list[Conflict]]:
    """The live claims of others this claim crosses (shared ones cross only exclusive ones),
    and the interrupted work it would take; a dead holder's note-less lock met on the way is
    released by this same write."""
    ident = ctx.identity
    elders = set(table.ancestors(ident.holder, ident.parent))
    conflicts, interrupted = [], []
    for lock_id, pairs in sorted(table.overlaps(entries).items()):
        record = table.records[lock_id]
        if lock_id in gone or record.holder == ident.holder or record.holder in elders:
            continue
        if shared and record.shared:
            continue
        state = life.state(record)
        if state == "dead":
            drop(change, gone, "auto_released", record, ctx.now(), pid=record.pid, by=ident.holder)
            continue
        found = Conflict(record, pairs, state, life.quiet_seconds(record))
        if state != "interrupted":
            conflicts.append(found)
        elif lifecycle.covers_scope(entries, record, table.ignore_case):
            interrupted.append(found)  # narrower claims pass interrupted work by
    return conflicts, interrupted


def _already_yours(
    ctx: Context, lock: LockRecord, life: Liveness, ttl: int, change: Change
) -> AcquireResult:
    """Asking again for your own claim: rebind it to this session, and renew it if longer."""
    now = ctx.now()
    rebound = lifecycle.rebind(ctx, lock, life)
    if rebound is not lock:
        put(change, "resumed", rebound, now, by=ctx.identity.holder)
    longer = expiry_from(now, ttl)
    if longer > rebound.expires_at:  # asking again for longer is a renewal
        rebound = rebound.with_changes(
            renewed_at=format_time(now), expires_at=longer, ttl=max(ttl, rebound.ttl)
        )
        put(change, "renewed", rebound, now, expires_at=longer)
    return AcquireResult("already_yours", lock=rebound)


def _log_refusal(ctx: Context, entries: list[ScopeEntry], result: AcquireResult) -> None:
    """Refusals change nothing, so they are not in the shared journal: log them here."""
    from gitlocks.service import journal  # the refusal log: written only on a refusal

    store = ctx.store
    journal.append_refusal(
        store.common_dir,
        {
            "event": result.status,
            "at": format_time(ctx.now()),
            "holder": ctx.identity.holder,
            "paths": [e.pattern for e in entries],
            "conflicts": [c.record.brief() for c in result.conflicts],
            "hint": result.hint,
            # Orders it among journal events of that second: the commit it was decided on.
            "after": store.decided_version(),
        },
    )


def _new_record(
    ctx: Context, entries: list[ScopeEntry], reason: str, ttl: int, now: datetime
) -> LockRecord:
    ident = ctx.identity
    branch, head = ctx.store.head_info()
    stamp = format_time(now)
    return LockRecord(
        id=new_lock_id(),
        holder=ident.holder,
        parent=ident.parent,
        paths=tuple(e.pattern for e in entries),
        exact=tuple(e.pattern for e in entries if e.exact),
        reason=reason,
        created_at=stamp,
        renewed_at=stamp,
        expires_at=expiry_from(now, ttl),
        **ctx.session_fields(),
        worktree=os.fspath(ctx.store.root),
        ttl=ttl,
        branch=branch,
        head=head,
    )


# --- release, renew, note, break ----------------------------------------------------------


def release(ctx: Context, entries: list[ScopeEntry] | None) -> ReleaseResult:
    """Give back the named patterns of my locks, or (``None``) all mine and my sub-agents'."""
    ident = ctx.identity

    def decide(table: Table, now: datetime, change: Change, gone: set[str]) -> ReleaseResult:
        result = ReleaseResult()
        if entries is None:
            # Records, not holders: a sub-agent id one lead shares with another is
            # released only where its own record names this asker up its chain.
            holders = {ident.holder} | table.descendants(ident.holder)
            for holder in sorted(holders):
                for record in table.held_by(holder):
                    mine = holder == ident.holder or table.leads_to(record.parent, ident.holder)
                    if record.id not in gone and mine:
                        drop(change, gone, "released", record, now, by=ident.holder)
                        result.released.append(Released(record, list(record.paths), None))
            return result
        own = [r for r in table.held_by(ident.holder) if r.id not in gone]
        wanted = table.keys(e.pattern for e in entries)
        for record in own:
            going = [p for p in record.paths if table.key(p) in wanted]
            if not going:
                continue
            keep = tuple(p for p in record.paths if table.key(p) not in wanted)
            if keep:
                rest = record.with_changes(
                    paths=keep, exact=tuple(p for p in record.exact if p in keep)
                )
                change.put.append(rest)
            else:
                rest = None
                change.delete.append(record.id)
            change.events.append(event("released", record, now, released=going))
            result.released.append(Released(record, going, rest))
        done = table.keys(p for r in result.released for p in r.patterns)
        for entry in entries:
            key = table.key(entry.pattern)
            if key in done:
                continue
            crossing = (table.records[i] for i in table.overlaps([entry]) if i not in gone)
            theirs = (r for r in crossing if r.holder != ident.holder)
            held = next((r for r in theirs if key in table.keys(r.paths)), None)
            if held is not None:
                result.held_by_others.append((entry.pattern, held))
            else:
                result.not_locked.append(entry.pattern)
        return result

    return ctx.write(decide)


def renew(
    ctx: Context,
    entries: list[ScopeEntry] | None,
    *,
    ttl: int | None = None,
    default_ttl: int = DEFAULT_TTL_SECONDS,
) -> RenewResult:
    """Extend my locks (those holding one of ``entries``, or all) from now, by ``ttl``, else
    by each lock's own lifetime (a heartbeat never shortens a longer claim). One whose
    lifetime stays the same and is not ``Context.renewal_due`` is reported kept."""
    ident = ctx.identity

    def decide(table: Table, now: datetime, change: Change, gone: set[str]) -> RenewResult:
        wanted = None if entries is None else table.keys(e.pattern for e in entries)
        life = ctx.liveness()
        renewed, kept = [], []

        def renew_one(record: LockRecord, lifetime: int) -> None:
            fresh = lifecycle.rebind(ctx, record, life).with_changes(
                renewed_at=format_time(now), expires_at=expiry_from(now, lifetime), ttl=lifetime
            )
            put(change, "renewed", fresh, now, expires_at=fresh.expires_at)
            renewed.append(fresh)

        for record in table.held_by(ident.holder):
            if record.id in gone or (wanted is not None and not wanted & table.keys(record.paths)):
                continue
            lifetime = ttl or record.ttl or default_ttl
            if lifetime == record.ttl and not ctx.renewal_due(record, lifetime):
                kept.append(record)  # more than half its lifetime left: no push for it
                continue
            renew_one(record, lifetime)
        # Imported here: only renew reads the journal back.
        from gitlocks.service.history import lost_claims

        lost, not_locked = lost_claims(ctx, table, entries, renewed + kept, gone)
        if lost and not renewed:
            # News told is the holder's write, where the journal's walk back stops next
            # time: without one, every renewal would tell the same loss again.
            for record in kept:
                renew_one(record, ttl or record.ttl or default_ttl)
            kept = []
        return RenewResult(renewed, kept, lost, not_locked)

    return ctx.write(decide)


def note(ctx: Context, entry: ScopeEntry, text: str) -> NoteResult:
    """Append a progress note to my lock on ``entry`` (or the one of mine crossing it)."""
    ident = ctx.identity

    def decide(table: Table, now: datetime, change: Change, gone: set[str]) -> NoteResult:
        own = [r for r in table.held_by(ident.holder) if r.id not in gone]
        key = table.key(entry.pattern)
        target = next((r for r in own if key in table.keys(r.paths)), None)
        if target is None:
            target = next(
                (r for r in own if table.scopes_overlap([entry], record_entries(r))), None
            )
        if target is None:
            return NoteResult(entry.pattern)
        target = lifecycle.rebind(ctx, target, ctx.liveness())
        notes = (*target.notes, Note(format_time(now), text))[-MAX_NOTES:]
        noted = target.with_changes(notes=notes)
        put(change, "noted", noted, now, text=text)
        return NoteResult(entry.pattern, noted)

    return ctx.write(decide)


def break_locks(ctx: Context, targets: list[tuple[str, ScopeEntry]]) -> BreakResult:
    """Forcibly release other holders' locks; journaled with who did it.

    Each target is what was typed and its pattern entry: text shaped like a lock id names that
    lock (or an unusable ref under the lock namespace) and nothing else; other text names every
    lock of another holder crossing it. Decided on the table being written."""
    ident = ctx.identity
    # A granted claim whose record the object store lost stops every other verb: here it is
    # an unusable ref, for its id to remove it (docs/design.md, section 4.6).
    ctx.store.breaking = True

    def decide(table: Table, now: datetime, change: Change, gone: set[str]) -> BreakResult:
        unusable = {
            p.ref[len(LOCK_PREFIX) :]: p for p in table.problems if p.ref.startswith(LOCK_PREFIX)
        }
        result = BreakResult()
        for text, entry in targets:
            if text in unusable and text not in result.unusable:
                result.unusable.append(text)
                change.delete.append(text)
                change.events.append(
                    {
                        "event": "broken",
                        "at": format_time(now),
                        "id": text,
                        "holder": None,
                        "paths": [],
                        "by": ident.holder,
                        "unusable": unusable[text].reason,
                    }
                )
                continue
            for record in _targets(table, text, entry, ident.holder):
                if record.id not in gone:
                    result.locks.append(record)
                    drop(change, gone, "broken", record, now, by=ident.holder)
            if not result.locks:
                result.yours += [
                    r for r in _targets(table, text, entry, None) if r.holder == ident.holder
                ]
        return result

    return ctx.write(decide)


def _targets(table: Table, text: str, entry: ScopeEntry, me: str | None) -> list[LockRecord]:
    record = table.get(text) if is_lock_id(text) else None
    if record is not None:
        return [record]
    if is_generated_id(text):
        return []  # a lock id that is gone: never read it as a path
    found = [table.records[i] for i in sorted(table.overlaps([entry]))]
    return [r for r in found if r.holder != me]  # your own: release them


def heartbeat(ctx: Context, lock_ids: Sequence[str], commit: str | None) -> list[LockRecord]:
    """A commit by the holder inside its own claims (``commit`` None: an edit the guard saw)
    renews them for their lifetime, and a claim waiting for its work to land awaits the commit
    (docs/design.md, sections 6.5 and 6.8). Only the asker's own live locks are touched;
    returns the locks renewed."""
    ident = ctx.identity
    # In local mode a commit made on the branch a claim waits for is in that branch at
    # once: awaited, it would land the claim at the holder's first commit, work unfinished.
    here = None if ctx.store.config_get("alock.remote") else ctx.store.head_info()[0]

    def decide(table: Table, now: datetime, change: Change, gone: set[str]) -> list[LockRecord]:
        renewed = []
        for lock_id in lock_ids:
            record = table.get(lock_id)
            if record is None or lock_id in gone or record.holder != ident.holder:
                continue
            life = record.ttl or DEFAULT_TTL_SECONDS
            new = commit is not None and commit not in record.awaiting
            if not (record.until_merged and new) and not ctx.renewal_due(record, life):
                continue  # nothing anyone could want from this write
            expires = max(expiry_from(now, life), record.expires_at)
            updated = record.with_changes(renewed_at=format_time(now), expires_at=expires)
            if new and record.until_merged and record.until_merged != here:
                updated = updated.with_changes(awaiting=(*record.awaiting, commit)[-MAX_AWAITING:])
            by = {"by_commit": commit} if commit is not None else {}
            put(change, "renewed", updated, now, expires_at=expires, **by)
            renewed.append(updated)
        if renewed and ctx.store.remote:
            # The push is made anyway: the holder's other claims that have used a quarter
            # of their lifetime renew on it (remote mode, where each push counts).
            done = {r.id for r in renewed} | gone
            for record in table.held_by(ident.holder):
                life = record.ttl or DEFAULT_TTL_SECONDS
                if record.id in done or not ctx.renewal_due(record, life, share=True):
                    continue
                if table.is_live(record, format_time(now)):
                    expires = expiry_from(now, life)
                    updated = record.with_changes(renewed_at=format_time(now), expires_at=expires)
                    put(change, "renewed", updated, now, expires_at=expires)
        return renewed

    return ctx.write(decide)


# --- reading ------------------------------------------------------------------------------


def check(ctx: Context, entries: list[ScopeEntry]) -> list[CheckItem]:
    """FREE, YOURS or HELD for each path: is it inside someone else's live claim? A
    sub-agent's lock is HELD for its parent (unlike ``check_paths``, the hooks' question:
    its work is its parent's to commit; docs/design.md, section 3.2)."""
    claims = _claims(ctx, committing=False)
    return [_answer(entry.pattern, claims.covering(entry), claims) for entry in entries]


def check_paths(ctx: Context, paths: Sequence[str]) -> list[CheckItem]:
    """FREE, YOURS or HELD for each concrete path (``git alock check --staged``); a file
    name that no pattern can spell is decided one live lock at a time."""
    claims = _claims(ctx, committing=True)
    return [_answer(path, claims.covering_path(path), claims) for path in paths]


def _claims(ctx: Context, *, committing: bool) -> Claims:
    ident = ctx.identity
    table = ctx.store.read_table()
    return Claims(
        table, ident.holder, ident.parent, ctx.now(), ctx.liveness(), committing=committing
    )


def _answer(path: str, locks: list[LockRecord], claims: Claims) -> CheckItem:
    """One path's answer, from the live claims covering it (a dead holder's lock, interrupted
    work too, blocks no path, as in acquire)."""
    theirs, mine = claims.split(locks)
    if theirs:
        return CheckItem(path, "held", theirs)
    if locks:
        # Yours: name your own locks, not the sharers' beside them.
        return CheckItem(path, "yours", mine or locks)
    return CheckItem(path, "free", [])
