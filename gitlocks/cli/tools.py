"""The MCP tools: a named subset of the verbs, each described by the verb's declaration.

Its arguments are the verb's parameters as ``gitlocks.cli.declare`` reads them, less those
``NOT_IN_TOOL``; the server publishes and checks exactly this table (docs/design.md 6.6).
"""

from __future__ import annotations

from gitlocks.agents.mcp import Tool, ToolArgument
from gitlocks.cli import declare
from gitlocks.cli.app import verb_module

# The verbs served as MCP tools (``git alock mcp``), in the order a client lists them.
TOOLS = (
    "acquire",
    "release",
    "renew",
    "check",
    "list",
    "status",
    "note",
    "resume",
    "break",
    "log",
    "whoami",
)


def tools(names: tuple[str, ...] = TOOLS) -> dict[str, Tool]:
    """The tools ``names``, from their verbs' declarations (only their modules imported)."""
    return {name: tool(verb_module(name).app.commands[name]) for name in names}


def tool(verb: declare.Verb) -> Tool:
    """The MCP tool ``verb`` declares."""
    if verb.tool is None:
        raise LookupError(f"verb {verb.name!r} declares no MCP tool (@app.command(tool=...))")
    arguments = tuple(
        ToolArgument(
            name=p.tool.name or _name(p),
            param=p.name,
            kind=_kind(p),
            required=p.required if p.tool.required is None else p.tool.required,
            default=p.default,
            help=p.help,
        )
        for p in declare.params(verb.callback)
        if p.tool.offered
    )
    names = [a.name for a in arguments]
    for name in names:
        if names.count(name) > 1:  # one key of the call would fill both parameters
            raise TypeError(f"the MCP tool {verb.name!r} takes two arguments named {name!r}")
    return Tool(verb.name, verb.tool, arguments)


def _name(p: declare.Param) -> str:
    """An option's longest spelling (``--until-merged``: ``until_merged``), else the
    argument's parameter name."""
    names = p.declared.names
    return max(names, key=len).lstrip("-").replace("-", "_") if names else p.name


def _kind(p: declare.Param) -> str:
    if not p.plain:
        raise TypeError(f"{p.name}: a tool takes text, flags and lists of text only")
    return {"flag": "bool", "many": "paths"}.get(p.kind) or (
        "pattern" if p.tool.pattern else "text"
    )
