"""The words of the guard's denials (whose claim, which of its patterns, what to do
instead) and warnings, and a denial as the refusal log records it (docs/design.md,
section 6.5). ``gitlocks.agents.guard`` decides; this module only words.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from gitlocks.agents.repos import Repo
from gitlocks.agents.session import SHOWN_LOCKS, SHOWN_PATTERNS, describe_claim
from gitlocks.core.record import LockRecord, format_time
from gitlocks.core.scope import ScopeEntry, entry_covers
from gitlocks.core.text import printable, shell_word
from gitlocks.errors import GitlocksError, RemoteError


def crossing_patterns(record: LockRecord, rel: str, ignore_case: bool) -> list[str]:
    """The patterns of ``record`` that cover ``rel``."""
    found: list[str] = []
    for pattern in record.paths:
        try:
            entry = ScopeEntry(pattern, exact=pattern in record.exact)
            if entry_covers(entry, rel, ignore_case=ignore_case):
                found.append(pattern)
        except GitlocksError:  # a stored pattern this version cannot read: not shown first
            continue
        if len(found) == SHOWN_PATTERNS:
            break
    return found


def held_reason(rel: str, locks: Sequence[LockRecord], now: datetime, ignore_case: bool) -> str:
    shown = [
        describe_claim(r, now, crossing_patterns(r, rel, ignore_case)) for r in locks[:SHOWN_LOCKS]
    ]
    if len(locks) > SHOWN_LOCKS:
        shown.append(f"and {len(locks) - SHOWN_LOCKS} more claim(s)")
    if all(r.shared for r in locks):  # they share it: so may this agent, by saying so
        what = (
            f"Do not edit it unclaimed: to edit it alongside them, claim it shared first "
            f"(git alock acquire --shared {shell_word(rel)}), or work on something else."
        )
    else:
        what = (
            "Do not edit it: work on something else, claim a part nobody holds (git alock "
            "acquire), or ask the holder to release it (git alock status shows every claim)."
        )
    return printable(f"gitlocks: {rel} is inside another agent's claim: {'; '.join(shown)}. {what}")


def refusal(
    repo: Repo, kind: str, rel: str, locks: Sequence[LockRecord], now: datetime
) -> tuple[str, dict[str, object]]:
    """A denial as ``acquire`` logs a refusal (docs/design.md, section 4.4), for ``log`` and
    the live page: who was kept out of what, by whose claims."""
    return repo.common_dir, {
        "event": kind,
        "at": format_time(now),
        "paths": [rel],
        "conflicts": [{"id": r.id, "holder": r.holder, "paths": list(r.paths)} for r in locks],
        "hint": None,
        "guard": True,
    }


def interrupted_reason(
    rel: str, locks: Sequence[LockRecord], now: datetime, ignore_case: bool
) -> str:
    """The denial of an edit inside interrupted work: whose, its last note, how to resume."""
    record = locks[0]
    crossing = crossing_patterns(record, rel, ignore_case) or list(record.paths[:1])
    note = record.notes[-1]
    last = json.dumps(note.text, ensure_ascii=False)
    return printable(
        f"gitlocks: {rel} is inside INTERRUPTED WORK: {' '.join(crossing)} was held by "
        f"{record.holder}, whose session ended with the work unfinished; its last note "
        f"({note.at}): {last} [lock {record.id}]. Do not edit it unclaimed: to take the work "
        f"over with its notes, run git alock resume {shell_word(crossing[0])} first; to "
        f"drop it on purpose, git alock break {record.id}; or work on something else."
    )


def unclaimed_reason(rels: Sequence[str], exc: RemoteError) -> str:
    """What is known (the lock remote's silence, and whether anything reached it) and what
    the guard decided: the edit goes on, unclaimed, rather than wait on the remote."""
    shown = " ".join(rels[:SHOWN_LOCKS]) + (" ..." if len(rels) > SHOWN_LOCKS else "")
    return (
        f"gitlocks: {shown} is being edited WITHOUT a claim: {exc}. The guard let the edit "
        "go on unclaimed rather than hold it up on the lock remote (alock.guardMode claim); "
        f"other agents are not kept out of it: claim it with git alock acquire "
        f"{shell_word(rels[0])} once the lock remote answers"
    )


def several(reasons: Sequence[str]) -> str:
    """The reasons of a patch's files, at most a few: a patch of thousands of held files
    must not make an answer of megabytes."""
    more = len(reasons) - SHOWN_LOCKS
    return " ".join([*reasons[:SHOWN_LOCKS], *([f"And {more} more file(s)."] if more > 0 else [])])
