"""An outside review's attacks on this round's guard command, hook payloads and pushes:
each a defect found, pinned by the test that found it."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from support.cli import alock
from support.remote import make_bare, make_clone

from gitlocks.agents import doctor
from gitlocks.agents.commands import guard_command
from gitlocks.agents.guard import run
from gitlocks.agents.harnesses import HARNESSES, Answer
from gitlocks.hooks import install as hook_install

# The shells the harnesses run hooks in without a profile (Gemini CLI and Qwen Code: bash -c).
PLAIN_PATH = "/usr/bin:/bin"


def _run_hook(repo: Path, harness: str, program: Path) -> subprocess.CompletedProcess[str]:
    git(repo, "config", "alock.guardProgram", str(program))
    env = {**os.environ, "PATH": PLAIN_PATH}
    return subprocess.run(
        ["bash", "-c", guard_command(harness)],
        cwd=repo,
        input="{}",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@pytest.mark.parametrize("harness", ["gemini", "copilot"])
@pytest.mark.parametrize("broken", ["directory", "gone-interpreter"])
def test_a_guard_program_that_cannot_run_never_blocks(
    repo: Path, tmp_path: Path, harness: str, broken: str
) -> None:
    """alock.guardProgram naming a directory (exit 126 from exec) or a git-alock whose
    interpreter is gone (a removed virtual environment's base Python: exit 127) must not
    exit with a code Gemini CLI or Copilot CLI reads as a denial of every edit."""
    program = tmp_path / "git-alock"
    if broken == "directory":
        program.mkdir()
    else:
        program.write_text("#!/nonexistent/python3\n")
        program.chmod(0o755)
    got = _run_hook(repo, harness, program)
    assert got.returncode == 0, got
    assert "edits are not guarded" in got.stderr


# --- hook payloads ---------------------------------------------------------------------------


def _held(repo: Path, path: str = "src/app.py") -> None:
    got = alock(repo, "acquire", path, AGENT_ID="other-holder")
    assert got.code == 0, got


def _answer(repo: Path, harness: str, payload: dict[str, Any]) -> Answer:
    env = {**os.environ, "AGENT_ID": "me"}
    return run(HARNESSES[harness], json.dumps(payload).encode(), env)


@pytest.mark.parametrize("tool", ["write_to_file", "replace_in_file"])
def test_cline_extension_writes_of_a_held_file_are_denied(repo: Path, tool: str) -> None:
    """Cline's VS Code extension writes with write_to_file and replace_in_file (its own
    .clinerules/hooks/README.md: ``preToolUse.toolName``, ``parameters.path``): an edit of
    a held file through them was let through in silence."""
    _held(repo)
    payload = {
        "clineVersion": "3.36.0",
        "hookName": "PreToolUse",
        "timestamp": "1",
        "taskId": "k-1",
        "workspaceRoots": [str(repo)],
        "userId": "u",
        "preToolUse": {"toolName": tool, "parameters": {"path": "src/app.py", "content": "x"}},
    }
    got = _answer(repo, "cline", payload)
    assert json.loads(got.stdout)["cancel"] is True, got


@pytest.mark.parametrize("items", [5, {"a": 1}, "src/app.py", None])
def test_vscode_multi_file_tools_of_odd_shapes_are_still_judged(repo: Path, items: Any) -> None:
    """``replacements`` that is no list (an int raised TypeError: "internal error ... let
    through", exit 1, a warning each call): the file the input names is still judged."""
    _held(repo)
    payload = {
        "hookEventName": "PreToolUse",
        "sessionId": "v-1",
        "cwd": str(repo),
        "tool_name": "multi_replace_string_in_file",
        "tool_input": {"replacements": items, "filePath": str(repo / "src" / "app.py")},
    }
    got = _answer(repo, "vscode", payload)
    assert "internal error" not in got.stderr, got
    decision = json.loads(got.stdout)["hookSpecificOutput"]["permissionDecision"]
    assert decision == "deny", got


# --- a dead lock remote ----------------------------------------------------------------------


def test_a_dead_lock_remote_costs_a_guarded_claim_one_bound_in_all(tmp_path: Path) -> None:
    """docs/agents.md: the guard waits on the lock remote at most alock.guardRemoteTimeout.
    A claim pushed to a remote that never answers (ssh that hangs) waited that bound for the
    push and a second, fresh bound for the fetch asking whether it landed (6 s at the
    default). Counted, not timed: no fetch starts once the bound is spent; the edit goes on
    unclaimed."""
    bare = make_bare(tmp_path / "locks.git")
    clone = make_clone(bare.as_uri(), tmp_path / "clone")
    assert alock(clone, "acquire", "old.py").code == 0  # the clone has written there before
    starts = tmp_path / "ssh-starts"
    ssh = tmp_path / "hanging-ssh"
    ssh.write_text(f'#!/bin/sh\necho "$@" >> "{starts}"\nexec sleep 600\n')
    ssh.chmod(0o755)
    git(clone, "remote", "set-url", "origin", "ssh://locks.invalid/locks.git")
    git(clone, "config", "core.sshCommand", str(ssh))
    git(clone, "config", "ssh.variant", "simple")  # no "ssh -G" probe run first
    git(clone, "config", "alock.guardRemoteTimeout", "1s")
    payload = {
        "session_id": "s-1",
        "cwd": str(clone),
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": str(clone / "new.py"), "content": "x"},
        "tool_use_id": "t-1",
    }
    got = _answer(clone, "claude", payload)
    assert got.code == 0, got
    said = json.loads(got.stdout)["hookSpecificOutput"]
    assert "WITHOUT a claim" in said["additionalContext"], said
    runs = starts.read_text().splitlines()
    # The push, and at most the ls-remote beside it; never a fetch after the bound.
    assert sum("git-receive-pack" in run for run in runs) == 1, runs
    assert sum("git-upload-pack" in run for run in runs) <= 1, runs


# --- git alock doctor ------------------------------------------------------------------------


def test_doctor_never_waits_on_a_daemon_a_hook_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hook command that starts a daemon in a session of its own (``setsid``), holding
    the hook's stdout: killing the hook's session at the timeout left the doctor waiting
    for the daemon to close the pipe, forever for a daemon that lives on."""
    monkeypatch.setattr(doctor, "RUN_TIMEOUT", 0.5)
    pid_file = tmp_path / "daemon.pid"
    script = f"setsid sh -c 'echo $$ > {pid_file}; exec sleep 3600' & wait"
    done: list[tuple[int, str, str]] = []
    runner = threading.Thread(target=lambda: done.append(doctor.run(["sh", "-c", script], ".")))
    runner.start()
    try:
        runner.join(timeout=30)  # a bound on a hang, far above the 1.5 s it takes
        assert done and done[0][0] == -1, done
    finally:
        for _ in range(100):
            if pid_file.exists() and pid_file.read_text().strip():
                break
            time.sleep(0.05)
        with contextlib.suppress(ValueError, OSError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
        runner.join()


# --- the harness's environment ---------------------------------------------------------------


def test_git_dir_of_another_repository_never_lets_a_held_file_through(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _held(repo)
    other = tmp_path / "other"
    git(tmp_path, "init", "-q", str(other))
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    payload = {
        "session_id": "c-1",
        "cwd": str(repo),
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": str(repo / "src" / "app.py")},
        "tool_use_id": "t-1",
    }
    got = _answer(repo, "claude", payload)
    monkeypatch.delenv("GIT_DIR", raising=False)
    assert '"deny"' in got.stdout, got
    paths = [p for lock in json.loads(alock(repo, "list", "--json").out) for p in lock["paths"]]
    assert paths == ["src/app.py"], paths  # no phantom claim of "app.py"


# --- git hooks -------------------------------------------------------------------------------


def test_a_git_alock_on_path_that_cannot_run_never_refuses_a_commit(
    repo: Path, tmp_path: Path
) -> None:
    """The shipped shim (no ALOCK_PYTHON) exec'd the git-alock on PATH: one whose
    interpreter is gone (a removed virtual environment) exited 127 and refused every
    commit, where a missing one skips the check."""
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(hook_install.shim_text("pre-commit"))
    hook.chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    broken = bin_dir / "git-alock"
    broken.write_text("#!/nonexistent/python3\n")
    broken.chmod(0o755)
    (repo / "README.md").write_text("changed\n")
    git(repo, "add", "-A")
    env = {**os.environ, "PATH": f"{bin_dir}:{PLAIN_PATH}"}
    got = subprocess.run(
        ["git", "commit", "-q", "-m", "c"], cwd=repo, env=env, capture_output=True, text=True
    )
    assert got.returncode == 0, got
    assert "lock check skipped" in got.stderr


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[" * 100_000 + "]" * 100_000, "cannot be read as JSON (RecursionError)"),
        ('{"hooks": {"PreToolUse": [', "cannot be read as JSON (JSONDecodeError)"),
        ("[1, 2]", "is no JSON object"),
    ],
)
def test_doctor_names_a_hook_file_it_cannot_read(repo: Path, text: str, said: str) -> None:
    """A deeply nested .claude/settings.json was a RecursionError traceback; a malformed one
    was reported as "none installed", hiding that Claude Code runs none of its hooks."""
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text(text)
    got = alock(repo, "doctor")
    assert got.code == 1, got
    assert "Traceback" not in got.err, got
    assert f"problem: .claude/settings.json {said}" in got.out, got


def test_a_read_only_git_directory_says_where_to_claim_instead(repo: Path, tmp_path: Path) -> None:
    """Codex's default sandbox keeps .git read-only: the skill's `git alock acquire` from
    its shell cannot write there, and the error says what can (the MCP server, the hooks)."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs unshare to mount .git read-only")
    script = (
        f"mount --bind {repo / '.git'} {repo / '.git'} && "
        f"mount -o remount,bind,ro {repo / '.git'} && "
        f"cd {repo} && git alock acquire src/app.py"
    )
    env = {**os.environ, "AGENT_ID": "me"}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env["PATH"]
    proc = subprocess.run(
        ["unshare", "-m", "sh", "-c", script], env=env, capture_output=True, text=True
    )
    if "mount" in proc.stderr and proc.returncode != 2:
        pytest.skip(f"cannot mount here: {proc.stderr.strip()}")
    assert proc.returncode == 2, proc
    assert proc.stderr.startswith("error: "), proc.stderr
    assert "git alock mcp" in proc.stderr and "read-only" in proc.stderr, proc.stderr
