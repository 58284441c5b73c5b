"""Attacks on "one agent session is one holder": hostile register files, odd process trees,
an MCP server that starts before the session's first hook, and the other ends of the
agent loop. Each session is a stand-in harness process (``tests/support/harness.py``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.harness import StandIn
from test_one_holder import denied, edit, event, holder_of, records

from gitlocks.identity import process_start_time
from gitlocks.identity.sessions import _key, register_dir


@pytest.fixture
def standins() -> Iterator[list[StandIn]]:
    made: list[StandIn] = []
    yield made
    for one in made:
        one.close()


def start(
    standins: list[StandIn], tmp_path: Path, repo: Path, name: str = "claude", **env: str
) -> StandIn:
    one = StandIn(tmp_path / f"bin-{len(standins)}", name, cwd=repo, **env)
    standins.append(one)
    return one


def whoami(session: StandIn, cwd: Path | None = None, **env: str) -> dict[str, object]:
    got = session.shell("git alock whoami --json", cwd=cwd, **env)
    assert got.code == 0, got
    found: dict[str, object] = json.loads(got.out)
    return found


def entry_file(session: StandIn, suffix: str = ".json") -> Path:
    """The register's file for the stand-in's process, named as the register names it."""
    where = register_dir()
    assert where is not None
    start_time = process_start_time(session.pid)
    assert start_time
    return where / (_key(session.pid, start_time) + suffix)


# --- hostile register files ----------------------------------------------------------------


def test_a_deeply_nested_entry_is_no_entry_not_a_crash(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    agent = start(standins, tmp_path, repo)
    me = holder_of(agent, repo)
    path = entry_file(agent)
    path.write_text("[" * 5000)  # json.loads raises RecursionError, no ValueError
    got = agent.shell("git alock whoami --json")
    assert got.code == 0 and "Traceback" not in got.err, got
    # The guard writes the entry anew: the session is its holder again.
    assert denied(agent.guard(edit(repo, "src/app.py"))) == ""
    assert json.loads(agent.shell("git alock whoami --json").out)["holder"] == me


def test_a_deeply_nested_line_of_repositories_does_not_stop_session_end(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    agent = start(standins, tmp_path, repo)
    holder_of(agent, repo)
    assert denied(agent.guard(edit(repo, "src/app.py"))) == ""
    with open(entry_file(agent, ".repos"), "a") as f:
        f.write("[" * 5000 + "\n")
    got = agent.guard(event(repo, "SessionEnd"))
    assert got.code == 0 and "internal error" not in got.err, got
    assert records(repo) == []
