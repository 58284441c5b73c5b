"""The verbs' one declaration, and the small parser that runs a verb from it.

Each parameter of a verb has its declaration as default (``ttl: str | None = Option("--ttl",
default=None, help=...)``). ``parse`` takes a command line typed correctly, as click would,
or declines (None) and typer answers; ``gitlocks.cli.tools`` builds the MCP tools from it.
Annotations are read as written, never evaluated (docs/design.md, section 8).
"""

from __future__ import annotations

from collections.abc import Callable

from gitlocks.core.value import Value

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any


class InTool(Value):
    """How a verb's MCP tool takes one of its parameters, where that differs from the
    default: the option's long name or the argument's, required as on the command line."""

    __slots__ = ("name", "offered", "pattern", "required")

    def __init__(
        self,
        name: str = "",
        required: bool | None = None,
        offered: bool = True,
        pattern: bool = False,
    ) -> None:
        self.name = name  # the tool's name for it
        self.required = required  # required by the tool though optional on the command line
        self.offered = offered  # False: the tool never takes it (who acts, the output's form)
        self.pattern = pattern  # a single path or pattern: held to a pattern's length


NOT_IN_TOOL = InTool(offered=False)


REQUIRED: Any = ...  # the default of a parameter the command line must give


class OptionInfo:
    """An option of a verb, as ``Option()`` declares it."""

    def __init__(
        self, names: tuple[str, ...], default: Any, tool: InTool, settings: dict[str, Any]
    ) -> None:
        self.names = names
        self.default = default
        self.tool = tool
        self.settings = settings


class ArgumentInfo:
    """A positional argument of a verb, as ``Argument()`` declares it."""

    names: tuple[str, ...] = ()  # an option's spellings: none

    def __init__(self, default: Any, tool: InTool, complete: str, settings: dict[str, Any]) -> None:
        self.default = default
        self.tool = tool
        self.complete = complete
        self.settings = settings


def Option(*names: str, default: Any = REQUIRED, tool: InTool = InTool(), **settings: Any) -> Any:
    """An option of a verb, as its parameter's default: its names, its default (none:
    required), how an MCP tool takes it (``tool``); every other setting is typer's."""
    return OptionInfo(names, default, tool, settings)


def Argument(
    *, default: Any = REQUIRED, tool: InTool = InTool(), complete: str = "", **settings: Any
) -> Any:
    """A positional argument of a verb, as its parameter's default; ``complete``: what a
    shell offers for it (one of ``gitlocks.cli.answers.ANSWERS``)."""
    return ArgumentInfo(default, tool, complete, settings)


class Exit(Exception):
    """End the verb with ``code`` as the command's exit code."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class Verb(Value):
    __slots__ = ("callback", "hidden", "name", "tool")

    def __init__(
        self, name: str, callback: Callable[..., Any], hidden: bool, tool: str | None
    ) -> None:
        self.name = name
        self.callback = callback
        self.hidden = hidden
        self.tool = tool  # the MCP tool's description, for a verb that is also a tool


class Verbs:
    """The verbs of one module, registered by ``@app.command()``."""

    def __init__(self) -> None:
        self.commands: dict[str, Verb] = {}

    def command(
        self, name: str | None = None, *, hidden: bool = False, tool: str | None = None
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a verb; ``tool``: it is also the MCP tool so described."""

        def register(func: Callable[..., Any]) -> Callable[..., Any]:
            verb = name or func.__name__
            self.commands[verb] = Verb(verb, func, hidden, tool)
            return func

        return register


# The annotations, as written, of what ``parse`` hands over as typed.
_PLAIN = frozenset({"str", "str | None", "bool", "list[str]", "list[str] | None"})


class Param(Value):
    __slots__ = ("declared", "default", "help", "kind", "name", "plain", "required", "tool")

    def __init__(
        self, name: str, kind: str, declared: OptionInfo | ArgumentInfo, plain: bool
    ) -> None:
        self.name = name
        self.kind = kind  # "flag", "value" (an option taking one), "one" or "many" (arguments)
        self.declared = declared  # its Option() or Argument(): names, metavar, completion
        self.required = declared.default is REQUIRED
        self.default = None if self.required else declared.default
        self.plain = plain  # text, a flag or a list of text: what ``parse`` hands over as typed
        self.help = declared.settings.get("help", "")
        self.tool = declared.tool


def params(func: Callable[..., Any]) -> list[Param]:
    """The parameters ``func`` declares, in order."""
    code = func.__code__
    names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    defaults = dict(zip(names[::-1], (func.__defaults__ or ())[::-1], strict=False))
    defaults.update(func.__kwdefaults__ or {})
    found = []
    for name in names:
        meta = defaults.get(name)
        written = func.__annotations__.get(name)
        if not isinstance(meta, OptionInfo | ArgumentInfo) or not isinstance(written, str):
            raise TypeError(
                f"{func.__qualname__}: declare {name!r} as `{name}: TYPE = Option(...)` or "
                "Argument(...), in a module with `from __future__ import annotations`"
            )
        union = [t.strip() for t in written.split("|")]
        if isinstance(meta, OptionInfo):
            kind = "flag" if union == ["bool"] else "value"
        else:
            kind = "many" if any(t.startswith("list[") for t in union) else "one"
        found.append(Param(name, kind, meta, " | ".join(union) in _PLAIN))
    return found


def parse(func: Callable[..., Any], args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments ``func`` gets from ``args``; None for anything this parser
    does not take on (help, an unknown option, a missing or extra argument, ``--x=`` of a
    flag): typer answers those, in its own words."""
    declared = params(func)
    if declared and not all(p.plain for p in declared):
        return None  # a number or a choice: converted and checked by click
    options = {n: p for p in declared for n in p.declared.names}
    positional = [p for p in declared if p.kind in ("one", "many")]
    if any(p.kind == "many" for p in positional[:-1]):
        return None  # a list before another argument: click's sharing-out, not ours
    values: dict[str, Any] = {}
    words: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            words += args[i:]
            break
        if not arg.startswith("-") or arg == "-":
            words.append(arg)
            continue
        name, eq, attached = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        p = options.get(name)
        if p is None:
            return None
        if p.kind == "flag":
            if eq:
                return None
            values[p.name] = True
        elif eq:
            values[p.name] = attached
        elif i < len(args):
            values[p.name] = args[i]  # the next word, whatever it looks like (as click)
            i += 1
        else:
            return None
    for p in positional:  # one left out: its default, or None below where it is required
        if p.kind == "many" and words:
            values[p.name], words = words, []
        elif p.kind == "one" and words:
            values[p.name] = words.pop(0)
    if words:
        return None
    for p in declared:
        if p.name not in values:
            if p.required:
                return None
            values[p.name] = p.default
    return values
