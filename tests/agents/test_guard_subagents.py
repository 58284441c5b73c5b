"""Parallel sub-agents of one session are sub-holders (docs/design.md, sections 3.2 and
6.5): where the harness names the sub-agent an event comes from (Claude Code's
``agent_id`` and ``agent_type``, absent for the main thread), siblings block each other,
the session's own claims never block them, and the session's end ends theirs too.

Events are Claude Code 2.1.332's, run through ``sh -c`` from a stand-in named ``claude``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.cli import Result, alock
from support.harness import StandIn
from support.records import stored

SESSION = "5f1c2a9e-0000-4000-8000-000000000004"


def base(repo: Path, name: str) -> dict[str, Any]:
    return {
        "session_id": SESSION,
        "transcript_path": "/dev/null",
        "cwd": str(repo),
        "permission_mode": "default",
        "hook_event_name": name,
    }


def edit(repo: Path, path: str, agent: str = "") -> dict[str, Any]:
    """PreToolUse of Edit: from the main thread, or from the sub-agent ``agent``."""
    found = {
        **base(repo, "PreToolUse"),
        "tool_name": "Edit",
        "tool_input": {"file_path": str(repo / path), "old_string": "a", "new_string": "b"},
        "tool_use_id": "toolu_03",
    }
    if agent:
        found.update(agent_id=agent, agent_type="general-purpose")
    return found


def subagent_stop(repo: Path, agent: str) -> dict[str, Any]:
    return {
        **base(repo, "SubagentStop"),
        "stop_hook_active": False,
        "agent_id": agent,
        "agent_type": "general-purpose",
        "agent_transcript_path": "/dev/null",
    }


@pytest.fixture
def agent(tmp_path: Path, repo: Path) -> Iterator[StandIn]:
    one = StandIn(tmp_path / "harness", "claude", cwd=repo)
    yield one
    one.close()


def session_holder(agent: StandIn, repo: Path) -> str:
    got = agent.guard({**base(repo, "SessionStart"), "source": "startup"})
    assert got.code == 0, got
    found = re.search(
        r"you are ([A-Za-z0-9._-]+)\.",
        json.loads(got.out)["hookSpecificOutput"]["additionalContext"],
    )
    assert found, got
    return found.group(1)


def denial(got: Result) -> str:
    assert got.code == 0 and got.out, got
    out = json.loads(got.out)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny", out
    return str(out["permissionDecisionReason"])


def allowed(got: Result) -> None:
    assert got.code == 0 and got.out == "", got


def claims(repo: Path) -> dict[str, tuple[str, str | None]]:
    """Each claimed pattern -> (holder, parent)."""
    return {pattern: (r["holder"], r["parent"]) for r in stored(repo) for pattern in r["paths"]}


def test_sibling_sub_agents_block_each_other(repo: Path, agent: StandIn) -> None:
    session = session_holder(agent, repo)
    allowed(agent.guard(edit(repo, "src/a.py", agent="a1b2c3d4e5f6")))
    holder, parent = claims(repo)["src/a.py"]
    assert re.fullmatch(re.escape(session) + r"\.sub-[0-9a-f]{8}", holder), holder
    assert parent == session
    reason = denial(agent.guard(edit(repo, "src/a.py", agent="f6e5d4c3b2a1")))
    assert f"held by {holder}" in reason, reason
    allowed(agent.guard(edit(repo, "src/a.py", agent="a1b2c3d4e5f6")))  # its own


def test_the_sessions_own_claims_still_cover_its_sub_agents(repo: Path, agent: StandIn) -> None:
    session = session_holder(agent, repo)
    allowed(agent.guard(edit(repo, "src/b.py")))  # the main thread claims the file
    assert claims(repo)["src/b.py"] == (session, None)
    allowed(agent.guard(edit(repo, "src/b.py", agent="a1b2c3d4e5f6")))
    allowed(agent.guard(edit(repo, "src/b.py", agent="f6e5d4c3b2a1")))
    assert agent.shell("git alock acquire 'lib/**'").code == 0  # the session's, wider
    allowed(agent.guard(edit(repo, "lib/x.py", agent="a1b2c3d4e5f6")))
    assert claims(repo)["lib/x.py"][1] == session  # a sub-agent's, inside the session's
    assert "held by" in denial(agent.guard(edit(repo, "lib/x.py", agent="f6e5d4c3b2a1")))


def test_a_finished_sub_agents_claims_pass_to_its_session(repo: Path, agent: StandIn) -> None:
    session = session_holder(agent, repo)
    allowed(agent.guard(edit(repo, "src/a.py", agent="a1b2c3d4e5f6")))
    got = agent.guard(subagent_stop(repo, "a1b2c3d4e5f6"))
    assert got.code == 0 and got.out == "", got
    assert claims(repo)["src/a.py"] == (session, None)
    allowed(agent.guard(edit(repo, "src/a.py")))  # the session goes on with the work
    # Now the session's: a sub-agent it starts next works under it.
    allowed(agent.guard(edit(repo, "src/a.py", agent="f6e5d4c3b2a1")))


def test_session_end_releases_the_sub_agents_claims_too(repo: Path, agent: StandIn) -> None:
    session_holder(agent, repo)
    allowed(agent.guard(edit(repo, "src/a.py", agent="a1b2c3d4e5f6")))
    allowed(agent.guard(edit(repo, "src/c.py")))
    got = agent.guard({**base(repo, "SessionEnd"), "reason": "prompt_input_exit"})
    assert got.code == 0, got
    assert claims(repo) == {}


def test_a_sub_agents_holder_stays_a_valid_id_under_a_long_agent_id(
    tmp_path: Path, repo: Path
) -> None:
    long = "lead-" + "x" * 59
    one = StandIn(tmp_path / "long", "claude", cwd=repo, AGENT_ID=long)
    try:
        allowed(one.guard(edit(repo, "src/a.py", agent="a1b2c3d4e5f6")))
    finally:
        one.close()
    holder, parent = claims(repo)["src/a.py"]
    assert len(holder) <= 64 and re.fullmatch(r"[A-Za-z0-9._-]+\.sub-[0-9a-f]{8}", holder)
    assert parent == long


def test_install_registers_the_sub_agents_end_and_it_reaches_the_guard(
    repo: Path, agent: StandIn
) -> None:
    """Without a SubagentStop hook a finished sub-agent's claims would stay its own until
    the session ends, and keep the session's main thread out of those files."""
    assert alock(repo, "install-agent-hooks", "--for", "claude").code == 0
    hooks = json.loads((repo / ".claude" / "settings.json").read_text())["hooks"]
    [group] = hooks["SubagentStop"]
    [entry] = group["hooks"]
    got = agent.hook(entry["command"], edit(repo, "src/app.py", agent="helper-1"))
    assert got.code == 0, got
    assert json.loads(alock(repo, "list", "--json").out)[0]["holder"].count(".sub-") == 1
    got = agent.hook(entry["command"], subagent_stop(repo, "helper-1"))
    assert got.code == 0, got
    [lock] = json.loads(alock(repo, "list", "--json").out)
    assert ".sub-" not in lock["holder"], lock
