"""Every harness's hook events as its shipped package (or, where nothing ships, its source or
reference) sends them, and its answers read as its own code reads them.

Each builder names the version its shape comes from. ``WRITES`` lists, per product, every
tool that writes a file, as a function of the path written; ``READS`` one call that writes
nothing. ``denied`` reads an answer (exit code, stdout, stderr) as that product decides on
it. docs/agents.md says the same, harness by harness.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.cli import Result

Payload = dict[str, Any]
ISO = "2026-12-01T00:00:00.000Z"


def _patch(path: str) -> str:
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n-a\n+b\n*** End Patch\n"


# --- Claude Code 2.1.332 (@anthropic-ai/claude-code-linux-x64, the zod schema of hook input) --


def claude(repo: Path, name: str, **extra: Any) -> Payload:
    return {
        "session_id": "c-1",
        "transcript_path": str(repo / ".t.jsonl"),
        "cwd": str(repo),
        "permission_mode": "default",
        "hook_event_name": name,
        **extra,
    }


def claude_tool(repo: Path, tool: str, tool_input: Payload) -> Payload:
    return claude(repo, "PreToolUse", tool_name=tool, tool_input=tool_input, tool_use_id="tu-1")


CLAUDE_WRITES: dict[str, Callable[[Path, str], Payload]] = {
    "Edit": lambda r, p: claude_tool(
        r, "Edit", {"file_path": str(r / p), "old_string": "a", "new_string": "b"}
    ),
    "Write": lambda r, p: claude_tool(r, "Write", {"file_path": str(r / p), "content": "x"}),
    "MultiEdit": lambda r, p: claude_tool(r, "MultiEdit", {"file_path": str(r / p), "edits": []}),
    "NotebookEdit": lambda r, p: claude_tool(
        r, "NotebookEdit", {"notebook_path": str(r / p), "new_source": "x"}
    ),
}

# --- Codex CLI 0.171.0 (the binary's embedded pre-tool-use.command.input schema) -------------


def codex(repo: Path, name: str, **extra: Any) -> Payload:
    return {
        "session_id": "x-1",
        "turn_id": "turn-1",
        "transcript_path": None,
        "cwd": str(repo),
        "hook_event_name": name,
        "model": "gpt-5.5",
        "permission_mode": "default",
        **extra,
    }


CODEX_WRITES: dict[str, Callable[[Path, str], Payload]] = {
    "apply_patch": lambda r, p: codex(
        r,
        "PreToolUse",
        tool_name="apply_patch",
        tool_input={"command": _patch(p)},
        tool_use_id="call-1",
    ),
}

# --- Gemini CLI 0.61.0 (@google/gemini-cli-core dist/src/hooks/hookEventHandler.js) ---------


def gemini(repo: Path, name: str, **extra: Any) -> Payload:
    return {
        "session_id": "g-1",
        "transcript_path": str(repo / ".t.json"),
        "cwd": str(repo),
        "hook_event_name": name,
        "timestamp": ISO,
        **extra,
    }


GEMINI_WRITES: dict[str, Callable[[Path, str], Payload]] = {
    "write_file": lambda r, p: gemini(
        r,
        "BeforeTool",
        tool_name="write_file",
        tool_input={"file_path": str(r / p), "content": "x"},
    ),
    "replace": lambda r, p: gemini(
        r,
        "BeforeTool",
        tool_name="replace",
        tool_input={"file_path": str(r / p), "old_string": "a", "new_string": "b"},
    ),
}

# --- GitHub Copilot CLI 1.0.102 (cli-main.js tool schemas; cli-hooks-reference.md shapes) ----
# camelCase events (.github/hooks): no event name, no tool_use_id; toolArgs an object (live
# captures) or a JSON string (the hooks-configuration doc, whose examples carry no sessionId).


def copilot(repo: Path, tool: str, args: Any, session: bool = True) -> Payload:
    found: Payload = {
        "timestamp": 1764547200000,
        "cwd": str(repo),
        "toolName": tool,
        "toolArgs": args,
    }
    return {"sessionId": "p-1", **found} if session else found


COPILOT_WRITES: dict[str, Callable[[Path, str], Payload]] = {
    "edit": lambda r, p: copilot(r, "edit", {"path": str(r / p), "old_str": "a", "new_str": "b"}),
    "create": lambda r, p: copilot(r, "create", {"path": str(r / p), "file_text": "x"}),
    "str_replace_editor": lambda r, p: copilot(
        r,
        "str_replace_editor",
        json.dumps({"command": "str_replace", "path": str(r / p), "old_str": "a", "new_str": "b"}),
    ),
    "apply_patch": lambda r, p: copilot(r, "apply_patch", _patch(p)),  # freeform: the patch
    "apply_patch-input": lambda r, p: copilot(r, "apply_patch", {"input": _patch(p)}),
    "no-sessionId": lambda r, p: copilot(r, "edit", json.dumps({"path": str(r / p)}), False),
}


def copilot_claude(repo: Path, tool: str, tool_input: Payload) -> Payload:
    """Copilot CLI running .claude/settings.json: PascalCase event, snake_case payload."""
    return {
        "hook_event_name": "PreToolUse",
        "session_id": "p-2",
        "timestamp": ISO,
        "cwd": str(repo),
        "tool_name": tool,
        "tool_input": tool_input,
    }


COPILOT_CLAUDE_WRITES: dict[str, Callable[[Path, str], Payload]] = {
    "edit": lambda r, p: copilot_claude(r, "edit", {"path": str(r / p), "old_str": "a"}),
    "create": lambda r, p: copilot_claude(r, "create", {"path": str(r / p), "file_text": "x"}),
}

# --- VS Code's agent (microsoft/vscode extHostHooks.ts; vscode-copilot-chat tool names) -----


def vscode(repo: Path, tool: str, tool_input: Payload) -> Payload:
    return {
        "timestamp": ISO,
        "cwd": str(repo),
        "sessionId": "v-1",
        "hookEventName": "PreToolUse",
        "transcript_path": "",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "tu-9",
    }


VSCODE_WRITES: dict[str, Callable[[Path, str], Payload]] = {
    "create_file": lambda r, p: vscode(r, "create_file", {"filePath": str(r / p), "content": "x"}),
    "replace_string_in_file": lambda r, p: vscode(
        r,
        "replace_string_in_file",
        {"filePath": str(r / p), "oldString": "a", "newString": "b", "explanation": "e"},
    ),
    "multi_replace_string_in_file": lambda r, p: vscode(
        r,
        "multi_replace_string_in_file",
        {
            "explanation": "e",
            "replacements": [{"filePath": str(r / p), "oldString": "a", "newString": "b"}],
        },
    ),
    "insert_edit_into_file": lambda r, p: vscode(
        r, "insert_edit_into_file", {"filePath": str(r / p), "code": "x", "explanation": "e"}
    ),
    "editFiles": lambda r, p: vscode(r, "editFiles", {"files": [str(r / p)]}),
    "apply_patch": lambda r, p: vscode(
        r, "apply_patch", {"input": _patch(str(r / p)), "explanation": "e"}
    ),
}

# --- Cursor (cursor.com/docs/hooks; a capture of cursor 3.11.25): no cwd, a BOM first -------


def cursor(repo: Path, tool: str, tool_input: Payload) -> Payload:
    return {
        "conversation_id": "u-1",
        "generation_id": "g",
        "model": "m",
        "hook_event_name": "preToolUse",
        "cursor_version": "3.11.25",
        "workspace_roots": [str(repo)],
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "t",
    }


CURSOR_WRITES: dict[str, Callable[[Path, str], Payload]] = {
    "Write": lambda r, p: cursor(r, "Write", {"file_path": str(r / p), "content": "x"}),
    "Delete": lambda r, p: cursor(r, "Delete", {"file_path": str(r / p)}),
}

# --- Windsurf (docs.windsurf.com cascade hooks, pre_write_code) ------------------------------


def windsurf(repo: Path, path: str) -> Payload:
    return {
        "agent_action_name": "pre_write_code",
        "trajectory_id": "w-1",
        "execution_id": "e",
        "timestamp": ISO,
        "tool_info": {
            "file_path": str(repo / path),
            "edits": [{"old_string": "a", "new_string": "b"}],
        },
    }


# --- Cline 4.1.13 (cline/cline sdk hook-file-hooks.ts): parameters' values are strings -------


def cline(repo: Path, tool: str, tool_input: Payload) -> Payload:
    return {
        "clineVersion": "4.1.13",
        "timestamp": ISO,
        "taskId": "k-1",
        "sessionContext": {"rootSessionId": "k-1"},
        "workspaceRoots": [str(repo)],
        "hookName": "tool_call",
        "tool_call": {"id": "c", "name": tool, "input": tool_input},
        "preToolUse": {"toolName": tool, "parameters": {k: str(v) for k, v in tool_input.items()}},
    }


CLINE_WRITES: dict[str, Callable[[Path, str], Payload]] = {
    "editor": lambda r, p: cline(r, "editor", {"path": str(r / p), "new_text": "x"}),
    "apply_patch": lambda r, p: cline(r, "apply_patch", {"input": _patch(p)}),
}

# --- OpenCode 1.18.33: what the installed plugin sends (tool.execute.before's input) ---------


def opencode(repo: Path, tool: str, args: Payload) -> Payload:
    return {
        "hook_event_name": "PreToolUse",
        "session_id": "o-1",
        "cwd": str(repo),
        "tool_name": tool,
        "tool_input": args,
    }


OPENCODE_WRITES: dict[str, Callable[[Path, str], Payload]] = {
    "write": lambda r, p: opencode(r, "write", {"filePath": p, "content": "x"}),
    "edit": lambda r, p: opencode(r, "edit", {"filePath": p, "oldString": "a", "newString": "b"}),
    "apply_patch": lambda r, p: opencode(r, "apply_patch", {"patchText": _patch(p)}),
}

# --- Qwen Code 0.15.10 (@qwen-code/qwen-code cli.js) ----------------------------------------


def qwen(repo: Path, name: str, **extra: Any) -> Payload:
    return {
        "session_id": "q-1",
        "transcript_path": "",
        "cwd": str(repo),
        "hook_event_name": name,
        "timestamp": ISO,
        "permission_mode": "default",
        **extra,
    }


QWEN_WRITES: dict[str, Callable[[Path, str], Payload]] = {
    "write_file": lambda r, p: qwen(
        r,
        "PreToolUse",
        tool_name="write_file",
        tool_use_id="t",
        tool_input={"file_path": str(r / p), "content": "x"},
    ),
    "edit": lambda r, p: qwen(
        r,
        "PreToolUse",
        tool_name="edit",
        tool_use_id="t",
        tool_input={"file_path": str(r / p), "old_string": "a", "new_string": "b"},
    ),
}


# --- reading answers as each product's code does ---------------------------------------------


def _json(text: str) -> dict[str, Any]:
    try:
        found = json.loads(text) if text.strip() else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def denied(product: str, got: Result) -> bool:
    """Whether ``product``'s shipped code denies the call on this answer."""
    out = _json(got.out)
    nested = out.get("hookSpecificOutput") or {}
    said = isinstance(nested, dict) and nested.get("permissionDecision") == "deny"
    if product in ("claude", "codex", "vscode"):
        # Exit 2 with stderr blocks; exit 0 reads the JSON; other codes let it through.
        return (got.code == 2 and bool(got.err.strip())) or (got.code == 0 and said)
    if product == "gemini":
        # convertPlainTextToHookOutput: 0 and 1 allow unless JSON denies; any other code
        # with text on stdout or stderr is a denial.
        if got.code in (0, 1):
            return out.get("decision") in ("deny", "block")
        return bool((got.out + got.err).strip())
    if product == "copilot":  # 1.0.57: any non-zero exit of a preToolUse hook denies
        return got.code != 0 or out.get("permissionDecision") == "deny" or said
    if product == "cursor":
        return got.code == 2 or out.get("permission") == "deny"
    if product in ("windsurf", "opencode", "qwen"):
        return got.code == 2
    if product == "cline":  # the exit code is ignored: stdout's cancel
        return out.get("cancel") is True
    raise AssertionError(product)


def reason(product: str, got: Result) -> str:
    """The reason the agent is shown with a denial."""
    out = _json(got.out)
    nested = out.get("hookSpecificOutput") or {}
    for key in ("permissionDecisionReason", "reason", "errorMessage", "agent_message"):
        for where in (out, nested):
            if isinstance(where, dict) and isinstance(where.get(key), str):
                return str(where[key])
    return got.err
