"""What every verb module shares: the common options and how results are written (no
framework: ``version``, ``whoami`` and ``skill`` use it without the store)."""

from __future__ import annotations

import os
import sys

from gitlocks.cli.declare import NOT_IN_TOOL, Option
from gitlocks.core import strictjson
from gitlocks.errors import UsageError

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any

# The options many verbs share, with their defaults (``as_id: str | None = AS_OPTION``).
# An MCP tool acts for the server's holder only: it is named as the server starts.
AS_OPTION = Option(
    "--as",
    default=None,
    help="Act as this agent id (default: $AGENT_ID, else the session).",
    tool=NOT_IN_TOOL,
)
# A tool's result is always the JSON document.
JSON_OPTION = Option("--json", default=False, help="Print one JSON document.", tool=NOT_IN_TOOL)
FRESH_OPTION = Option(
    "--fresh",
    default=False,
    help="In remote mode, fetch the lock remote's state first.",
    tool=NOT_IN_TOOL,
)
TTL_OPTION = Option(
    "--ttl", default=None, help="Lifetime: 90, 90s, 15m, 2h, 1d (default: alock.ttl or 30m)."
)


def out(text: str) -> None:
    """A human reply on stdout (nothing for an empty one)."""
    if text:
        _write(text + "\n", text)


def dump_json(data: Any, said: str = "") -> None:
    """The one JSON document a ``--json`` verb prints (``said``: the same answer as text)."""
    _write(json_text(data, indent=2) + "\n", said)


def json_text(data: Any, *, indent: int | None = None, sort_keys: bool = False) -> str:
    """``data`` as strict JSON (a NaN or infinity as null), not ASCII only unless a string
    holds an unpaired surrogate (a hostile journal event's), which no UTF-8 can carry."""
    text = strictjson.dumps_finite(data, ensure_ascii=False, indent=indent, sort_keys=sort_keys)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return strictjson.dumps_finite(data, indent=indent, sort_keys=sort_keys)
    return text


def _write(document: str, said: str) -> None:
    """Write and flush the answer. A reader that went away (``| head``) is no error; a
    stdout that cannot take it (a full disk) is, and says what was done all the same."""
    try:
        sys.stdout.write(document)
        sys.stdout.flush()
    except BrokenPipeError:
        # Nobody reads the rest: stop writing, as git does, and keep the verb's exit code.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
    except OSError as exc:
        first = f": {said.splitlines()[0]}" if said else ""
        raise UsageError(
            f"cannot write the answer to standard output ({exc.strerror or exc}); "
            f"the command itself ran{first}"
        ) from None


def reply(data: Any, text: str, as_json: bool) -> None:
    """The verb's answer: ``data`` as JSON with ``--json``, else ``text``."""
    if as_json:
        dump_json(data, text)
    else:
        out(text)
