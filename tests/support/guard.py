"""Running the agent guard as a harness runs it, and reading its answers: shared by the
tests of the guard, the settings and the committed .alockignore."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from support.cli import Result
from support.harness import StandIn
from support.records import stored

OTHER = {"AGENT_ID": "other-agent"}


def guard(
    repo: Path, event: dict[str, Any] | str, timeout: float | None = None, **env: str
) -> Result:
    """``git alock guard --for claude`` with ``event`` on stdin, as the harness runs it,
    with ``GITLOCKS_GUARD_TRACE`` set: a call it lets through says why on stderr."""
    full = dict(os.environ)
    full.pop("AGENT_ID", None)
    full["PATH"] = os.path.dirname(sys.executable) + os.pathsep + full.get("PATH", "")
    full["GITLOCKS_GUARD_TRACE"] = "1"  # the reason it let a call through, on stderr
    full.update(env)
    raw = event if isinstance(event, str) else json.dumps(event)
    proc = subprocess.run(
        ["git", "alock", "guard", "--for", "claude"],
        cwd=repo,
        env=full,
        input=raw,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def second_session(repo: Path, event: dict[str, Any]) -> Result:
    """``event`` from another session: another harness process, as a real one would be."""
    session = StandIn(repo.parent / "second", "claude", cwd=repo)
    try:
        return session.guard(event)
    finally:
        session.close()


def edit(repo: Path, path: str, session: str = "s-1", tool: str = "Edit") -> dict[str, Any]:
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    return {
        "session_id": session,
        "cwd": str(repo),
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": {key: str(repo / path), "old_string": "a", "new_string": "b"},
    }


def event(repo: Path, name: str, session: str = "s-1") -> dict[str, Any]:
    return {"session_id": session, "cwd": str(repo), "hook_event_name": name}


def denial(got: Result) -> str:
    """The documented PreToolUse denial's reason (exit 0, JSON on stdout)."""
    assert got.code == 0, got
    out = json.loads(got.out)["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse" and out["permissionDecision"] == "deny"
    reason: str = out["permissionDecisionReason"]
    return reason


def holders(repo: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for r in stored(repo):
        found.setdefault(r["holder"], []).extend(r["paths"])
    return found
