"""Helpers shared by the benchmark scripts (run them as ``python bench/NAME.py``)."""

from __future__ import annotations

import subprocess
from pathlib import Path


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
