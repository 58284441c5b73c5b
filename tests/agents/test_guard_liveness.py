"""An agent that edits is alive: an edit inside its own claim is a heartbeat, so a long
turn of edits is never read as STALE and never outlives its claim (docs/design.md, 6.5).

The clock is moved the way the table sees it: the holder's record is rewritten with its
times moved back, as if the minutes had passed since it last renewed. Events are Claude
Code 2.1.332's, run through ``sh -c`` from a stand-in process named ``claude``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from support.cli import alock
from support.harness import StandIn
from support.records import plant

STAMP = "%Y-%m-%dT%H:%M:%SZ"


def edit(repo: Path, path: str) -> dict[str, Any]:
    """Claude Code 2.1.332's PreToolUse of its Edit tool (main thread: no agent_id)."""
    return {
        "session_id": "5f1c2a9e-0000-4000-8000-000000000001",
        "transcript_path": "/dev/null",
        "cwd": str(repo),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": str(repo / path), "old_string": "a", "new_string": "b"},
        "tool_use_id": "toolu_01",
    }


@pytest.fixture
def agent(tmp_path: Path, repo: Path) -> Iterator[StandIn]:
    one = StandIn(tmp_path / "harness", "claude", cwd=repo)
    yield one
    one.close()


def record(repo: Path) -> dict[str, Any]:
    [found] = alock(repo, "list", "--json").json()
    assert isinstance(found, dict)
    return found


def age(repo: Path, minutes: int) -> None:
    """Move the clock ``minutes`` on, as the table sees the one lock: every time in it
    moved back."""
    found = record(repo)

    def back(text: str) -> str:
        moment = datetime.strptime(text, STAMP).replace(tzinfo=timezone.utc)
        return (moment - timedelta(minutes=minutes)).strftime(STAMP)

    for key in ("created_at", "renewed_at", "expires_at"):
        found[key] = back(found[key])
    for note in found["notes"]:
        note["at"] = back(note["at"])
    plant(repo, found["id"], found)


def state(repo: Path) -> str:
    """The lock's state as ``git alock status`` judges it for someone else."""
    got = alock(repo, "status", "--json", AGENT_ID="onlooker").json()
    [lock] = got["others"]
    return str(lock["state"])


def allowed(got: Any) -> None:
    assert got.code == 0 and got.out == "", got


def test_a_ten_minute_turn_of_edits_is_never_stale_nor_expired(repo: Path, agent: StandIn) -> None:
    git(repo, "config", "alock.ttl", "12m")
    allowed(agent.guard(edit(repo, "src/app.py")))
    first = record(repo)["id"]
    for _ in range(5):  # an edit every 3 minutes, for 15 minutes: longer than the TTL
        age(repo, 3)
        allowed(agent.guard(edit(repo, "src/app.py")))
        assert state(repo) == "live"
    now = record(repo)
    assert now["id"] == first  # the same claim, kept alive: never expired and re-made
    renewed = datetime.strptime(now["renewed_at"], STAMP).replace(tzinfo=timezone.utc)
    assert datetime.now(timezone.utc) - renewed < timedelta(minutes=5)
    log = git(repo, "log", "--format=%B", "refs/agent-locks-meta/journal")
    assert '"event": "renewed"' in log


def test_an_edit_renews_only_once_it_is_due(repo: Path, agent: StandIn) -> None:
    allowed(agent.guard(edit(repo, "src/app.py")))
    journal = git(repo, "rev-parse", "refs/agent-locks-meta/journal")
    for _ in range(3):
        allowed(agent.guard(edit(repo, "src/app.py")))
    assert git(repo, "rev-parse", "refs/agent-locks-meta/journal") == journal  # no write
    age(repo, 6)  # quiet for more than half of alock.staleAfter (10m)
    allowed(agent.guard(edit(repo, "src/app.py")))
    assert git(repo, "rev-parse", "refs/agent-locks-meta/journal") != journal
    assert state(repo) == "live"


def test_an_edit_outside_its_claims_renews_nothing(repo: Path, agent: StandIn) -> None:
    (repo / ".alockignore").write_text("docs/**\n")
    git(repo, "add", ".alockignore")
    git(repo, "commit", "-q", "-m", "ignore docs")
    allowed(agent.guard(edit(repo, "src/app.py")))
    age(repo, 11)
    before = record(repo)["renewed_at"]
    allowed(agent.guard(edit(repo, "docs/guide.md")))  # nobody needs to claim it
    git(repo, "config", "alock.guardMode", "block")
    allowed(agent.guard(edit(repo, "README.md")))  # free, and block mode claims nothing
    assert state(repo) == "stale"
    assert record(repo)["renewed_at"] == before


def test_another_holders_edit_renews_nothing_of_theirs(repo: Path, agent: StandIn) -> None:
    assert alock(repo, "acquire", "src/**", AGENT_ID="lead").code == 0
    age(repo, 11)
    before = record(repo)["renewed_at"]
    got = agent.guard(edit(repo, "src/app.py"))
    assert got.code == 0 and "deny" in json.loads(got.out)["hookSpecificOutput"].get(
        "permissionDecision", ""
    ), got
    [lead] = [r for r in alock(repo, "list", "--json").json() if r["holder"] == "lead"]
    assert lead["renewed_at"] == before


# --- interrupted work ------------------------------------------------------------------


def session_start(agent: StandIn, repo: Path) -> str:
    got = agent.guard(
        {
            "session_id": "5f1c2a9e-0000-4000-8000-000000000002",
            "transcript_path": "/dev/null",
            "cwd": str(repo),
            "hook_event_name": "SessionStart",
            "source": "startup",
        }
    )
    assert got.code == 0, got
    return str(json.loads(got.out)["hookSpecificOutput"]["additionalContext"])


def denial(got: Any) -> str:
    assert got.code == 0 and got.out, got
    out = json.loads(got.out)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny", out
    return str(out["permissionDecisionReason"])


@pytest.fixture
def crashed(tmp_path: Path, repo: Path) -> str:
    """An agent that claimed src/**, left a note and a claim of docs/** without one, and
    crashed: its holder."""
    gone = StandIn(tmp_path / "gone", "claude", cwd=repo)
    try:
        assert gone.shell("git alock acquire 'src/**' -m 'split the parser'").code == 0
        assert gone.shell("git alock note 'src/**' 'step 2 of 3: move lexer.py next'").code == 0
        assert gone.shell("git alock acquire 'docs/**'").code == 0
        [holder] = {r["holder"] for r in alock(repo, "list", "--json").json()}
    finally:
        gone.close()  # its process ends: its claims' session is gone
    return str(holder)


def test_an_edit_inside_interrupted_work_is_denied_with_the_note_and_resume(
    repo: Path, agent: StandIn, crashed: str
) -> None:
    reason = denial(agent.guard(edit(repo, "src/app.py")))
    assert "INTERRUPTED WORK" in reason and crashed in reason, reason
    assert '"step 2 of 3: move lexer.py next"' in reason, reason
    assert "git alock resume 'src/**'" in reason, reason
    # The interrupted work stays; its note-less, dead claim of docs/** the listing cleared.
    listed = alock(repo, "list", "--json").json()
    assert [r["paths"] for r in listed if r["holder"] == crashed] == [["src/**"]]
    # The successor takes the work over as told; its edits then go on.
    assert agent.shell("git alock resume 'src/**'").code == 0
    allowed(agent.guard(edit(repo, "src/app.py")))
    [resumed] = [r for r in alock(repo, "list", "--json").json() if "src/**" in r["paths"]]
    assert resumed["holder"] != crashed and resumed["notes"]


def test_a_dead_claim_without_notes_is_free_to_edit(
    repo: Path, agent: StandIn, crashed: str
) -> None:
    allowed(agent.guard(edit(repo, "docs/guide.md")))


def test_session_start_says_what_can_be_resumed_and_what_is_dead(
    repo: Path, agent: StandIn, crashed: str
) -> None:
    assert alock(repo, "acquire", "bench/**", AGENT_ID="bob").code == 0
    told = session_start(agent, repo)
    rest = told.partition("Interrupted work you can resume (1)")[2]
    assert rest, told
    assert "git alock resume 'src/**'" in rest and "step 2 of 3" in rest, told
    assert "Claims held by others (1):\n- bench/** held by bob" in told, told
    dead = told.partition("Claims of ended sessions")[2]
    assert "docs/** held by " + crashed in dead and "DEAD" in dead, told
    assert "src/**" not in told.partition("Claims held by others")[2].partition("Claims of")[0]
