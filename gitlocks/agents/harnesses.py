"""The coding-agent harnesses the guard speaks: each one's hook event, read into the guard's
``Event``, and its answers, written in its own format.

One core decides (``gitlocks.agents.guard``); each harness only differs in the words. Every
format here is the harness's documented one, or its own source's (docs/agents.md names
the source of each): Claude Code, Gemini CLI, Codex CLI and GitHub Copilot CLI. Cursor is
not here: its documentation does not say where its editing tools name their file before
an edit. Nothing here touches git or the disk; a malformed event raises ``Pass``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeAlias

from gitlocks.agents.edits import Candidates

EXIT_ALLOW, EXIT_PASS, EXIT_DENY = 0, 1, 2


class Pass(Exception):
    """Let the call through, saying why on stderr (exit 1): never in the way by accident."""


class Event(NamedTuple):
    """One harness event, as the guard needs it."""

    kind: str  # "edit", "start", "end", "stop", "other" or "ignore" (not ours: say nothing)
    session_id: str
    cwd: str
    tool: str = ""
    paths: tuple[str, ...] = ()  # the files an edit writes, as the event names them
    # False: the paths are candidates (a patch that may run in one directory or another):
    # each is judged, none claimed.
    claimable: bool = True


class Answer(NamedTuple):
    """What the harness gets back."""

    code: int = EXIT_ALLOW
    stdout: str = ""
    stderr: str = ""


# An editing tool -> the files one call of it writes, from its input (None: it names none).
Paths: TypeAlias = Callable[[Any], tuple[str, ...] | None]


class Fields(NamedTuple):
    """Where a harness's event says what: its keys, and which events and tools matter."""

    event: str  # the key naming the event ("": the hook's command line names it)
    session: str
    tool: str
    tool_input: str
    edit_event: str  # the event before a tool runs
    kinds: Mapping[str, str]  # the other events the guard answers -> start, end or stop
    tools: Mapping[str, Paths]  # editing tool -> its files
    others: str = "other"  # another tool: "other" (let through, said) or "ignore" (silent)
    # Tools that edit only sometimes (a shell applying a patch): a call naming no file is
    # no edit, answered with silence.
    quiet: frozenset[str] = frozenset()


class Harness(NamedTuple):
    """One harness: how its events read, and how each answer is written on stdout."""

    name: str
    title: str
    fields: Fields
    deny: Callable[[str], str]
    warn: Callable[[str], str | None]  # None: no way to tell the agent; stderr only
    context: Callable[[str], str]  # the session-start text


def _key(name: str) -> Paths:
    def paths(tool_input: Any) -> tuple[str, ...] | None:
        found = tool_input.get(name) if isinstance(tool_input, dict) else None
        return (found,) if isinstance(found, str) and found else None

    return paths


def _json_args(name: str) -> Paths:
    """Copilot CLI's ``toolArgs``: documented as a JSON string, read as an object too."""
    inner = _key(name)

    def paths(tool_args: Any) -> tuple[str, ...] | None:
        if isinstance(tool_args, str):
            try:
                tool_args = json.loads(tool_args)
            except (ValueError, RecursionError):
                return None
        return inner(tool_args)

    return paths


def _load(raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise Pass(f"the hook event is not JSON ({exc.__class__.__name__})") from None
    if not isinstance(data, dict):
        raise Pass("the hook event is not a JSON object")
    return data


def malformed(text: str) -> bool:
    """A NUL or a lone surrogate: JSON can carry them, no file name holds them."""
    return "\0" in text or any("\ud800" <= c <= "\udfff" for c in text)


def parse(harness: Harness, raw: bytes, named: str = "") -> Event:
    """``raw`` (one hook event) as an ``Event``; ``named``: the event, when the hook's own
    command line names it (Copilot CLI's events do not say which they are)."""
    f = harness.fields
    data = _load(raw)
    name = data.get(f.event) if f.event else named
    session = data.get(f.session)
    cwd = data.get("cwd")
    if not isinstance(name, str) or not name or not isinstance(session, str) or not session:
        what = f.event or "--event on the hook's command line"
        raise Pass(f"the hook event has no {what} or {f.session}")
    if not isinstance(cwd, str) or not cwd:
        cwd = os.getcwd()
    elif malformed(cwd):
        raise Pass("malformed input: cwd holds a NUL or an unpaired surrogate")
    if name != f.edit_event:
        return Event(f.kinds.get(name, "other"), session, cwd)
    tool = data.get(f.tool)
    paths_of = f.tools.get(tool) if isinstance(tool, str) else None
    if paths_of is None:
        return Event(f.others, session, cwd, tool=str(tool))
    paths = paths_of(data.get(f.tool_input))
    if not paths and tool in f.quiet:
        return Event("ignore", session, cwd, tool=str(tool))
    if not paths:
        raise Pass(f"{tool} names no file in its {f.tool_input}")
    if any(malformed(p) for p in paths):
        raise Pass(f"malformed input: a file named by {tool} holds a NUL or an unpaired surrogate")
    claimable = not isinstance(paths, Candidates)
    return Event("edit", session, cwd, str(tool), tuple(paths), claimable)


# --- answers ---------------------------------------------------------------------------


def _specific(event: str, **fields: str) -> str:
    """Claude Code's (and Codex's) ``hookSpecificOutput`` answer."""
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, **fields}})


def _claude_deny(reason: str) -> str:
    return _specific("PreToolUse", permissionDecision="deny", permissionDecisionReason=reason)


def _claude_warn(reason: str) -> str:
    return _specific("PreToolUse", additionalContext=reason)


def _start_context(text: str) -> str:
    return _specific("SessionStart", additionalContext=text)


def _fields(edit_event: str, kinds: Mapping[str, str], tools: Mapping[str, Paths],
            quiet: frozenset[str] = frozenset()) -> Fields:  # fmt: skip
    """The fields of a harness whose events are Claude Code's shape."""
    return Fields("hook_event_name", "session_id", "tool_name", "tool_input", edit_event,
                  kinds, tools, quiet=quiet)  # fmt: skip


# Claude Code: code.claude.com/docs/en/hooks. Its editing tools, and where each names its file.
CLAUDE = Harness(
    name="claude",
    title="Claude Code",
    fields=_fields(
        "PreToolUse",
        {"SessionStart": "start", "SessionEnd": "end", "Stop": "stop"},
        {
            "Edit": _key("file_path"),
            "Write": _key("file_path"),
            "MultiEdit": _key("file_path"),
            "NotebookEdit": _key("notebook_path"),
        },
    ),
    deny=_claude_deny,
    warn=_claude_warn,
    context=_start_context,
)

# Gemini CLI: google-gemini/gemini-cli docs/hooks/reference.md and docs/tools/file-system.md.
# BeforeTool has no documented channel to the agent short of a denial: a warning goes to
# the user (systemMessage).
GEMINI = Harness(
    name="gemini",
    title="Gemini CLI",
    fields=_fields(
        "BeforeTool",
        {"SessionStart": "start", "SessionEnd": "end", "AfterAgent": "stop"},
        {"write_file": _key("file_path"), "replace": _key("file_path")},
    ),
    deny=lambda reason: json.dumps({"decision": "deny", "reason": reason}),
    warn=lambda reason: json.dumps({"systemMessage": reason}),
    context=_start_context,
)


def _patch_paths(tool_input: Any) -> tuple[str, ...] | None:
    # Codex's patch reader, loaded for a patch only: the guard runs before every edit, and
    # most harnesses' edits name their file plainly (docs/design.md §9.14).
    from gitlocks.agents.codex_patch import patch_paths

    return patch_paths(tool_input)


def _shell_patch_paths(tool_input: Any) -> tuple[str, ...] | None:
    # Codex's patch reader, loaded for a shell command only (as above).
    from gitlocks.agents.codex_patch import shell_patch_paths

    return shell_patch_paths(tool_input)


# Codex CLI: openai/codex codex-rs/hooks (schema/generated/*.json, src/events/pre_tool_use.rs);
# edits go through apply_patch, its tool_input {"command": <patch>}, or through its shell
# tool ("Bash", {"command": <script>}) running apply_patch (``gitlocks.agents.codex_patch``
# reads both). Codex has no SessionEnd.
CODEX = Harness(
    name="codex",
    title="Codex CLI",
    fields=_fields(
        "PreToolUse",
        {"SessionStart": "start", "Stop": "stop"},
        {"apply_patch": _patch_paths, "Bash": _shell_patch_paths},
        quiet=frozenset({"Bash"}),
    ),
    deny=_claude_deny,
    warn=_claude_warn,
    context=_start_context,
)

# GitHub Copilot CLI: github/docs content/copilot/reference/copilot-cli-reference/
# cli-hooks-reference.md and content/copilot/reference/hooks-configuration.md. Its camelCase
# events carry no name (the hook's command line gives it), its preToolUse takes no matcher
# (every tool arrives; the others are answered with silence), its sessionStart output is
# ignored, and its preToolUse has no channel to the agent short of a denial.
COPILOT = Harness(
    name="copilot",
    title="GitHub Copilot CLI",
    fields=Fields(
        event="",
        session="sessionId",
        tool="toolName",
        tool_input="toolArgs",
        edit_event="preToolUse",
        kinds={"sessionStart": "start", "sessionEnd": "end", "agentStop": "stop"},
        tools={"edit": _json_args("path")},
        others="ignore",
    ),
    deny=lambda reason: json.dumps(
        {"permissionDecision": "deny", "permissionDecisionReason": reason}
    ),
    warn=lambda reason: None,
    context=lambda text: "",
)

HARNESSES: dict[str, Harness] = {h.name: h for h in (CLAUDE, GEMINI, CODEX, COPILOT)}
