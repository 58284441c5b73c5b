"""The page's holders are every agent session running here, holding or not: a supervisor
sees an agent that has started and claimed nothing yet. Before, only holders of claims
were listed. Asked of the server's state document (no browser needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import git
from support.cli import alock
from support.guard import event
from support.harness import StandIn
from test_ui import fetch, serve

__all__ = ["serve"]  # the fixture, imported so pytest finds it


def _holders(ui: Any) -> dict[str, Any]:
    code, body, _ = fetch(f"{ui.url}state")
    assert code == 200
    return {h["holder"]: h for h in json.loads(body)["holders"]}


def test_a_session_that_holds_nothing_is_a_holder_while_it_runs(
    repo: Path, tmp_path: Path, serve: Any
) -> None:
    agent = StandIn(tmp_path / "harness", "claude", cwd=repo, AGENT_ID="reviewer")
    try:
        assert agent.guard(event(repo, "SessionStart")).code == 0
        assert alock(repo, "acquire", "src/**", AGENT_ID="alice").code == 0
        ui = serve(repo)
        holders = _holders(ui)
        ui.stop()
        assert set(holders) == {"alice", "reviewer"}, holders
        idle = holders["reviewer"]
        assert idle["running"] is True and idle["locks"] == [] and idle["state"] == "live"
        assert idle["pid"] == agent.pid and idle["worktree"] == str(repo.resolve())
        assert idle["branch"] == "main" and idle["last_active"] is None
        assert holders["alice"]["running"] is False  # a claim from a terminal: no session
    finally:
        agent.close()
    ui = serve(repo)  # its process gone: no longer running, and it held nothing
    assert set(_holders(ui)) == {"alice"}
    ui.stop()


def test_a_session_that_claims_is_one_holder_marked_running(
    repo: Path, tmp_path: Path, serve: Any
) -> None:
    agent = StandIn(tmp_path / "harness", "claude", cwd=repo, AGENT_ID="writer")
    try:
        assert agent.guard(event(repo, "SessionStart")).code == 0
        assert agent.shell("git alock acquire README.md").code == 0
        ui = serve(repo)
        holders = _holders(ui)
        ui.stop()
        assert list(holders) == ["writer"], holders
        assert holders["writer"]["running"] is True and len(holders["writer"]["locks"]) == 1
    finally:
        agent.close()


def test_a_session_of_another_repository_is_not_shown(
    repo: Path, tmp_path: Path, serve: Any
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    agent = StandIn(tmp_path / "harness", "claude", cwd=other, AGENT_ID="elsewhere")
    try:
        assert agent.guard(event(other, "SessionStart")).code == 0
        ui = serve(repo)
        assert _holders(ui) == {}
        ui.stop()
    finally:
        agent.close()
