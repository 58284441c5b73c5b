"""Human-readable replies: first word an agent can act on, then details for people.

Pure string building; the command line decides where the text goes. Every line is made
:func:`~gitlocks.core.text.printable`: reasons, notes and paths are user text, and a newline or
an escape sequence in them must not forge a line of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from gitlocks.core.judging import Problem
from gitlocks.core.queue import is_waiter_id, place, wait_ends
from gitlocks.core.record import LockRecord, format_duration, parse_time
from gitlocks.core.text import printable, printable_lines, shell_word

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from gitlocks.service.results import (
        AcquireResult,
        BreakResult,
        CheckItem,
        Conflict,
        Lost,
        NoteResult,
        ReleaseResult,
        RenewResult,
        ResumeResult,
    )


def until(stamp: str, now: datetime) -> str:
    """``in 12m`` or ``2m ago`` for an RFC 3339 time."""
    delta = (parse_time(stamp) - now).total_seconds()
    return f"in {format_duration(delta)}" if delta >= 0 else f"{format_duration(-delta)} ago"


def expires(record: LockRecord, now: datetime) -> str:
    """``expires in 29m``, or ``expired 2m ago`` for a lock kept past its expiry (remote
    mode's clock-skew allowance, interrupted work): the one wording of a lock's expiry."""
    delta = (record.expires() - now).total_seconds()
    if delta <= 0:
        return f"expired {format_duration(-delta)} ago"
    return f"expires in {format_duration(delta)}"


def kind(record: LockRecord) -> str:
    """`` (shared, until merged into main)``: how a claim differs from a plain one."""
    parts = ["shared"] if record.shared else []
    if record.until_merged:
        parts.append(f"until merged into {record.until_merged}")
    return f" ({', '.join(parts)})" if parts else ""


def _reason(record: LockRecord) -> str:
    return f' "{record.reason}"' if record.reason else ""


def _stale(conflict: Conflict) -> str:
    if conflict.state != "stale":
        return ""
    return f", STALE: quiet for {format_duration(conflict.quiet_seconds)}"


def held_line(conflict: Conflict, now: datetime) -> str:
    record = conflict.record
    theirs = sorted({t for _, t in conflict.overlapping})
    mine = sorted({m for m, _ in conflict.overlapping})
    if is_waiter_id(record.id):  # a claim queued before yours: first come, first served
        return printable(
            f"WAITING {' '.join(theirs)} by {record.holder}{kind(record)} "
            f"(crosses your {' '.join(mine)}), queued {waited(record, now)} before you, "
            f"served first [waiter {record.id}]"
        )
    return printable(
        f"HELD {' '.join(theirs)} by {record.holder}{kind(record)} "
        f"(crosses your {' '.join(mine)})"
        f"{_stale(conflict)}{_reason(record)}, {expires(record, now)} [lock {record.id}]"
    )


def interrupted(records: Sequence[LockRecord]) -> str:
    """INTERRUPTED WORK: what was left, its notes, and the two ways on."""
    lines = []
    for record in records:
        scope = " ".join(record.paths)
        lines.append(f"INTERRUPTED WORK on {scope}, left by {record.holder} [lock {record.id}]")
        if record.reason:
            lines.append(f"  reason: {record.reason}")
        lines += [f"  note {n.at}: {n.text}" for n in record.notes]
        lines.append(
            f"hint: git alock resume {shell_word(record.paths[0])} takes it over with its "
            f"notes; git alock break {record.id} discards it"
        )
    return printable_lines(lines)


def waited(record: LockRecord, now: datetime) -> str:
    """How long a waiter has waited: ``2m``."""
    return format_duration((now - parse_time(record.created_at)).total_seconds())


def waiting(result: AcquireResult, now: datetime) -> str:
    """``WAITING`` and what stands in the claim's way: told on stderr while it waits."""
    waiter = result.waiter
    assert waiter is not None
    lines = [
        f"WAITING {' '.join(waiter.paths)} as {waiter.holder}, place {place(waiter)} in the "
        f"queue, until {wait_ends(waiter)} ({until(wait_ends(waiter), now)}) [waiter {waiter.id}]"
    ]
    lines += [f"  {held_line(c, now)}" for c in result.conflicts]
    return printable_lines(lines)


def waiter_line(waiter: LockRecord, me: str, now: datetime) -> str:
    """One waiter of the queue, for ``list`` and ``status``."""
    mark = "*" if waiter.holder == me else " "
    return printable(
        f"{mark} {place(waiter):>3}  {waiter.holder}  {' '.join(waiter.paths)}{kind(waiter)}  "
        f"waiting {waited(waiter, now)}, until {until(wait_ends(waiter), now)}  "
        f"[waiter {waiter.id}]"
    )


def queue(waiters: Sequence[LockRecord], me: str, now: datetime) -> str:
    """The queue under ``list``'s table: each waiter's place, holder, scope and wait."""
    lines = ["WAITING (first come, first served; PLACE among the waiters a scope crosses)"]
    lines += [waiter_line(w, me, now) for w in waiters]
    return printable_lines(lines)


def deadlock(result: AcquireResult) -> str:
    """``DEADLOCK`` and the cycle: who waits for whom, each holding what the next wants."""
    lines = ["DEADLOCK: these claims wait for each other; yours left the queue"]
    cycle = result.cycle
    for i, waiter in enumerate(cycle):
        after = cycle[(i + 1) % len(cycle)]
        lines.append(
            f"  {waiter.holder} waits for {' '.join(waiter.paths)}, held up by {after.holder} "
            f"[waiter {waiter.id}]"
        )
    lines.append(
        "hint: release what you hold that the others wait for (git alock release ...), "
        "then claim again"
    )
    return printable_lines(lines)


def acquire(result: AcquireResult, now: datetime) -> str:
    if result.status == "deadlock":
        return deadlock(result)
    lock = result.lock
    if result.status in ("acquired", "already_yours") and lock is not None:
        said = f" as {lock.holder}" if result.status == "acquired" else ""
        word = "ACQUIRED" if result.status == "acquired" else "ALREADY YOURS"
        return printable(
            f"{word} {' '.join(lock.paths)}{kind(lock)}{said}, {expires(lock, now)} "
            f"[lock {lock.id}]"
        )
    if result.status == "interrupted":
        return interrupted([c.record for c in result.conflicts])
    lines = ["REFUSED"]
    lines += [held_line(c, now) for c in result.conflicts]
    if result.waited is not None:
        lines.append(f"note: waited {format_duration(result.waited)} and it was not your turn")
    if result.hint:
        lines.append(f"hint: {result.hint}")
    elif result.conflicts and all(c.record.shared for c in result.conflicts):
        lines.append(
            "hint: they hold it shared: git alock acquire --shared shares it with them; "
            "an exclusive claim waits for them to release"
        )
    elif result.conflicts:
        lines.append(
            "hint: claim a part nobody holds, wait for the lock to expire or be released, "
            "or ask its holder"
        )
    return printable_lines(lines)


def release(result: ReleaseResult, me: str | None = None) -> str:
    """``me``: the caller; a lock of another holder (a sub-agent's) names its holder."""
    lines = []
    for item in result.released:
        left = f", still holding {' '.join(item.remaining.paths)}" if item.remaining else ""
        theirs = f" of {item.record.holder}" if me and item.record.holder != me else ""
        lines.append(f"RELEASED {' '.join(item.patterns)}{theirs} [lock {item.record.id}]{left}")
    for pattern, record in result.held_by_others:
        lines.append(
            f"HELD {pattern} by {record.holder}: not yours to release "
            f"(git alock break {record.id} forces it)"
        )
    for pattern in result.not_locked:
        lines.append(f"NOT LOCKED {pattern}")
    if not lines:
        lines.append("NOT LOCKED (you hold no locks)")
    return printable_lines(lines)


def check(items: Sequence[CheckItem], now: datetime) -> str:
    lines = []
    for item in items:
        if item.status == "free":
            lines.append(f"FREE {item.path}")
        elif item.status == "yours":
            lock = item.locks[0]
            shared = ", shared" if lock.shared else ""
            lines.append(f"YOURS {item.path} [{lock.holder}{shared}, lock {lock.id}]")
        else:
            lines += [path_held(item.path, lock, now) for lock in item.locks]
    return printable_lines(lines)


def path_held(path: str, lock: LockRecord, now: datetime) -> str:
    """``HELD <path> by <holder> (<patterns>) "<reason>", expires in 29m [lock <id>]``"""
    return (
        f"HELD {path} by {lock.holder}{kind(lock)} ({' '.join(lock.paths)})"
        f"{_reason(lock)}, {expires(lock, now)} [lock {lock.id}]"
    )


def state_word(record: LockRecord, state: str, now: datetime) -> str:
    """``STALE 12m`` (quiet for), ``INTERRUPTED`` (dead, notes), ``DEAD``, or empty."""
    if state == "stale":
        return f"STALE {format_duration((now - record.last_active()).total_seconds())}"
    return {"interrupted": "INTERRUPTED", "dead": "DEAD"}.get(state, "")


def table(
    records: Sequence[LockRecord],
    me: str,
    now: datetime,
    states: Mapping[str, str] | None = None,
    *,
    long: bool = False,
) -> str:
    """The lock table; ``long`` adds where each holder runs (host, session, worktree)."""
    if not records:
        return "no locks"
    states = states or {}
    where: tuple[str, ...] = ("WHERE",) if long else ()
    rows: list[tuple[str, ...]] = [
        ("", "ID", "HOLDER", "PATHS", "EXPIRES", "STATE", *where, "REASON")
    ]
    for r in records:
        left = (r.expires() - now).total_seconds()
        rows.append(
            (
                "*" if r.holder == me else "",
                r.id,
                r.holder,
                printable(" ".join(r.paths) + kind(r)),
                f"in {format_duration(left)}" if left > 0 else "expired",
                state_word(r, states.get(r.id, "live"), now),
                *((printable(held_at(r)),) if long else ()),
                printable(r.reason),
            )
        )
    last = len(rows[0]) - 1
    widths = [max(len(row[i]) for row in rows) for i in range(last)]
    lines = [
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:last])) + "  " + row[last]
        for row in rows
    ]
    return printable_lines([line.rstrip() for line in lines])


def held_at(record: LockRecord) -> str:
    """``host:session[pid]:worktree``, compact: where to find a lock's holder."""
    session = f":{record.session or 'pid'}[{record.pid}]" if record.pid else ""
    return f"{record.host or '?'}{session}:{record.worktree or '?'}"


def problems(found: Sequence[Problem]) -> str:
    return printable_lines(
        [f"warning: {p.ref} is not a usable lock ({p.reason}); it is ignored" for p in found]
    )


def lost(gone: Lost) -> str:
    """``BROKEN``/``NOT LOCKED``: a claim of yours that is gone, who took it and when."""
    scope = " ".join(gone.paths)
    by, at = gone.by or "someone", gone.at
    said = {
        "broken": f"BROKEN {scope} by {by} at {at}: it is no longer yours",
        "expired": f"NOT LOCKED {scope}: it expired (swept by {by}'s write at {at})",
        "auto_released": f"NOT LOCKED {scope}: your session's process was gone, so {by}'s "
        f"write released it at {at}",
        "released": f"NOT LOCKED {scope}: released by {by} at {at}",
    }.get(gone.event, f"NOT LOCKED {scope}: {gone.event} at {at}")
    if gone.event == "released" and gone.by in (None, ""):
        said = f"NOT LOCKED {scope}: released at {at}"
    return f"{said}; acquire again to go on [lock {gone.id}]"


def renew(result: RenewResult, now: datetime) -> str:
    told = [lost(x) for x in result.lost]
    told += [f"NOT LOCKED {p}: you hold no lock there" for p in result.not_locked]
    if not result:
        if not told:
            told.append("NOT LOCKED: you hold no live lock to renew; acquire again")
        return printable_lines(told)
    return printable_lines(
        told
        + [f"RENEWED {' '.join(r.paths)}, {expires(r, now)} [lock {r.id}]" for r in result.locks]
        + [
            f"KEPT {' '.join(r.paths)}, {expires(r, now)}: more than half its lifetime is "
            f"left, so the lock remote is not asked yet [lock {r.id}]"
            for r in result.kept
        ]
    )


def note(result: NoteResult) -> str:
    if result.lock is None:
        return printable(f"NOT LOCKED {result.pattern}: you hold no lock there")
    return printable(f"NOTED {' '.join(result.lock.paths)} [lock {result.lock.id}]")


def broken(result: BreakResult, targets: Sequence[str], now: datetime) -> str:
    if not result and result.yours:
        mine = " ".join(dict.fromkeys(p for r in result.yours for p in r.paths))
        return printable(f"NOT LOCKED {' '.join(targets)}: it is yours: git alock release {mine}")
    if not result:
        return printable(f"NOT LOCKED {' '.join(targets)}: no lock of another holder to break")
    lines = [
        f"BROKEN {' '.join(r.paths)} held by {r.holder} ({expires(r, now)}) [lock {r.id}]"
        for r in result.locks
    ]
    lines += [f"BROKEN unusable ref refs/agent-locks/{i}" for i in result.unusable]
    return printable_lines(lines)


def resume(result: ResumeResult, now: datetime) -> str:
    if result.status == "resumed" and result.lock is not None and result.previous is not None:
        lock = result.lock
        count = len(lock.notes)
        lines = [
            f"RESUMED {' '.join(lock.paths)} from {result.previous.holder} with {count} "
            f"note{'s' if count != 1 else ''}, {expires(lock, now)} [lock {lock.id}]"
        ]
        lines += [f"  note {n.at}: {n.text}" for n in lock.notes]
        return printable_lines(lines)
    if result.status == "refused":
        lines = ["REFUSED"] + [held_line(c, now) for c in result.conflicts]
        lines.append("hint: others have since claimed parts of it; resume when they release")
        return printable_lines(lines)
    if result.status == "held":
        return printable_lines(
            [
                f"HELD {' '.join(r.paths)} by {r.holder}: its holder is alive, this is not "
                f"interrupted work [lock {r.id}]"
                for r in result.held
            ]
        )
    return "NOT LOCKED: no interrupted work there (git alock list shows every claim)"
