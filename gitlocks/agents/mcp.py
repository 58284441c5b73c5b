"""``git alock mcp``: an MCP server over stdio, for agents that speak MCP.

Its tools are the verbs of the command line, as ``gitlocks.cli.tools`` declares them; each
tool's body is the server's method of its name, and each result the verb's ``--json``
document (a refusal is a normal result, never a protocol error). The holder is as for
every command (docs/design.md, section 6.6). Arguments are checked exactly as sent (no
coercion: ``all: "yes"`` is no boolean): bad input gets ``{"status": "error", ...}``, a
request the protocol cannot read a JSON-RPC error (``gitlocks.agents.jsonrpc``, standard
library alone: no MCP SDK is imported).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, NamedTuple

from gitlocks.core import strictjson
from gitlocks.core.scope import ScopeEntry, make_entry
from gitlocks.core.text import MAX_NOTE_CHARS, MAX_REASON_CHARS, user_text
from gitlocks.errors import GitlocksError, UsageError
from gitlocks.identity import Identity, resolve_identity

INSTRUCTIONS = (
    "Advisory path locks shared by the agents working in this git repository. Before "
    "editing, acquire the paths (glob patterns relative to the repository root); if the "
    "result's status is 'refused', do not edit: its conflicts name who holds what. Renew "
    "long work, add notes as you go, release when done."
)
# A tool's body is the server's method of its name (a keyword's with the verb's "_").
BODIES = {"break": "break_"}
MAX_PATHS = 1000  # per call: more is no agent's claim, and would hold the store for long
MAX_PATTERN_CHARS = 4096  # PATH_MAX


class ToolArgument(NamedTuple):
    """One argument of a tool, as its verb declares it."""

    name: str  # as the tool takes it
    param: str  # the verb's parameter it fills
    kind: str  # "bool", "text", "pattern" (one path or pattern) or "paths" (an array of them)
    required: bool  # else it may be left out or null: the verb's default then
    default: Any
    help: str


class Tool(NamedTuple):
    name: str
    description: str
    arguments: tuple[ToolArgument, ...]


def schema(tool: Tool) -> dict[str, Any]:
    """The JSON schema of ``tool``'s arguments, as published to clients."""
    properties: dict[str, Any] = {}
    for a in tool.arguments:
        if a.kind == "paths":
            item = {"type": "string", "maxLength": MAX_PATTERN_CHARS}
            prop: dict[str, Any] = {"type": "array", "items": item, "maxItems": MAX_PATHS}
        else:
            prop = {"type": "boolean" if a.kind == "bool" else "string"}
            if a.kind == "pattern":
                prop["maxLength"] = MAX_PATTERN_CHARS
        if a.help:
            prop["description"] = a.help
        if not a.required and a.default is not None:
            prop["default"] = a.default
        properties[a.name] = prop
    required = [a.name for a in tool.arguments if a.required]
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


# What the checks hand a body for each kind of argument: its type, the annotation that
# takes it as written here, and how a message names it.
_HANDED: dict[str, tuple[type, str, str]] = {
    "bool": (bool, "bool", "a boolean"),
    "text": (str, "str", "a string"),
    "pattern": (str, "str", "a string"),
    "paths": (list, "list[str]", "an array of strings"),
}


def _held_to(tool: Tool, body: Any) -> None:
    """TypeError unless ``body`` is annotated (as written, not evaluated) to take what the
    checks hand it for each of ``tool``'s arguments: its kind, or null where an optional
    argument's default is None. The names alone would let a declaration change a type."""
    written = body.__annotations__
    for a in tool.arguments:
        kind, annotation, said = _HANDED[a.kind]
        handed: str | None = annotation
        if not a.required and a.default is None:
            handed, said = f"{handed} | None", f"{said} or null"
        elif not a.required and not isinstance(a.default, kind):
            said = f"{said} or its default {a.default!r}"
            handed = None  # no annotation takes a default of another type
        takes = written.get(a.param)
        if takes is None or " | ".join(t.strip() for t in takes.split("|")) != handed:
            raise TypeError(
                f"the MCP tool {tool.name!r} hands {a.name!r} {said} as declared, but "
                f"Server.{tool.name} takes {a.param}: {takes}"
            )


class Server:
    """The tools, bound to one repository and one holder. Each tool is the method of its
    name, taking the verb's parameters that the tool offers: a declaration and its body that
    drift apart stop the server as it starts."""

    def __init__(self, root: str, tools: dict[str, Tool], env: dict[str, str] | None = None):
        self.env = dict(os.environ if env is None else env)
        self.root = root
        self.tools = tools
        for tool in tools.values():
            body = getattr(type(self), BODIES.get(tool.name, tool.name), None)
            code = getattr(body, "__code__", None)
            takes = code.co_varnames[1 : code.co_argcount] if code else None
            if takes != tuple(a.param for a in tool.arguments):
                raise TypeError(
                    f"the MCP tool {tool.name!r} takes {[a.param for a in tool.arguments]} "
                    f"as declared, but Server.{BODIES.get(tool.name, tool.name)} takes {takes}"
                )
            _held_to(tool, body)
        _ = self.identity  # a bad AGENT_ID stops the server as it starts, not at a call

    @property
    def identity(self) -> Identity:
        """Who calls, asked at each call: the harness may start its MCP servers before its guard
        has registered the session (docs/design.md, section 6.6)."""
        return resolve_identity(None, self.env)

    def _ctx(self, *, land: bool = False, clear: bool = False) -> Any:
        """The store and who asks. ``land`` (the reading tools, as the reading verbs): in
        local mode, first release this machine's claims whose work has landed, so that a
        merge is seen by the next read (the read answers even if that write fails);
        ``clear``: then clear dead claims too, as ``list`` and ``status`` do."""
        # Imported here: the store's layer (pygit2), once.
        from gitlocks.service import lifecycle
        from gitlocks.service.context import open_context
        from gitlocks.service.remote import land_waiting

        ctx = open_context(self.root, self.identity)
        if (land or clear) and not ctx.store.config_get("alock.remote"):
            try:  # it asks the cheap question first: does a claim of this machine wait?
                land_waiting(ctx)
            except GitlocksError:
                pass
        if clear:
            lifecycle.clear_dead_before_listing(ctx)
        return ctx

    def _entries(self, ctx: Any, paths: list[str]) -> list[ScopeEntry]:
        """The patterns as scope entries, without repeats (``a``, ``a/`` and ``./a`` are
        one), as the verbs read them: a record never holds a pattern twice."""
        if not paths:
            raise UsageError("name at least one path or pattern")
        root = ctx.store.root
        found: list[ScopeEntry] = []
        for typed in paths:
            entry = make_entry(typed, cwd="", root=root, is_file=ctx.store.is_file)
            if entry not in found:
                found.append(entry)
        return found

    def acquire(
        self,
        patterns: list[str],
        reason: str,
        ttl: str | None,
        shared: bool,
        until_merged: str | None,
        wait: str | None = None,
    ) -> Any:
        """``until_merged``: a branch, or "" for the main line (``--until-merged``).
        ``wait``: a duration to wait for its turn ("" for the default), as ``--wait``."""
        # Imported here: the store's layer, once.
        from gitlocks.service import landing, locks, typos, waiting

        ctx = self._ctx()
        branch = None
        if until_merged is not None:
            wanted = until_merged or landing.main_line(ctx.store)
            branch = landing.check_branch(ctx.store, wanted)
        claim = self._entries(ctx, patterns)
        asked: dict[str, Any] = {
            "reason": user_text(reason, "reason", MAX_REASON_CHARS),
            "ttl": ctx.ttl(ttl, what="ttl"),
            "shared": shared,
            "until_merged": branch,
        }
        if wait is None:
            result = locks.acquire(ctx, claim, **asked)
        else:
            # Interruptible: a server ended (SIGTERM, SIGHUP) or Ctrl-C'd as a tool waits
            # takes its waiter out of the queue first, as the verb's does.
            seconds = waiting.wait_seconds(ctx, wait, what="wait")
            result = waiting.acquire(ctx, claim, wait=seconds, interruptible=True, **asked)
        doc = result.to_dict()
        if result.status == "acquired":  # as the verb's --json says it
            missing = typos.uncovered(ctx.store.root, claim, ignore_case=ctx.store.ignore_case)
            doc["covers_nothing"] = [m.to_dict() for m in missing]
        if result.status == "interrupted" and result.conflicts and not doc["hint"]:
            left = result.conflicts[0].record
            doc["hint"] = (
                f"{left.holder}'s session ended with this work unfinished: the resume tool "
                f"(path {json.dumps(left.paths[0])}) takes it over with its notes; the break "
                f"tool (targets [{json.dumps(left.id)}]) discards it"
            )
        return doc

    def release(self, patterns: list[str] | None, all_: bool) -> Any:
        from gitlocks.service import locks  # imported here: the store's layer, once

        if not all_ and not patterns:
            raise UsageError("name the paths to release, or all=true for all of yours")
        if all_ and patterns:
            raise UsageError("give paths, or all=true, not both")
        ctx = self._ctx()
        return locks.release(ctx, None if all_ else self._entries(ctx, patterns or [])).to_dict()

    def renew(self, patterns: list[str] | None, ttl: str | None) -> Any:
        from gitlocks.service import locks  # imported here: the store's layer, once

        ctx = self._ctx()
        entries = self._entries(ctx, patterns) if patterns else None
        asked = ctx.ttl(ttl, what="ttl") if ttl is not None else None
        return locks.renew(ctx, entries, ttl=asked, default_ttl=ctx.ttl(None)).to_dict()

    # Before ``list``: in the class body below it, ``list`` names the tool.
    def break_(self, targets: list[str]) -> Any:
        from gitlocks.service import locks  # imported here: the store's layer, once

        ctx = self._ctx()
        named = [(t, self._entries(ctx, [t])[0]) for t in targets] if targets else []
        if not named:
            raise UsageError("name the lock ids or patterns to break")
        return locks.break_locks(ctx, named).to_dict()

    def check(self, paths: list[str]) -> Any:
        from gitlocks.service import locks  # imported here: the store's layer, once

        ctx = self._ctx(land=True)
        return [item.to_dict() for item in locks.check(ctx, self._entries(ctx, paths))]

    def list(self) -> Any:
        from gitlocks.service.context import live_table  # imported here: the store's layer

        ctx = self._ctx(clear=True)
        _, live = live_table(ctx)
        return [r.to_dict() for r in live]

    def status(self) -> Any:
        from gitlocks.service.status import status  # imported here: the store's layer

        ctx = self._ctx(clear=True)
        return status(ctx).to_dict()

    def note(self, pattern: str, text: str) -> Any:
        from gitlocks.service import locks  # imported here: the store's layer, once

        if not text.strip():
            raise UsageError("the note is empty")
        ctx = self._ctx()
        [entry] = self._entries(ctx, [pattern])
        return locks.note(ctx, entry, user_text(text, "note", MAX_NOTE_CHARS)).to_dict()

    def resume(self, pattern: str, ttl: str | None) -> Any:
        # Imported here: the store's layer, once.
        from gitlocks.core.record import is_lock_id
        from gitlocks.service import lifecycle

        ctx = self._ctx()
        target: str | ScopeEntry
        if is_lock_id(pattern) and ctx.store.read_table().get(pattern) is not None:
            target = pattern
        else:
            [target] = self._entries(ctx, [pattern])
        return lifecycle.resume(ctx, target, ttl=ctx.ttl(ttl, what="ttl")).to_dict()

    def log(self, count: str | None, since: str | None, reverse: bool) -> Any:
        # Imported here: the journal's readers, once.
        from gitlocks.core import journal as core_journal
        from gitlocks.core.record import utcnow
        from gitlocks.service import journal

        limit = _count(count)
        store = self._ctx().store
        after = core_journal.since_time(since, utcnow()) if since else None
        shared = journal.events(store, limit=limit, since=after)
        found = core_journal.merged(shared, journal.refusals(store, since=after), limit)
        return found[::-1] if reverse else found

    def whoami(self) -> Any:
        return self.identity.to_dict()


def _count(count: str | None) -> int | None:
    """``max_count`` as ``-n`` takes it: a whole number, or None for every event."""
    if count is None:
        return None
    if not count.strip().isdigit():
        raise UsageError(f"max_count must be a whole number, not {count!r}")
    return int(count)


# ``git alock VERB`` in an answer's hint or error: the agent calls the tool of that name.
_COMMAND = re.compile(r"\bgit alock ([a-z][a-z-]*)")


def in_tools(text: str, tools: dict[str, Tool]) -> str:
    """``text`` with each ``git alock VERB`` that is one of ``tools`` said as that tool: an
    agent speaking MCP may have no shell to run it."""
    return _COMMAND.sub(
        lambda m: f"the {m[1]} tool" if m[1] in tools else m[0],
        text,
    )


def _string(value: Any, what: str, limit: int | None = None) -> str:
    if not isinstance(value, str):
        raise UsageError(f"{what} must be a string, not {_kind(value)}")
    if "\0" in value or any("\ud800" <= c <= "\udfff" for c in value):
        raise UsageError(f"{what} holds a NUL or an unpaired surrogate, which no text may hold")
    if limit is not None and len(value) > limit:
        raise UsageError(f"{what} is longer than {limit} characters")
    return value


def _kind(value: Any) -> str:
    """A JSON value's type, for a message."""
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string"}
    names.update({list: "an array", dict: "an object", type(None): "null"})
    return names.get(type(value), type(value).__name__)


def _checked(value: Any, kind: str, what: str) -> Any:
    """``value`` as ``kind`` wants it, exactly (no coercion); else UsageError saying why."""
    if kind == "bool":
        if not isinstance(value, bool):
            raise UsageError(f"{what} must be true or false, not {_kind(value)} {value!r}")
        return value
    if kind == "paths":
        if not isinstance(value, list):
            raise UsageError(f"{what} must be an array of paths or patterns, not {_kind(value)}")
        if len(value) > MAX_PATHS:
            raise UsageError(f"{what}: at most {MAX_PATHS} per call, got {len(value)}")
        return [_string(v, f"{what}[{i}]", MAX_PATTERN_CHARS) for i, v in enumerate(value)]
    return _string(value, what, MAX_PATTERN_CHARS if kind == "pattern" else None)


def check_arguments(tools: dict[str, Tool], name: str, arguments: Any) -> dict[str, Any]:
    """The arguments of a call to the tool ``name``, checked against what it takes, as the
    verb's parameters (each one left out or null: its declared default)."""
    tool = tools.get(name)
    if tool is None:
        raise UsageError(f"no tool {name!r}: the tools are {', '.join(tools)}")
    if not isinstance(arguments, dict):
        raise UsageError(f"the arguments must be an object, not {_kind(arguments)}")
    takes = {a.name: a for a in tool.arguments}
    unknown = sorted(set(arguments) - set(takes))
    if unknown:
        known = ", ".join(takes) or "no arguments"
        raise UsageError(f"{name} takes no argument {unknown[0]!r} (it takes {known})")
    for a in tool.arguments:
        if a.name not in arguments and a.required:
            raise UsageError(f"{name} needs the argument {a.name!r}")
    values = {}
    for a in tool.arguments:
        value = arguments.get(a.name)
        if value is None and not a.required:
            values[a.param] = a.default
        else:
            values[a.param] = _checked(value, a.kind, a.name)
    return values


def call(server: Server, tool: str, arguments: Any) -> str:
    """One tool call, as the JSON text of its result; an error is a result too."""
    try:
        checked = check_arguments(server.tools, tool, arguments)
        result = getattr(server, BODIES.get(tool, tool))(**checked)
    except GitlocksError as exc:
        result = exc.to_dict()
    except Exception as exc:  # a bug must still answer, and never look like a refusal
        error = f"internal error: {exc.__class__.__name__}: {exc}; this is a bug in gitlocks"
        result = {"status": "error", "error": error, "exit_code": 2}
    if isinstance(result, dict):
        for key in ("hint", "error"):  # ours: the rest holds users' text, left as written
            if isinstance(result.get(key), str):
                result[key] = in_tools(result[key], server.tools)
    text = strictjson.dumps_finite(result, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # an undecodable file name's bytes: escaped, still JSON
        text = strictjson.dumps_finite(result)
    return text


ERROR_START = '{"status": "error"'  # how :func:`call` writes every error's document

# A lone surrogate escaped in a request's JSON (an escaped backslash, a valid pair, or a
# lone one, matched left to right so that "\\\\ud800" is no escape).
_ESCAPES = re.compile(
    rb"(\\\\)|(\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})|"
    rb"(\\u[dD][89a-fA-F][0-9a-fA-F]{2})"
)


# Bytes that are no UTF-8, as surrogateescape reads them (an escaped backslash first, so
# that a run after a lone backslash is taken with it).
_UNDECODABLE = re.compile(r"(\\\\)|\\?[\udc80-\udcff]+")


def mend(line: bytes) -> bytes:
    """``line`` with each escaped lone surrogate, and each run of bytes that are no UTF-8,
    made an escaped NUL, which the checks refuse: read as it is, the second would be no JSON
    (or, decoded leniently, U+FFFD: a call would claim another path than the one sent)."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        text = line.decode("utf-8", "surrogateescape")
        line = _UNDECODABLE.sub(lambda m: m[1] or "\\u0000", text).encode("utf-8")
    if b"\\u" not in line:  # no escape at all, so none of a lone surrogate: most lines
        return line
    return _ESCAPES.sub(lambda m: b"\\u0000" if m[3] else m[0], line)


def serve(root: str, tools: dict[str, Tool]) -> None:
    """Run the server of ``tools`` on stdio until the client goes away."""
    import gc  # here, with the one use: only the server runs for hours

    gc.enable()  # a long-lived process: the command's script left the collector off
    # Imported here: only the server speaks the protocol (the tool table and a call don't).
    from gitlocks import __version__
    from gitlocks.agents.jsonrpc import Connection

    server = Server(root, tools)
    published = [
        {"name": t.name, "description": t.description, "inputSchema": schema(t)}
        for t in tools.values()
    ]

    def answer(tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        # An error is a tool error (isError); a refusal is an answer.
        text = call(server, tool, arguments)
        return text, text.startswith(ERROR_START)

    info = {"name": "gitlocks", "version": __version__}
    Connection(info, published, answer, INSTRUCTIONS).serve(mend=mend)
