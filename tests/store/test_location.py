"""gitlocks.store.location: finding the repository, as git finds it."""

from __future__ import annotations

import json
from pathlib import Path

from support.cli import alock, alock_process


def test_a_verb_asks_git_where_the_repository_is_once(repo: Path, tmp_path: Path) -> None:
    """The store asks git where it is and for its settings once each."""
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
