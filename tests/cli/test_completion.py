"""Shell completion: verbs and options completed by bash, through git's own ``git alock``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import alock

ALOCK = str(Path(sys.executable).parent / "git-alock")


def complete(words: str, cword: int) -> list[str]:
    """What ``git-alock`` answers a bash completion request for ``words``."""
    env = {
        **os.environ,
        "_GIT_ALOCK_COMPLETE": "bash_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": str(cword),
    }
    got = subprocess.run([ALOCK], env=env, capture_output=True, text=True, check=True)
    return [line.split(",", 1)[1] for line in got.stdout.splitlines()]


def test_verbs_and_options_are_completed() -> None:
    assert complete("git-alock acq", 1) == ["acquire"]
    assert "ls" not in complete("git-alock l", 1)  # hidden verbs stay hidden
    assert "list" in complete("git-alock l", 1)
    assert complete("git-alock acquire --t", 2) == ["--ttl"]
    assert complete("git-alock acquire src/app.py --wa", 3) == ["--wait"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_completes_git_alock_through_the_script(tmp_path: Path) -> None:
    script = alock(tmp_path, "completion", "bash")
    assert script.code == 0, script
    (tmp_path / "alock.bash").write_text(script.out)
    probe = (
        f"source {tmp_path / 'alock.bash'}\n"
        "COMP_WORDS=(git alock rel); COMP_CWORD=2; COMPREPLY=()\n"
        "_git_alock\n"
        'echo "${COMPREPLY[@]}"\n'
    )
    env = {**os.environ, "PATH": f"{Path(ALOCK).parent}{os.pathsep}{os.environ['PATH']}"}
    got = subprocess.run(["bash", "-c", probe], env=env, capture_output=True, text=True)
    assert got.stdout.split() == ["release"], got


def test_an_unknown_shell_is_a_usage_error(tmp_path: Path) -> None:
    got = alock(tmp_path, "completion", "tcsh")
    assert got.code == 2 and "error: unknown shell 'tcsh'" in got.err, got


def test_the_click_completion_needs_is_a_declared_dependency() -> None:
    """A plain ``pip install .`` must bring what ``completion`` imports: typer's own copy
    of click has no shell completion, so ``click`` is declared, not found by chance."""
    from importlib.metadata import requires

    declared = [r.split(";")[0].strip() for r in requires("gitlocks") or []]
    assert any(r.startswith("click") for r in declared), declared
