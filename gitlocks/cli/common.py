"""What every verb module shares: the common options and how results are written.

Imports only typer: ``version``, ``whoami`` and ``skill`` use it without the store.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any, NoReturn

import typer

AsOption = Annotated[
    str | None,
    typer.Option("--as", help="Act as this agent id (default: $AGENT_ID, else the session)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document.")]
FreshOption = Annotated[
    bool, typer.Option("--fresh", help="In remote mode, fetch the lock remote's state first.")
]
TtlOption = Annotated[
    str | None,
    typer.Option("--ttl", help="Lifetime: 90, 90s, 15m, 2h, 1d (default: alock.ttl or 30m)."),
]


def verbs() -> typer.Typer:
    """The typer app a verb module registers its verbs on."""
    return typer.Typer(
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )


def out(text: str) -> None:
    """A human reply on stdout (nothing for an empty one)."""
    if text:
        sys.stdout.write(text + "\n")


def dump_json(data: Any) -> None:
    """The one JSON document a ``--json`` verb prints."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def reply(data: Any, text: str, as_json: bool) -> None:
    """The verb's answer: ``data`` as JSON with ``--json``, else ``text``."""
    if as_json:
        dump_json(data)
    else:
        out(text)


def finish(code: int) -> NoReturn:
    """End the verb with ``code`` (the command line returns it as the exit code)."""
    raise typer.Exit(code)
