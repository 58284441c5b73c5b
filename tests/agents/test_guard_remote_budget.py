"""A dead lock remote costs a guarded edit at most ``alock.guardRemoteTimeout`` in all,
and the answer says what is known (nothing answered; whether anything was sent) and what
the guard decided (docs/design.md, section 6.5).

The remotes are real and unreachable: a port nobody listens on, and a listener that
accepts and never answers. Time is measured only as a loose upper bound (three budgets).
Events are Claude Code 2.1.332's, run through ``sh -c`` from a stand-in named ``claude``.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from support.cli import Result, alock
from support.harness import StandIn
from support.remote import make_bare, make_clone

BUDGET = 2.0  # alock.guardRemoteTimeout, seconds


def edit(repo: Path, path: str) -> dict[str, Any]:
    return {
        "session_id": "5f1c2a9e-0000-4000-8000-000000000003",
        "transcript_path": "/dev/null",
        "cwd": str(repo),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": str(repo / path), "content": "x\n"},
        "tool_use_id": "toolu_02",
    }


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A clone of a sharded lock remote, where alice holds src/**."""
    bare = make_bare(tmp_path / "locks.git")
    mine = make_clone(bare.as_uri(), tmp_path / "mine", shards=1)
    assert alock(mine, "remote", "--shards", "8").code == 0
    assert alock(mine, "acquire", "src/**", AGENT_ID="alice").code == 0
    git(mine, "config", "alock.guardRemoteTimeout", f"{BUDGET:g}s")
    return mine


@pytest.fixture
def agent(tmp_path: Path, clone: Path) -> Iterator[StandIn]:
    one = StandIn(tmp_path / "harness", "claude", cwd=clone)
    yield one
    one.close()


@pytest.fixture
def silent() -> Iterator[int]:
    """A port that accepts connections and never says a word: its number."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield listener.getsockname()[1]


def closed_port() -> int:
    """A port nothing listens on (bound, then let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def timed(agent: StandIn, event: dict[str, Any]) -> tuple[float, Result]:
    started = time.monotonic()
    got = agent.guard(event)
    return time.monotonic() - started, got


def answer(got: Result) -> dict[str, Any]:
    assert got.code == 0 and got.out, got
    out: dict[str, Any] = json.loads(got.out)["hookSpecificOutput"]
    return out


def told(got: Result) -> str:
    """The warning the agent is given while its edit goes on."""
    out = answer(got)
    assert "permissionDecision" not in out, out
    return str(out["additionalContext"])


def test_a_remote_that_never_answers_costs_one_budget_and_is_not_called_sent(
    clone: Path, agent: StandIn, silent: int
) -> None:
    git(clone, "config", "remote.origin.url", f"git://127.0.0.1:{silent}/locks.git")
    took, got = timed(agent, edit(clone, "README.md"))
    said = told(got)
    assert "no answer came back" in said and "was sent" not in said, said
    # Whether it landed is not asked on a budget of its own: the one budget is spent.
    assert "not tried" in said.partition("whether it did")[2], said
    assert "let the edit go on unclaimed" in said, said
    assert took < 3 * BUDGET + 2, took


def test_a_remote_nobody_listens_on_is_said_so_at_once(clone: Path, agent: StandIn) -> None:
    git(clone, "config", "remote.origin.url", f"git://127.0.0.1:{closed_port()}/locks.git")
    took, got = timed(agent, edit(clone, "README.md"))
    said = told(got)
    assert "cannot reach the lock remote 'origin'" in said, said
    assert "let the edit go on unclaimed" in said, said
    assert took < 3 * BUDGET + 2, took


def test_a_held_file_is_denied_on_the_clones_view_within_the_budget(
    clone: Path, agent: StandIn, silent: int
) -> None:
    git(clone, "config", "remote.origin.url", f"git://127.0.0.1:{silent}/locks.git")
    git(clone, "config", "alock.guardMode", "block")
    took, got = timed(agent, edit(clone, "src/app.py"))
    out = answer(got)
    reason = str(out["permissionDecisionReason"])
    assert out["permissionDecision"] == "deny" and "held by alice" in reason, out
    assert "Decided on the lock view from " in reason, reason
    assert "could not reach origin" in reason, reason
    assert took < 3 * BUDGET + 2, took
