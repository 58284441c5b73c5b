"""``git alock status`` as text: you, your locks, others', and edits outside your claims."""

from __future__ import annotations

from datetime import datetime

from gitlocks.core.record import LockRecord
from gitlocks.core.text import printable_lines
from gitlocks.render.locks import expires, kind, state_word, waiter_line

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from gitlocks.service.results import Status


def lock_line(record: LockRecord, state: str, now: datetime) -> str:
    word = state_word(record, state, now)
    extra = f", {word}" if word else ""
    count = len(record.notes)
    notes = f", {count} note{'s' if count != 1 else ''}" if count else ""
    reason = f' "{record.reason}"' if record.reason else ""
    return (
        f"{' '.join(record.paths)}{kind(record)} by {record.holder}{reason}, "
        f"{expires(record, now)}"
        f"{extra}{notes} [lock {record.id}]"
    )


def where_held(record: LockRecord) -> str:
    """Where to find a holder: its host, session process, worktree and branch."""
    parts = [f"on {record.host or 'an unknown host'}"]
    if record.pid:
        parts.append(f"session {record.session or 'process'} pid {record.pid}")
    if record.worktree:
        branch = f" ({record.branch})" if record.branch else ""
        parts.append(f"worktree {record.worktree}{branch}")
    return ", ".join(parts)


def status(report: Status, now: datetime) -> str:
    parent = f" (sub-agent of {report.parent})" if report.parent else ""
    lines = [f"you are {report.holder}{parent}", "", "yours:"]
    lines += [f"  {lock_line(r, report.states[r.id], now)}" for r in report.yours] or ["  none"]
    lines += ["", "others':"]
    for record in report.others:
        lines += [f"  {lock_line(record, report.states[record.id], now)}"]
        lines += [f"    {where_held(record)}"]
    if not report.others:
        lines.append("  none")
    if report.waiters:
        lines += ["", "waiting, first come first served:"]
        lines += [f"  {waiter_line(w, report.holder, now)}" for w in report.waiters]
    lines += ["", "uncommitted edits outside your claims (or in them, in other worktrees):"]
    flagged = 0
    for tree in report.worktrees:
        branch = f" ({tree.branch})" if tree.branch else ""
        header = f"  {tree.path}{branch}"
        if tree.error:
            lines += [header, f"    cannot read its status: {tree.error}"]
            continue
        # Your own edits where you work are expected; in another worktree, someone else
        # is editing inside your claim: the conflict you most need to see.
        shown = [e for e in tree.edits if e.status != "yours" or not tree.current]
        if not shown:
            continue
        lines.append(header)
        for edit in shown:
            flagged += 1
            if edit.status == "unclaimed":
                where = "in no claim"
            elif edit.status == "yours":
                where = "inside your claim, edited in this other worktree"
            else:
                holders = ", ".join(sorted({r.holder for r in edit.locks}))
                kind = "interrupted work of" if edit.status == "interrupted" else "claim of"
                if edit.status == "others" and all(r.shared for r in edit.locks):
                    kind = "shared claim of"  # claim it --shared too, and it is yours
                where = f"inside the {kind} {holders}"
            lines.append(f"    {edit.xy.replace(' ', '.')} {edit.path}  {where}")
    if not flagged:
        lines.append("  none")
    return printable_lines(lines)
