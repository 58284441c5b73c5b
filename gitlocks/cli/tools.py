"""The MCP tools: a named subset of the verbs, each described by the verb's declaration.

A tool is the verb declared with ``@app.command(tool=DESCRIPTION)``; its arguments are the
verb's parameters as ``gitlocks.cli.declare`` reads them: the name (an option's long name,
an argument's parameter name, or its ``InTool`` name), whether it is required, its JSON type
(a flag a boolean, a list an array of strings, anything else a string), its default, and
its help as its description. A parameter marked ``NOT_IN_TOOL`` is not offered. The server
(``gitlocks.agents.mcp``) publishes and checks exactly this table, so a change to a verb's
declaration changes its tool too.

Imports no framework: the verb modules declare their verbs without typer.
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
    found = {}
    for name in names:
        found[name] = tool(verb_module(name).app.commands[name])
    return found


def tool(verb: declare.Verb) -> Tool:
    """The MCP tool ``verb`` declares."""
    if verb.tool is None:
        raise LookupError(f"verb {verb.name!r} declares no MCP tool (@app.command(tool=...))")
    arguments = []
    for p in declare.params(verb.callback):
        if not p.tool.offered:
            continue
        arguments.append(
            ToolArgument(
                name=p.tool.name or _name(p),
                param=p.name,
                kind=_kind(p),
                required=p.required if p.tool.required is None else p.tool.required,
                default=p.default,
                help=p.help,
            )
        )
    names = [a.name for a in arguments]
    for name in names:
        if names.count(name) > 1:  # one key of the call would fill both parameters
            raise TypeError(f"the MCP tool {verb.name!r} takes two arguments named {name!r}")
    return Tool(verb.name, verb.tool, tuple(arguments))


def _name(p: declare.Param) -> str:
    """An option's longest spelling (``--until-merged``: ``until_merged``), else the
    argument's parameter name."""
    if not p.names:
        return p.name
    return max(p.names, key=len).lstrip("-").replace("-", "_")


def _kind(p: declare.Param) -> str:
    if not p.plain:
        raise TypeError(f"{p.name}: a tool takes text, flags and lists of text only")
    if p.kind == "flag":
        return "bool"
    if p.kind == "many":
        return "paths"
    return "pattern" if p.tool.pattern else "text"
