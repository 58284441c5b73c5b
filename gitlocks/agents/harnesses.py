"""The coding-agent harnesses the guard speaks: each one's hook event, read into an
``Event``, and its answers, in the protocol its shipped code reads (docs/agents.md names
the version of each). One core decides (``gitlocks.agents.guard``); the harnesses differ
only in the words.

Several products run one hook file (``.claude/settings.json``: Claude Code, Copilot CLI,
VS Code's agent, Cursor), so the sender is told from the payload's shape (``sender``) and
answered in its own protocol. Nothing to guard raises ``Pass``: exit 0, no output.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping

from gitlocks.agents.edits import Candidates, Unjudgeable
from gitlocks.core.value import Value

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    Paths: TypeAlias = Callable[[Any], tuple[str, ...] | None]

EXIT_ALLOW, EXIT_PASS, EXIT_DENY = 0, 1, 2


class Pass(Exception):
    """Nothing to guard here: let the call through, saying nothing (exit 0)."""


class Event(Value):
    """One harness event, as the guard needs it."""

    __slots__ = ("agent", "claimable", "cwd", "kind", "paths", "session_id", "tool")

    def __init__(
        self,
        kind: str,
        session_id: str,
        cwd: str,
        tool: str = "",
        paths: tuple[str, ...] = (),
        claimable: bool = True,
        agent: str = "",
    ) -> None:
        self.kind = kind  # "edit", "start", "end", "stop", "subagent_end", "probe" or "other"
        self.session_id = session_id  # "" when the payload carries none
        self.cwd = cwd
        self.tool = tool
        self.paths = paths  # the files an edit writes, as the event names them
        self.claimable = claimable  # False: the paths are candidates, judged, none claimed
        self.agent = agent  # the sub-agent it comes from (Claude Code's, Codex's agent_id)


class Answer(Value):
    """What the harness gets back."""

    __slots__ = ("code", "stderr", "stdout")

    def __init__(self, code: int = EXIT_ALLOW, stdout: str = "", stderr: str = "") -> None:
        self.code = code
        self.stdout = stdout
        self.stderr = stderr


class Harness(Value):
    """One harness: how its answers are written, and how its session ends read."""

    __slots__ = ("context", "deny", "fail", "goes_on", "name", "title", "warn")

    def __init__(
        self,
        name: str,
        title: str,
        deny: Callable[[str], Answer],
        warn: Callable[[str], str | None] = lambda reason: None,
        context: Callable[[str], str] = lambda text: "",
        fail: int = EXIT_PASS,
        goes_on: frozenset[str] | None = frozenset(),
    ) -> None:
        self.name = name
        self.title = title
        self.deny = deny  # the answer that denies the call, for a reason
        self.warn = warn  # None: no way to tell the agent; stderr only
        self.context = context  # the session-start text ("": it reads none)
        self.fail = fail  # the exit that lets a call through, the harness showing stderr
        # SessionEnd reasons after which the same process goes on (``/clear``): its claims
        # are renewed. None: its session end never ends the process's claims.
        self.goes_on = goes_on


FILE_KEYS = ("file_path", "filePath", "path", "notebook_path", "notebookPath")
PATCH_KEYS = ("command", "input", "patch", "patchText")


def _file(tool_input: Any) -> tuple[str, ...] | None:
    """The file a tool names, under any of the harnesses' spellings."""
    if not isinstance(tool_input, dict):
        return None
    for key in FILE_KEYS:
        found = tool_input.get(key)
        if isinstance(found, str) and found:
            return (found,)
    return None


def _files(tool_input: Any) -> tuple[str, ...] | None:
    """VS Code's tools that name several files: ``replacements[].filePath``, ``files``."""
    if not isinstance(tool_input, dict):
        return None
    found: list[str] = []
    items = tool_input.get("replacements") or tool_input.get("files") or []
    for item in items if isinstance(items, list) else []:
        name = item if isinstance(item, str) else (_file(item) or ("",))[0]
        if name and name not in found:
            found.append(name)
    return tuple(found) or _file(tool_input)


def _editor(tool_input: Any) -> tuple[str, ...] | None:
    """Copilot CLI's ``str_replace_editor``: ``view`` reads; the other commands write."""
    if isinstance(tool_input, dict) and tool_input.get("command") in ("view", None):
        return ()
    return _file(tool_input)


def _patch(tool_input: Any) -> tuple[str, ...] | None:
    """An ``apply_patch`` call's files: its input is the patch, or holds it under one of
    ``PATCH_KEYS`` (Codex, VS Code, Cline, Copilot, OpenCode)."""
    # Codex's patch reader, loaded for a patch only: the guard runs before every edit, and
    # most harnesses' edits name their file plainly (docs/design.md §9.14).
    from gitlocks.agents.codex_patch import parse_patch

    text = tool_input
    if isinstance(tool_input, dict):
        text = next((tool_input[k] for k in PATCH_KEYS if isinstance(tool_input.get(k), str)), None)
    return parse_patch(text) if isinstance(text, str) else None


def _codex_shell(tool_input: Any) -> tuple[str, ...] | None:
    # Codex's patch reader, loaded for a shell command only (as above).
    from gitlocks.agents.codex_patch import codex_shell_paths

    return codex_shell_paths(tool_input)


VSCODE_FILE_TOOLS = (
    *("create_file", "replace_string_in_file", "insert_edit_into_file"),
    *("edit_notebook_file", "createFile"),
)
VSCODE_FILES_TOOLS = ("multi_replace_string_in_file", "editFiles")
VSCODE_TOOLS = frozenset({*VSCODE_FILE_TOOLS, *VSCODE_FILES_TOOLS})
# An editing tool -> the files one call writes (None: it names none; (): a read). Where
# harnesses share a name (``edit``, ``Write``), the input is read under every spelling
# (docs/agents.md: the version each list is from).
TOOLS: dict[str, Paths] = {
    # Claude Code (and Cursor's Write, Delete)
    **dict.fromkeys(("Edit", "Write", "MultiEdit", "NotebookEdit", "Delete"), _file),
    # Gemini CLI, Qwen Code
    **dict.fromkeys(("write_file", "replace"), _file),
    # Copilot CLI, OpenCode, Qwen Code (edit), Cline (editor)
    **dict.fromkeys(("edit", "create", "str_replace", "write", "editor"), _file),
    # Cline's VS Code extension (its .clinerules/hooks/README.md: ``parameters.path``)
    **dict.fromkeys(("write_to_file", "replace_in_file"), _file),
    "str_replace_editor": _editor,
    # VS Code's agent
    **dict.fromkeys(VSCODE_FILE_TOOLS, _file),
    **dict.fromkeys(VSCODE_FILES_TOOLS, _files),
    # Codex, Copilot CLI, VS Code, Cline, OpenCode
    "apply_patch": _patch,
}
# Only Codex's shell tool applies patches itself (it intercepts ``apply_patch`` there).
CODEX_TOOLS: dict[str, Paths] = {**TOOLS, "Bash": _codex_shell}

EDIT_EVENTS = frozenset({"PreToolUse", "preToolUse", "BeforeTool", "pre_write_code", "tool_call"})
KINDS = {
    **dict.fromkeys(("SessionStart", "sessionStart"), "start"),
    **dict.fromkeys(("SessionEnd", "sessionEnd", "SessionShutdown"), "end"),
    **dict.fromkeys(("Stop", "stop", "agentStop", "AfterAgent"), "stop"),
    "SubagentStop": "subagent_end",
}


def _first(data: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        value = data.get(key)
        if value not in (None, ""):
            return value
    return None


def _root(roots: Any) -> str | None:
    """The first workspace root (Cursor's and Cline's payloads carry no ``cwd``)."""
    if isinstance(roots, list) and roots and isinstance(roots[0], str) and roots[0]:
        return roots[0]
    return None


def _args(value: Any) -> Any:
    """A tool's input, as a JSON string (Copilot CLI's ``toolArgs``, Cline's parameters)
    or an object; a string that is no JSON object stays (a freeform patch)."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def _load(raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw.removeprefix(b"\xef\xbb\xbf"))  # Cursor's payloads: a BOM
    except (ValueError, RecursionError) as exc:
        raise Pass(f"the hook event is not JSON ({exc.__class__.__name__})") from None
    if not isinstance(data, dict):
        raise Pass("the hook event is not a JSON object")
    return data


def malformed(text: str) -> bool:
    """A NUL or a lone surrogate: JSON can carry them, no file name holds them."""
    return "\0" in text or any("\ud800" <= c <= "\udfff" for c in text)


def sender(data: Mapping[str, Any], named: str) -> Harness:
    """Which product sent ``data`` to the hook installed for ``named``, told from the
    payload's shape (docs/agents.md, section 11 of the notes)."""
    if "agent_action_name" in data:
        return WINDSURF
    if "hookName" in data or "clineVersion" in data:
        return CLINE
    if "cursor_version" in data or "workspace_roots" in data:
        return CURSOR
    if "hookEventName" in data:
        return VSCODE
    camel = "toolName" in data or "toolArgs" in data
    if camel or (named == "copilot" and "hook_event_name" not in data):
        return COPILOT
    if named in ("claude", "copilot") and "hook_event_name" in data:
        if data.get("tool_name") in VSCODE_TOOLS:
            return VSCODE
        if "timestamp" in data and "tool_use_id" not in data:
            return COPILOT  # Copilot CLI running a Claude hook file: its snake_case shape
    return HARNESSES.get(named, CLAUDE)


def read(named: str, raw: bytes, event_name: str = "") -> tuple[Harness, Event]:
    """``raw`` as the product that sent it and an ``Event``; ``event_name``: the event, when
    the hook's command line names it (Copilot CLI's camelCase events do not say)."""
    data = _load(raw)
    if data.get("gitlocks") == "probe":  # install's and doctor's check that the hook runs
        return HARNESSES.get(named, CLAUDE), Event("probe", "", os.getcwd())
    harness = sender(data, named)
    name = _first(data, "hook_event_name", "hookEventName", "agent_action_name", "hookName")
    name = name if isinstance(name, str) else event_name
    session = _first(data, "session_id", "sessionId", "conversation_id", "trajectory_id", "taskId")
    cwd = (
        _first(data, "cwd")
        or _root(data.get("workspace_roots"))
        or _root(data.get("workspaceRoots"))
    )
    if not isinstance(cwd, str):
        cwd = os.getcwd()
    elif malformed(cwd):
        raise Pass("malformed input: cwd holds a NUL or an unpaired surrogate")
    session = session if isinstance(session, str) else ""
    agent = data.get("agent_id")
    agent = agent if isinstance(agent, str) and not malformed(agent) else ""
    if not name:
        raise Pass("the hook event does not say which it is")
    if name not in EDIT_EVENTS:
        kind = KINDS.get(name, "other")
        goes_on = harness.goes_on
        # None: one conversation of many in the process ends; else /clear, /resume: the
        # same process, and its work, go on. Its claims are renewed, never released.
        if kind == "end" and (goes_on is None or data.get("reason") in goes_on):
            kind = "stop"
        return harness, Event(kind, session, cwd, agent=agent)
    tool, tool_input = _tool(data)
    tools = CODEX_TOOLS if harness is CODEX else TOOLS
    paths_of = tools.get(tool)
    if paths_of is None:
        return harness, Event("other", session, cwd, tool=tool)
    try:
        paths = paths_of(tool_input)
    except Unjudgeable as why:
        why.harness = harness
        raise
    if paths is None:
        raise Pass(f"{tool} names no file in its input")
    if not paths:
        return harness, Event("other", session, cwd, tool=tool)  # a read (view)
    if any(malformed(p) for p in paths):
        raise Pass(f"malformed input: a file named by {tool} holds a NUL or an unpaired surrogate")
    claimable = not isinstance(paths, Candidates)
    return harness, Event("edit", session, cwd, tool, tuple(paths), claimable, agent)


def _tool(data: Mapping[str, Any]) -> tuple[str, Any]:
    """The tool an edit event runs, and its input, under each harness's keys."""
    if isinstance(data.get("tool_info"), dict):  # Windsurf's pre_write_code
        return "write", data["tool_info"]
    cline = data.get("preToolUse")
    if isinstance(cline, dict):  # Cline: parameters' values are strings
        params = cline.get("parameters")
        call = data.get("tool_call")
        raw = call.get("input") if isinstance(call, dict) else None
        name = cline.get("toolName")
        return (str(name), raw if raw is not None else _args(params))
    name = _first(data, "tool_name", "toolName")
    value = data.get("tool_input") if "tool_input" in data else data.get("toolArgs")
    return (name if isinstance(name, str) else ""), _args(value)


def _specific(event: str, **fields: str) -> dict[str, Any]:
    """Claude Code's ``hookSpecificOutput`` answer (Codex, VS Code and Qwen Code read it)."""
    return {"hookSpecificOutput": {"hookEventName": event, **fields}}


def _claude_deny(reason: str) -> Answer:
    deny = _specific("PreToolUse", permissionDecision="deny", permissionDecisionReason=reason)
    return Answer(stdout=json.dumps(deny))


def _claude_warn(reason: str) -> str:
    return json.dumps(_specific("PreToolUse", additionalContext=reason))


def _start_context(text: str) -> str:
    return json.dumps(_specific("SessionStart", additionalContext=text))


def _blocking(reason: str) -> Answer:
    """Exit 2 with the reason on stderr: the only denial Windsurf and OpenCode's plugin
    read, and the one Qwen Code documents."""
    return Answer(EXIT_DENY, "", reason + "\n")


def _copilot_deny(reason: str) -> Answer:
    # Its own keys, and Claude's nested ones for the Claude-format files it also runs.
    deny = {"permissionDecision": "deny", "permissionDecisionReason": reason}
    deny.update(_specific("PreToolUse", **deny))
    return Answer(stdout=json.dumps(deny))


def _cursor_deny(reason: str) -> Answer:
    # Cursor's own answer, and exit 2: what it reads as a denial from a Claude hook file.
    deny = {"permission": "deny", "user_message": reason, "agent_message": reason}
    return Answer(EXIT_DENY, json.dumps(deny), reason + "\n")


# Claude Code 2.1.332: /bin/sh -c; exit 1 shows stderr to the user and goes on.
CLAUDE = Harness(
    "claude", "Claude Code", _claude_deny, _claude_warn, _start_context,
    goes_on=frozenset({"clear", "resume"}),
)  # fmt: skip
# Codex CLI 0.171.0: $SHELL -lc; SessionEnd's reason is always "other".
CODEX = Harness("codex", "Codex CLI", _claude_deny, _claude_warn, _start_context)
# Gemini CLI 0.61.0: bash -c; any exit but 0 and 1 with text is a denial. BeforeTool has no
# channel to the agent short of a denial: a warning goes to the user (systemMessage).
GEMINI = Harness(
    "gemini", "Gemini CLI",
    lambda reason: Answer(stdout=json.dumps({"decision": "deny", "reason": reason})),
    lambda reason: json.dumps({"systemMessage": reason}),
    _start_context,
    goes_on=frozenset({"clear"}),
)  # fmt: skip
# GitHub Copilot CLI 1.0.102: any non-zero exit of a preToolUse hook denies the call.
COPILOT = Harness("copilot", "GitHub Copilot CLI", _copilot_deny, fail=EXIT_ALLOW)
# VS Code's agent: no SessionEnd; exit 1 is a warning shown to the user.
VSCODE = Harness("vscode", "VS Code agent", _claude_deny, _claude_warn, _start_context)
# Cursor: one process, many conversations: a conversation's end ends no claim.
CURSOR = Harness("cursor", "Cursor", _cursor_deny, goes_on=None)
# Windsurf (Cascade hooks): exit 2 blocks; no session events.
WINDSURF = Harness("windsurf", "Windsurf", _blocking)
# Cline: the exit code is ignored; stdout's {"cancel": true} blocks.
CLINE = Harness(
    "cline", "Cline",
    lambda reason: Answer(stdout=json.dumps({"cancel": True, "errorMessage": reason})),
    lambda reason: json.dumps({"contextModification": reason}), fail=EXIT_ALLOW,
)  # fmt: skip
# OpenCode: the plugin install writes runs the guard and throws on exit 2.
OPENCODE = Harness("opencode", "OpenCode", _blocking)
# Qwen Code 0.15.10: bash -c; only exit 2 blocks; SessionEnd "clear" on /clear.
QWEN = Harness(
    "qwen", "Qwen Code", _blocking, _claude_warn, _start_context, goes_on=frozenset({"clear"})
)

HARNESSES: dict[str, Harness] = {
    h.name: h
    for h in (CLAUDE, GEMINI, CODEX, COPILOT, VSCODE, CURSOR, WINDSURF, CLINE, OPENCODE, QWEN)
}
