"""What every command-line module shares: the common options and how results are written.

Kept apart from ``gitlocks.cli.locks`` because the feature modules are imported by it.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

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


def out(text: str) -> None:
    """A human reply on stdout (nothing for an empty one)."""
    if text:
        sys.stdout.write(text + "\n")


def dump_json(data: Any) -> None:
    """The one JSON document a ``--json`` verb prints."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
