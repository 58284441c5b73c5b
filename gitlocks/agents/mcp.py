"""``git alock mcp``: an MCP server over stdio, for agents that speak MCP.

Tools ``acquire``, ``release``, ``renew``, ``check``, ``list``, ``status``, ``note`` and
``whoami``, with arguments named as on the command line (``paths``, ``reason``, ``ttl``,
``all``); each result is the same JSON document as the verb's ``--json``, and a refusal
is a normal result naming the holder, never a protocol error. Patterns are relative to
the top of the working tree. The holder is ``AGENT_ID`` from the server's environment,
else derived from the process that started the server (the harness), whose life is the
session's (docs/design.md, section 6.6). Built on the official ``mcp`` SDK, an optional
extra (``pip install 'gitlocks[mcp]'``) imported only by this verb.

The arguments are checked here, as sent, not by the SDK: its validation answers in its
own words, coerces (``all: "yes"`` became true), and its JSON reader drops a request
holding an escaped lone surrogate without an answer. So every call, well formed or not,
gets one of our documents, bad input ``{"status": "error", ...}``.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import threading
from pathlib import Path
from typing import Any

from gitlocks.core.scope import ScopeEntry, make_entry
from gitlocks.core.text import MAX_NOTE_CHARS, MAX_REASON_CHARS, user_text
from gitlocks.errors import GitlocksError, UsageError
from gitlocks.identity import Identity, resolve_identity, session_process

INSTRUCTIONS = (
    "Advisory path locks shared by the agents working in this git repository. Before "
    "editing, acquire the paths (glob patterns relative to the repository root); if the "
    "result's status is 'refused', do not edit: its conflicts name who holds what. Renew "
    "long work, add notes as you go, release when done."
)
MAX_PATHS = 1000  # per call: more is no agent's claim, and would hold the store for long
MAX_PATTERN_CHARS = 4096  # PATH_MAX

# Each tool's arguments and their kinds; a kind ending in "?" may be left out or null.
ARGUMENTS: dict[str, dict[str, str]] = {
    "acquire": {
        "paths": "paths",
        "reason": "text?",
        "ttl": "text?",
        "shared": "bool?",
        "until_merged": "text?",
    },
    "release": {"paths": "paths?", "all": "bool?"},
    "renew": {"paths": "paths?", "ttl": "text?"},
    "check": {"paths": "paths"},
    "list": {},
    "status": {},
    "note": {"path": "pattern", "text": "text"},
    "whoami": {},
}


class Server:
    """The tools, bound to one repository and one holder."""

    def __init__(self, root: Path, env: dict[str, str] | None = None) -> None:
        self.env = dict(os.environ if env is None else env)
        self.root = root
        _ = self.identity  # a bad AGENT_ID stops the server as it starts, not at a call

    @property
    def identity(self) -> Identity:
        """Who calls, asked at each call: the harness starts its MCP servers as it starts,
        maybe before its guard has registered the session (and so named its holder)."""
        return resolve_identity(None, self.env, session_process(env=self.env))

    def _ctx(self) -> Any:
        from gitlocks.service.context import open_context  # the store (pygit2), once

        return open_context(self.root, self.identity)

    def _entries(self, ctx: Any, paths: list[str]) -> list[ScopeEntry]:
        if not paths:
            raise UsageError("name at least one path or pattern")
        root = os.fspath(ctx.store.root)
        return [make_entry(p, cwd="", root=root, is_file=ctx.store.is_file) for p in paths]

    def _ttl(self, ctx: Any, ttl: str | None) -> int:
        ttl_seconds: int = ctx.ttl(ttl or None, what="ttl")
        return ttl_seconds

    def acquire(
        self,
        paths: list[str],
        reason: str | None = "",
        ttl: str | None = None,
        shared: bool | None = False,
        until_merged: str | None = None,
    ) -> Any:
        """``until_merged``: a branch, or "" for the main line (``--until-merged``)."""
        from gitlocks.service import landing, locks  # imported here: the store's layer, once

        ctx = self._ctx()
        branch = None
        if until_merged is not None:
            wanted = until_merged or landing.main_line(ctx.store)
            branch = landing.check_branch(ctx.store, wanted)
        return locks.acquire(
            ctx,
            self._entries(ctx, paths),
            reason=user_text(reason or "", "reason", MAX_REASON_CHARS),
            ttl=self._ttl(ctx, ttl),
            shared=bool(shared),
            until_merged=branch,
        ).to_dict()

    def release(self, paths: list[str] | None = None, all: bool | None = False) -> Any:
        from gitlocks.service import locks  # imported here: the store's layer, once

        if not all and not paths:
            raise UsageError("name the paths to release, or all=true for all of yours")
        if all and paths:
            raise UsageError("give paths, or all=true, not both")
        ctx = self._ctx()
        return locks.release(ctx, None if all else self._entries(ctx, paths or [])).to_dict()

    def renew(self, paths: list[str] | None = None, ttl: str | None = None) -> Any:
        from gitlocks.service import locks  # imported here: the store's layer, once

        ctx = self._ctx()
        entries = self._entries(ctx, paths) if paths else None
        return locks.renew(ctx, entries, ttl=self._ttl(ctx, ttl) if ttl else None).to_dict()

    def check(self, paths: list[str]) -> Any:
        from gitlocks.service import locks  # imported here: the store's layer, once

        ctx = self._ctx()
        return [item.to_dict() for item in locks.check(ctx, self._entries(ctx, paths))]

    def list(self) -> Any:
        from gitlocks.service.context import live_table  # imported here: the store's layer

        _, live = live_table(self._ctx())
        return [r.to_dict() for r in live]

    def status(self) -> Any:
        from gitlocks.service.status import status  # imported here: the store's layer

        return status(self._ctx()).to_dict()

    def note(self, path: str, text: str) -> Any:
        from gitlocks.service import locks  # imported here: the store's layer, once

        ctx = self._ctx()
        [entry] = self._entries(ctx, [path])
        return locks.note(ctx, entry, user_text(text, "note", MAX_NOTE_CHARS)).to_dict()

    def whoami(self) -> Any:
        return self.identity.to_dict()


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
    """``value`` as the argument's ``kind`` wants it, exactly (no coercion); UsageError
    with what is wrong otherwise."""
    if value is None and kind.endswith("?"):
        return None
    kind = kind.rstrip("?")
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


def check_arguments(tool: str, arguments: Any) -> dict[str, Any]:
    """The arguments of a call to ``tool``, checked against what it takes."""
    takes = ARGUMENTS.get(tool)
    if takes is None:
        raise UsageError(f"no tool {tool!r}: the tools are {', '.join(ARGUMENTS)}")
    if not isinstance(arguments, dict):
        raise UsageError(f"the arguments must be an object, not {_kind(arguments)}")
    unknown = sorted(set(arguments) - set(takes))
    if unknown:
        known = ", ".join(takes) or "no arguments"
        raise UsageError(f"{tool} takes no argument {unknown[0]!r} (it takes {known})")
    for name, kind in takes.items():
        if name not in arguments and not kind.endswith("?"):
            raise UsageError(f"{tool} needs the argument {name!r}")
    return {k: _checked(v, takes[k], k) for k, v in arguments.items()}


def call(server: Server, tool: str, arguments: Any) -> str:
    """One tool call, as the JSON text of its result; an error is a result too."""
    try:
        checked = check_arguments(tool, arguments)
        result = getattr(server, tool)(**checked)
    except GitlocksError as exc:
        result = exc.to_dict()
    except Exception as exc:  # a bug must still answer, and never look like a refusal
        error = f"internal error: {exc.__class__.__name__}: {exc}; this is a bug in gitlocks"
        result = {"status": "error", "error": error, "exit_code": 2}
    text = json.dumps(result, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # an undecodable file name's bytes: escaped, still JSON
        text = json.dumps(result)
    return text


ERROR_START = '{"status": "error"'  # how :func:`call` writes every error's document

TOOLS = {
    "acquire": "Claim paths (glob patterns) before editing them, all or none. A refusal "
    "names each holder, its pattern, reason and expiry: do not edit those paths. "
    "shared=true: a claim other shared claims may overlap (readers, appenders). "
    'until_merged: a branch ("" for the main line); the claim ends once your commits '
    "in it land there.",
    "release": "Give back paths of your locks, or all=true for all of yours.",
    "renew": "Extend your locks' expiry from now (all of yours without paths).",
    "check": "FREE, YOURS or HELD for each path.",
    "list": "Every live lock.",
    "status": "Your locks, others', and uncommitted edits outside your claims.",
    "note": "Append a progress note to your lock on a path.",
    "whoami": "Your holder id, parent and session, and where each came from.",
}

# A lone surrogate escaped in a request's JSON (an escaped backslash, a valid pair, or a
# lone one, matched left to right so that "\\\\ud800" is no escape).
_ESCAPES = re.compile(
    rb"(\\\\)|(\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})|"
    rb"(\\u[dD][89a-fA-F][0-9a-fA-F]{2})"
)


def mend(line: bytes) -> bytes:
    """``line`` with each escaped lone surrogate made an escaped NUL: the SDK's reader
    would drop the whole request unanswered; a NUL reaches the checks, which refuse it."""
    return _ESCAPES.sub(lambda m: b"\\u0000" if m[3] else m[0], line)


def _mend_stdin() -> None:
    """Serve the SDK a standard input whose lines went through :func:`mend`."""
    try:
        source = os.dup(0)
        read_end, write_end = os.pipe()
        os.dup2(read_end, 0)
        os.close(read_end)
    except OSError:
        return  # served as it is

    def pump() -> None:
        with open(source, "rb") as src, open(write_end, "wb") as dst:
            for line in src:
                try:
                    dst.write(mend(line))
                    dst.flush()
                except OSError:  # the server has gone
                    return

    threading.Thread(target=pump, name="gitlocks-mcp-stdin", daemon=True).start()


def _sdk() -> tuple[Any, bool]:
    """The SDK's server class, and whether it is 2.x's (its call_tool answers a result)."""
    try:  # an optional extra, and only this verb needs it: looked up when it runs
        return importlib.import_module("mcp.server.mcpserver").MCPServer, True
    except ImportError:
        try:
            return importlib.import_module("mcp.server.fastmcp").FastMCP, False  # SDK 1.x
        except ImportError:
            raise UsageError(
                "the MCP server needs the mcp package: pip install 'gitlocks[mcp]'"
            ) from None


def serve(root: Path) -> None:
    """Run the server on stdio until the client goes away."""
    factory, modern = _sdk()
    # Imported here, with the SDK they come with: only this verb needs them.
    import anyio
    from mcp.types import CallToolResult, TextContent

    server = Server(root)
    one_at_a_time = threading.Lock()

    def answer(tool: str, arguments: Any) -> str:
        with one_at_a_time:
            return call(server, tool, arguments)

    class App(factory):  # type: ignore[misc, valid-type]
        async def call_tool(self, name: str, arguments: Any, context: Any = None) -> Any:
            """Every call, its arguments as sent: checked by :func:`check_arguments`."""
            text = await anyio.to_thread.run_sync(answer, name, arguments)
            failed = text.startswith(ERROR_START)
            content: list[Any] = [TextContent(type="text", text=text)]
            if not modern:
                if failed:  # 1.x makes a raised error a result with isError set
                    raise RuntimeError(text)
                return content
            # An error is a tool error (isError), so a client tells it from an answer; a
            # refusal is an answer.
            return CallToolResult.model_validate({"content": content, "isError": failed})

    app = App("gitlocks", instructions=INSTRUCTIONS)

    # The functions give the SDK each tool's published argument schema; App.call_tool
    # answers every call itself.
    def acquire(
        paths: list[str],
        reason: str = "",
        ttl: str | None = None,
        shared: bool = False,
        until_merged: str | None = None,
    ) -> str:
        arguments = {"paths": paths, "reason": reason, "ttl": ttl, "shared": shared}
        return answer("acquire", {**arguments, "until_merged": until_merged})

    def release(paths: list[str] | None = None, all: bool = False) -> str:
        return answer("release", {"paths": paths, "all": all})

    def renew(paths: list[str] | None = None, ttl: str | None = None) -> str:
        return answer("renew", {"paths": paths, "ttl": ttl})

    def check(paths: list[str]) -> str:
        return answer("check", {"paths": paths})

    def list_locks() -> str:
        return answer("list", {})

    def status() -> str:
        return answer("status", {})

    def note(path: str, text: str) -> str:
        return answer("note", {"path": path, "text": text})

    def whoami() -> str:
        return answer("whoami", {})

    functions: dict[str, Any] = {
        "acquire": acquire,
        "release": release,
        "renew": renew,
        "check": check,
        "list": list_locks,
        "status": status,
        "note": note,
        "whoami": whoami,
    }
    for name, function in functions.items():
        try:  # the result is text (our JSON document), not the SDK's structured output
            register = app.tool(name=name, description=TOOLS[name], structured_output=False)
        except TypeError:  # an SDK before 1.10 has no structured output at all
            register = app.tool(name=name, description=TOOLS[name])
        register(function)
    _mend_stdin()
    app.run("stdio")
