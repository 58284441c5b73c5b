"""``git alock doctor``: whether each agent integration of this repository really guards.

Each installed hook is run exactly as each harness that reads its file runs it (its shell
and environment), on an edit of a path a stand-in holder claims, and its answer read as
that harness's code reads it: denied, or let through. Also: the git hooks' interpreter,
the lock remote and the guard's timeouts (docs/agents.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shlex
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gitlocks.agents import commands, settings
from gitlocks.agents.harnesses import HARNESSES
from gitlocks.core.text import printable

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

# A hook's run: the harnesses wait 30 s and more; a check that hangs is a failure.
RUN_TIMEOUT = 60.0
STAND_IN_REASON = "git alock doctor's stand-in holder (released when it is done)"


def shell_form(product: str, command: str, env: Mapping[str, str], via: str = "") -> list[str]:
    """The argument vector ``product`` runs a hook command with (docs/agents.md)."""
    if product == "codex":  # codex-rs/hooks command_runner.rs: $SHELL -lc, a login shell
        return [env.get("SHELL") or "/bin/sh", "-lc", command]
    if product in ("gemini", "qwen", "copilot") or (product == "vscode" and via == "bash"):
        return ["bash", "-c", command]  # Gemini, Qwen: spawn("bash", ["-c", command])
    if product == "cline":  # a hook file: its shebang (bash when it has none)
        return [command]
    return ["/bin/sh", "-c", command]  # Node's spawn(command, {shell: true}); the others


def product_env(product: str, root: str, env: Mapping[str, str]) -> dict[str, str]:
    """The environment ``product`` gives its hooks: its own, and the variables it adds."""
    full = {k: v for k, v in env.items() if k not in ("AGENT_ID", "GITLOCKS_HOLDER")}
    if product == "claude":
        full["CLAUDE_PROJECT_DIR"] = root
    elif product in ("gemini", "qwen"):
        full.update(GEMINI_PROJECT_DIR=root, GEMINI_CWD=root, CLAUDE_PROJECT_DIR=root)
        if product == "qwen":
            full["QWEN_PROJECT_DIR"] = root
    else:  # Copilot CLI and VS Code set no CLAUDE_PROJECT_DIR, even for Claude's file
        full.pop("CLAUDE_PROJECT_DIR", None)
    return full


def edit_event(product: str, root: str, path: str) -> dict[str, Any]:
    """An edit of ``path`` (from the top of ``root``) as ``product`` sends it."""
    full = os.path.join(root, path)
    if product == "codex":
        patch = f"*** Begin Patch\n*** Update File: {path}\n@@\n-a\n+b\n*** End Patch\n"
        return {"session_id": "doctor", "turn_id": "t", "transcript_path": None, "cwd": root,
                "hook_event_name": "PreToolUse", "model": "m", "permission_mode": "default",
                "tool_name": "apply_patch", "tool_input": {"command": patch},
                "tool_use_id": "c"}  # fmt: skip
    if product == "gemini":
        return {"session_id": "doctor", "transcript_path": "", "cwd": root,
                "hook_event_name": "BeforeTool", "timestamp": "2026-01-01T00:00:00Z",
                "tool_name": "write_file",
                "tool_input": {"file_path": full, "content": "x"}}  # fmt: skip
    if product == "copilot-claude":  # Copilot CLI running a Claude hook file
        return {"hook_event_name": "PreToolUse", "session_id": "doctor",
                "timestamp": "2026-01-01T00:00:00Z", "cwd": root, "tool_name": "edit",
                "tool_input": {"path": full, "old_str": "a", "new_str": "b"}}  # fmt: skip
    if product == "copilot":
        args = json.dumps({"path": full, "old_str": "a", "new_str": "b"})
        return {"sessionId": "doctor", "timestamp": 0, "cwd": root, "toolName": "edit",
                "toolArgs": args}  # fmt: skip
    if product == "vscode":
        return {"timestamp": "2026-01-01T00:00:00Z", "cwd": root, "sessionId": "doctor",
                "hookEventName": "PreToolUse", "tool_name": "create_file",
                "tool_input": {"filePath": full, "content": "x"},
                "tool_use_id": "c"}  # fmt: skip
    if product == "cursor":
        return {"conversation_id": "doctor", "hook_event_name": "preToolUse",
                "cursor_version": "doctor", "workspace_roots": [root], "tool_name": "Write",
                "tool_input": {"file_path": full}}  # fmt: skip
    if product == "windsurf":
        return {"agent_action_name": "pre_write_code", "trajectory_id": "doctor",
                "execution_id": "e", "timestamp": "2026-01-01T00:00:00Z",
                "tool_info": {"file_path": full, "edits": []}}  # fmt: skip
    if product == "cline":
        return {"clineVersion": "doctor", "taskId": "doctor", "workspaceRoots": [root],
                "hookName": "tool_call", "tool_call": {"id": "c", "name": "editor",
                "input": {"path": full, "new_text": "x"}},
                "preToolUse": {"toolName": "editor", "parameters": {"path": full}}}  # fmt: skip
    if product == "opencode":  # as the plugin install writes sends it
        written = {"filePath": full, "content": "x"}
        return {"hook_event_name": "PreToolUse", "session_id": "doctor", "cwd": root,
                "tool_name": "write", "tool_input": written}  # fmt: skip
    if product == "qwen":
        return {"session_id": "doctor", "transcript_path": "", "cwd": root,
                "hook_event_name": "PreToolUse", "timestamp": "2026-01-01T00:00:00Z",
                "permission_mode": "default", "tool_name": "write_file",
                "tool_input": {"file_path": full, "content": "x"},
                "tool_use_id": "c"}  # fmt: skip
    return {"session_id": "doctor", "transcript_path": "", "cwd": root,
            "hook_event_name": "PreToolUse", "permission_mode": "default",
            "tool_name": "Write", "tool_input": {"file_path": full, "content": "x"},
            "tool_use_id": "c"}  # fmt: skip


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # a hook's output: anything at all
        return None


def denied(product: str, code: int, out: str, err: str) -> bool:
    """Whether ``product``'s own code reads this answer as a denial of the call."""
    data = _json(out.strip()) if out.strip() else None
    data = data if isinstance(data, dict) else {}
    specific = data.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    said = specific.get("permissionDecision") == "deny"
    if product in ("claude", "codex", "vscode"):  # exit 2 with a reason, or the JSON
        return (code == 2 and bool(err.strip())) or (code == 0 and said)
    if product == "gemini":  # exit 0/1 with JSON or text; any other code with text denies
        if code in (0, 1):
            return data.get("decision") in ("deny", "block")
        return bool((out + err).strip())
    if product in ("copilot", "copilot-claude"):  # any non-zero exit denies
        return code != 0 or data.get("permissionDecision") == "deny" or said
    if product == "cursor":
        return code == 2 or data.get("permission") == "deny"
    if product in ("windsurf", "opencode", "qwen"):
        return code == 2
    if product == "cline":  # the exit code is ignored
        return data.get("cancel") is True
    return False


@dataclass
class Check:
    """One product running one installed hook file, and what came of it."""

    product: str
    title: str
    file: str
    shell: str
    denied: bool | None = None  # None: not run
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"harness": self.product, "title": self.title, "file": self.file,
                "shell": self.shell, "denied": self.denied, "detail": self.detail}  # fmt: skip


# Who runs each installed file: (product, key of the command, title).
READERS: dict[str, list[tuple[str, str]]] = {
    "claude": [("claude", "command"), ("copilot-claude", "command"), ("vscode", "command")],
    "copilot": [("copilot", "bash"), ("vscode", "bash")],
    "gemini": [("gemini", "command")],
    "codex": [("codex", "command")],
    "qwen": [("qwen", "command")],
    "cursor": [("cursor", "command")],
    "windsurf": [("windsurf", "command")],
    "cline": [("cline", "")],
    "opencode": [("opencode", "")],
}
TITLES = {
    **{name: h.title for name, h in HARNESSES.items()},
    "copilot-claude": "GitHub Copilot CLI (running Claude's file)",
}
EDIT_EVENTS = {
    "claude": "PreToolUse", "copilot": "preToolUse", "gemini": "BeforeTool",
    "codex": "PreToolUse", "qwen": "PreToolUse", "cursor": "preToolUse",
    "windsurf": "pre_write_code",
}  # fmt: skip


def installed_commands(root: Path, harness: str) -> dict[str, str]:
    """Our commands in the harness's installed hook file (Claude Code's personal one too)
    that run before an edit, by the key naming them (``command``, ``bash``)."""
    spec = commands.HOOK_FILES.get(harness)
    if spec is not None:
        found = _commands(root, harness, spec.path)
        return found or (_commands(root, harness, spec.local) if spec.local else {})
    script = commands.SCRIPT_FILES.get(harness)
    path = root / script.path if script else None
    if path is None or not path.is_file():
        return {}
    if harness != "opencode":
        return {"": str(path)}
    line = re.search(r"^const GUARD = (\".*\");$", path.read_text(), re.M)
    text = _json(line.group(1)) if line else None
    return {"": f"sh -c {shlex.quote(text)}"} if isinstance(text, str) else {}


def _commands(root: Path, harness: str, name: str) -> dict[str, str]:
    path = root / name
    try:
        data = json.loads(path.read_bytes().removeprefix(settings.BOM))
    except (OSError, ValueError, RecursionError):
        return {}
    hooks = data.get("hooks") if isinstance(data, dict) else None
    entries = hooks.get(EDIT_EVENTS[harness]) if isinstance(hooks, dict) else None
    found: dict[str, str] = {}
    for entry in entries if isinstance(entries, list) else []:
        for hook in entry.get("hooks", [entry]) if isinstance(entry, dict) else []:
            for key in ("command", "bash"):
                value = hook.get(key) if isinstance(hook, dict) else None
                if isinstance(value, str) and "guard --for" in value:
                    found.setdefault(key, value)
    if "command" in found and "bash" not in found:
        found["bash"] = found["command"]  # Copilot's alias: run as bash
    return found


def unreadable(root: Path, harness: str) -> list[str]:
    """The harness's hook files that exist but are no JSON object: it runs none of their
    hooks (ours included), which "none installed" alone would hide."""
    spec = commands.HOOK_FILES.get(harness)
    found = []
    for name in (spec.path, spec.local) if spec is not None else ():
        path = root / name if name else None
        if path is None or not path.is_file():
            continue
        try:
            data = json.loads(path.read_bytes().removeprefix(settings.BOM))
        except (OSError, ValueError, RecursionError) as exc:
            found.append(f"{name} cannot be read as JSON ({exc.__class__.__name__}): "
                         "none of its hooks run")  # fmt: skip
            continue
        if not isinstance(data, dict):
            found.append(f"{name} is no JSON object: none of its hooks run")
    return found


def run(
    argv: Sequence[str], cwd: str, env: Mapping[str, str] | None = None, feed: str = ""
) -> tuple[int, str, str]:
    """Run ``argv`` in ``cwd`` (its exit code, stdout, stderr), within ``RUN_TIMEOUT``: in a
    session of its own, so that a hook that hangs is killed with everything it started."""
    import subprocess  # the checks only: the guard and the hooks never run the doctor

    try:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(os.environ if env is None else env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        return 127, "", f"{argv[0]}: {exc.strerror}"
    try:
        out, err = proc.communicate(feed.encode(), timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:  # gone already
            pass
        try:
            proc.communicate(timeout=1.0)
        except subprocess.TimeoutExpired:
            # A process that left the session (a daemon the hook started with setsid)
            # still holds the pipes: never wait for it to close them.
            for pipe in filter(None, (proc.stdin, proc.stdout, proc.stderr)):
                with contextlib.suppress(OSError):
                    pipe.close()
            proc.wait()
        return -1, "", f"no answer in {RUN_TIMEOUT:.0f} s"
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def run_hook(
    product: str, command: str, root: str, event: Any, env: Mapping[str, str], via: str = ""
) -> tuple[int, str, str]:
    """Run ``command`` as ``product`` runs its hooks, ``event`` on stdin."""
    argv = shell_form(product, command, env, via)
    return run(argv, root, product_env(product, root, env), json.dumps(event))


def probe(harness: str, root: Path, env: Mapping[str, str]) -> tuple[bool, str]:
    """Install's check: whether the harness's shell runs gitlocks through its hook, and how."""
    commands = installed_commands(root, harness)
    if not commands:
        return False, "no hook of ours found to run"
    product, key = READERS[harness][0]
    command = commands.get(key) or next(iter(commands.values()))
    argv = shell_form(product, command, env, key)
    code, out, err = run_hook(product, command, str(root), {"gitlocks": "probe"}, env, key)
    shown = " ".join([*argv[:-1], "HOOK"]) if product != "cline" else "its shebang"
    if code == 0 and out.startswith("gitlocks "):
        return True, f"{shown} runs {out.strip()}"
    said = (err.strip().splitlines() or [f"exit {code}"])[-1]
    return False, f"{shown} does not run gitlocks: {said}"


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    git_hooks: dict[str, Any] = field(default_factory=dict)
    remote: dict[str, Any] = field(default_factory=dict)
    timeouts: dict[str, str] = field(default_factory=dict)

    def code(self) -> int:
        failing = [c for c in self.checks if not c.denied]
        return 1 if failing or self.problems or not self.checks else 0

    def to_dict(self) -> dict[str, Any]:
        return {"harnesses": [c.to_dict() for c in self.checks], "git_hooks": self.git_hooks,
                "remote": self.remote, "timeouts": self.timeouts, "notes": self.notes,
                "problems": self.problems, "ok": self.code() == 0}  # fmt: skip


def check_harnesses(
    root: Path, env: Mapping[str, str], hold: Callable[[str], None], report: Report
) -> None:
    """Each installed hook file, run by each product reading it, on an edit ``hold`` claims."""
    target = f".alock-doctor-{secrets.token_hex(4)}/probe.txt"
    held = False
    for harness in [*commands.HOOK_FILES, *commands.SCRIPT_FILES]:
        ours = installed_commands(root, harness)
        if not ours:
            report.problems += unreadable(root, harness)
            continue
        if not held:
            hold(target)
            held = True
        for product, key in READERS[harness]:
            command = ours.get(key) or next(iter(ours.values()))
            event = edit_event(product, str(root), target)
            shown = " ".join(shell_form(product, "HOOK", env, key)) if product != "cline" else (
                "the file itself (its shebang)"
            )  # fmt: skip
            code, out, err = run_hook(product, command, str(root), event, env, key)
            ok = denied(product, code, out, err)
            said = (err.strip() or out.strip()).splitlines()
            why = f"let through (exit {code}{': ' + said[-1] if said else ''})"[:400]
            detail = "denied" if ok else why
            file = (commands.HOOK_FILES.get(harness) or commands.SCRIPT_FILES[harness]).path
            report.checks.append(Check(product, TITLES[product], file, shown, ok, detail))
    if any(c.product == "codex" for c in report.checks):
        report.notes.append(
            "Codex runs a project's hooks only once you approve them in its /hooks (and "
            "again after install changes them); doctor cannot see that approval"
        )


def git_hooks_report(hooks_dir: Path) -> dict[str, Any]:
    """The interpreter the installed git hooks run, and whether it imports gitlocks."""
    shim = hooks_dir / "pre-commit"
    try:
        text = shim.read_text(errors="replace")
    except OSError:
        return {"installed": False}
    found = re.search(r"^ALOCK_PYTHON=(.*)$", text, re.M)
    if not found:
        return {"installed": False}
    python = found.group(1).strip().strip("'\"")
    if not python:
        return {"installed": True, "python": "", "works": None}
    works = run([python, "-c", "import gitlocks"], os.fspath(hooks_dir))[0] == 0
    return {"installed": True, "python": python, "works": works}


def remote_report(root: Path, remote: str, timeout: float) -> dict[str, Any]:
    """Whether the lock remote answers ``git ls-remote`` within ``timeout``."""
    if not remote:
        return {"remote": "", "reachable": None}
    # Imported here: only a lock remote's check runs git with a time limit.
    from gitlocks.errors import GitlocksError
    from gitlocks.git.run import Env, bounded

    try:
        ran = bounded(["ls-remote", "--heads", remote], env=Env.REMOTE, timeout=timeout,
                      timed_out=f"no answer in {timeout:g} s", error=GitlocksError,
                      cwd=os.fspath(root))  # fmt: skip
    except GitlocksError as exc:
        return {"remote": remote, "reachable": False, "detail": str(exc)}
    said = ran.err.strip().splitlines()
    ok = ran.code == 0
    return {"remote": remote, "reachable": ok, "detail": "" if ok or not said else said[-1]}


def render(report: Report) -> str:
    lines = ["Agent hooks (an edit of a path a stand-in holder claims):"]
    if not report.checks:
        lines.append(
            "  none installed in this repository (git alock install-agent-hooks --for NAME)"
        )
    for c in report.checks:
        mark = "ok  " if c.denied else "FAIL"
        lines.append(f"  {mark} {c.title} via {c.file}, run as {c.shell}: {c.detail}")
    hooks = report.git_hooks
    if hooks.get("installed"):
        state = "imports gitlocks" if hooks.get("works") else "does NOT import gitlocks"
        lines.append(f"Git hooks: interpreter {hooks.get('python') or '(PATH)'} {state}")
    else:
        lines.append("Git hooks: not installed (git alock install-hooks)")
    remote = report.remote
    if remote.get("remote"):
        state = "answers" if remote.get("reachable") else f"does NOT answer: {remote.get('detail')}"
        lines.append(f"Lock remote {remote['remote']}: {state}")
    else:
        lines.append("Lock remote: none (local mode)")
    lines.append("Guard timeouts: " + ", ".join(f"{k} {v}" for k, v in report.timeouts.items()))
    lines += [f"note: {n}" for n in report.notes]
    lines += [f"problem: {p}" for p in report.problems]
    return "\n".join(map(printable, lines))  # each line escaped: nothing read adds one


def standin_holder() -> str:
    return f"alock-doctor-{secrets.token_hex(4)}"


def as_holder(holder: str, root: str, env: Mapping[str, str], *args: str) -> tuple[int, str]:
    """``git alock --as HOLDER ARGS`` in a process of its own: its exit and last line."""
    code, out, err = run([sys.executable, "-m", "gitlocks", "--as", holder, *args], root, env)
    return code, ((err.strip() or out.strip()).splitlines() or ["?"])[-1]
