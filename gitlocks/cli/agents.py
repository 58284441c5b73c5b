"""The agent verbs: guard (also run through main's fast path), install-agent-hooks and
uninstall-agent-hooks."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from gitlocks.agents.harnesses import HARNESSES
from gitlocks.cli.common import JSON_OPTION, finish, reply, verbs
from gitlocks.cli.declare import Option
from gitlocks.core.text import printable
from gitlocks.errors import EXIT_OK, UsageError
from gitlocks.render.hooks import INSTALL_WORDS
from gitlocks.store.local import Store

if TYPE_CHECKING:
    from gitlocks.agents.settings import SettingsChange

app = verbs()

FOR_OPTION = Option("--for", help=f"The agent harness: {', '.join(HARNESSES)}.")
EVENT_OPTION = Option(
    "--event", default="", help="The event, for a harness whose events do not say (copilot)."
)
LOCAL_OPTION = Option(
    "--local",
    default=False,
    help="Claude Code: use .claude/settings.local.json (personal, not committed).",
)


def _harness(name: str) -> str:
    if name not in HARNESSES:
        raise UsageError(f"unknown harness {name!r}: the guard speaks {', '.join(HARNESSES)}")
    return name


@app.command()
def guard(harness: str = FOR_OPTION, event: str = EVENT_OPTION) -> None:
    """Answer one hook event of an agent harness (JSON on stdin): deny edits inside others'
    claims, claim the files the session edits (alock.guardMode claim|block|warn).

    Example: echo "$EVENT" | git alock guard --for claude
    """
    from gitlocks.agents.guard import main  # the same code as main's fast path

    finish(main(["--for", _harness(harness), *(["--event", event] if event else [])]))


def _say(change: SettingsChange, as_json: bool, what: str) -> None:
    text = printable(f"{INSTALL_WORDS[change.status]} {what} ({change.path})")
    reply(change.to_dict(), text, as_json)


@app.command("install-agent-hooks")
def install_agent_hooks(
    harness: str = FOR_OPTION, local: bool = LOCAL_OPTION, as_json: bool = JSON_OPTION
) -> None:
    """Register the guard in the harness's project settings, merged with what is there:
    .claude/settings.json, .gemini/settings.json, .codex/hooks.json or
    .github/hooks/gitlocks.json.

    Example: git alock install-agent-hooks --for claude
    """
    from pathlib import Path  # the installers' paths; pathlib is off the MCP server's start

    # Imported here: only the installers read and write settings files (the module loads
    # pathlib, which the MCP server's start, sharing this module, does without).
    from gitlocks.agents import settings

    name = _harness(harness)
    store = Store.discover()
    prefix, warning = settings.guard_prefix()
    root, git_dir = Path(store.root), Path(store.git_dir)
    change = settings.install(root, name, local=local, git_dir=git_dir, prefix=prefix)
    if warning:
        sys.stderr.write(f"warning: {printable(warning)}\n")
    _say(change, as_json, f"the gitlocks guard for {HARNESSES[name].title}")
    finish(EXIT_OK)


@app.command("uninstall-agent-hooks")
def uninstall_agent_hooks(
    harness: str = FOR_OPTION, local: bool = LOCAL_OPTION, as_json: bool = JSON_OPTION
) -> None:
    """Take the guard out of the harness's settings, leaving them as they were before.

    Example: git alock uninstall-agent-hooks --for claude
    """
    from pathlib import Path  # the installers' paths; pathlib is off the MCP server's start

    from gitlocks.agents import settings  # imported here: only the installers need it

    name = _harness(harness)
    store = Store.discover()
    root, git_dir = Path(store.root), Path(store.git_dir)
    change = settings.uninstall(root, name, local=local, git_dir=git_dir)
    _say(change, as_json, f"the gitlocks guard for {HARNESSES[name].title}")
    finish(EXIT_OK)


@app.command()
def mcp() -> None:
    """Serve the lock tools over MCP on stdio (acquire, release, renew, check, list,
    status, note, whoami), each answering the verb's --json document.

    Example: claude mcp add gitlocks -- git alock mcp
    """
    # Imported here: the server, and the verbs the tools are, only for this verb.
    from gitlocks.agents.mcp import serve
    from gitlocks.cli.tools import tools

    serve(Store.discover().root, tools())
    finish(EXIT_OK)
