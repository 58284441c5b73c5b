"""The ``git alock`` command line: a table of verbs, each module imported only when run.

A command line the small parser of ``gitlocks.cli.declare`` takes runs without typer, which
answers the rest (help, usage errors, completion) from the same declaration.
"""

from __future__ import annotations

import importlib
import os
import sys

from gitlocks.cli import declare
from gitlocks.errors import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, UsageError

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any

# verb -> (module under gitlocks.cli, one line of help); "" help: hidden.
VERBS: dict[str, tuple[str, str]] = {
    "acquire": ("claims", "Claim PATTERN..., all or none."),
    "release": ("claims", "Give back PATTERN... of your locks, or --all of them."),
    "renew": ("claims", "Extend your locks' expiry from now (all of yours without PATTERN)."),
    "list": ("reading", "Show the lock table; your locks are marked with *."),
    "ls": ("reading", ""),
    "check": ("reading", "Say FREE, YOURS or HELD for each PATH, or each staged path."),
    "note": ("claims", "Append a progress note to your lock on PATTERN."),
    "break": ("claims", "Forcibly release locks by ID, or every lock crossing PATTERN."),
    "resume": ("claims", "Take over INTERRUPTED WORK (a dead holder's lock) with its notes."),
    "status": ("history", "Your locks, others', and uncommitted edits outside your claims."),
    "log": ("history", "Show the journal of lock events, newest first."),
    "watch": ("history", "Follow the journal live, one line per event, until Ctrl-C."),
    "ui": ("ui", "Serve a live page of claims, holders, edits and the journal on 127.0.0.1."),
    "whoami": ("info", "Show your agent id and parent, and where each came from."),
    "remote": ("remote", "Show, check or switch remote mode (locks decided on a git remote)."),
    "sync": ("remote", "Refresh the lock remote's view; release your claims whose work landed."),
    "install-hooks": ("hooks", "Install the commit hooks (and pre-push with --pre-push)."),
    "guard": ("agents", "Answer an agent harness's hook event: deny or claim before an edit."),
    "install-agent-hooks": ("agents", "Register the guard in an agent harness's settings."),
    "uninstall-agent-hooks": ("agents", "Take the guard out of an agent harness's settings."),
    "mcp": ("agents", "Serve the lock tools over MCP on stdio."),
    "doctor": ("agents", "Check that each installed agent hook really denies a held edit."),
    "uninstall-hooks": ("hooks", "Remove the bundled hooks and restore any chained hook."),
    "verify": ("hooks", "Report commits in RANGE that changed paths in others' live claims."),
    "install-remote-hook": ("hooks", "Make a hosted repo refuse pushes into others' claims."),
    "skill": ("info", "Install or show the instructions that teach a coding agent git alock."),
    "version": ("info", "Show the version."),
    "completion": ("info", "Print the shell completion script: bash, zsh or fish."),
}

COMPLETE_VAR = "_GIT_ALOCK_COMPLETE"  # set by the completion script when it asks

HELP_OPTIONS = ("-h", "--help")
HINT = "hint: git alock -h lists the verbs; git alock VERB -h shows a verb's options"


def usage() -> str:
    """The top-level help, from the verb table alone."""
    width = max(len(verb) for verb in VERBS) + 2
    rows = "\n".join(f"  {verb:<{width}}{text}" for verb, (_, text) in VERBS.items() if text)
    return f"""usage: git alock VERB [OPTIONS] [ARGS]...

Advisory path locks for coding agents sharing one git repository.

Claim a region before editing it; others who try to claim an overlapping
region are refused and told who holds what.

Example: git alock acquire 'src/api/**' -m 'rewrite auth'

Verbs:
{rows}

git alock VERB -h shows a verb's options and an example.
"""


def run(args: list[str]) -> int:
    """Run one command line; return its exit code. ``GitlocksError`` propagates."""
    args = _as_after_verb(args)
    # As in git, ``help`` alone lists the verbs, and ``help VERB`` is ``VERB -h``.
    if not args or args[0] in HELP_OPTIONS or args == ["help"]:
        sys.stdout.write(usage())
        if args:
            return EXIT_OK
        sys.stderr.write("error: name a verb, e.g. git alock acquire PATTERN\n")
        return EXIT_ERROR
    verb = args[0]
    if verb == "help":
        if args[1] in VERBS:
            return _run_verb(args[1], ["-h"])
        if args[1] == "--as" or args[1].startswith("--as="):
            raise UsageError(f"help acts for no agent, so it takes no --as\n{HINT}")
        verb = args[1]
    if verb not in VERBS:
        if verb.startswith("-"):
            raise UsageError(f"No such option: {verb}\n{HINT}")
        import difflib  # only for a verb mistyped

        close = difflib.get_close_matches(verb, [v for v, (_, t) in VERBS.items() if t], n=1)
        maybe = f" Did you mean '{close[0]}'?" if close else ""
        raise UsageError(f"No such command '{verb}'.{maybe}\n{HINT}")
    return _run_verb(verb, args[1:])


def verb_module(verb: str) -> Any:
    """The module that declares ``verb``, imported now."""
    return importlib.import_module(f"gitlocks.cli.{VERBS[verb][0]}")


def _as_after_verb(args: list[str]) -> list[str]:
    """``git alock --as ID VERB ...`` as ``git alock VERB --as ID ...`` (``git -c`` style)."""
    moved: list[str] = []
    while args and (args[0] == "--as" or args[0].startswith("--as=")):
        taken = 2 if args[0] == "--as" else 1
        if len(args) < taken:
            raise UsageError("--as needs an agent id, e.g. git alock --as NAME acquire PATTERN")
        moved += args[:taken]
        args = args[taken:]
    if not moved:
        return args
    if not args or args[0].startswith("-"):
        raise UsageError("name a verb after --as, e.g. git alock --as NAME acquire PATTERN")
    return [args[0], *moved, *args[1:]]


def _run_verb(verb: str, args: list[str]) -> int:
    module = verb_module(verb)
    optional = getattr(module, "OPTIONAL_VALUES", {})
    args = _fill_optional_values(args, optional)
    callback = module.app.commands[verb].callback
    values = declare.parse(callback, args)
    if values is not None:  # a command line typed right: no framework to import
        try:
            callback(**values)
        except declare.Exit as exc:
            return exc.code
        except (EOFError, KeyboardInterrupt):
            sys.stderr.write("\n")  # as click says it, below
            return EXIT_INTERRUPTED
        return EXIT_OK
    import re  # only where typer answers: its usage errors

    import typer  # help, usage errors and completion: the framework's own words

    command = _command(module.app, verb, typer)
    try:
        rv = command.main(args=args, prog_name=f"git alock {verb}", standalone_mode=False)
    except declare.Exit as exc:
        return exc.code
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.Abort:
        return EXIT_INTERRUPTED
    except typer.exceptions.TyperException as exc:  # click's usage errors
        said = exc.format_message()
        if re.match(r"No such option: --as(?![\w-])", said):  # before the verb or after
            said = f"{verb} acts for no agent, so it takes no --as"
        hint = _took_as_value(verb, said, args, optional) or HINT
        raise UsageError(f"{said}\n{hint}") from None
    return rv if isinstance(rv, int) else EXIT_OK


def _took_as_value(verb: str, said: str, args: list[str], optional: dict[str, str]) -> str | None:
    """For a missing argument: the hint that an option whose value may be left out took a
    path or pattern after it as its value (``acquire --until-merged 'src/**'``)."""
    if not said.startswith("Missing argument"):
        return None
    for i, arg in enumerate(args[:-1]):
        word = args[i + 1]
        if arg in optional and word != optional[arg]:
            what = "duration" if arg == "--wait" else "branch"
            if not any(c in word for c in "*?[") and not os.path.lexists(word):
                return None  # a branch, it seems: the pattern is what is missing
            from gitlocks.core.text import shell_word  # only for this hint

            rest = [shell_word(a) for j, a in enumerate(args) if j not in (i, i + 1)]
            return (
                f"hint: {arg} took {shell_word(word)} as its {what}; put it after the patterns "
                f"(git alock {verb} {' '.join([*rest, shell_word(word), arg])}) or name the "
                f"{what} ({arg} {what.upper()} {shell_word(word)})"
            )
    return None


# Options of any verb that take a value: the word after one is that value, never an option.
VALUE_OPTIONS = ("-m", "--reason", "--ttl", "--as", "--until-merged", "--wait", "--interval", "-n")


def _fill_optional_values(args: list[str], defaults: dict[str, str]) -> list[str]:
    """An option whose value may be left out (``--until-merged [BRANCH]``): given last, or
    followed by another option, it gets its default, which click cannot do for typer."""
    filled: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return filled + args[i:]
        filled.append(arg)
        following = args[i + 1] if i + 1 < len(args) else None
        if arg in defaults and (
            following is None or (following.startswith("-") and following != "-")
        ):
            filled.append(defaults[arg])
        elif arg in VALUE_OPTIONS and following is not None:
            filled.append(following)  # its value, whatever it looks like
            i += 1
        i += 1
    return filled


def verb_callback(verb: str) -> Any:
    """The function of ``verb``, or None for a word that is no verb."""
    return verb_module(verb).app.commands[verb].callback if verb in VERBS else None


def everything() -> Any:
    """One click group of every verb, for shell completion only."""
    # The framework, for a shell's request only.
    import click
    import typer

    group = click.Group("git-alock")
    for verb, (_, text) in VERBS.items():
        command = _command(verb_module(verb).app, verb, typer)
        command.hidden = not text
        group.add_command(command, verb)
    return group


def _command(app: declare.Verbs, verb: str, typer: Any) -> Any:
    """The click command of ``verb`` alone: converting only the verb run saves time."""
    found = app.commands[verb]
    single = typer.Typer(
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": list(HELP_OPTIONS)},
    )
    single.command(verb, hidden=found.hidden)(_for_typer(found.callback, typer))
    command = typer.main.get_command(single)
    for param in command.params:
        if param.param_type_name == "argument" and param.metavar:
            # As the manual writes it (PATTERN...): typer would brace a required one.
            param.make_metavar = lambda *_, _shown=param.metavar, **__: _shown
    return command


def _for_typer(func: Any, typer: Any) -> Any:
    """``func`` with its declared options and arguments as typer's: each parameter's type
    evaluated, its declaration as typer's ``Annotated`` metadata, its default its own."""
    import functools  # typer imports it anyway
    import inspect  # typer reads signatures anyway: no cost of ours
    import typing  # typer imports it anyway

    hints = typing.get_type_hints(func)
    signature = inspect.signature(func)
    converted = []
    for p in signature.parameters.values():
        meta = p.default
        option = isinstance(meta, declare.OptionInfo)
        typed = (
            typer.Option(*meta.names, **meta.settings)
            if option
            else typer.Argument(**meta.settings)
        )
        default = p.empty if meta.default is declare.REQUIRED else meta.default
        annotation = typing.Annotated.__class_getitem__((hints[p.name], typed))  # type: ignore[attr-defined]
        converted.append(p.replace(annotation=annotation, default=default))

    @functools.wraps(func)
    def command(**values: Any) -> Any:
        return func(**values)

    command.__signature__ = signature.replace(parameters=converted)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in converted}
    return command
