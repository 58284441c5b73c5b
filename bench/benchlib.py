"""Helpers shared by the benchmark scripts (run them as ``python bench/NAME.py``).

The builders are the tests' own (``tests/support``): the bench seeds records and serves
remotes exactly as the tests do. Importing this module puts ``tests/`` on the path.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.daemon import Daemon as GitDaemon
from support.records import seed_locks

__all__ = ["GitDaemon", "git", "make_repo", "seed_locks"]


def git(cwd: Path, *args: str) -> str:
    """Run git in ``cwd``; fail loudly; return its stdout without surrounding space."""
    proc = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return proc.stdout.strip()


def make_repo(base: Path, name: str) -> Path:
    """A new repository ``base/name`` with one commit."""
    path = base / name
    path.mkdir()
    git(path, "init", "-q")
    (path / "README.md").write_text("bench\n")
    git(path, "add", "README.md")
    git(path, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "init")
    return path


def bench_environment(base: Path, agent: str | None = "bench-main") -> dict[str, str]:
    """Make this process's environment the bench's own (HOME in ``base``, no system
    config, no agent variables, a fixed identity, ``main`` for new repositories), and
    return the environment commands run with: ``AGENT_ID`` ``agent`` (None: unset) and
    this Python's scripts first on PATH."""
    os.environ["HOME"] = str(base)
    os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
    for key in ("AGENT_ID", "AGENT_PARENT_ID", "AGENT_SESSION_PID", "GIT_DIR"):
        os.environ.pop(key, None)
    git(base, "config", "--global", "user.name", "bench")
    git(base, "config", "--global", "user.email", "bench@example.invalid")
    git(base, "config", "--global", "init.defaultBranch", "main")
    env = dict(os.environ, **({"AGENT_ID": agent} if agent else {}))
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return env


def interleaved(
    runs: int, sizes: list[int], labels: list[str], measure: Callable[[int, int, int], float]
) -> dict[tuple[str, int], list[float]]:
    """Milliseconds by (label, size): ``measure(row, run, size)`` (the row by its index in
    ``labels``) for every run, size and row in turn, so that drift hits all alike; run 0
    warms the page cache and is not counted."""
    samples: dict[tuple[str, int], list[float]] = {(b, n): [] for b in labels for n in sizes}
    for i in range(runs + 1):
        for size in sizes:
            for row, label in enumerate(labels):
                ms = measure(row, i, size)
                if i:
                    samples[label, size].append(ms)
    return samples


def verb_of(argv: list[str]) -> list[str]:
    """git's arguments without the options that only name the repository or set config."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("-c", "--git-dir", "--work-tree", "-C"):
            skip = True
        elif not arg.startswith(("--git-dir=", "--work-tree=")):
            kept.append(arg)
    return kept
