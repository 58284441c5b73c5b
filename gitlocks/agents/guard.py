"""``git alock guard --for HARNESS``: the agent guard, run by a coding agent's own hooks.

The harness (Claude Code) runs it before every edit, and at the start and end of a
session, with one event as JSON on stdin; the guard answers in the harness's format. An
edit inside another holder's live claim is denied, naming the holder; an edit of a path
nobody holds claims that file for the session (``alock.guardMode`` = ``claim``, the
default), so claiming before editing happens whether or not the agent remembers.

It runs before every edit, so it takes the hooks' fast path: no command-line framework,
and the table read from the lock refs' files without pygit2. Only a claim, a session's
end and a heartbeat load the store (docs/design.md, section 6.5). It is never in the way
by accident: a path outside the repository, another tool, malformed input or an
unreadable store lets the call through, with the reason on stderr and exit 1 (the
harnesses' "non-blocking error").
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from gitlocks.core.ignore import IgnoreList
from gitlocks.core.record import LockRecord, format_duration, format_time, parse_duration, utcnow
from gitlocks.core.scope import make_entry, path_entry
from gitlocks.core.table import Table
from gitlocks.core.text import printable
from gitlocks.errors import GitlocksError
from gitlocks.git.changes import finish_git, start_git
from gitlocks.hooks.check import find_held, list_refs, read_table, read_verdicts
from gitlocks.identity import Identity, SessionProcess, resolve_identity, session_process
from gitlocks.layout import DEFAULT_TTL_SECONDS

HARNESSES = ("claude",)
MODES = ("claim", "block", "warn")
# Claude Code's editing tools, and where each names its file (tool_input).
EDIT_TOOLS = {
    "Edit": "file_path",
    "Write": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
MAX_EVENT_BYTES = 4 * 1024 * 1024  # a tool call's input; Write carries the whole file
EXIT_ALLOW, EXIT_PASS, EXIT_DENY = 0, 1, 2
PREFIX = "gitlocks guard: "

_CONFIG_ARGS = (
    "config",
    "-z",
    "--get-regexp",
    "^(alock\\.guardmode|alock\\.remote|alock\\.clockskew|core\\.ignorecase"
    "|extensions\\.refstorage)$",
)


class Pass(Exception):
    """Let the call through, saying why on stderr (exit 1): never in the way by accident."""


class Event(NamedTuple):
    """One harness event, as the guard needs it."""

    kind: str  # "edit", "start", "end", "stop" or "other"
    session_id: str
    cwd: str
    tool: str = ""
    path: str = ""  # absolute, for an edit


class Answer(NamedTuple):
    """What the harness gets back."""

    code: int = EXIT_ALLOW
    stdout: str = ""
    stderr: str = ""


def parse_claude(raw: bytes) -> Event:
    """A Claude Code hook event: ``hook_event_name``, ``session_id``, ``cwd``, and for a
    tool, ``tool_name`` and ``tool_input`` (its file path absolute)."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise Pass(f"the hook event is not JSON ({exc.__class__.__name__})") from None
    if not isinstance(data, dict):
        raise Pass("the hook event is not a JSON object")
    name = data.get("hook_event_name")
    session = data.get("session_id")
    cwd = data.get("cwd")
    if not isinstance(name, str) or not isinstance(session, str) or not session:
        raise Pass("the hook event has no hook_event_name or session_id")
    if not isinstance(cwd, str) or not cwd:
        cwd = os.getcwd()
    kinds = {"SessionStart": "start", "SessionEnd": "end", "Stop": "stop"}
    if name != "PreToolUse":
        return Event(kinds.get(name, "other"), session, cwd)
    tool = data.get("tool_name")
    key = EDIT_TOOLS.get(tool) if isinstance(tool, str) else None
    if key is None:
        return Event("other", session, cwd, tool=str(tool))
    tool_input = data.get("tool_input")
    path = tool_input.get(key) if isinstance(tool_input, dict) else None
    if not isinstance(path, str) or not path:
        raise Pass(f"{tool} names no {key}")
    return Event("edit", session, cwd, tool=str(tool), path=path)


def holder_env(event: Event, harness: str, env: Mapping[str, str]) -> dict[str, str]:
    """The environment the guard's identity is resolved in: ``AGENT_ID`` if set, else an
    id derived from the harness and its session id, stable for the whole session."""
    found = dict(env)
    if not found.get("AGENT_ID"):
        digest = hashlib.sha256(event.session_id.encode("utf-8", "replace")).hexdigest()
        found["AGENT_ID"] = f"{harness}-{digest[:8]}"
    return found


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


def open_repo(cwd: str) -> Repo:
    """The working tree around ``cwd`` and the settings the guard reads."""
    if not os.path.isdir(cwd):
        raise Pass(f"the session's directory {cwd!r} does not exist")
    top = start_git(["rev-parse", "--show-toplevel", "--git-common-dir"], cwd)
    config = start_git(_CONFIG_ARGS, cwd)
    try:
        lines = os.fsdecode(finish_git(top)).splitlines()
    except GitlocksError:
        raise Pass(f"{cwd!r} is not inside a git working tree") from None
    raw = finish_git(config, ok=(0, 1))
    if len(lines) < 2:
        raise Pass(f"{cwd!r} is not inside a git working tree")
    root = Path(lines[0])
    common = lines[1] if os.path.isabs(lines[1]) else os.path.join(cwd, lines[1])
    values: dict[str, str] = {}
    for item in raw.split(b"\0"):
        key, _, value = item.decode("utf-8", "replace").partition("\n")
        if key:
            values[key.lower()] = value
    warnings = []
    mode = values.get("alock.guardmode", "claim").strip().lower() or "claim"
    if mode not in MODES:
        warnings.append(f"unknown alock.guardMode {mode!r} (claim, block or warn): claim")
        mode = "claim"
    ignore_case = values.get("core.ignorecase", "false").strip().lower() in ("true", "1", "yes")
    try:
        skew = int(values.get("alock.clockskew", "0") or 0) if values.get("alock.remote") else 0
    except ValueError:
        skew = 0
    storage = values.get("extensions.refstorage", "files").strip().lower()
    return Repo(
        root, common, mode, bool(values.get("alock.remote")), ignore_case, skew,
        storage not in ("", "files"), warnings,
    )  # fmt: skip


def relative(repo: Repo, path: str) -> str:
    """``path`` relative to the top of the working tree; Pass when it lies outside."""
    full = Path(path) if os.path.isabs(path) else repo.root / path
    try:
        # The file may not exist yet (Write creates it): resolve what exists above it.
        rel = Path(os.path.realpath(full)).relative_to(os.path.realpath(repo.root))
    except ValueError:
        raise Pass(f"{path} is outside the repository at {repo.root}: not guarded") from None
    if not rel.parts or rel.parts[0] == ".git":
        raise Pass(f"{path} is no file of the working tree: not guarded")
    return rel.as_posix()


def harness_session() -> SessionProcess:
    """The harness process that runs the hook: the session whose end ends the claims."""
    return session_process()


# --- deciding ---------------------------------------------------------------------------


def _where(record: LockRecord, now: datetime) -> str:
    left = format_duration((record.expires() - now).total_seconds())
    reason = f', reason "{record.reason}"' if record.reason else ""
    return (
        f"{' '.join(record.paths)} held by {record.holder}{reason}, expires in {left} "
        f"[lock {record.id}]"
    )


def held_reason(rel: str, locks: Sequence[LockRecord], now: datetime) -> str:
    held = "; ".join(_where(r, now) for r in locks)
    return printable(
        f"gitlocks: {rel} is inside another agent's claim: {held}. Do not edit it: work on "
        "something else, claim a part nobody holds (git alock acquire), or ask the holder "
        "to release it (git alock status shows every claim)."
    )


def covering(table: Table, identity: Identity, now: datetime, rel: str) -> list[LockRecord]:
    """Live locks of the holder's side (itself, its ancestors) covering ``rel``."""
    entry = path_entry(rel)
    if entry is None:
        return []
    mine = table.unblocking(identity.holder, identity.parent)
    stamp = table.cutoff(format_time(now))
    found = [table.records[i] for i in sorted(table.covering(entry))]
    return [r for r in found if r.holder in mine and r.expires_at > stamp]


def decide_edit(event: Event, harness: str, env: Mapping[str, str]) -> Answer:
    repo = open_repo(event.cwd)
    rel = relative(repo, event.path)
    notes = [*repo.warnings]
    if IgnoreList.of_tree(repo.root).ignored(rel):
        return Answer()  # in .alockignore: nobody needs to claim it
    # The holder comes from AGENT_ID or the session id; the harness process is looked up
    # only when a claim records it (the walk up /proc is not free, and this runs a lot).
    unknown = SessionProcess(0, "", "", "")
    identity = resolve_identity(None, holder_env(event, harness, env), unknown)
    now = utcnow()
    found = list_refs(repo.common_dir, repo.reftable, str(repo.root))
    verdicts = read_verdicts(repo.common_dir)
    table = read_table(found, str(repo.root), repo.ignore_case, repo.skew, verdicts)
    held = find_held(table, identity, now, [rel], committing=False)
    if held:
        reason = held_reason(rel, held[0].locks, now)
        if repo.mode == "warn":
            return _context(reason, notes)
        return _deny(reason, notes)
    if repo.mode != "claim" or covering(table, identity, now, rel):
        return Answer(stderr=_lines(notes))
    session = harness_session()
    return claim(event, repo, rel, identity._replace(session=session), notes)


def claim(event: Event, repo: Repo, rel: str, identity: Identity, notes: list[str]) -> Answer:
    """Claim the file for the session (the store, and pygit2, only on this path)."""
    from gitlocks.service import locks  # imported here: only a claim needs the store

    ctx = store_context(repo.root, identity)
    entry = path_entry(rel)
    if entry is None:
        raise Pass(f"{rel!r} cannot be named by a pattern: not guarded")
    result = locks.acquire(ctx, [entry], reason=f"{event.tool} {rel}"[:1000], ttl=_ttl(ctx))
    if result.status in ("acquired", "already_yours"):
        return Answer(stderr=_lines(notes))
    now = ctx.now()
    holders = [c.record for c in result.conflicts]
    reason = (
        held_reason(rel, holders, now)
        if holders
        else (f"gitlocks: {rel} could not be claimed ({result.status}); git alock status says why")
    )
    return _deny(reason, notes)


def store_context(root: Path, identity: Identity) -> Any:
    """The service context of the repository at ``root`` (its remote's store in remote mode)."""
    # Imported here: the store brings in pygit2, which the guard's fast path avoids.
    from gitlocks.service.context import Context
    from gitlocks.store.local import Store

    store = Store.discover(root)
    if store.config_get("alock.remote"):
        from gitlocks.store.remote import RemoteStore  # only in remote mode

        store = RemoteStore(store.repo)
    return Context(store=store, identity=identity)


def _ttl(ctx: Any) -> int:
    configured = ctx.store.config_get("alock.ttl")
    try:
        return parse_duration(configured, what="alock.ttl") if configured else DEFAULT_TTL_SECONDS
    except GitlocksError:
        return DEFAULT_TTL_SECONDS


def end_session(event: Event, harness: str, env: Mapping[str, str]) -> Answer:
    """SessionEnd: release the session's claims; those with notes are left to become
    interrupted work when the harness exits, as after a crash."""
    from gitlocks.service import locks  # imported here: only this event writes

    repo = open_repo(event.cwd)
    identity = resolve_identity(None, holder_env(event, harness, env), harness_session())
    ctx = store_context(repo.root, identity)
    table = ctx.store.read_table()
    now = format_time(ctx.now())
    patterns = sorted(
        {p for r in table.live(now) if r.holder == identity.holder and not r.notes for p in r.paths}
    )
    if patterns:
        root = os.fspath(ctx.store.root)
        entries = [make_entry(":/" + p, root=root) for p in patterns]
        locks.release(ctx, entries)
    return Answer()


def heartbeat(event: Event, harness: str, env: Mapping[str, str]) -> Answer:
    """Stop (the agent finished a turn): renew the session's claims, a heartbeat."""
    from gitlocks.service import locks  # imported here: only this event writes

    repo = open_repo(event.cwd)
    identity = resolve_identity(None, holder_env(event, harness, env), harness_session())
    ctx = store_context(repo.root, identity)
    table = ctx.store.read_table()
    if any(r.holder == identity.holder for r in table.live(format_time(ctx.now()))):
        locks.renew(ctx, None, ttl=None)
    return Answer()


def start_session(event: Event, harness: str, env: Mapping[str, str]) -> Answer:
    """SessionStart: tell the agent who it is and what others hold (additional context)."""
    repo = open_repo(event.cwd)
    identity = resolve_identity(None, holder_env(event, harness, env), harness_session())
    found = list_refs(repo.common_dir, repo.reftable, str(repo.root))
    table = read_table(found, str(repo.root), repo.ignore_case, repo.skew,
                       read_verdicts(repo.common_dir))  # fmt: skip
    now = utcnow()
    theirs = [r for r in table.live(format_time(now)) if r.holder != identity.holder]
    lines = [
        f"gitlocks: you are {identity.holder}. Edits claim their file for you "
        f"(alock.guardMode {repo.mode}); an edit inside another agent's claim is denied.",
    ]
    if theirs:
        lines.append(f"Claims held by others ({len(theirs)}):")
        lines += [f"- {_where(r, now)}" for r in theirs[:20]]
        if len(theirs) > 20:
            lines.append("- ... (git alock status shows them all)")
    text = printable("\n".join(lines)).replace("\\n", "\n")
    doc = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}
    return Answer(stdout=json.dumps(doc))


# --- answering ----------------------------------------------------------------------------


def _lines(notes: Sequence[str]) -> str:
    return "".join(f"{PREFIX}{n}\n" for n in notes)


def _deny(reason: str, notes: Sequence[str]) -> Answer:
    doc = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }
    return Answer(EXIT_ALLOW, json.dumps(doc), _lines(notes))


def _context(reason: str, notes: Sequence[str]) -> Answer:
    doc = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": reason}}
    return Answer(EXIT_ALLOW, json.dumps(doc), _lines(notes))


def run(harness: str, raw: bytes, env: Mapping[str, str]) -> Answer:
    """The answer to one event of ``harness``."""
    event = parse_claude(raw)
    if event.kind == "edit":
        return decide_edit(event, harness, env)
    if event.kind == "start":
        return start_session(event, harness, env)
    if event.kind == "end":
        return end_session(event, harness, env)
    if event.kind == "stop":
        return heartbeat(event, harness, env)
    raise Pass(f"nothing to guard in this event ({event.tool or 'not an edit'})")


def main(argv: Sequence[str]) -> int:
    """``git-alock guard --for HARNESS``: read one event on stdin, answer, exit."""
    args = list(argv)
    harness = None
    if len(args) == 2 and args[0] == "--for":
        harness = args[1]
    elif len(args) == 1 and args[0].startswith("--for="):
        harness = args[0].split("=", 1)[1]
    if harness not in HARNESSES:
        sys.stderr.write(
            f"error: usage: git alock guard --for {'|'.join(HARNESSES)} (one hook event as "
            "JSON on stdin)\n"
        )
        return 2 if harness is None else EXIT_PASS
    try:
        raw = sys.stdin.buffer.read(MAX_EVENT_BYTES + 1)
        if len(raw) > MAX_EVENT_BYTES:
            raise Pass("the hook event is larger than the guard reads")
        answer = run(harness, raw, os.environ)
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
