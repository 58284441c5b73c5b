"""Shared fixtures: a hermetic git environment and real temporary repositories."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture(autouse=True)
def hermetic(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own HOME and temporary directory (what a test or a child
    process leaves there goes with pytest's own), no system config, a fixed identity, no
    agent ids."""
    home = tmp_path_factory.mktemp("home")
    scratch = tmp_path_factory.mktemp("tmp")
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    for name in list(os.environ):
        if name.startswith("GIT_") and name != "GIT_CONFIG_NOSYSTEM":
            monkeypatch.delenv(name, raising=False)
    for name in ("AGENT_ID", "AGENT_PARENT_ID", "AGENT_SESSION_PID", "GITLOCKS_HOLDER",
                 "GITLOCKS_HOLDER_SCOPE", "CLAUDE_ENV_FILE", "XDG_STATE_HOME"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test Author")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "author@example.invalid")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test Committer")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "committer@example.invalid")
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test User\n\temail = user@example.invalid\n"
        "[init]\n\tdefaultBranch = main\n"
        '[protocol "file"]\n\tallow = always\n'
    )


def git(cwd: Path, *args: str, check: bool = True) -> str:
    """Run git in ``cwd`` and return its stdout."""
    proc = subprocess.run(["git", *args], cwd=cwd, check=check, capture_output=True, text=True)
    return proc.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A non-bare repository with one commit holding a few files."""
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q")
    (path / "README.md").write_text("hello\n")
    (path / "src").mkdir()
    (path / "src" / "app.py").write_text("print('app')\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


@pytest.fixture
def worktree(repo: Path, tmp_path: Path) -> Iterator[Path]:
    """A linked worktree of ``repo`` on its own branch."""
    path = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "side", str(path))
    yield path


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A live child process (a stand-in session), killed and reaped afterwards."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    proc.kill()
    proc.wait()
