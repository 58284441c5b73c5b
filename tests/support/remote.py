"""Real lock remotes for the remote-mode tests: bare repositories and a loopback git daemon."""

from __future__ import annotations

import heapq
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
    url: str,
    path: Path,
    *,
    remote_mode: bool = True,
    config: dict[str, str] | None = None,
    shards: int | None = None,
) -> Path:
    """A clone of ``url``, with ``git config`` settings, switched to remote mode unless told.

    ``shards``: the layout a new lock remote gets (``remote origin --shards N``; 1 is the
    single journal); None leaves it to gitlocks (sharded); 0 lays nothing out (``alock.remote``
    set by hand, as a clone of an earlier version joined: the first write starts one
    journal). A remote laid out already keeps its layout either way."""
    git(path.parent, "clone", "-q", url, path.name)
    for key, value in (config or {}).items():
        git(path, "config", key, value)
    if remote_mode and shards == 0:
        git(path, "config", "alock.remote", "origin")
    elif remote_mode:
        layout = () if shards is None else ("--shards", str(shards))
        got = alock(path, "remote", "origin", *layout)
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


def remote_events(bare: Path) -> list[dict[str, Any]]:
    """Every journal event on the remote, oldest first: of its journal, or of a sharded
    remote's shard journals, each event once (a write leasing several shards journals it in
    each; writes in different shards within one second in either order), without the
    ``created`` event that lays a new remote out."""
    repo = pygit2.Repository(str(bare))
    prefix = "refs/agent-locks-meta/shards/"
    tips = [repo.references[n].target for n in sorted(repo.references) if n.startswith(prefix)]
    ref = repo.references.get("refs/agent-locks-meta/journal")
    if not tips and ref is not None:
        tips = [ref.target]
    chains = []
    for tip in tips:
        events: list[dict[str, Any]] = []
        walk = repo.walk(tip, pygit2.enums.SortMode.TOPOLOGICAL)
        for commit in walk:
            body = commit.message.partition("\n\n")[2]
            batch = [json.loads(line) for line in body.splitlines() if line.startswith("{")]
            events[:0] = [e for e in batch if e.get("event") != "created"]
        chains.append(events)
    seen: set[str] = set()
    found = []
    for event in heapq.merge(*chains, key=lambda e: str(e.get("at", ""))):
        key = json.dumps(event, sort_keys=True)
        if key not in seen:
            seen.add(key)
            found.append(event)
    return found


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
