"""The agent session as the guard sees it: who it is (one holder for everything the
harness runs, docs/design.md section 3.2), and its start, turns and end: the claims it
renews and releases, in every repository it claimed in (section 6.5).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from gitlocks.agents.harnesses import Answer, Event, Harness, Pass
from gitlocks.agents.repos import Repo, duration, open_repo
from gitlocks.agents.subagents import sub_holder
from gitlocks.core.liveness import Liveness
from gitlocks.core.record import LockRecord, expiry_from, format_time, utcnow, validate_holder
from gitlocks.core.table import Table
from gitlocks.core.text import printable, shell_word
from gitlocks.errors import GitlocksError, UsageError
from gitlocks.git.run import REPO_VARS
from gitlocks.git.table import read_lock_table
from gitlocks.hooks.reading import refresh_view
from gitlocks.identity import (
    HOLDER_ENV,
    HOLDER_SCOPE_ENV,
    Identity,
    SessionProcess,
    holder_scope,
    host_identity,
    process_alive,
    resolve_identity,
    session_holder_id,
    session_process,
    sessions,
)
from gitlocks.layout import (
    DEFAULT_GUARD_REMOTE_TIMEOUT_SECONDS,
    DEFAULT_INTERRUPTED_KEEP_SECONDS,
    DEFAULT_STALE_SECONDS,
    DEFAULT_TTL_SECONDS,
)
from gitlocks.render.locks import expires

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any

# A denial names at most this many claims, and this many patterns of each: a lock of
# thousands of patterns must not make a reason of megabytes.
SHOWN_LOCKS, SHOWN_PATTERNS = 3, 3
SHOWN = 20  # the claims of each kind a session's start names
PREFIX = "gitlocks guard: "


def session_identity(harness: str, env: Mapping[str, str]) -> Identity:
    """Who the session is: ``AGENT_ID`` when the harness was started with one, else the
    holder this harness process was registered as, else a new ``<harness>-<8 hex>`` derived
    from the process (where no register can be written, the command line's own id for it).
    Registered, so that every command its shell runs, its MCP server and its commits' hooks
    resolve to the same holder (docs/design.md, section 3.2)."""
    proc = session_process()  # the harness process: the session whose end ends the claims
    if env.get("AGENT_ID"):
        identity = resolve_identity(None, env, proc, harness=False)
        identity.session_source = "harness"
    else:
        known = sessions.entry(proc, env)
        named = SessionProcess(proc.pid, proc.start_time, harness, proc.host, proc.terminal)
        holder = known.holder if known else session_holder_id(named)
        parent = env.get("AGENT_PARENT_ID") or (known.parent if known else None) or None
        if parent is not None:
            parent = validate_holder(parent, what="AGENT_PARENT_ID")
        parent = None if parent == holder else parent
        source = "AGENT_PARENT_ID" if env.get("AGENT_PARENT_ID") else "harness"
        identity = Identity(holder, "harness", parent, parent and source, proc, holder, "harness")
        written = sessions.register(proc, holder, identity.parent, harness, env)
        if known is None and not written:
            # No register (no state directory, no /proc): every command below derives its
            # id from this process, by the process's own name (``node``), so the guard does.
            own = session_holder_id(proc)
            if identity.parent == own:
                identity.parent = identity.parent_source = None
            identity.holder = identity.session_id = own
        return identity
    sessions.register(proc, identity.holder, identity.parent, harness, env)
    return identity


def describe_claim(record: LockRecord, now: datetime, patterns: Sequence[str] = ()) -> str:
    """One claim, for a message: ``patterns`` of it first (those crossing the path), at
    most a few, the holder's reason quoted so that no character of it can break out."""
    shown = [*patterns, *(p for p in record.paths if p not in patterns)][:SHOWN_PATTERNS]
    more = len(record.paths) - len(shown)
    paths = " ".join(shown) + (f" and {more} more pattern(s)" if more > 0 else "")
    reason = f", reason {json.dumps(record.reason, ensure_ascii=False)}" if record.reason else ""
    kind = " shared" if record.shared else ""
    return (
        f"{paths} held{kind} by {record.holder}{reason}, {expires(record, now)} [lock {record.id}]"
    )


def store_context(root: str, identity: Identity, repo: Repo | None = None) -> Any:
    """The service context of the repository at ``root`` (its remote's store in remote
    mode), opened from what the guard read of it (``repo``) where git would find the same."""
    # Imported here: the store brings in pygit2, which the guard's fast path avoids.
    from gitlocks.service.context import open_context

    opened = None
    if repo is not None and REPO_VARS.isdisjoint(os.environ):
        opened = (repo.git_dir, repo.object_format, repo.settings)
    ctx = open_context(root, identity, opened=opened)
    bound_remote(ctx.store)
    return ctx


def bound_remote(store: Any) -> None:
    """In remote mode, wait on the lock remote at most ``alock.guardRemoteTimeout``: an
    edit, or the end of a turn, must not stall on a slow remote for ``alock.remoteTimeout``."""
    if not store.remote:
        return  # local mode: nothing to wait on
    bound = duration(
        store.settings, "alock.guardRemoteTimeout", DEFAULT_GUARD_REMOTE_TIMEOUT_SECONDS
    )
    if bound < store.timeout:
        store.timeout = bound
        store.timeout_setting = "alock.guardRemoteTimeout"
    # The whole wait of this event, not each run nor each store: a view refreshed before a
    # claim, a push and the question whether it landed share one budget (docs/design.md §6.5).
    if not _WAIT_STARTED:
        _WAIT_STARTED.append(time.monotonic())
    store.deadline = _WAIT_STARTED[0] + store.timeout
    store.deadline_firm = True
    # Another process of this clone may hold the store (a sync waiting on the remote):
    # waiting for it counts against the same budget.
    from gitlocks.hooks.reading import bound_mutex  # imported here: only the store path

    bound_mutex(store, max(0.0, store.deadline - time.monotonic()))


# How long a harness lets a hook run by default (seconds): an edit of a held file waits its
# turn at most this less HOOK_MARGIN, the time the claim's own writes may take.
HOOK_TIMEOUTS = {"copilot": 30}
DEFAULT_HOOK_TIMEOUT = 60
HOOK_MARGIN = 10

# When this guard process began waiting on a lock remote (``bound_remote``).
_WAIT_STARTED: list[float] = []


def guard_wait(repo: Repo, harness: str) -> float:
    """``alock.guardWait`` (docs/design.md §6.5; 0: denied at once), at most the harness's
    hook time less a margin; a bad value is 0, with a warning."""
    try:
        asked = repo.settings.duration("alock.guardWait", 0, zero=True)
    except UsageError as exc:
        repo.warnings.append(f"{exc}; not waiting")
        return 0
    return max(0, min(asked, HOOK_TIMEOUTS.get(harness, DEFAULT_HOOK_TIMEOUT) - HOOK_MARGIN))


def claim_ttl(ctx: Any) -> int:
    """``alock.ttl``; a bad value never stops an edit, it only means the default."""
    try:
        ttl: int = ctx.ttl()
    except GitlocksError:
        return DEFAULT_TTL_SECONDS
    return ttl


def session_locks(table: Table, identity: Identity, now: str) -> list[LockRecord]:
    """The live locks this harness process claimed (and its sub-agents): the holder's,
    recorded with this very session; another harness under the same ``AGENT_ID`` is someone
    else's to end. A derived holder's claims without a session (from a sandboxed shell, by
    the exported ``GITLOCKS_HOLDER``) are the session's too."""
    me = identity.session
    if not me.pid or not me.start_time:
        return []
    mine = (identity.holder, me.pid, me.start_time, me.host)
    unembodied = (identity.holder, 0) if identity.holder_source == "harness" else None
    # Its sub-agents' too (``subagents.sub_holder``): children of the holder, embodied by
    # this very process.
    return [
        r
        for r in table.live(now)
        if mine in ((r.holder, r.pid, r.pid_start, r.host), (r.parent, r.pid, r.pid_start, r.host))
        or (r.holder, r.pid) == unembodied
    ]


def session_write(
    event: Event, harness: Harness, env: Mapping[str, str], kind: str, agent: str = ""
) -> Answer:
    """The session's claims, in every repository it claimed in (nested ones and submodules
    too): ``released`` at SessionEnd (those with notes are left to become interrupted work
    when the harness exits, as after a crash), ``renewed`` at Stop (a heartbeat), or
    ``resumed`` from its sub-agent ``agent`` at SubagentStop (its edits are the session's
    to review and commit: they stay claimed, and SessionEnd releases them)."""
    identity = session_identity(harness.name, env)
    sub = sub_holder(identity, agent).holder if agent else ""
    roots: dict[str, str] = {}  # common directory -> a working tree's top
    try:
        here = open_repo(event.cwd)
        roots[os.path.realpath(here.common_dir)] = here.root
    except Pass:
        pass  # the session's directory is in no repository; its claims may be elsewhere
    for common, top in sessions.repositories(identity.session, env):
        roots.setdefault(common, top)
    notes: list[str] = []
    for root in roots.values():
        try:
            _write(root, identity, kind, sub)
        except GitlocksError as exc:
            notes.append(f"{root}: {exc}")
    if kind == "released":
        sessions.forget(identity.session, env)
    if not roots and not sub:
        raise Pass(f"{event.cwd!r} is not inside a git working tree")
    return Answer(stderr=stderr_lines(notes))


def _write(root: str, identity: Identity, kind: str, sub: str) -> None:
    """Release, renew, or take over from ``sub`` the session's locks at ``root``."""
    # Imported here: only these events write, and the store brings in pygit2.
    from gitlocks.core.change import Change
    from gitlocks.service.context import event as journal_event
    from gitlocks.service.context import sweep

    ctx = store_context(root, identity)
    ttl = claim_ttl(ctx)
    mine = session_locks(ctx.store.read_table(), identity, format_time(ctx.now()))
    if kind == "renewed":
        mine = [r for r in mine if ctx.renewal_due(r, r.ttl or ttl)]
    elif sub:
        mine = [r for r in mine if r.holder == sub]
    if not mine:
        return  # the common case, decided without the store's mutex (and the remote)

    def decide(table: Table) -> tuple[Change, None]:
        now = ctx.now()
        change = Change()
        gone = sweep(ctx, table, now, change)
        if kind == "renewed":
            renew_session(ctx, table, identity, now, change, gone, ttl, share=False)
            return change, None
        for record in session_locks(table, identity, format_time(now)):
            if record.id in gone:
                continue
            if sub and record.holder == sub:
                taken = record.with_changes(holder=identity.holder, parent=identity.parent)
                change.put.append(taken)
                by = {"by": identity.holder, "from": sub}
                change.events.append(journal_event("resumed", taken, now, **by))
            elif not sub and not record.notes:
                change.delete.append(record.id)
                change.events.append(journal_event(kind, record, now, by=identity.holder))
        return change, None

    ctx.store.transact(decide)


def renew_session(
    ctx: Any,
    table: Table,
    identity: Identity,
    now: datetime,
    change: Any,
    gone: set[str],
    ttl: int,
    *,
    share: bool,
) -> None:
    """Add to ``change`` the renewal of the session's claims, when one is due. A renewal
    pushed for its own sake renews them all; one riding on a claim's push only those due
    with ``share`` (``Context.renewal_due``)."""
    from gitlocks.service.context import event as journal_event  # the store path only

    mine = [r for r in session_locks(table, identity, format_time(now)) if r.id not in gone]
    if not any(ctx.renewal_due(r, r.ttl or ttl, share=share) for r in mine):
        return
    for record in mine:
        life = record.ttl or ttl
        if share and not ctx.renewal_due(record, life, share=True):
            continue
        fresh = record.with_changes(
            renewed_at=format_time(now), expires_at=expiry_from(now, life), ttl=life
        )
        change.put.append(fresh)
        change.events.append(journal_event("renewed", fresh, now, expires_at=fresh.expires_at))


def start_session(event: Event, harness: Harness, env: Mapping[str, str]) -> Answer:
    """SessionStart: tell the agent who it is and what others hold (additional context)."""
    identity = session_identity(harness.name, env)
    sessions.prune(env)
    _export_identity(identity, env)
    repo = open_repo(event.cwd)
    # The session acts here from now on: the live page shows it before it claims anything.
    sessions.add_repository(identity.session, repo.common_dir, repo.root, env)
    # In remote mode the claims named below are the lock remote's, fetched now (within
    # alock.guardRemoteTimeout), or the clone's view, said to be so.
    stale = refresh_view(str(repo.root), repo.remote, bound=bound_remote) if repo.remote else None
    table = read_lock_table(repo.common_dir, str(repo.root), repo.ignore_case, repo.skew)
    now = utcnow()
    lines = [
        f"gitlocks: the guard is active; you are {identity.holder}. Edits claim their file "
        f"for you (alock.guardMode {repo.mode}); an edit inside another agent's claim is "
        "denied. Every git alock command you run, and your commits, act as "
        f"{identity.holder}: set no AGENT_ID.",
    ]
    lines += others_claims(table, identity, now, repo)
    if stale is not None:
        lines.append(f"(The claims of others as this clone last saw them: {stale}.)")
    text = "\n".join(map(printable, lines))  # each line escaped: a reason cannot add one
    return Answer(stdout=harness.context(text))


def others_claims(table: Table, identity: Identity, now: datetime, repo: Repo) -> list[str]:
    """What others hold, for the session's start: live claims; interrupted work (a dead
    holder's lock with notes, docs/design.md §3.6), with the command that resumes it; and claims
    whose session ended without notes (DEAD: free, swept by the next write)."""
    stamp = format_time(now)
    kept, life = interrupted_view(repo, now)
    ended = [r for r in table.expired(stamp) if r.notes and r.expires_at > kept]
    held: list[LockRecord] = []
    dead: list[LockRecord] = []
    work: list[LockRecord] = []
    for record in [*table.live(stamp), *ended]:
        if record.holder == identity.holder:
            continue
        if life.dead(record):
            (work if record.notes else dead).append(record)
        elif record.expires_at > table.cutoff(stamp):
            held.append(record)
    lines: list[str] = []
    if work:
        lines.append(
            f"Interrupted work you can resume ({len(work)}): its agent's session ended with "
            "notes left; an edit inside it is denied until someone resumes it:"
        )
        for record in work[:SHOWN]:
            note = record.notes[-1]
            lines.append(
                f"- {' '.join(record.paths[:SHOWN_PATTERNS])} of {record.holder}, last note "
                f"{json.dumps(note.text, ensure_ascii=False)} [lock {record.id}]: "
                f"git alock resume {shell_word(record.paths[0])}"
            )
    if held:
        lines.append(f"Claims held by others ({len(held)}):")
        lines += [f"- {describe_claim(r, now)}" for r in held[:SHOWN]]
    if dead:
        lines.append(
            f"Claims of ended sessions, no longer held ({len(dead)}, DEAD: free to claim):"
        )
        lines += [f"- {describe_claim(r, now)}, DEAD" for r in dead[:SHOWN]]
    if max(len(work), len(held), len(dead)) > SHOWN:
        lines.append("- ... (git alock status shows them all)")
    return lines


def _export_identity(identity: Identity, env: Mapping[str, str]) -> None:
    """Claude Code's ``CLAUDE_ENV_FILE``: its variables are exported to every command of
    its shell tool, even in a sandbox that hides the harness process (docs/design.md §3.2)."""
    path = env.get("CLAUDE_ENV_FILE", "")
    if not path or not os.path.isabs(path):
        return
    line = f"export {HOLDER_ENV}={identity.holder}\n"
    if holder_scope():
        line += f"export {HOLDER_SCOPE_ENV}={holder_scope()}\n"
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line)
    except OSError:
        return


def interrupted_view(repo: Repo, now: datetime) -> tuple[str, Liveness]:
    """The oldest expiry of interrupted work still kept (docs/design.md §3.6), and who is alive."""
    keep = duration(repo.settings, "alock.interruptedKeep", DEFAULT_INTERRUPTED_KEEP_SECONDS)
    life = Liveness(host_identity(), process_alive, now, DEFAULT_STALE_SECONDS)
    return format_time(now - timedelta(seconds=keep)), life


def stderr_lines(notes: Sequence[str]) -> str:
    return "".join(f"{PREFIX}{printable(n)}\n" for n in notes)
