"""gitlocks.store.location: finding the repository, begun before a verb's imports."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import git
from support.cli import alock, alock_process

from gitlocks.store import location
from gitlocks.store.local import Store


def test_a_verb_asks_git_where_the_repository_is_once(repo: Path, tmp_path: Path) -> None:
    """The look-ahead's calls are the ones the store uses: none is made twice."""
    trace = tmp_path / "trace.json"
    done = alock_process(
        repo, "check", "src/a.py", env={"AGENT_ID": "a1", "GIT_TRACE2_EVENT": str(trace)}
    )
    assert done.code == 0, done
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    started = [" ".join(e["argv"]) for e in events if e["event"] == "start"]
    assert sum(" rev-parse " in f" {s} " for s in started) == 1, started
    assert sum(" config -z --list" in s for s in started) == 1, started


def test_outside_a_repository_the_error_is_the_same(tmp_path: Path) -> None:
    done = alock(tmp_path, "list", AGENT_ID="a1")
    assert done.code == 2
    assert done.err.startswith("error: not a git repository"), done.err


def test_what_was_looked_ahead_and_not_taken_is_never_read_later(repo: Path) -> None:
    """A verb that stops before it opens the store (a usage error) leaves nothing for the
    next command to read: a setting changed between the two is seen."""
    assert alock(repo, "acquire", "--no-such-option", AGENT_ID="a1").code == 2
    assert not location._ahead
    git(repo, "config", "alock.ttl", "2h")
    assert Store.discover(os.fspath(repo)).config_get("alock.ttl") == "2h"


def test_a_look_ahead_is_taken_by_the_store_of_its_directory(repo: Path) -> None:
    location.look_ahead(os.fspath(repo))
    try:
        assert os.fspath(repo) in location._ahead
        store = Store.discover(os.fspath(repo))
        assert not location._ahead and store.root == os.path.realpath(repo)
    finally:
        location.drop_ahead()
