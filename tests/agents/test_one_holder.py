"""One agent session is one holder, everywhere it acts: its guard, the commands of its
shell tool, the MCP server it started and the hooks of its commits.

Each session is a stand-in harness process named like the real one (``claude``, ``node``,
``codex``), whose hooks run through ``sh -c``, whose commands run through ``bash -c`` and
whose MCP server is started by it and spoken to with the SDK's own client. No test sets
``AGENT_ID`` unless it is about it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from support.cli import alock
from support.harness import StandIn

from gitlocks.agents.commands import guard_command

PRE_TOOL = {"claude": "PreToolUse", "codex": "PreToolUse", "gemini": "BeforeTool"}
TOOLS = {"claude": "Edit", "gemini": "write_file"}


def edit(repo: Path, path: str, harness: str = "claude") -> dict[str, Any]:
    return {
        "session_id": "sess-1",
        "cwd": str(repo),
        "hook_event_name": PRE_TOOL[harness],
        "tool_name": TOOLS[harness],
        "tool_input": {"file_path": str(repo / path), "content": "x"},
    }


def event(repo: Path, name: str) -> dict[str, Any]:
    return {"session_id": "sess-1", "cwd": str(repo), "hook_event_name": name}


def denied(got: Any) -> str:
    """The denial's reason, or "" when the edit may go on."""
    assert got.code == 0, got
    if not got.out.strip():
        return ""
    doc = json.loads(got.out)
    if "hookSpecificOutput" in doc:
        out = doc["hookSpecificOutput"]
        return (
            str(out.get("permissionDecisionReason", ""))
            if out.get("permissionDecision") == "deny"
            else ""
        )
    return str(doc.get("reason", "")) if doc.get("decision") == "deny" else ""


def records(repo: Path) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = alock(repo, "list", "--json").json()
    return got


@pytest.fixture
def standins(tmp_path: Path) -> Iterator[list[StandIn]]:
    made: list[StandIn] = []
    yield made
    for one in made:
        one.close()


def start(standins: list[StandIn], tmp_path: Path, repo: Path, name: str = "claude",
          **env: str) -> StandIn:  # fmt: skip
    one = StandIn(tmp_path / f"bin-{len(standins)}", name, repo, (), **env)
    standins.append(one)
    return one


def holder_of(session: StandIn, repo: Path, harness: str = "claude") -> str:
    got = session.guard(event(repo, "SessionStart"), harness)
    assert got.code == 0, got
    text = str(json.loads(got.out)["hookSpecificOutput"]["additionalContext"])
    assert "the guard is active" in text
    return text.split("you are ", 1)[1].split(".", 1)[0]


def test_the_guard_the_shell_and_mcp_are_one_holder(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    claude = start(standins, tmp_path, repo)
    me = holder_of(claude, repo)
    assert me.startswith("claude-")
    who = claude.shell("git alock whoami --json")
    assert who.code == 0 and json.loads(who.out)["holder"] == me, who
    # The skill's way: claim first, then edit; the guard never denies the holder its own.
    assert claude.shell("git alock acquire 'pkg/**' -m work").out.startswith("ACQUIRED")
    assert denied(claude.guard(edit(repo, "pkg/a.py"))) == ""
    [mcp_who, mcp_claim] = claude.mcp(("whoami", {}), ("acquire", {"paths": ["lib/**"]}))
    assert json.loads(mcp_who["text"])["holder"] == me
    assert json.loads(mcp_claim["text"])["status"] == "acquired"
    assert denied(claude.guard(edit(repo, "lib/x.py"))) == ""
    # A file the guard claimed is the shell's to release.
    assert denied(claude.guard(edit(repo, "other/b.py"))) == ""
    assert {r["holder"] for r in records(repo)} == {me}
    assert claude.shell("git alock release other/b.py").out.startswith("RELEASED")
    assert sorted(p for r in records(repo) for p in r["paths"]) == ["lib/**", "pkg/**"]


@pytest.mark.parametrize("process, harness", [("node", "gemini"), ("codex", "codex")])
def test_a_harness_is_one_holder_whatever_its_process_is_called(
    repo: Path, tmp_path: Path, standins: list[StandIn], process: str, harness: str
) -> None:
    agent = start(standins, tmp_path, repo, process)
    me = holder_of(agent, repo, harness)
    assert me.startswith(f"{harness}-")
    assert json.loads(agent.shell("git alock whoami --json").out)["holder"] == me
    assert agent.shell("git alock acquire src/app.py").out.startswith("ACQUIRED")
    assert alock(repo, "check", "src/app.py", "--json").json()[0]["locks"][0]["holder"] == me


def test_another_session_is_another_holder_and_is_denied(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    one, two = start(standins, tmp_path, repo), start(standins, tmp_path, repo)
    first, second = holder_of(one, repo), holder_of(two, repo)
    assert first != second
    assert one.shell("git alock acquire 'src/**'").code == 0
    reason = denied(two.guard(edit(repo, "src/app.py")))
    assert f"held by {first}" in reason
    refused = two.shell("git alock acquire src/app.py")
    assert refused.code == 1 and f"by {first}" in refused.out


def test_commits_and_merges_carry_the_sessions_id_and_pass_its_own_claims(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    assert alock(repo, "install-hooks").code == 0
    git(repo, "config", "alock.hookMode", "block")
    agent = start(standins, tmp_path, repo, "node")
    me = holder_of(agent, repo, "gemini")
    assert denied(agent.guard(edit(repo, "src/app.py", "gemini"), "gemini")) == ""
    (repo / "src" / "app.py").write_text("print('changed')\n")
    done = agent.shell("git commit -qam 'change app'")
    assert done.code == 0, done
    assert git(repo, "log", "-1", "--format=%(trailers:key=Agent-Id,valueonly)").strip() == me
    # A merge, with -m or not, gets a real trailer: a blank line before it.
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "src" / "app.py").write_text("print('feature')\n")
    assert agent.shell("git commit -qam feature").code == 0
    git(repo, "checkout", "-q", "main")
    (repo / "README.md").write_text("main moved\n")
    git(repo, "commit", "-qam", "main moves")
    merged = agent.shell("git merge --no-ff -m 'merge feature' feature")
    assert merged.code == 0, merged
    message = git(repo, "log", "-1", "--format=%B")
    assert message.startswith("merge feature\n\nAgent-Id: "), message
    assert git(repo, "log", "-1", "--format=%(trailers:key=Agent-Id,valueonly)").strip() == me


def test_a_commit_naming_no_agent_says_so(repo: Path) -> None:
    assert alock(repo, "install-hooks").code == 0
    git(repo, "config", "alock.hookMode", "block")
    assert alock(repo, "acquire", "src/**", AGENT_ID="alice").code == 0
    (repo / "src" / "app.py").write_text("changed\n")
    proc = subprocess.run(["git", "commit", "-qam", "x"], cwd=repo, capture_output=True, text=True)
    assert proc.returncode != 0
    assert "this commit names no agent" in proc.stderr, proc.stderr


def test_session_end_releases_every_claim_of_the_session_in_every_repository(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    nested = repo / "vendor" / "lib"
    nested.mkdir(parents=True)
    git(nested, "init", "-q")
    (nested / "x.py").write_text("x\n")
    git(nested, "add", "-A")
    git(nested, "commit", "-qm", "nested")
    agent = start(standins, tmp_path, repo)
    holder_of(agent, repo)
    assert denied(agent.guard(edit(repo, "src/app.py"))) == ""
    assert denied(agent.guard(edit(repo, "vendor/lib/x.py"))) == ""
    assert agent.shell("git alock acquire 'docs/**'").code == 0
    assert agent.shell("git alock acquire 'more/**'", cwd=nested).code == 0
    agent.mcp(("acquire", {"paths": ["notes/**"]}))
    assert len(records(repo)) == 3 and len(records(nested)) == 2
    assert agent.guard(event(repo, "Stop")).code == 0
    log = git(nested, "log", "--format=%B", "refs/agent-locks-meta/journal")
    assert '"event": "renewed"' in log
    assert agent.guard(event(repo, "SessionEnd")).code == 0
    assert records(repo) == [] and records(nested) == []


def test_a_sub_agent_with_a_declared_id_stays_itself(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    lead = start(standins, tmp_path, repo)
    me = holder_of(lead, repo)
    assert lead.shell("git alock acquire 'src/**'").code == 0
    sub = lead.shell("git alock acquire src/app.py --json", AGENT_ID="worker-1",
                     AGENT_PARENT_ID=me)  # fmt: skip
    lock = json.loads(sub.out)["lock"]
    assert (lock["holder"], lock["parent"]) == ("worker-1", me)
    who = json.loads(lead.shell("git alock whoami --json", AGENT_ID="worker-1").out)
    assert who["holder"] == "worker-1"


def test_sibling_sub_agents_block_each_other_inside_their_leads_claim(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    lead = start(standins, tmp_path, repo)
    me = holder_of(lead, repo)
    assert lead.shell("git alock acquire 'src/**'").code == 0
    one = start(standins, tmp_path, repo, AGENT_ID="sub-1", AGENT_PARENT_ID=me)
    two = start(standins, tmp_path, repo, AGENT_ID="sub-2", AGENT_PARENT_ID=me)
    assert denied(one.guard(edit(repo, "src/app.py"))) == ""
    held = alock(repo, "check", "src/app.py", "--json").json()[0]["locks"]
    assert sorted(r["holder"] for r in held) == sorted([me, "sub-1"])
    assert "held by sub-1" in denied(two.guard(edit(repo, "src/app.py")))


def test_a_shell_whose_sandbox_hides_the_harness_reads_the_exported_holder(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    env_file = tmp_path / "claude-env.sh"
    env_file.write_text("")
    agent = start(standins, tmp_path, repo, CLAUDE_ENV_FILE=str(env_file))
    me = holder_of(agent, repo)
    assert f"GITLOCKS_HOLDER={me}" in env_file.read_text()
    # A command that cannot see its harness (here: run outside it) but got the export.
    got = alock(repo, "whoami", "--json", GITLOCKS_HOLDER=me, HOME=os.environ["HOME"] + "-x")
    assert got.json()["holder"] == me


def test_mcp_errors_are_tool_errors_and_nothing_is_cut(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    agent = start(standins, tmp_path, repo)
    holder_of(agent, repo)
    assert alock(repo, "acquire", "src/**", AGENT_ID="alice").code == 0
    refused, neither, long_reason, long_note, slow_ttl, bad = agent.mcp(
        ("acquire", {"paths": ["src/app.py"]}),
        ("release", {}),
        ("acquire", {"paths": ["a/**"], "reason": "r" * 1001}),
        ("note", {"path": "src/**", "text": "n" * 4001}),
        ("acquire", {"paths": ["b/**"], "ttl": " " * 200 + "x"}),
        ("acquire", {"paths": ["[a-"]}),
    )
    assert not refused["error"] and json.loads(refused["text"])["status"] == "refused"
    assert neither["error"] and "name the paths to release, or all=true" in neither["text"]
    assert long_reason["error"] and "at most 1000" in long_reason["text"]
    assert long_note["error"] and "at most 4000" in long_note["text"]
    assert slow_ttl["error"] and "invalid ttl" in slow_ttl["text"]
    assert bad["error"] and "invalid pattern" in bad["text"]
    assert {r["holder"] for r in records(repo)} == {"alice"}


def test_check_inside_a_shared_claim_names_the_askers_own_lock(repo: Path) -> None:
    assert alock(repo, "acquire", "--shared", "src/**", AGENT_ID="alice").code == 0
    mine = alock(repo, "acquire", "--shared", "src/**", "--json", AGENT_ID="bob").json()
    got = alock(repo, "check", "src/app.py", AGENT_ID="bob")
    assert got.code == 0 and got.out.startswith("YOURS src/app.py [bob, shared, lock "), got
    [item] = alock(repo, "check", "src/app.py", "--json", AGENT_ID="bob").json()
    assert [r["id"] for r in item["locks"]] == [mine["lock"]["id"]]


def test_install_refuses_a_committed_symlink_out_of_the_repository(
    repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (repo / ".claude").symlink_to(outside, target_is_directory=True)
    git(repo, "add", ".claude")
    git(repo, "commit", "-qm", "a link out")
    got = alock(repo, "install-agent-hooks", "--for", "claude")
    assert got.code == 2 and "committed symbolic link out of the repository" in got.err, got
    assert list(outside.iterdir()) == []


def test_install_off_path_names_this_clones_git_alock_and_the_hook_still_runs(
    repo: Path,
) -> None:
    """Installed from an environment not on PATH, the command stays the portable one (it
    is committed), and the clone's alock.guardProgram names this installation's git-alock,
    which the command runs where the harness's PATH has none."""
    bare_path = os.pathsep.join(
        p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "git-alock").exists()
    )
    got = alock(repo, "install-agent-hooks", "--for", "claude", PATH=bare_path)
    assert got.code == 0 and "runs gitlocks" in got.out, got
    settings = json.loads((repo / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert command == guard_command("claude") and sys.executable not in command
    program = git(repo, "config", "alock.guardProgram").strip()
    assert os.path.isabs(program) and os.access(program, os.X_OK)
    # That command runs the guard: a session started under it is told so.
    proc = subprocess.run(
        ["sh", "-c", command], input=json.dumps(event(repo, "SessionStart")), cwd=repo,
        capture_output=True, text=True, env={**os.environ, "PATH": bare_path},
    )  # fmt: skip
    assert "the guard is active" in proc.stdout, proc
    assert alock(repo, "uninstall-agent-hooks", "--for", "claude").code == 0
    assert not (repo / ".claude").exists()
