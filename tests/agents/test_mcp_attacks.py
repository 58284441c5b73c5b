"""The MCP server as a careless or hostile client meets it: through the harness that
started it (a stand-in ``claude`` speaking with the SDK's own client), next to the same
session's shell, and as raw lines on its standard input. Each tool takes its input as its
verb does, and the server holds its bodies to the declaration they serve."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.cli import alock
from support.harness import StandIn

pytest.importorskip("mcp")


@pytest.fixture
def claude(tmp_path: Path, repo: Path) -> Iterator[StandIn]:
    """One harness session, no AGENT_ID: the shell and the MCP server are one holder."""
    one = StandIn(tmp_path / "bin", "claude", repo)
    yield one
    one.close()


def records(repo: Path) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = alock(repo, "list", "--json").json()
    return got


# --- one session, one holder, one liveness ---------------------------------------------------


def test_an_explicit_agent_id_binds_the_servers_claims_to_no_process_as_the_shells(
    repo: Path, tmp_path: Path
) -> None:
    """A claim under an explicit id that no registered harness adopted lives by its TTL:
    through MCP as through the shell, so the harness's exit frees neither."""
    agent = StandIn(tmp_path / "bin", "claude", repo, AGENT_ID="agent-7")
    try:
        [who, claim] = agent.mcp(("whoami", {}), ("acquire", {"paths": ["lib/**"]}))
        by_shell = agent.shell("git alock acquire 'pkg/**' --json")
        shell_who = json.loads(agent.shell("git alock whoami --json").out)
    finally:
        agent.close()
    tool_who = json.loads(who["text"])
    assert tool_who["holder"] == shell_who["holder"] == "agent-7"
    assert tool_who["session"]["source"] == shell_who["session"]["source"], (tool_who, shell_who)
    by_tool = json.loads(claim["text"])["lock"]
    assert by_tool["pid"] == json.loads(by_shell.out)["lock"]["pid"]
    # The harness is gone: both claims still refuse another holder.
    for path in ("lib/a.py", "pkg/a.py"):
        refused = alock(repo, "acquire", path, "--json", AGENT_ID="other")
        assert refused.code == 1 and refused.json()["conflicts"][0]["holder"] == "agent-7"
