"""The command every agent hook runs, and the hook files that are ours alone.

Each harness runs its hook command in its own shell (docs/agents.md), and committed
settings run on every teammate's machine: so every hook runs one POSIX script, by ``sh``,
that finds git-alock on PATH or by ``alock.guardProgram``, else says so and exits 0.
Cline's hook is a script file and OpenCode's a plugin, both ours alone (``SCRIPT_FILES``).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

# How a hook named the guard before issue 38 (or this interpreter by its path): both exit
# 127 where the harness's shell does not find them, a denial of every edit for some.
GIT_PREFIX = "git alock"
# The git setting naming this clone's git-alock, for a hook whose shell finds none on PATH.
PROGRAM_KEY = "alock.guardProgram"
NOT_FOUND = (
    "gitlocks: git-alock is not on this PATH and alock.guardProgram names none: "
    "edits are not guarded (git alock doctor)"
)
BROKEN = (
    "gitlocks: the git-alock found could not run (exit $c): edits are not guarded "
    "(git alock doctor)"
)


def guard_script(harness: str, event: str = "") -> str:
    """The POSIX script a hook runs: ``git alock guard`` where the harness's shell finds
    git-alock on PATH; else the one ``alock.guardProgram`` names (install sets it); else one
    line on stderr and exit 0, every harness's "go on" (docs/agents.md)."""
    args = f"guard --for {harness}" + (f" --event {event}" if event else "")
    # Not exec'd: a program found that cannot run (a directory, a script whose interpreter
    # is gone, a git-alock git cannot start) exits 126, 127 or 128, a denial of every edit
    # for Gemini CLI and Copilot CLI. The guard's own answers are 0, 1 and 2.
    return (
        "if command -v git >/dev/null 2>&1 && command -v git-alock >/dev/null 2>&1; "
        f"then git alock {args}; "
        f"else p=$(git config --get {PROGRAM_KEY} 2>/dev/null); "
        f'if [ -f "$p" ] && [ -x "$p" ]; then "$p" {args}; '
        f'else echo "{NOT_FOUND}" >&2; exit 0; fi; fi; '
        'c=$?; [ "$c" -le 2 ] && exit "$c"; '
        f'echo "{BROKEN}" >&2; exit 0'
    )


def guard_command(harness: str, event: str = "") -> str:
    """The hook's command line: the script, run by ``sh`` whatever the harness's shell (it
    may be fish); committed settings name no path of the machine they were installed on."""
    return f"sh -c '{guard_script(harness, event)}'"


def guard_program() -> tuple[str | None, str | None]:
    """This installation's git-alock (for ``alock.guardProgram``), or a warning."""
    import sysconfig  # only install asks

    beside = os.path.join(sysconfig.get_path("scripts"), "git-alock")
    for found in (beside, shutil.which("git-alock")):
        if found and os.access(found, os.X_OK):
            return os.path.abspath(found), None
    return None, (
        "no git-alock program beside this interpreter nor on PATH: a hook whose shell "
        "does not find git-alock on its PATH lets every edit through unguarded"
    )


def _cline_hook() -> str:
    return (
        "#!/bin/sh\n"
        "# The gitlocks guard for Cline (git alock install-agent-hooks --for cline): Cline\n"
        "# runs this file before every tool call, the call as JSON on stdin.\n"
        f"{guard_script('cline')}\n"
    )


def _opencode_plugin() -> str:
    script = json.dumps(guard_script("opencode"))
    return f"""// The gitlocks guard for OpenCode (git alock install-agent-hooks --for opencode).
// Before every tool call the guard judges it as it does for the other harnesses' hooks:
// exit 2 denies it, the reason on stderr; anything else lets it go on.
import {{ spawn }} from "node:child_process";

const GUARD = {script};

function guard(directory, event) {{
  return new Promise((resolve) => {{
    let stderr = "";
    let child;
    try {{
      child = spawn("sh", ["-c", GUARD], {{ cwd: directory, stdio: ["pipe", "pipe", "pipe"] }});
    }} catch {{
      resolve({{ code: 0, stderr }});
      return;
    }}
    child.stdout.resume();
    child.stderr.on("data", (chunk) => {{ stderr += chunk; }});
    child.on("error", () => resolve({{ code: 0, stderr }}));
    child.on("close", (code) => resolve({{ code, stderr }}));
    child.stdin.on("error", () => {{}});
    child.stdin.end(JSON.stringify(event));
  }});
}}

export const GitlocksGuard = async ({{ directory }}) => ({{
  "tool.execute.before": async (input, output) => {{
    const got = await guard(directory, {{
      hook_event_name: "PreToolUse",
      session_id: input.sessionID,
      cwd: directory,
      tool_name: input.tool,
      tool_input: output.args,
    }});
    if (got.code === 2) throw new Error(got.stderr.trim() || "gitlocks: denied");
  }},
  event: async ({{ event }}) => {{
    // An idle session finished a turn: its claims are renewed, as at other harnesses' Stop.
    if (event.type === "session.idle") {{
      await guard(directory, {{ hook_event_name: "Stop", cwd: directory }});
    }}
  }},
}});
"""


@dataclass(frozen=True)
class ScriptFile:
    """A harness's hook file of its own, all ours (Cline's script, OpenCode's plugin)."""

    path: str
    text: str
    mode: int


SCRIPT_FILES = {
    "cline": ScriptFile(".clinerules/hooks/PreToolUse", _cline_hook(), 0o755),
    "opencode": ScriptFile(".opencode/plugins/gitlocks.js", _opencode_plugin(), 0o644),
}


def _command(harness: str, prefix: str = "", event: str = "") -> dict[str, Any]:
    more = f" --event {event}" if event else ""
    old = f"{prefix} guard --for {harness}{more}"  # an older install's command
    return {"type": "command", "command": old if prefix else guard_command(harness, event)}


def _groups(
    command: dict[str, Any], matched: tuple[str, str], *events: str, end: int | None = None
) -> dict[str, Any]:
    """One group per event, of Claude Code's shape: ``matched`` (the edit event) with its
    matcher, the others without; SessionEnd's command with the timeout ``end``."""
    groups = {matched[0]: {"matcher": matched[1], "hooks": [command]}}
    for event in events:
        timeout = {"timeout": end} if event == "SessionEnd" and end is not None else {}
        groups[event] = {"hooks": [{**command, **timeout}]}
    return groups


@dataclass(frozen=True)
class HookFile:
    """Where a harness keeps its project hooks, and the one entry install adds per event."""

    path: str  # from the top of the working tree
    local: str | None  # the personal file, for --local (Claude Code's only)
    entries: Mapping[str, Any]  # event -> our entry; only an entry equal to it is ours
    skeleton: Mapping[str, Any] = field(default_factory=dict)  # what a new file starts with


# Claude Code's matcher names tools exactly (letters, digits, "_" and "|"); Copilot CLI
# runs this file too, matching its own tool names (anchored), and Cursor its own. VS Code
# ignores matchers: the guard answers its other tools with silence.
CLAUDE_MATCHER = (
    "Edit|Write|MultiEdit|NotebookEdit"  # Claude Code
    "|edit|create|str_replace|str_replace_editor|apply_patch"  # Copilot
    "|Delete|StrReplace|ApplyPatch"  # Cursor
)
# Claude Code gives every SessionEnd hook 1.5 s in all unless one sets a timeout (seconds,
# up to 60): a release pushed to a lock remote takes longer.
CLAUDE_END_TIMEOUT = 30
# Codex clamps SessionEnd hooks to 3 s whatever they ask (more earns a startup warning).
CODEX_END_TIMEOUT = 3


def hook_files_for(prefix: str = "") -> dict[str, HookFile]:
    """Each harness's hook file and our entries; ``prefix``: as an older install wrote
    them (``git alock``, or an interpreter's ``-m gitlocks``), for uninstall to know."""
    legacy = bool(prefix)
    files = {
        "claude": HookFile(
            ".claude/settings.json",
            ".claude/settings.local.json",
            _groups(
                _command("claude", prefix),
                ("PreToolUse", "Edit|Write|MultiEdit|NotebookEdit" if legacy else CLAUDE_MATCHER),
                *("SessionStart", "SessionEnd", "Stop"),
                # A sub-agent's end hands its claims to its session (docs/design.md §6.5).
                *(() if legacy else ("SubagentStop",)),
                end=None if legacy else CLAUDE_END_TIMEOUT,
            ),
        ),
        # A name lets `/hooks disable gitlocks-guard` switch the guard off (docs/hooks/index.md).
        # Its matcher is an unanchored regex: anchored, it fires for these two tools only.
        "gemini": HookFile(
            ".gemini/settings.json",
            None,
            _groups(
                {"name": "gitlocks-guard", **_command("gemini", prefix)},
                ("BeforeTool", "write_file|replace" if legacy else "^(write_file|replace)$"),
                *("SessionStart", "SessionEnd", "AfterAgent"),
            ),
        ),
        # Codex runs apply_patch given to its shell tool too ("Bash"): the guard reads every
        # shell command, and answers those that apply no patch with silence.
        "codex": HookFile(
            ".codex/hooks.json",
            None,
            _groups(
                _command("codex", prefix),
                ("PreToolUse", "apply_patch|Bash" if legacy else "^(apply_patch|Bash)$"),
                *(("SessionStart", "Stop") if legacy else ("SessionStart", "SessionEnd", "Stop")),
                end=None if legacy else CODEX_END_TIMEOUT,
            ),
        ),
        # Copilot's events do not say which they are: each command names its own.
        "copilot": HookFile(
            ".github/hooks/gitlocks.json",
            None,
            {
                event: {"type": "command", "bash": _command("copilot", prefix, event)["command"]}
                for event in ("sessionStart", "preToolUse", "agentStop", "sessionEnd")
            },
            skeleton={"version": 1},
        ),
    }
    if legacy:
        return files
    files.update(
        {
            # Qwen Code: Claude's event names, Gemini's unanchored regex matcher.
            "qwen": HookFile(
                ".qwen/settings.json",
                None,
                _groups(
                    _command("qwen"),
                    ("PreToolUse", "^(write_file|edit)$"),
                    *("SessionStart", "SessionEnd", "Stop"),
                ),
            ),
            # Cursor: no matcher (its tool names are not all documented); no sessionEnd:
            # one Cursor process runs many conversations, whose ends end no claim.
            "cursor": HookFile(
                ".cursor/hooks.json",
                None,
                {event: {"command": guard_command("cursor")} for event in ("preToolUse", "stop")},
                skeleton={"version": 1},
            ),
            # Windsurf: pre_write_code names the file; it has no session events.
            "windsurf": HookFile(
                ".windsurf/hooks.json",
                None,
                {"pre_write_code": {"command": guard_command("windsurf")}},
            ),
        }
    )
    return files


HOOK_FILES = hook_files_for()
