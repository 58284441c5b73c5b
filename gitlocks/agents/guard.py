"""``git alock guard --for HARNESS``: the agent guard, run by a coding agent's own hooks.

One event as JSON on stdin, answered in the sender's protocol (``gitlocks.agents.harnesses``
reads and writes each one; this module decides, the same for all). An edit inside another
holder's live claim is denied, naming the holder; one of a path nobody holds claims it for
the session (``alock.guardMode`` claim); one inside the session's own claim is a heartbeat;
one inside a dead agent's interrupted work is denied with the command that resumes it. It
takes the hooks' fast path, and the edited file decides the repository (docs/design.md,
section 6.5). Nothing to guard is exit 0 and silence; an unreadable store or a bug lets the
call through with the reason on stderr (``Harness.fail``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime

from gitlocks.agents.edits import USE_INSTEAD, Unjudgeable
from gitlocks.agents.harnesses import EXIT_ALLOW, HARNESSES, Answer, Event, Harness, Pass, read
from gitlocks.agents.reasons import (
    crossing_patterns,
    held_reason,
    interrupted_reason,
    refusal,
    several,
    unclaimed_reason,
)
from gitlocks.agents.repos import Repo, duration, locate
from gitlocks.agents.session import (
    PREFIX,
    SHOWN_LOCKS,
    bound_remote,
    claim_ttl,
    guard_wait,
    interrupted_view,
    renew_session,
    session_identity,
    session_write,
    start_session,
    stderr_lines,
    store_context,
)
from gitlocks.agents.subagents import elder_holds_exactly, sub_holder
from gitlocks.core.record import LockRecord, parse_time, utcnow
from gitlocks.core.scope import path_entry
from gitlocks.core.table import Table
from gitlocks.core.text import printable
from gitlocks.errors import GitlocksError, RemoteError
from gitlocks.git.run import REPO_VARS
from gitlocks.git.table import read_lock_table
from gitlocks.hooks.check import find_held
from gitlocks.hooks.commit import own_claims
from gitlocks.hooks.reading import refresh_view
from gitlocks.identity import Identity, sessions
from gitlocks.layout import DEFAULT_STALE_SECONDS, DEFAULT_TTL_SECONDS

# A bigger event (a write carries the whole file) is let through unread: well above what
# agents write.
MAX_EVENT_BYTES = 64 * 1024 * 1024
# Set (to anything), the guard says on stderr why it let a call through unguarded.
TRACE_ENV = "GITLOCKS_GUARD_TRACE"


def _targets(event: Event) -> tuple[list[tuple[Repo, str]], list[str]]:
    """The files the edit writes that a repository guards, each once, and notes (why a
    patch's other files are not guarded); ``Pass`` when none is."""
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


class Verdict:
    """What an edit's files meet: denials, warnings, the files to claim and the holder's
    own claims it is inside (a heartbeat), by repository; files that cannot be claimed
    here; where a claim was met; each denial as the refusal log records it."""

    __slots__ = ("denied", "free", "held_in", "own", "refusals", "unclaimed", "warned")

    def __init__(self) -> None:
        self.denied: list[str] = []
        self.warned: list[str] = []
        self.free: dict[str, tuple[Repo, list[str]]] = {}
        self.unclaimed: list[str] = []
        self.held_in: set[str] = set()
        self.own: dict[str, tuple[Repo, dict[str, LockRecord]]] = {}
        self.refusals: list[tuple[str, dict[str, object]]] = []


def judge(
    targets: Sequence[tuple[Repo, str]],
    identity: Identity,
    now: datetime,
    tables: dict[str, Table],
    ages: Mapping[str, str],
    claimable: bool,
    waits: Callable[[Repo], float],
) -> Verdict:
    """Each file against its repository's table (read once into ``tables``); ``ages``: how
    old the view is where the lock remote could not be asked; ``waits``: ``guard_wait``."""
    verdict = Verdict()
    for repo, rel in targets:
        root = os.fspath(repo.root)
        if repo.ignore.ignored(rel):
            continue  # in .alockignore: nobody needs to claim it
        if root not in tables:
            tables[root] = read_lock_table(repo.common_dir, root, repo.ignore_case, repo.skew)
        table = tables[root]
        held = find_held(table, identity, now, [rel], committing=False)
        if held and repo.mode == "claim" and claimable and waits(repo):
            verdict.free.setdefault(root, (repo, []))[1].append(rel)  # the claim waits
            continue
        if held:
            verdict.held_in.add(root)
            kind, locks = "refused", list(held[0].locks)
            reason = held_reason(rel, locks, now, repo.ignore_case)
            if root in ages:  # the lock remote did not answer: decided on the clone's view
                reason += printable(f" (Decided on the {ages[root]}.)")
        elif locks := interrupted(table, identity, now, rel, repo):
            kind, reason = "interrupted", interrupted_reason(rel, locks, now, repo.ignore_case)
        else:
            own = own_claims(table, identity, now, [rel])
            if own:
                verdict.own.setdefault(root, (repo, {}))[1].update((r.id, r) for r in own)
            elif identity.parent and elder_holds_exactly(table, identity, now, rel):
                pass  # the session claimed this very file: its sub-agent works under it
            elif repo.mode == "claim" and claimable:
                verdict.free.setdefault(root, (repo, []))[1].append(rel)
            elif repo.mode == "claim" and rel not in verdict.unclaimed:
                verdict.unclaimed.append(rel)
            continue
        if repo.mode == "warn":
            verdict.warned.append(reason)
        else:
            verdict.denied.append(reason)
            verdict.refusals.append(refusal(repo, kind, rel, locks, now))
    return verdict


def interrupted(
    table: Table, identity: Identity, now: datetime, rel: str, repo: Repo
) -> list[LockRecord]:
    """Interrupted work covering ``rel``: another holder's lock with notes whose session is
    gone (docs/design.md §3.6). It blocks no ``acquire``, but an edit inside it is denied:
    the agent is told to take the work over, never let in silently."""
    entry = path_entry(rel)
    if entry is None:
        return []
    found = [r for i in sorted(table.covering(entry)) if (r := table.records[i]).notes]
    if not found:
        return []
    kept, life = interrupted_view(repo, now)
    friends = table.unblocking(identity.holder, identity.parent)
    return [r for r in found if r.expires_at > kept and r not in friends and life.dead(r)]


def renewal_due(record: LockRecord, repo: Repo, now: datetime) -> bool:
    """Whether an edit inside the holder's own ``record`` renews it: once half its lifetime
    is used, or half of ``alock.staleAfter`` passed quiet. One that edits that often is never
    STALE nor outlived by its claim; an edit between costs no write."""
    stale = duration(repo.settings, "alock.staleAfter", DEFAULT_STALE_SECONDS)
    life = record.ttl or duration(repo.settings, "alock.ttl", DEFAULT_TTL_SECONDS)
    try:
        left = (parse_time(record.expires_at) - now).total_seconds()
        quiet = (now - record.last_active()).total_seconds()
    except ValueError:
        return False  # a time this version cannot read: left to the command line
    return left < life * 0.5 or quiet >= stale * 0.5


def keep_alive(
    own: Mapping[str, tuple[Repo, Mapping[str, LockRecord]]],
    identity: Identity,
    now: datetime,
    skip: Collection[str] = (),
) -> list[str]:
    """An edit inside the holder's own claims is a heartbeat, as a commit is (docs/design.md §6.8):
    those due (``renewal_due``) are renewed, in one write per repository; the notes."""
    notes: list[str] = []
    for root, (repo, records) in own.items():
        due = [r.id for r in records.values() if renewal_due(r, repo, now)]
        if not due or root in skip:
            continue
        # Imported here: only a heartbeat that is due loads the store.
        from gitlocks.service.locks import heartbeat as renew

        try:
            renew(store_context(repo.root, identity, repo), due, None)
        except GitlocksError as exc:  # the edit goes on; the next one tries again
            notes.append(f"your claim was not renewed: {exc}")
    return notes


def decide_edit(event: Event, harness: Harness, env: Mapping[str, str]) -> Answer:
    """Deny the edit when a file it writes lies in another holder's live claim; else, in
    ``claim`` mode, claim the free ones for the session (or its sub-agent). In
    remote mode a claim met in the local view is asked of the lock remote before denying."""
    targets, notes = _targets(event)
    identity = session_identity(harness.name, env)
    if event.agent:
        identity = sub_holder(identity, event.agent)
    tables: dict[str, Table] = {}
    ages: dict[str, str] = {}
    asked: dict[str, float] = {}

    def waits(repo: Repo) -> float:  # alock.guardWait, read only where something is held
        root = os.fspath(repo.root)
        if root not in asked:
            asked[root] = guard_wait(repo, harness.name)
        return asked[root]

    verdict = judge(targets, identity, utcnow(), tables, ages, event.claimable, waits)
    remotes = {os.fspath(r.root): r.remote for r, _ in targets if r.remote}
    stale = sorted(verdict.held_in & set(remotes))
    if stale:
        for root in stale:
            said = refresh_view(root, remotes[root], bound=bound_remote)
            if said is None:
                del tables[root]  # read again: the view just fetched
            else:
                ages[root] = said
        verdict = judge(targets, identity, utcnow(), tables, ages, event.claimable, waits)
    warned, unclaimed = verdict.warned, verdict.unclaimed
    if unclaimed:
        notes.append(
            f"not claimed: {' '.join(unclaimed[:SHOWN_LOCKS])}"
            f"{' ...' if len(unclaimed) > SHOWN_LOCKS else ''} (the patch may run in "
            "one directory or another: a cd before it may fail)"
        )
    if verdict.denied:
        try:  # written down where it can be: an edit is denied either way
            from gitlocks.service.journal import append_refusals  # only a denial writes

            append_refusals(verdict.refusals, identity.holder)
        except Exception:  # never an error, never a let-through: the answer stays a denial
            pass
        return _deny(harness, several([*verdict.denied, *warned]), notes)
    pushed: set[str] = set()  # the repositories whose claim renewed the session's (a push)
    for root, (repo, rels) in verdict.free.items():
        try:
            refused = claim(event, repo, rels, identity, waits(repo))
        except RemoteError as exc:
            # The lock remote did not answer in time: an edit is never stalled on it. The
            # edit goes on, and the agent is told it is unclaimed.
            warned.append(unclaimed_reason(rels, exc))
            pushed.add(root)  # and no heartbeat waits on it again
            continue
        if refused:
            return _deny(harness, refused, notes)
        if repo.remote:
            pushed.add(root)
    notes += keep_alive(verdict.own, identity, utcnow(), pushed)
    if not warned:
        return Answer(stderr=stderr_lines(notes))
    # warn mode: the edit goes on; the agent is told where the harness has a way, else stderr
    reason = several(warned)
    said = harness.warn(reason)
    if said is None:
        return Answer(EXIT_ALLOW, "", stderr_lines([*notes, reason]))
    return Answer(EXIT_ALLOW, said, stderr_lines(notes))


def claim(event: Event, repo: Repo, rels: Sequence[str], identity: Identity, wait: float) -> str:
    """Claim the files (of one repository) for the session, in one lock (waiting ``wait``
    seconds for its turn); the reason to deny when someone else got there first, else ""."""
    # Imported here: only a claim needs the store.
    from gitlocks.core.change import Change
    from gitlocks.service import locks

    entries = [path_entry(rel) for rel in rels]
    named = [e for e in entries if e is not None]
    if len(named) < len(entries):
        raise Pass(f"{rels[entries.index(None)]!r} cannot be named by a pattern: not guarded")
    ctx = store_context(repo.root, identity, repo)
    remote = bool(ctx.store.remote)  # a local write costs no push
    why = f"{event.tool} {' '.join(rels)}"[:1000]
    ttl = claim_ttl(ctx)

    def ride_along(table: Table, now: datetime, change: Change, gone: set[str]) -> None:
        # The claim is a push anyway: the session's older claims renew on it, so the end
        # of a turn seldom needs a push of its own.
        renew_session(ctx, table, identity, now, change, gone, ttl, share=True)

    along = ride_along if remote else None
    if wait > 0:
        from gitlocks.service import waiting  # only where the guard may wait

        result = waiting.acquire(ctx, named, wait=wait, reason=why, ttl=ttl, ride_along=along)
    else:
        result = locks.acquire(ctx, named, reason=why, ttl=ttl, ride_along=along)
    if result.status in ("acquired", "already_yours"):
        sessions.add_repository(identity.session, repo.common_dir, os.fspath(repo.root))
        return ""
    now = ctx.now()
    holders = [c.record for c in result.conflicts]
    if result.status == "deadlock":
        from gitlocks.render.locks import deadlock  # only for this answer

        return "gitlocks: " + " ".join(line.strip() for line in deadlock(result).splitlines())
    if not holders:
        return (
            f"gitlocks: {' '.join(rels)} could not be claimed ({result.status}); "
            "git alock status says why"
        )
    crossed = [r for r in rels if any(crossing_patterns(h, r, repo.ignore_case) for h in holders)]
    return held_reason((crossed or [*rels])[0], holders, now, repo.ignore_case)


def _deny(harness: Harness, reason: str, notes: Sequence[str]) -> Answer:
    """The harness's denial, in the protocol its shipped code reads."""
    said = harness.deny(reason)
    return Answer(said.code, said.stdout, said.stderr + stderr_lines(notes))


def run(harness: Harness, raw: bytes, env: Mapping[str, str], named: str = "") -> Answer:
    """The answer to one event, run by the hook installed for ``harness`` (``named``: the
    event, when the hook's command line names it), in the protocol of the sender."""
    # The edited file decides which repository is asked (docs/design.md, section 6.5), not a
    # repository variable the harness inherited from its user's shell.
    for var in REPO_VARS & os.environ.keys():
        del os.environ[var]
    sender = harness
    try:
        sender, event = read(harness.name, raw, named)
        return _answer(sender, event, env)
    except Unjudgeable as why:
        # The directory the files are named from is unknown: none is judged on a guess.
        reason = (
            f"gitlocks: this patch cannot be checked against other agents' claims: {why}. "
            f"To apply it, {USE_INSTEAD}."
        )
        return _deny(why.harness or sender, printable(reason), [])
    except Pass as why:
        trace = f"{PREFIX}{printable(str(why))}; let through\n" if env.get(TRACE_ENV) else ""
        return Answer(EXIT_ALLOW, "", trace)
    except GitlocksError as exc:
        return Answer(sender.fail, "", f"{PREFIX}{printable(str(exc))}; let through\n")
    except Exception as exc:  # a bug must never block an agent's edit
        return Answer(
            sender.fail,
            "",
            f"{PREFIX}internal error: {exc.__class__.__name__}: {printable(str(exc))}; "
            "let through. This is a bug in gitlocks; please report it\n",
        )


def _answer(harness: Harness, event: Event, env: Mapping[str, str]) -> Answer:
    if event.kind == "edit":
        return decide_edit(event, harness, env)
    if event.kind == "subagent_end" and event.agent:
        return session_write(event, harness, env, "resumed", event.agent)
    if event.kind == "start":
        return start_session(event, harness, env)
    if event.kind in ("end", "stop"):
        return session_write(event, harness, env, "released" if event.kind == "end" else "renewed")
    if event.kind == "probe":
        from gitlocks import __version__  # imported here: only install and doctor ask

        return Answer(stdout=f"gitlocks {__version__} {sys.executable}")
    raise Pass(f"nothing to guard in this event ({event.tool or 'not an edit'})")


def _options(args: Sequence[str]) -> dict[str, str] | None:
    """``--for NAME`` and ``--event NAME`` (either as ``--opt=NAME``); None when malformed."""
    found: dict[str, str] = {}
    rest = list(args)
    while rest:
        name, eq, value = rest.pop(0).partition("=")
        if name not in ("--for", "--event") or name in found or not (eq or rest):
            return None
        found[name] = value if eq else rest.pop(0)
    return found


def main(argv: Sequence[str]) -> int:
    """``git-alock guard --for HARNESS [--event EVENT]``: one event on stdin, answered."""
    options = _options(argv)
    name = None if options is None else options.get("--for")
    if name not in HARNESSES or options is None:
        sys.stderr.write(
            f"error: usage: git alock guard --for {'|'.join(HARNESSES)} [--event EVENT] "
            "(one hook event as JSON on stdin)\n"
        )
        # Exit 2 is every harness's "block", and Copilot CLI's is every other non-zero
        # exit: only a command line naming no harness at all (a person's, not a hook's) is
        # a usage error; a hook's typo must not deny edits.
        named = any(word == "--for" or word.startswith("--for=") for word in argv)
        return EXIT_ALLOW if named else 2
    harness = HARNESSES[name]
    try:
        raw = sys.stdin.buffer.read(MAX_EVENT_BYTES + 1)
    except OSError:
        raw = b""  # no event to read: nothing to guard
    if len(raw) > MAX_EVENT_BYTES:
        raw = b""  # let through unread (MAX_EVENT_BYTES)
    answer = run(harness, raw, os.environ, options.get("--event", ""))
    if answer.stdout:
        sys.stdout.write(answer.stdout + "\n")
    if answer.stderr:
        sys.stderr.write(answer.stderr)
    return answer.code
