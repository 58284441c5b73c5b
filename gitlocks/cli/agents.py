"""The agent verbs: guard (also run through main's fast path), install-agent-hooks,
uninstall-agent-hooks and doctor."""

from __future__ import annotations

import sys

from gitlocks.agents.harnesses import HARNESSES
from gitlocks.cli.common import JSON_OPTION, reply
from gitlocks.cli.declare import Exit, Option, Verbs
from gitlocks.core.text import printable
from gitlocks.errors import UsageError
from gitlocks.render.hooks import INSTALL_WORDS
from gitlocks.store.local import Store

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from gitlocks.agents.settings import SettingsChange

app = Verbs()

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


def _installable(name: str) -> str:
    if name == "vscode":
        raise UsageError(
            "VS Code's agent runs the hooks of .claude/settings.json and .github/hooks/: "
            "install them --for claude (or --for copilot)"
        )
    return _harness(name)


@app.command()
def guard(harness: str = FOR_OPTION, event: str = EVENT_OPTION) -> None:
    """Answer one hook event of an agent harness (JSON on stdin): deny edits inside others'
    claims, claim the files the session edits (alock.guardMode claim|block|warn).

    Example: echo "$EVENT" | git alock guard --for claude
    """
    from gitlocks.agents.guard import main  # the same code as main's fast path

    raise Exit(main(["--for", _harness(harness), *(["--event", event] if event else [])]))


@app.command("install-agent-hooks")
def install_agent_hooks(
    harness: str = FOR_OPTION, local: bool = LOCAL_OPTION, as_json: bool = JSON_OPTION
) -> None:
    """Register the guard in the harness's project settings, merged with what is there
    (.claude/settings.json, .gemini/settings.json, .codex/hooks.json,
    .github/hooks/gitlocks.json, .qwen/settings.json, .cursor/hooks.json,
    .windsurf/hooks.json), or as its hook file (.clinerules/hooks/PreToolUse,
    .opencode/plugins/gitlocks.js); then run it as the harness would, and say whether
    the harness's shell finds gitlocks.

    Example: git alock install-agent-hooks --for claude
    """
    import os  # the environment the harness's shell is run with
    from pathlib import Path  # the installers' paths; pathlib is off the MCP server's start

    # Imported here: only the installers read and write settings files (the module loads
    # pathlib, which the MCP server's start, sharing this module, does without).
    from gitlocks.agents import commands, doctor, settings
    from gitlocks.git.settings import write

    name = _installable(harness)
    store = Store.discover()
    root, git_dir = Path(store.root), Path(store.git_dir)
    change = settings.install(root, name, local=local, git_dir=git_dir)
    program, warning = commands.guard_program()
    if program is not None:  # this clone's git-alock, for a shell that finds none on PATH
        write(store.git_dir, commands.PROGRAM_KEY, program)
    if warning:
        sys.stderr.write(f"warning: {printable(warning)}\n")
    works, found = doctor.probe(name, root, os.environ)
    if not works:
        sys.stderr.write(f"warning: {printable(found)}\n")
    text = _said(change, name) + f"\nchecked: {printable(found)}"
    if name == "codex":
        text += (
            "\nCodex runs it only once you approve it in Codex's /hooks (and again after a "
            "change to it)"
        )
    reply({**change.to_dict(), "runs": works, "check": found}, text, as_json)


@app.command("uninstall-agent-hooks")
def uninstall_agent_hooks(
    harness: str = FOR_OPTION, local: bool = LOCAL_OPTION, as_json: bool = JSON_OPTION
) -> None:
    """Take the guard out of the harness's settings, leaving them as they were before.

    Example: git alock uninstall-agent-hooks --for claude
    """
    from pathlib import Path  # the installers' paths; pathlib is off the MCP server's start

    from gitlocks.agents import settings  # imported here: only the installers need it

    name = _installable(harness)
    store = Store.discover()
    change = settings.uninstall(Path(store.root), name, local=local, git_dir=Path(store.git_dir))
    reply(change.to_dict(), _said(change, name), as_json)


def _said(change: SettingsChange, name: str) -> str:
    what = f"the gitlocks guard for {HARNESSES[name].title}"
    return printable(f"{INSTALL_WORDS[change.status]} {what} ({change.path})")


@app.command()
def doctor(as_json: bool = JSON_OPTION) -> None:
    """Check every agent integration of this repository: run each installed hook as its
    harness runs it (its shell, its environment) on an edit of a path a stand-in holder
    claims, and say whether the edit would be denied; and the git hooks' interpreter,
    the lock remote and the guard's timeouts. Exit 0: all work; 1: some would let edits
    through; 2: the check could not run.

    Example: git alock doctor
    """
    # Imported here: only doctor runs the checks (and pathlib is off the MCP server's start).
    import os
    from pathlib import Path

    # The checks, and what they read: only doctor needs them.
    from gitlocks.agents import doctor as checks
    from gitlocks.errors import EXIT_ERROR, GitlocksError
    from gitlocks.hooks.install import hooks_dir
    from gitlocks.layout import (
        DEFAULT_GUARD_REMOTE_TIMEOUT_SECONDS,
        DEFAULT_REMOTE_TIMEOUT_SECONDS,
    )

    store = Store.discover()
    root = Path(store.root)
    holder = checks.standin_holder()
    env = {k: v for k, v in os.environ.items() if k not in ("AGENT_ID", "GITLOCKS_HOLDER")}
    held: list[str] = []

    def hold(path: str) -> None:
        args = ("acquire", path, "-m", checks.STAND_IN_REASON, "--ttl", "10m")
        code, said = checks.as_holder(holder, store.root, env, *args)
        if code != 0:
            raise GitlocksError(f"the stand-in holder could not claim {path}: {said}")
        held.append(path)

    report = checks.Report()
    settings_read = store.settings
    report.timeouts = {
        key: settings_read.get(key) or f"{default}s (default)"
        for key, default in (
            ("alock.guardRemoteTimeout", DEFAULT_GUARD_REMOTE_TIMEOUT_SECONDS),
            ("alock.remoteTimeout", DEFAULT_REMOTE_TIMEOUT_SECONDS),
        )
    }
    try:
        checks.check_harnesses(root, env, hold, report)
    except GitlocksError as exc:
        sys.stderr.write(f"error: {printable(str(exc))}\n")
        raise Exit(EXIT_ERROR) from None
    finally:
        for path in held:  # the stand-in's claim, and any a guard made on it
            for verb in ("release", "break"):
                checks.as_holder(holder, store.root, env, verb, path)
    report.git_hooks = checks.git_hooks_report(hooks_dir(store.root))
    if report.git_hooks.get("installed") and report.git_hooks.get("works") is False:
        report.problems.append("the git hooks' interpreter does not import gitlocks")
    remote = settings_read.get("alock.remote") or ""
    try:
        wait = float(settings_read.duration("alock.remoteTimeout", DEFAULT_REMOTE_TIMEOUT_SECONDS))
    except GitlocksError:
        wait = float(DEFAULT_REMOTE_TIMEOUT_SECONDS)
    report.remote = checks.remote_report(root, remote, wait)
    if remote and not report.remote.get("reachable"):
        report.problems.append(f"the lock remote {remote} does not answer")
    reply(report.to_dict(), checks.render(report), as_json)
    raise Exit(report.code())


@app.command()
def mcp() -> None:
    """Serve the lock tools over MCP on stdio (acquire, release, renew, check, list,
    status, note, resume, break, log, whoami), each answering the verb's --json document.

    Example: claude mcp add gitlocks -- git alock mcp
    """
    # Imported here: the server, and the verbs the tools are, only for this verb.
    from gitlocks.agents.mcp import serve
    from gitlocks.cli.tools import tools

    serve(Store.discover().root, tools())
