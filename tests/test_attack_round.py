"""An outside review's attacks on this round's guard command, hook payloads and pushes:
each a defect found, pinned by the test that found it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import git

from gitlocks.agents.commands import guard_command

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
