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

import json
import os
import shlex
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from gitlocks.agents.codex_patch import USE_INSTEAD, Unjudgeable
from gitlocks.agents.harnesses import (
    EXIT_ALLOW,
    EXIT_PASS,
    HARNESSES,
    Answer,
    Event,
    Harness,
    Pass,
    parse,
)
from gitlocks.core.ignore import IgnoreList
from gitlocks.core.record import (
    LockRecord,
    expiry_from,
    format_duration,
    format_time,
    utcnow,
    validate_holder,
)
from gitlocks.core.scope import ScopeEntry, entry_covers, path_entry
from gitlocks.core.table import Table
from gitlocks.core.text import printable
from gitlocks.errors import GitlocksError, RemoteError
from gitlocks.git import settings
from gitlocks.git.changes import finish_git, start_git
from gitlocks.hooks.check import (
    CommittedIgnores,
    find_held,
    list_refs,
    read_table,
    read_verdicts,
)
from gitlocks.identity import (
    HOLDER_ENV,
    HOLDER_SCOPE_ENV,
    Identity,
    SessionProcess,
    holder_scope,
    resolve_identity,
    session_holder_id,
    session_process,
    sessions,
)
from gitlocks.layout import DEFAULT_GUARD_REMOTE_TIMEOUT_SECONDS, DEFAULT_TTL_SECONDS

MODES = ("claim", "block", "warn")
# A tool call's input: a write carries the whole file, a patch every change. A bigger
# event is let through unread, so the cap is well above what agents write (a lockfile
# or generated code of several MiB).
MAX_EVENT_BYTES = 64 * 1024 * 1024
# A denial names at most this many claims, and this many patterns of each: a lock of
# thousands of patterns must not make a reason of megabytes.
SHOWN_LOCKS, SHOWN_PATTERNS = 3, 3
PREFIX = "gitlocks guard: "


def session_identity(harness: str, env: Mapping[str, str]) -> Identity:
    """Who the session is: ``AGENT_ID`` when the harness was started with one (the guard
    adopts it), else the holder this harness process was registered as, else a new one,
    ``<harness>-<8 hex>`` derived from the process as the command line derives its ids;
    where no register can be written, the command line's own id for this process.

    The harness process is registered (``gitlocks.identity.sessions``), so that every command its
    shell runs, the MCP server it started and the hooks of its commits resolve to the
    same holder (docs/design.md, section 3.2).
    """
    proc = harness_session()
    if env.get("AGENT_ID"):
        identity = resolve_identity(None, env, proc, harness=False)
        identity = identity._replace(session_source="harness")
    else:
        known = sessions.entry(proc, env)
        holder = known.holder if known else session_holder_id(proc._replace(name=harness))
        parent = env.get("AGENT_PARENT_ID") or (known.parent if known else None) or None
        if parent is not None:
            parent = validate_holder(parent, what="AGENT_PARENT_ID")
        identity = Identity(
            holder, "harness", None if parent == holder else parent,
            "AGENT_PARENT_ID" if env.get("AGENT_PARENT_ID") else "harness",
            proc, holder, "harness",
        )  # fmt: skip
        if identity.parent is None:
            identity = identity._replace(parent_source=None)
        written = sessions.register(proc, holder, identity.parent, harness, env)
        if known is None and not written:
            # No register (no state directory, no /proc): every command below derives its
            # id from this process, by the process's own name (``node``), so the guard does.
            own = session_holder_id(proc)
            if identity.parent == own:
                identity = identity._replace(parent=None, parent_source=None)
            return identity._replace(holder=own, session_id=own)
        return identity
    sessions.register(proc, identity.holder, identity.parent, harness, env)
    return identity


class Repo(NamedTuple):
    """The repository an event happens in, as the fast path reads it (no pygit2)."""

    root: Path
    common_dir: str
    mode: str
    remote: bool
    ignore_case: bool
    skew: int
    reftable: bool
    warnings: list[str]
    ignore: IgnoreList  # .alockignore as committed at HEAD, never as being edited


def open_repo(directory: str, *, edited: str = "") -> Repo:
    """The working tree around ``directory`` and the settings the guard reads; ``edited``
    names the file whose repository it is, for the message when there is none."""
    if not os.path.isdir(directory):
        raise Pass(f"the session's directory {directory!r} {_what_is(directory)}")
    top = start_git(["rev-parse", "--show-toplevel", "--git-common-dir"], directory)
    config = settings.start(directory)
    committed = CommittedIgnores(["HEAD"], directory)
    nowhere = (
        f"{edited} is outside any git working tree: not guarded"
        if edited
        else f"{directory!r} is not inside a git working tree"
    )
    try:
        lines = os.fsdecode(finish_git(top)).splitlines()
    except GitlocksError:
        for proc in (config, committed.proc):
            proc.kill()
            proc.communicate()
        raise Pass(nowhere) from None
    configured = settings.finish(config)
    (ignore,) = committed.finish()
    if len(lines) < 2:
        raise Pass(nowhere)
    root = Path(lines[0])
    common = lines[1] if os.path.isabs(lines[1]) else os.path.join(directory, lines[1])
    warnings = []
    mode = (configured.get("alock.guardMode") or "claim").strip().lower() or "claim"
    if mode not in MODES:
        warnings.append(f"unknown alock.guardMode {mode!r} (claim, block or warn): claim")
        mode = "claim"
    # As the hooks read them (``gitlocks.hooks.check.hook_config``): the same reader.
    ignore_case, case_warning = configured.lenient_flag("core.ignoreCase", False)
    skew, skew_warning = configured.clock_skew()
    warnings += [w for w in (case_warning, skew_warning) if w]
    remote = bool(configured.get("alock.remote"))
    return Repo(
        root, common, mode, remote, ignore_case, skew, configured.reftable, warnings, ignore
    )


def _what_is(path: str) -> str:
    """What stands at ``path``, when it is no directory: for a message."""
    if os.path.isfile(path):
        return "is a file, not a directory"
    return "is not a directory" if os.path.lexists(path) else "does not exist"


def _anchor(directory: Path) -> str:
    """The nearest directory from ``directory`` up that holds a ``.git``: git finds the
    same repository from every directory below it (short of one holding another)."""
    for here in (directory, *directory.parents):
        if os.path.lexists(here / ".git"):
            return os.fspath(here)
    return ""


def deciding_repo(here: Path, edited: str) -> Repo:
    """The repository that decides for files in the directory ``here``: the one that
    tracks them, not merely the nearest ``.git``.

    A ``.git`` made inside another repository's tree (``git -C src/api init``, or a
    ``.git`` file naming some other git dir) must not take files the outer repository
    tracks out of its claims. The outer repository decides when it tracks files in the
    inner one's directory, unless the inner one is a registered submodule of it or a
    worktree of the same repository (the same table). A ``.git`` git cannot open leaves
    the decision to the repository around it.
    """
    try:
        inner = open_repo(os.fspath(here), edited=edited)
    except Pass:
        anchor = _anchor(here)
        parent = Path(anchor).parent if anchor else None
        if parent is None or parent == Path(anchor) or not _anchor(parent):
            raise
        return deciding_repo(parent, edited)  # a broken .git: the repository around it
    parent = inner.root.parent
    if parent == inner.root or not _anchor(parent):
        return inner  # no repository around it: the common case costs no git call
    try:
        outer = deciding_repo(parent, edited)
    except Pass:
        return inner
    if os.path.realpath(outer.common_dir) == os.path.realpath(inner.common_dir):
        return inner  # a worktree of the same repository: the same claims
    try:
        rel = os.path.realpath(inner.root)
        rel = Path(rel).relative_to(os.path.realpath(outer.root)).as_posix()
    except ValueError:
        return inner
    return inner if _own_repository(outer, rel) else outer


def _own_repository(outer: Repo, rel: str) -> bool:
    """Whether the repository at ``rel`` inside ``outer``'s tree decides for its own files:
    a submodule ``outer`` records there, or a directory ``outer`` tracks nothing in (a
    home directory kept in git holds projects it does not track)."""
    listed = start_git(["ls-files", "-s", "-z", "--", rel], os.fspath(outer.root))
    entries = [e for e in finish_git(listed).split(b"\0") if e]
    for entry in entries:
        info, _, name = entry.partition(b"\t")
        if info.startswith(b"160000 ") and os.fsdecode(name) == rel:
            return True  # a submodule: it decides for its files
    return not entries


def locate(event: Event, path: str, found: dict[str, Repo] | None = None) -> tuple[Repo, str]:
    """The repository the edited file ``path`` lies in, and its path from the top of that
    tree.

    The file decides, not the session's directory: a nested repository, a submodule or
    another worktree of the same repository (whose claims are the same table) is found
    from the file's nearest existing directory, and the repository that tracks the file
    decides (``deciding_repo``). A relative path is the event's ``cwd``'s.
    ``found`` keeps the repositories already asked for, by the directory holding their
    ``.git``: a patch of thousands of files asks git once per repository, not per file.
    """
    full = os.path.realpath(os.path.join(event.cwd, path))  # what exists resolved
    if os.path.isdir(full):
        raise Pass(f"{path} is a directory, and {event.tool} edits files: not guarded")
    parts = Path(full).parts
    # Inside a .git directory git has no working tree: ask from the one around it.
    inside = [i for i, part in enumerate(parts) if part.casefold() == ".git"]
    here = Path(*parts[: inside[-1]]) if inside else Path(full).parent
    while not os.path.isdir(here):  # "/" is one
        if os.path.lexists(here):
            raise Pass(f"{path} cannot be a file: {here} {_what_is(os.fspath(here))}")
        here = here.parent
    anchor = _anchor(here) if found is not None else ""
    repo = found.get(anchor) if found is not None and anchor else None
    if repo is None:
        repo = deciding_repo(here, path)
        if found is not None and anchor:
            found[anchor] = repo
    try:
        rel = Path(full).relative_to(os.path.realpath(repo.root))
    except ValueError:
        raise Pass(f"{path} is outside the repository at {repo.root}: not guarded") from None
    if not rel.parts or any(part.casefold() == ".git" for part in rel.parts):
        raise Pass(f"{path} is no file of the working tree: not guarded")
    return repo, rel.as_posix()


def harness_session() -> SessionProcess:
    """The harness process that runs the hook: the session whose end ends the claims."""
    return session_process()


# --- deciding ---------------------------------------------------------------------------


def _where(record: LockRecord, now: datetime, patterns: Sequence[str] = ()) -> str:
    """One claim, for a message: ``patterns`` of it first (those crossing the path), at
    most a few, the holder's reason quoted so that no character of it can break out."""
    shown = [*patterns, *(p for p in record.paths if p not in patterns)][:SHOWN_PATTERNS]
    more = len(record.paths) - len(shown)
    paths = " ".join(shown) + (f" and {more} more pattern(s)" if more > 0 else "")
    left = format_duration((record.expires() - now).total_seconds())
    reason = f", reason {json.dumps(record.reason, ensure_ascii=False)}" if record.reason else ""
    kind = " shared" if record.shared else ""
    return f"{paths} held{kind} by {record.holder}{reason}, expires in {left} [lock {record.id}]"


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
    shown = [_where(r, now, _crossing(r, rel, ignore_case)) for r in locks[:SHOWN_LOCKS]]
    if len(locks) > SHOWN_LOCKS:
        shown.append(f"and {len(locks) - SHOWN_LOCKS} more claim(s)")
    if all(r.shared for r in locks):  # they share it: so may this agent, by saying so
        what = (
            f"Do not edit it unclaimed: to edit it alongside them, claim it shared first "
            f"(git alock acquire --shared {shlex.quote(rel)}), or work on something else."
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


def decide_edit(event: Event, harness: Harness, env: Mapping[str, str]) -> Answer:
    """Deny the edit when a file it writes lies in another holder's live claim; else, in
    ``claim`` mode, claim the free ones for the session. Each repository's own settings
    decide for its files."""
    targets, notes = _targets(event)
    identity = session_identity(harness.name, env)
    now = utcnow()
    tables: dict[str, Table] = {}
    denied: list[str] = []
    warned: list[str] = []
    free: dict[str, tuple[Repo, list[str]]] = {}
    unclaimed: list[str] = []
    for repo, rel in targets:
        root = os.fspath(repo.root)
        if repo.ignore.ignored(rel):
            continue  # in .alockignore: nobody needs to claim it
        if root not in tables:
            found = list_refs(repo.common_dir, repo.reftable, root)
            verdicts = read_verdicts(repo.common_dir)
            tables[root] = read_table(found, root, repo.ignore_case, repo.skew, verdicts)
        table = tables[root]
        held = find_held(table, identity, now, [rel], committing=False)
        if held:
            reason = held_reason(rel, held[0].locks, now, repo.ignore_case)
            (warned if repo.mode == "warn" else denied).append(reason)
        elif repo.mode == "claim" and not covering(table, identity, now, rel):
            if event.claimable:
                free.setdefault(root, (repo, []))[1].append(rel)
            elif rel not in unclaimed:
                unclaimed.append(rel)
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
    return Answer(stderr=_lines(notes))


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
    ctx = store_context(repo.root, identity)
    why = f"{event.tool} {' '.join(rels)}"[:1000]
    ttl = _ttl(ctx)

    def ride_along(table: Table, now: datetime, change: Change, gone: set[str]) -> None:
        # The claim is a push anyway: the session's older claims renew on it, so the end
        # of a turn seldom needs a push of its own.
        renew_session(ctx, table, identity, now, change, gone, ttl, share=True)

    remote = bool(getattr(ctx.store, "remote", None))  # a local write costs no push
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


def store_context(root: Path, identity: Identity) -> Any:
    """The service context of the repository at ``root`` (its remote's store in remote mode)."""
    # Imported here: the store brings in pygit2, which the guard's fast path avoids.
    from gitlocks.service.context import open_context

    ctx = open_context(root, identity)
    bound_remote(ctx.store)
    return ctx


def bound_remote(store: Any) -> None:
    """In remote mode, wait on the lock remote at most ``alock.guardRemoteTimeout`` (a few
    seconds): an agent's edit, or the end of its turn, must not stall on a slow or
    unreachable remote for ``alock.remoteTimeout``."""
    if not hasattr(store, "timeout_setting"):
        return  # local mode: nothing to wait on
    try:
        bound = store.settings.duration(
            "alock.guardRemoteTimeout", DEFAULT_GUARD_REMOTE_TIMEOUT_SECONDS
        )
    except GitlocksError:
        bound = DEFAULT_GUARD_REMOTE_TIMEOUT_SECONDS  # a bad value never stops an edit
    if bound < store.timeout:
        store.timeout = bound
        store.timeout_setting = "alock.guardRemoteTimeout"
    store.deadline = time.monotonic() + store.timeout  # the whole wait, not each run
    # Another process of this clone may hold the store (a sync waiting on the remote).
    from gitlocks.hooks.commit import bound_mutex  # imported here: only the store path

    bound_mutex(store, 2.0 * store.timeout)


def _ttl(ctx: Any) -> int:
    """``alock.ttl``; a bad value never stops an edit, it only means the default."""
    try:
        ttl: int = ctx.ttl()
    except GitlocksError:
        return DEFAULT_TTL_SECONDS
    return ttl


def session_locks(table: Table, identity: Identity, now: str) -> list[LockRecord]:
    """The live locks this harness process claimed: the holder's, recorded with this very
    session (pid and start time). Another harness under the same ``AGENT_ID``, or a claim
    made by hand under that id, is someone else's to end. A holder derived for this very
    harness is nobody else's: its claims without a session (made from a sandboxed shell
    that could not see the harness, by the exported ``GITLOCKS_HOLDER``) are the session's
    too."""
    me = identity.session
    if not me.pid or not me.start_time:
        return []
    mine = (identity.holder, me.pid, me.start_time, me.host)
    unembodied = (identity.holder, 0) if identity.holder_source == "harness" else None
    return [
        r
        for r in table.live(now)
        if (r.holder, r.pid, r.pid_start, r.host) == mine or (r.holder, r.pid) == unembodied
    ]


def _session_write(event: Event, harness: Harness, env: Mapping[str, str], kind: str) -> Answer:
    """End the session's locks (``released``, those with notes kept) or renew them, in
    every repository the session claimed in (nested ones and submodules too), not only
    the one around its directory."""
    identity = session_identity(harness.name, env)
    roots: dict[str, Path] = {}
    try:
        here = open_repo(event.cwd)
        roots[os.path.realpath(here.common_dir)] = here.root
    except Pass:
        pass  # the session's directory is in no repository; its claims may be elsewhere
    for common, top in sessions.repositories(identity.session, env):
        roots.setdefault(common, Path(top))
    notes: list[str] = []
    for root in roots.values():
        try:
            _end_or_renew(root, identity, kind)
        except GitlocksError as exc:
            notes.append(f"{root}: {exc}")
    if kind == "released":
        sessions.forget(identity.session, env)
    if not roots:
        raise Pass(f"{event.cwd!r} is not inside a git working tree")
    return Answer(stderr=_lines(notes))


def _end_or_renew(root: Path, identity: Identity, kind: str) -> None:
    """Release or renew the session's locks in the repository at ``root``."""
    # Imported here: only these events write, and the store brings in pygit2.
    from gitlocks.core.change import Change
    from gitlocks.service.context import event as journal_event
    from gitlocks.service.context import sweep

    ctx = store_context(root, identity)
    ttl = _ttl(ctx)
    mine = session_locks(ctx.store.read_table(), identity, format_time(ctx.now()))
    if kind == "renewed":
        mine = [r for r in mine if ctx.renewal_due(r, r.ttl or ttl)]
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
            if record.id in gone or record.notes:
                continue
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
    """Add to ``change`` the renewal of the session's claims, when one is due
    (``Context.renewal_due``). A renewal pushed for its own sake renews them all, so they
    fall due together again; one riding on a claim's push renews those that have used a
    quarter of their lifetime (or half the quiet before STALE)."""
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


def end_session(event: Event, harness: Harness, env: Mapping[str, str]) -> Answer:
    """SessionEnd: release the session's claims; those with notes are left to become
    interrupted work when the harness exits, as after a crash."""
    return _session_write(event, harness, env, "released")


def heartbeat(event: Event, harness: Harness, env: Mapping[str, str]) -> Answer:
    """Stop (the agent finished a turn): renew the session's claims, a heartbeat."""
    return _session_write(event, harness, env, "renewed")


def start_session(event: Event, harness: Harness, env: Mapping[str, str]) -> Answer:
    """SessionStart: tell the agent who it is and what others hold (additional context)."""
    identity = session_identity(harness.name, env)
    sessions.prune(env)
    _export_identity(identity, env)
    repo = open_repo(event.cwd)
    found = list_refs(repo.common_dir, repo.reftable, str(repo.root))
    table = read_table(found, str(repo.root), repo.ignore_case, repo.skew,
                       read_verdicts(repo.common_dir))  # fmt: skip
    now = utcnow()
    theirs = [r for r in table.live(format_time(now)) if r.holder != identity.holder]
    lines = [
        f"gitlocks: the guard is active; you are {identity.holder}. Edits claim their file "
        f"for you (alock.guardMode {repo.mode}); an edit inside another agent's claim is "
        "denied. Every git alock command you run, and your commits, act as "
        f"{identity.holder}: set no AGENT_ID.",
    ]
    if theirs:
        lines.append(f"Claims held by others ({len(theirs)}):")
        lines += [f"- {_where(r, now)}" for r in theirs[:20]]
        if len(theirs) > 20:
            lines.append("- ... (git alock status shows them all)")
    text = "\n".join(map(printable, lines))  # each line escaped: a reason cannot add one
    return Answer(stdout=harness.context(text))


def _export_identity(identity: Identity, env: Mapping[str, str]) -> None:
    """Claude Code's ``CLAUDE_ENV_FILE``: variables written there are exported to every
    command of its shell tool. ``GITLOCKS_HOLDER`` there names the holder even where the
    shell runs in a sandbox that hides the harness process; unlike ``AGENT_ID`` a harness
    started from that shell does not adopt it (docs/design.md, section 3.2)."""
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


# --- answering ----------------------------------------------------------------------------


def _lines(notes: Sequence[str]) -> str:
    return "".join(f"{PREFIX}{printable(n)}\n" for n in notes)


def _deny(harness: Harness, reason: str, notes: Sequence[str]) -> Answer:
    """The harness's documented denial (exit 0, JSON on stdout)."""
    return Answer(EXIT_ALLOW, harness.deny(reason), _lines(notes))


def _warn(harness: Harness, reason: str, notes: Sequence[str]) -> Answer:
    """``warn`` mode: the edit goes on and the agent is told, where the harness has a way;
    else the reason goes with the notes, on stderr."""
    said = harness.warn(reason)
    if said is None:
        return Answer(EXIT_ALLOW, "", _lines([*notes, reason]))
    return Answer(EXIT_ALLOW, said, _lines(notes))


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
