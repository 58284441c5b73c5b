"""``git alock guard --for HARNESS``: the agent guard, run by a coding agent's own hooks.

The harness (Claude Code, Gemini CLI, Codex CLI, GitHub Copilot CLI) runs it before every
edit, and at the start and end of a session, with one event as JSON on stdin; the guard
answers in the harness's format (``gitlocks.agents.harnesses`` reads and writes each one;
this module decides, the same for all). An edit inside another holder's live claim is
denied, naming the holder; an edit of a path nobody holds claims that file for the
session (``alock.guardMode`` = ``claim``, the default), so claiming before editing happens
whether or not the agent remembers.

It runs before every edit, so it takes the hooks' fast path: no command-line framework,
and the table read from the lock refs' files without pygit2. Only a claim, a session's
end and a heartbeat load the store (docs/design.md, section 6.5). It is never in the way
by accident: a path outside any repository, a directory, another tool, malformed input
or an unreadable store lets the call through, with the reason on stderr and exit 1 (the
harnesses' "non-blocking error"). The edited file, not the session's directory, decides
which repository (and so which lock table) is asked.
"""

from __future__ import annotations

import os
import sys

from gitlocks.agents.harnesses import (
    EXIT_ALLOW,
    EXIT_PASS,
    HARNESSES,
    USE_INSTEAD,
    Answer,
    Event,
    Harness,
    Pass,
    Unjudgeable,
    parse,
)
from gitlocks.agents.repos import Repo, locate
from gitlocks.agents.session import (
    PREFIX,
    SHOWN_LOCKS,
    SHOWN_PATTERNS,
    bound_remote,
    claim_ttl,
    describe_claim,
    end_session,
    heartbeat,
    renew_session,
    session_identity,
    start_session,
    stderr_lines,
    store_context,
)
from gitlocks.core.dates import datetime
from gitlocks.core.plain import Row
from gitlocks.core.record import (
    LockRecord,
    format_time,
    utcnow,
)
from gitlocks.core.scope import ScopeEntry, entry_covers, path_entry
from gitlocks.core.table import Table
from gitlocks.core.text import printable, shell_word
from gitlocks.errors import GitlocksError, RemoteError
from gitlocks.git.table import read_lock_table
from gitlocks.hooks.check import find_held
from gitlocks.hooks.reading import refresh_view
from gitlocks.identity import (
    Identity,
    sessions,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

# A tool call's input: a write carries the whole file, a patch every change. A bigger
# event is let through unread, so the cap is well above what agents write (a lockfile
# or generated code of several MiB).
MAX_EVENT_BYTES = 64 * 1024 * 1024


# --- deciding ---------------------------------------------------------------------------


def _crossing(record: LockRecord, rel: str, ignore_case: bool) -> list[str]:
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
    shown = [describe_claim(r, now, _crossing(r, rel, ignore_case)) for r in locks[:SHOWN_LOCKS]]
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


def covering(table: Table, identity: Identity, now: datetime, rel: str) -> list[LockRecord]:
    """The holder's own live locks covering ``rel``. An ancestor's claim does not count: a
    sub-agent editing inside its lead's claim claims the file for itself, so that sibling
    sub-agents block each other there as ``acquire`` says they do (design §3.2)."""
    entry = path_entry(rel)
    if entry is None:
        return []
    stamp = table.cutoff(format_time(now))
    found = [table.records[i] for i in sorted(table.covering(entry))]
    return [r for r in found if r.holder == identity.holder and r.expires_at > stamp]


def _targets(event: Event) -> tuple[list[tuple[Repo, str]], list[str]]:
    """The files the edit writes that a repository guards, each once, and notes. A lone
    file that no repository guards lets the call through, as does a patch none of whose
    files is guarded; a patch's other files are only noted."""
    found: dict[tuple[str, str], tuple[Repo, str]] = {}
    notes: list[str] = []
    repos: dict[str, Repo] = {}
    for path in event.paths:
        try:
            repo, rel = locate(event, path, repos)
        except Pass as why:
            if len(event.paths) == 1:
                raise
            notes.append(str(why))
            continue
        found.setdefault((os.fspath(repo.root), rel), (repo, rel))
        notes += [w for w in repo.warnings if w not in notes]
    if not found:
        raise Pass("; ".join(notes))
    return list(found.values()), notes


class Verdict(Row):
    """What an edit's files meet: denials, warnings, the files to claim (by repository),
    those that cannot be claimed here, and the repositories where a claim was met."""

    denied: list[str]
    warned: list[str]
    free: dict[str, tuple[Repo, list[str]]]
    unclaimed: list[str]
    held_in: set[str]


def judge(
    targets: Sequence[tuple[Repo, str]],
    identity: Identity,
    now: datetime,
    tables: dict[str, Table],
    ages: Mapping[str, str],
    claimable: bool,
) -> Verdict:
    """Each file against the table of its repository (read once into ``tables``); ``ages``:
    the repositories whose lock remote could not be asked, and how old their view is."""
    verdict = Verdict([], [], {}, [], set())
    for repo, rel in targets:
        root = os.fspath(repo.root)
        if repo.ignore.ignored(rel):
            continue  # in .alockignore: nobody needs to claim it
        if root not in tables:
            tables[root] = read_lock_table(repo.common_dir, root, repo.ignore_case, repo.skew)
        table = tables[root]
        held = find_held(table, identity, now, [rel], committing=False)
        if held:
            verdict.held_in.add(root)
            reason = held_reason(rel, held[0].locks, now, repo.ignore_case)
            if root in ages:
                reason += printable(f" (The {ages[root]}.)")
            (verdict.warned if repo.mode == "warn" else verdict.denied).append(reason)
        elif repo.mode == "claim" and not covering(table, identity, now, rel):
            if claimable:
                verdict.free.setdefault(root, (repo, []))[1].append(rel)
            elif rel not in verdict.unclaimed:
                verdict.unclaimed.append(rel)
    return verdict


def decide_edit(event: Event, harness: Harness, env: Mapping[str, str]) -> Answer:
    """Deny the edit when a file it writes lies in another holder's live claim; else, in
    ``claim`` mode, claim the free ones for the session. Each repository's own settings
    decide for its files. In remote mode a claim met in the local view is asked of the
    lock remote before the edit is denied: it may have been released from another clone."""
    targets, notes = _targets(event)
    identity = session_identity(harness.name, env)
    tables: dict[str, Table] = {}
    ages: dict[str, str] = {}
    verdict = judge(targets, identity, utcnow(), tables, ages, event.claimable)
    remotes = {os.fspath(r.root): r.remote for r, _ in targets if r.remote}
    stale = sorted(verdict.held_in & set(remotes))
    if stale:
        for root in stale:
            said = refresh_view(root, remotes[root], bound=bound_remote)
            if said is None:
                del tables[root]  # read again: the view just fetched
            else:
                ages[root] = said
        verdict = judge(targets, identity, utcnow(), tables, ages, event.claimable)
    denied, warned, free, unclaimed = verdict[:4]
    if unclaimed:
        notes.append(
            f"not claimed: {' '.join(unclaimed[:SHOWN_LOCKS])}"
            f"{' ...' if len(unclaimed) > SHOWN_LOCKS else ''} (the patch may run in "
            "one directory or another: a cd before it may fail)"
        )
    if denied:
        return _deny(harness, _several([*denied, *warned]), notes)
    if free:
        for repo, rels in free.values():
            try:
                refused = claim(event, repo, rels, identity)
            except RemoteError as exc:
                # The lock remote did not answer in time (or at all): an edit is never
                # stalled on it. The edit goes on, and the agent is told it is unclaimed.
                warned.append(unclaimed_reason(rels, exc))
                continue
            if refused:
                return _deny(harness, refused, notes)
    if warned:
        return _warn(harness, _several(warned), notes)
    return Answer(stderr=stderr_lines(notes))


def unclaimed_reason(rels: Sequence[str], exc: RemoteError) -> str:
    shown = " ".join(rels[:SHOWN_LOCKS]) + (" ..." if len(rels) > SHOWN_LOCKS else "")
    return (
        f"gitlocks: {shown} is being edited WITHOUT a claim: {exc}. Other agents are not "
        f"kept out of it; claim it with git alock acquire {rels[0]} once the lock remote "
        "answers"
    )


def _several(reasons: Sequence[str]) -> str:
    """The reasons of a patch's files, at most a few: a patch of thousands of held files
    must not make an answer of megabytes."""
    more = len(reasons) - SHOWN_LOCKS
    return " ".join([*reasons[:SHOWN_LOCKS], *([f"And {more} more file(s)."] if more > 0 else [])])


def claim(event: Event, repo: Repo, rels: Sequence[str], identity: Identity) -> str:
    """Claim the files (of one repository) for the session, in one lock; the reason to
    deny when someone else got there first, else "". The store, and pygit2, load only on
    this path."""
    # Imported here: only a claim needs the store.
    from gitlocks.core.change import Change
    from gitlocks.service import locks

    entries = [path_entry(rel) for rel in rels]
    named = [e for e in entries if e is not None]
    if len(named) < len(entries):
        raise Pass(f"{rels[entries.index(None)]!r} cannot be named by a pattern: not guarded")
    ctx = store_context(repo.root, identity, repo)
    remote = bool(getattr(ctx.store, "remote", None))  # a local write costs no push
    if not remote:
        ctx.store.start_write()  # its ref transactions start while it reads the table
    why = f"{event.tool} {' '.join(rels)}"[:1000]
    ttl = claim_ttl(ctx)

    def ride_along(table: Table, now: datetime, change: Change, gone: set[str]) -> None:
        # The claim is a push anyway: the session's older claims renew on it, so the end
        # of a turn seldom needs a push of its own.
        renew_session(ctx, table, identity, now, change, gone, ttl, share=True)

    result = locks.acquire(
        ctx, named, reason=why, ttl=ttl, ride_along=ride_along if remote else None
    )
    if result.status in ("acquired", "already_yours"):
        sessions.add_repository(identity.session, repo.common_dir, os.fspath(repo.root))
        return ""
    now = ctx.now()
    holders = [c.record for c in result.conflicts]
    if not holders:
        return (
            f"gitlocks: {' '.join(rels)} could not be claimed ({result.status}); "
            "git alock status says why"
        )
    crossed = [r for r in rels if any(_crossing(h, r, repo.ignore_case) for h in holders)]
    return held_reason((crossed or [*rels])[0], holders, now, repo.ignore_case)


# --- answering ----------------------------------------------------------------------------


def _deny(harness: Harness, reason: str, notes: Sequence[str]) -> Answer:
    """The harness's documented denial (exit 0, JSON on stdout)."""
    return Answer(EXIT_ALLOW, harness.deny(reason), stderr_lines(notes))


def _warn(harness: Harness, reason: str, notes: Sequence[str]) -> Answer:
    """``warn`` mode: the edit goes on and the agent is told, where the harness has a way;
    else the reason goes with the notes, on stderr."""
    said = harness.warn(reason)
    if said is None:
        return Answer(EXIT_ALLOW, "", stderr_lines([*notes, reason]))
    return Answer(EXIT_ALLOW, said, stderr_lines(notes))


def run(harness: Harness, raw: bytes, env: Mapping[str, str], named: str = "") -> Answer:
    """The answer to one event of ``harness`` (``named``: the event, when the hook's
    command line names it)."""
    try:
        event = parse(harness, raw, named)
    except Unjudgeable as why:
        # The files are known, the directory they are named from is not: no claim can be
        # judged, and none is made on a guess. The agent is told the form that can be.
        reason = (
            f"gitlocks: this patch cannot be checked against other agents' claims: {why}. "
            f"To apply it, {USE_INSTEAD}."
        )
        return _deny(harness, printable(reason), [])
    if event.kind == "edit":
        return decide_edit(event, harness, env)
    if event.kind == "start":
        return start_session(event, harness, env)
    if event.kind == "end":
        return end_session(event, harness, env)
    if event.kind == "stop":
        return heartbeat(event, harness, env)
    if event.kind == "ignore":
        return Answer()  # another tool, where the harness cannot be told to send edits only
    raise Pass(f"nothing to guard in this event ({event.tool or 'not an edit'})")


def _options(args: Sequence[str]) -> dict[str, str] | None:
    """``--for NAME`` and ``--event NAME`` (either as ``--opt=NAME``); None when malformed."""
    found: dict[str, str] = {}
    rest = list(args)
    while rest:
        word = rest.pop(0)
        name, eq, value = word.partition("=")
        if name not in ("--for", "--event") or name in found:
            return None
        if not eq:
            if not rest:
                return None
            value = rest.pop(0)
        found[name] = value
    return found


def _named(args: Sequence[str]) -> bool:
    """Whether the command line names a harness at all (then a harness runs it)."""
    return any(word == "--for" or word.startswith("--for=") for word in args)


def main(argv: Sequence[str]) -> int:
    """``git-alock guard --for HARNESS [--event EVENT]``: read one event on stdin, answer,
    exit."""
    options = _options(argv)
    name = None if options is None else options.get("--for")
    if name not in HARNESSES or options is None:
        sys.stderr.write(
            f"error: usage: git alock guard --for {'|'.join(HARNESSES)} [--event EVENT] "
            "(one hook event as JSON on stdin)\n"
        )
        # Exit 2 is every harness's "block": only a command line naming no harness at all
        # (a person's, not a hook's) is a usage error; a hook's typo must not deny edits.
        return EXIT_PASS if _named(argv) else 2
    harness = HARNESSES[name]
    try:
        raw = sys.stdin.buffer.read(MAX_EVENT_BYTES + 1)
        if len(raw) > MAX_EVENT_BYTES:
            raise Pass("the hook event is larger than the guard reads")
        answer = run(harness, raw, os.environ, options.get("--event", ""))
    except Pass as why:
        sys.stderr.write(f"{PREFIX}{printable(str(why))}; let through\n")
        return EXIT_PASS
    except GitlocksError as exc:
        sys.stderr.write(f"{PREFIX}{printable(str(exc))}; let through\n")
        return EXIT_PASS
    except Exception as exc:  # a bug must never block an agent's edit
        sys.stderr.write(
            f"{PREFIX}internal error: {exc.__class__.__name__}: {printable(str(exc))}; "
            "let through. This is a bug in gitlocks; please report it\n"
        )
        return EXIT_PASS
    if answer.stdout:
        sys.stdout.write(answer.stdout + "\n")
    if answer.stderr:
        sys.stderr.write(answer.stderr)
    return answer.code
