"""Real lock remotes for the remote-mode tests: bare repositories and a loopback git daemon."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pygit2
import pytest
from conftest import git

from gitlocks.core.record import LockRecord
from support.cli import alock
from support.daemon import Daemon


def make_bare(path: Path, **config: str) -> Path:
    """A bare repository with one commit on main, and extra ``git config`` settings."""
    git(path.parent, "init", "-q", "--bare", path.name)
    seed = path.parent / f"{path.name}-seed"
    git(path.parent, "init", "-q", seed.name)
    (seed / "README.md").write_text("shared\n")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "initial")
    git(seed, "push", "-q", path.as_uri(), "HEAD:refs/heads/main")
    for key, value in config.items():
        git(path, "config", key, value)
    return path


def make_clone(
    url: str, path: Path, *, remote_mode: bool = True, config: dict[str, str] | None = None
) -> Path:
    """A clone of ``url``, with ``git config`` settings, switched to remote mode unless told."""
    git(path.parent, "clone", "-q", url, path.name)
    for key, value in (config or {}).items():
        git(path, "config", key, value)
    if remote_mode:
        got = alock(path, "remote", "origin")
        assert got.code == 0, got.err
    return path


def remote_locks(bare: Path) -> dict[str, LockRecord]:
    """The lock records the remote holds, by id."""
    repo = pygit2.Repository(str(bare))
    found = {}
    for name in repo.references:
        if name.startswith("refs/agent-locks/"):
            blob: Any = repo[repo.references[name].target]
            record = LockRecord.from_json(blob.data)
            found[record.id] = record
    return found


def remote_events(bare: Path) -> list[dict[str, object]]:
    """Every journal event on the remote, oldest first."""
    repo = pygit2.Repository(str(bare))
    ref = repo.references.get("refs/agent-locks-meta/journal")
    if ref is None:
        return []
    events: list[dict[str, object]] = []
    walk = repo.walk(ref.target, pygit2.enums.SortMode.TOPOLOGICAL)
    for commit in walk:
        body = commit.message.partition("\n\n")[2]
        batch = []
        for line in body.splitlines():
            if line.startswith("{"):
                batch.append(json.loads(line))
        events[:0] = batch
    return events


def refs_of(path: Path) -> str:
    """Every ref of a repository with its value: a snapshot to compare."""
    return git(path, "for-each-ref", "--format=%(refname) %(objectname)")


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    base = tmp_path / "served"
    base.mkdir()
    served = Daemon(base)
    served.start()
    yield served
    served.stop()
