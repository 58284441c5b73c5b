"""``git alock mcp``: an MCP server over stdio, for agents that speak MCP.

Tools ``acquire``, ``release``, ``renew``, ``check``, ``list``, ``status``, ``note`` and
``whoami``, with arguments named as on the command line (``paths``, ``reason``, ``ttl``,
``all``); each result is the same JSON document as the verb's ``--json``, and a refusal
is a normal result naming the holder, never a protocol error. Patterns are relative to
the top of the working tree. The holder is ``AGENT_ID`` from the server's environment,
else derived from the process that started the server (the harness), whose life is the
session's (docs/design.md, section 6.6). Built on the official ``mcp`` SDK, an optional
extra (``pip install 'gitlocks[mcp]'``) imported only by this verb.
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
from typing import Any

from gitlocks.agents.guard import store_context
from gitlocks.core.record import parse_duration
from gitlocks.core.scope import ScopeEntry, make_entry
from gitlocks.errors import GitlocksError, UsageError
from gitlocks.identity import resolve_identity, session_process
from gitlocks.layout import DEFAULT_TTL_SECONDS

INSTRUCTIONS = (
    "Advisory path locks shared by the agents working in this git repository. Before "
    "editing, acquire the paths (glob patterns relative to the repository root); if the "
    "result's status is 'refused', do not edit: its conflicts name who holds what. Renew "
    "long work, add notes as you go, release when done."
)


class Server:
    """The tools, bound to one repository and one holder."""

    def __init__(self, root: Path, env: dict[str, str] | None = None) -> None:
        env = dict(os.environ if env is None else env)
        self.identity = resolve_identity(None, env, session_process())
        self.root = root

    def _ctx(self) -> Any:
        return store_context(self.root, self.identity)

    def _entries(self, ctx: Any, paths: list[str]) -> list[ScopeEntry]:
        if not paths:
            raise UsageError("name at least one path or pattern")
        root = os.fspath(ctx.store.root)
        return [make_entry(p, cwd="", root=root, is_file=ctx.store.is_file) for p in paths]

    def _ttl(self, ctx: Any, ttl: str | None) -> int:
        if ttl:
            return parse_duration(ttl, what="ttl")
        configured = ctx.store.config_get("alock.ttl")
        return parse_duration(configured, what="alock.ttl") if configured else DEFAULT_TTL_SECONDS

    def acquire(self, paths: list[str], reason: str = "", ttl: str | None = None) -> Any:
        from gitlocks.service import locks  # imported here: the store's layer, once

        ctx = self._ctx()
        return locks.acquire(
            ctx, self._entries(ctx, paths), reason=reason[:1000], ttl=self._ttl(ctx, ttl)
        ).to_dict()

    def release(self, paths: list[str] | None = None, all: bool = False) -> Any:
        from gitlocks.service import locks  # imported here: the store's layer, once

        ctx = self._ctx()
        if all == bool(paths):
            raise UsageError("give paths, or all=true, not both")
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
        return locks.note(ctx, entry, text[:4000]).to_dict()

    def whoami(self) -> Any:
        return self.identity.to_dict()


def call(server: Server, tool: str, arguments: dict[str, Any]) -> str:
    """One tool call, as the JSON text of its result; an error is a result too."""
    try:
        result = getattr(server, tool)(**arguments)
    except GitlocksError as exc:
        result = {"status": "error", "error": str(exc), "exit_code": exc.exit_code}
    except TypeError as exc:  # arguments the tool does not take
        result = {"status": "error", "error": f"bad arguments: {exc}", "exit_code": 2}
    return json.dumps(result, ensure_ascii=False)


TOOLS = {
    "acquire": "Claim paths (glob patterns) before editing them, all or none. A refusal "
    "names each holder, its pattern, reason and expiry: do not edit those paths.",
    "release": "Give back paths of your locks, or all=true for all of yours.",
    "renew": "Extend your locks' expiry from now (all of yours without paths).",
    "check": "FREE, YOURS or HELD for each path.",
    "list": "Every live lock.",
    "status": "Your locks, others', and uncommitted edits outside your claims.",
    "note": "Append a progress note to your lock on a path.",
    "whoami": "Your holder id, parent and session, and where each came from.",
}


def serve(root: Path) -> None:
    """Run the server on stdio until the client goes away."""
    factory: Any
    try:  # an optional extra, and only this verb needs it: looked up when it runs
        factory = importlib.import_module("mcp.server.mcpserver").MCPServer
    except ImportError:
        try:
            factory = importlib.import_module("mcp.server.fastmcp").FastMCP  # SDK before 2.0
        except ImportError:
            raise UsageError(
                "the MCP server needs the mcp package: pip install 'gitlocks[mcp]'"
            ) from None
    server = Server(root)
    app = factory("gitlocks", instructions=INSTRUCTIONS)

    def acquire(paths: list[str], reason: str = "", ttl: str | None = None) -> str:
        return call(server, "acquire", {"paths": paths, "reason": reason, "ttl": ttl})

    def release(paths: list[str] | None = None, all: bool = False) -> str:
        return call(server, "release", {"paths": paths, "all": all})

    def renew(paths: list[str] | None = None, ttl: str | None = None) -> str:
        return call(server, "renew", {"paths": paths, "ttl": ttl})

    def check(paths: list[str]) -> str:
        return call(server, "check", {"paths": paths})

    def list_locks() -> str:
        return call(server, "list", {})

    def status() -> str:
        return call(server, "status", {})

    def note(path: str, text: str) -> str:
        return call(server, "note", {"path": path, "text": text})

    def whoami() -> str:
        return call(server, "whoami", {})

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
        app.tool(name=name, description=TOOLS[name])(function)
    app.run("stdio")
