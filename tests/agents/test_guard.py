"""The agent guard (Claude Code's hooks), its settings installer and .alockignore.

The guard is fed the JSON events Claude Code documents for its hooks, as a real process
(``git alock guard --for claude``), in real repositories.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli import alock
from support.guard import OTHER, denial, edit, event, guard, holders, second_session
from support.harness import StandIn

from gitlocks.agents.commands import guard_command
from gitlocks.cli.tools import TOOLS


def test_an_edit_of_a_free_file_claims_it_for_the_session(repo: Path) -> None:
    got = guard(repo, edit(repo, "src/app.py"))
    assert got.code == 0 and got.out == "", got
    [(holder, paths)] = holders(repo).items()
    assert holder.startswith("claude-") and paths == ["src/app.py"]
    [record] = alock(repo, "list", "--json").json()
    assert record["reason"] == "Edit src/app.py"
    again = guard(repo, edit(repo, "src/app.py", tool="Write"))
    assert again.code == 0 and again.out == ""  # its own claim: allowed, nothing new
    assert len(alock(repo, "list", "--json").json()) == 1
    other = second_session(repo, edit(repo, "src/app.py", session="s-2"))
    assert f"held by {holder}" in denial(other)  # another session is another holder


def _started(trace: Path) -> list[list[str]]:
    """The command line of each git process a ``GIT_TRACE2_EVENT`` file saw start."""
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    return [e["argv"] for e in events if e.get("event") == "start"]


def test_a_claim_opens_the_store_from_what_the_guard_read(repo: Path, tmp_path: Path) -> None:
    """The guard found the repository and read its settings before it decided to claim:
    the store is opened from them, and git is asked to find the repository once, not
    twice (two processes of seven, in the call made before most first edits). Run as
    Claude Code runs it: its hook command through ``sh -c`` from a process named claude."""
    trace = tmp_path / "trace2.json"
    session = StandIn(tmp_path / "harness", "claude", cwd=repo)
    try:
        got = session.guard(edit(repo, "src/app.py"), GIT_TRACE2_EVENT=str(trace))
    finally:
        session.close()
    assert got.code == 0 and got.out == "", got
    assert [paths for paths in holders(repo).values()] == [["src/app.py"]]
    argvs = _started(trace)
    finding = [a for a in argvs if "rev-parse" in a and "HEAD" not in a]  # not HEAD's
    assert len(finding) == 1, argvs
    assert sum("config" in argv and "--list" in argv for argv in argvs) == 1, argvs
    assert sum("update-ref" in argv for argv in argvs) == 2, argvs  # the claim was written


def test_the_committed_alockignore_exempts_loose_or_packed(repo: Path, tmp_path: Path) -> None:
    """The list at HEAD is read through git, whether its objects are loose or packed: the
    same answer either way. Run as Claude Code runs the guard."""
    (repo / ".alockignore").write_text("gen/\n")
    git(repo, "add", ".alockignore")
    git(repo, "commit", "-q", "-m", "ignore gen/")
    session = StandIn(tmp_path / "harness", "claude", cwd=repo)
    try:
        for packed in (False, True):
            if packed:
                git(repo, "gc", "-q", "--prune=now")
            got = session.guard(edit(repo, "gen/out.py"))
            assert got.code == 0 and got.out == "", got
            assert holders(repo) == {}  # exempt: neither claimed nor denied
    finally:
        session.close()


@pytest.mark.parametrize("fifo", ["HEAD", "refs/heads/main", "packed-refs", "commondir"])
def test_a_repository_git_does_not_open_is_never_read_from(
    repo: Path, tmp_path: Path, fifo: str
) -> None:
    """The repository whose ``.git`` is nearest is only a guess: where git does not open
    it (above GIT_CEILING_DIRECTORIES here; another user's, which git refuses), a FIFO in
    it is never opened (every edit below it waited on one for a writer)."""
    git(repo, "branch", "-M", "main")
    path = repo / ".git" / fifo
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    if fifo != "HEAD":
        (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    sub = repo / "sub"
    sub.mkdir()
    got = guard(sub, edit(sub, "x.py"), timeout=60, GIT_CEILING_DIRECTORIES=str(repo))
    assert got.code == 0 and "outside any git working tree: not guarded" in got.err, got


def test_an_edit_inside_anothers_claim_is_denied_naming_the_holder(repo: Path) -> None:
    assert alock(repo, "acquire", "src/**", "-m", "rewrite auth", **OTHER).code == 0
    for tool in ("Edit", "Write", "MultiEdit", "NotebookEdit"):
        reason = denial(guard(repo, edit(repo, "src/app.py", tool=tool)))
        assert "src/** held by other-agent" in reason and '"rewrite auth"' in reason
        assert "expires in" in reason and "git alock status" in reason
    assert list(holders(repo)) == ["other-agent"]  # nothing was claimed


def test_agent_id_is_the_holder_when_set(repo: Path) -> None:
    assert guard(repo, edit(repo, "docs/x.md"), AGENT_ID="named").code == 0
    assert holders(repo) == {"named": ["docs/x.md"]}


@pytest.mark.parametrize("mode", ["block", "warn"])
def test_block_and_warn_modes(repo: Path, mode: str) -> None:
    git(repo, "config", "alock.guardMode", mode)
    assert guard(repo, edit(repo, "src/free.py")).out == ""
    assert holders(repo) == {}  # neither mode claims
    assert alock(repo, "acquire", "src/**", **OTHER).code == 0
    got = guard(repo, edit(repo, "src/app.py"))
    if mode == "block":
        assert "held by other-agent" in denial(got)
    else:
        out = json.loads(got.out)["hookSpecificOutput"]
        assert "permissionDecision" not in out and "held by other-agent" in out["additionalContext"]


def test_session_end_releases_the_sessions_claims_but_keeps_noted_work(repo: Path) -> None:
    assert guard(repo, edit(repo, "src/a.py")).code == 0
    assert guard(repo, edit(repo, "src/b.py")).code == 0
    [holder] = holders(repo)
    assert alock(repo, "note", "src/b.py", "half way", AGENT_ID=holder).code == 0
    assert second_session(repo, edit(repo, "docs/c.md", session="s-2")).code == 0
    assert guard(repo, event(repo, "SessionEnd")).code == 0
    left = holders(repo)
    assert left[holder] == ["src/b.py"] and len(left) == 2  # the other session's stays


def test_session_start_tells_the_agent_who_it_is_and_what_others_hold(repo: Path) -> None:
    assert alock(repo, "acquire", "src/**", "-m", "refactor", **OTHER).code == 0
    got = guard(repo, event(repo, "SessionStart"))
    out = json.loads(got.out)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    assert "you are claude-" in out["additionalContext"]
    assert "src/** held by other-agent" in out["additionalContext"]


def test_stop_renews_the_sessions_claims(repo: Path) -> None:
    assert guard(repo, edit(repo, "src/a.py")).code == 0
    before = alock(repo, "list", "--json").json()[0]["renewed_at"]
    assert guard(repo, event(repo, "Stop")).code == 0
    log = git(repo, "log", "--format=%B", "refs/agent-locks-meta/journal")
    assert '"event": "renewed"' in log, (before, log)


@pytest.mark.parametrize(
    "payload",
    [
        "{not json",
        "[]",
        json.dumps({"hook_event_name": "PreToolUse"}),
        json.dumps({"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Edit"}),
    ],
    ids=["not-json", "not-object", "no-session", "no-path"],
)
def test_malformed_input_lets_the_call_through(repo: Path, payload: str) -> None:
    got = guard(repo, payload)
    assert got.code == 0 and got.err.startswith("gitlocks guard: ") and "let through" in got.err
    assert "Traceback" not in got.err and got.out == ""


def test_outside_paths_other_tools_and_non_repositories_never_block(
    repo: Path, tmp_path: Path
) -> None:
    assert alock(repo, "acquire", "**", **OTHER).code == 0
    outside = edit(repo, "x")
    outside["tool_input"]["file_path"] = str(tmp_path / "elsewhere.py")
    got = guard(repo, outside)
    assert got.code == 0 and "outside any git working tree" in got.err
    read = {**edit(repo, "src/app.py"), "tool_name": "Read"}
    assert guard(repo, read).code == 0
    plain = tmp_path / "plain"
    plain.mkdir()
    nowhere = {**edit(plain, "a.py")}
    got = guard(plain, nowhere)
    assert got.code == 0 and "outside any git working tree" in got.err
    start = guard(plain, event(plain, "SessionStart"))
    assert start.code == 0 and "not inside a git working tree" in start.err
    escaped = edit(repo, "../../etc/passwd")
    assert guard(repo, escaped).code == 0


def test_alockignore_paths_are_never_claimed_denied_or_reported(repo: Path) -> None:
    (repo / ".alockignore").write_text("# generated\n*.lock\nCHANGELOG.md\n")
    git(repo, "add", ".alockignore")
    git(repo, "commit", "-q", "-m", "alockignore")
    assert guard(repo, edit(repo, "poetry.lock")).out == ""
    assert holders(repo) == {}
    said = alock(repo, "acquire", "poetry.lock", AGENT_ID="me")
    assert said.code == 0 and "poetry.lock is listed in .alockignore" in said.err
    assert alock(repo, "release", "--all", AGENT_ID="me").code == 0
    assert alock(repo, "acquire", "**", **OTHER).code == 0
    assert guard(repo, edit(repo, "CHANGELOG.md")).out == ""  # not denied
    assert "held by" in denial(guard(repo, edit(repo, "src/app.py")))
    (repo / "CHANGELOG.md").write_text("everyone appends\n")
    (repo / "src" / "app.py").write_text("mine\n")
    status = alock(repo, "status", AGENT_ID="me").out
    assert "CHANGELOG.md" not in status and "src/app.py" in status
    git(repo, "add", "CHANGELOG.md")
    hooked = subprocess.run(
        [sys.executable, "-m", "gitlocks.main", "hook", "pre-commit"],
        cwd=repo,
        env={**os.environ, "AGENT_ID": "me"},
        capture_output=True,
        text=True,
    )
    assert "CHANGELOG.md" not in hooked.stderr, hooked


def test_the_guards_fast_path_never_loads_pygit2_or_typer(repo: Path) -> None:
    assert alock(repo, "acquire", "src/**", **OTHER).code == 0
    probe = (
        "import sys, io, json\n"
        "from gitlocks.main import main\n"
        "code = main(['guard', '--for', 'claude'])\n"
        "heavy = sorted(m for m in ('pygit2', 'typer', 'click') if m in sys.modules)\n"
        "sys.stderr.write('HEAVY=' + json.dumps(heavy) + '\\n')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "AGENT_ID"}
    proc = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=repo,
        input=json.dumps(edit(repo, "src/app.py")),
        capture_output=True,
        text=True,
        env=env,
    )
    assert "permissionDecision" in proc.stdout, proc
    assert "HEAVY=[]" in proc.stderr, proc.stderr


# --- install-agent-hooks / uninstall-agent-hooks ------------------------------------------


EXISTING: dict[str, Any] = {
    "permissions": {"allow": ["Bash(npm test)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify.sh"}]}],
    },
}


@pytest.mark.parametrize("local", [False, True])
def test_install_merges_and_uninstall_gives_back_the_settings(repo: Path, local: bool) -> None:
    path = repo / ".claude" / ("settings.local.json" if local else "settings.json")
    path.parent.mkdir()
    path.write_text(json.dumps(EXISTING, indent=4))
    flag = ["--local"] if local else []
    got = alock(repo, "install-agent-hooks", "--for", "claude", *flag)
    assert got.code == 0 and got.word.startswith("INSTALLED"), got
    data = json.loads(path.read_text())
    assert data["permissions"] == EXISTING["permissions"]
    pre = data["hooks"]["PreToolUse"]
    assert pre[0] == EXISTING["hooks"]["PreToolUse"][0]
    assert pre[1]["matcher"].startswith("Edit|Write|MultiEdit|NotebookEdit|")
    assert pre[1]["hooks"] == [{"type": "command", "command": guard_command("claude")}]
    for name in ("SessionStart", "SessionEnd", "Stop"):
        assert any(
            h["command"] == guard_command("claude") for g in data["hooks"][name] for h in g["hooks"]
        )
    again = alock(repo, "install-agent-hooks", "--for", "claude", *flag)
    assert again.word.startswith("ALREADY INSTALLED") and json.loads(path.read_text()) == data
    gone = alock(repo, "uninstall-agent-hooks", "--for", "claude", *flag)
    assert gone.word.startswith("UNINSTALLED")
    assert json.loads(path.read_text()) == EXISTING
    assert alock(repo, "uninstall-agent-hooks", "--for", "claude", *flag).word.startswith(
        "NOT INSTALLED"
    )


def test_install_into_no_settings_and_uninstall_leaves_none(repo: Path) -> None:
    assert alock(repo, "install-agent-hooks", "--for", "claude").code == 0
    assert (repo / ".claude" / "settings.json").is_file()
    assert alock(repo, "uninstall-agent-hooks", "--for", "claude").code == 0
    assert not (repo / ".claude").exists()


def test_installer_refuses_bad_settings_and_harnesses(repo: Path) -> None:
    path = repo / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text("{broken")
    got = alock(repo, "install-agent-hooks", "--for", "claude")
    assert got.code == 2 and "not valid JSON" in got.err and path.read_text() == "{broken"
    assert alock(repo, "install-agent-hooks", "--for", "vim").code == 2
    assert guard(repo, edit(repo, "a")).code in (0, 1)  # the guard itself is unaffected


# --- git alock mcp --------------------------------------------------------------------------


def test_the_mcp_server_passes_a_client_session(repo: Path) -> None:
    """The SDK's own client, over stdio, against a real repository."""
    mcp = pytest.importorskip("mcp")
    import anyio
    from mcp.client.stdio import StdioServerParameters, stdio_client

    assert alock(repo, "acquire", "src/**", "-m", "refactor", **OTHER).code == 0
    env = {k: v for k, v in os.environ.items() if k != "AGENT_ID"}
    env["AGENT_ID"] = "mcp-agent"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "gitlocks.main", "mcp"], env=env, cwd=str(repo)
    )

    async def session() -> dict[str, Any]:
        answers: dict[str, Any] = {}
        async with stdio_client(params) as (read, write), mcp.ClientSession(read, write) as client:
            await client.initialize()
            tools = await client.list_tools()
            answers["tools"] = sorted(t.name for t in tools.tools)

            async def call(name: str, **arguments: Any) -> Any:
                result = await client.call_tool(name, arguments)
                failed = getattr(result, "is_error", getattr(result, "isError", False))
                doc = json.loads(result.content[0].text)
                # An error is a tool error; everything else, refusals included, is not.
                errored = isinstance(doc, dict) and doc.get("status") == "error"
                assert bool(failed) == errored, doc
                return doc

            answers["refused"] = await call("acquire", paths=["src/app.py"])
            answers["acquired"] = await call("acquire", paths=["docs/**"], reason="docs")
            answers["check"] = await call("check", paths=["docs/a.md", "src/x"])
            answers["note"] = await call("note", path="docs/**", text="half way")
            answers["whoami"] = await call("whoami")
            answers["list"] = await call("list")
            answers["status"] = await call("status")
            answers["bad"] = await call("acquire", paths=["[a-"])
            answers["shared"] = await call("acquire", paths=["CHANGES.md"], shared=True)
            answers["landing"] = await call("acquire", paths=["lib/**"], until_merged="")
            answers["no_branch"] = await call("acquire", paths=["x/**"], until_merged="nope")
            answers["release"] = await call("release", all=True)
        return answers

    got = anyio.run(session)
    assert got["tools"] == sorted(TOOLS)
    refused = got["refused"]
    assert refused["status"] == "refused" and refused["conflicts"][0]["holder"] == "other-agent"
    assert got["acquired"]["status"] == "acquired"
    assert got["acquired"]["lock"]["holder"] == "mcp-agent"
    assert [c["status"] for c in got["check"]] == ["yours", "held"]
    assert got["whoami"]["holder"] == "mcp-agent"
    assert sorted(r["holder"] for r in got["list"]) == ["mcp-agent", "other-agent"]
    assert got["status"]["holder"] == "mcp-agent"
    assert got["bad"]["status"] == "error" and "invalid pattern" in got["bad"]["error"]
    assert got["shared"]["lock"]["shared"] is True
    assert got["landing"]["lock"]["until_merged"] == "main"  # the main line
    assert got["no_branch"]["status"] == "error" and "no branch 'nope'" in got["no_branch"]["error"]
    assert got["release"]["status"] == "released"
    assert [r["holder"] for r in alock(repo, "list", "--json").json()] == ["other-agent"]


def test_the_guard_lets_sharers_edit_and_tells_others_how_to_share(repo: Path) -> None:
    assert alock(repo, "acquire", "--shared", "docs/**", "-m", "appending", **OTHER).code == 0
    reason = denial(guard(repo, edit(repo, "docs/CHANGES.md"), AGENT_ID="me"))
    assert "held shared by other-agent" in reason
    assert "git alock acquire --shared docs/CHANGES.md" in reason
    assert alock(repo, "acquire", "--shared", "docs/CHANGES.md", AGENT_ID="me").code == 0
    allowed = guard(repo, edit(repo, "docs/CHANGES.md"), AGENT_ID="me")
    assert allowed.code == 0 and allowed.out == "", allowed
    # An exclusive claim is no share: its holder still denies.
    assert alock(repo, "acquire", "src/**", **OTHER).code == 0
    assert "--shared" not in denial(guard(repo, edit(repo, "src/app.py"), AGENT_ID="me"))


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner),
    max_leaves=12,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(["PreToolUse", "SessionStart", "SessionEnd", "Stop", "Other", ""]),
    tool=st.sampled_from(["Edit", "Write", "MultiEdit", "NotebookEdit", "Bash", ""]) | JSONISH,
    path=st.sampled_from(["src/a.py", "../x", "/etc/passwd", "", ".git/config", "a\nb"])
    | st.text(max_size=40),
    session=st.text(max_size=20) | JSONISH,
    extra=JSONISH,
)
def test_hostile_events_never_break_the_guard(
    repo: Path, name: str, tool: Any, path: str, session: Any, extra: Any
) -> None:
    """Whatever event arrives, the guard answers in the harness's terms: exit 0 (allowed,
    maybe with a documented JSON answer), 1 (let through, reason on stderr) or a denial;
    never a traceback, and the other agent's claim is never lost."""
    if not alock(repo, "list", "--json").json():
        assert alock(repo, "acquire", "held/**", **OTHER).code == 0
    full = path if path.startswith("/") else str(repo / path)
    payload = {
        "session_id": session,
        "cwd": str(repo),
        "hook_event_name": name,
        "tool_name": tool,
        "tool_input": {"file_path": full, "notebook_path": extra},
        "extra": extra,
    }
    got = guard(repo, payload)
    assert got.code in (0, 1) and "Traceback" not in got.err, got
    if got.out:
        answer = json.loads(got.out)["hookSpecificOutput"]
        assert answer["hookEventName"] in ("PreToolUse", "SessionStart")
    assert "other-agent" in holders(repo)


def test_a_bad_alockignore_line_is_skipped_never_fatal(repo: Path) -> None:
    assert alock(repo, "acquire", "src/**", **OTHER).code == 0
    (repo / ".alockignore").write_text("x\n!\nfoo\\\n*.lock\n")
    assert "held by other-agent" in denial(guard(repo, edit(repo, "src/app.py")))
    assert guard(repo, edit(repo, "poetry.lock")).out == ""
    got = alock(repo, "status", AGENT_ID="me")
    assert got.code == 0 and "Traceback" not in got.err


def test_a_nul_in_a_git_file_is_guarded_as_git_reads_it(repo: Path, tmp_path: Path) -> None:
    """git reads a ``.git`` file as far as a NUL byte: the repository it names is guarded
    as any other (the guess of it raised on the NUL, and the edit was let through as a
    bug)."""
    checkout = tmp_path / "wt"
    git(tmp_path, "init", "-q", f"--separate-git-dir={tmp_path / 'real'}", str(checkout))
    (checkout / "a.txt").write_text("a\n")
    git(checkout, "add", "-A")
    git(checkout, "commit", "-q", "-m", "a")
    (checkout / ".git").write_bytes(b"gitdir: ../real\0junk\n")
    got = guard(checkout, edit(checkout, "a.txt"))
    assert got.code == 0 and "internal error" not in got.err, got
    assert holders(checkout), got  # claimed, as in any repository


def test_a_denied_edit_is_in_the_log_as_a_refusal_and_a_log_that_cannot_be_written_denies_too(
    repo: Path,
) -> None:
    """Local mode: a guard's denial is logged as acquire's refusals are, so ``log`` and
    the live page show the agent kept out; a refusal log that cannot be written changes
    nothing of the answer."""
    assert alock(repo, "acquire", "src/**", "-m", "rewrite", **OTHER).code == 0
    got = guard(repo, edit(repo, "src/app.py"))
    assert "held by other-agent" in denial(got), got
    [refused] = [e for e in alock(repo, "log", "--json").json() if e["event"] == "refused"]
    assert refused["paths"] == ["src/app.py"] and refused["local"] is True
    assert refused["holder"].startswith("claude-") and refused["guard"] is True
    assert [c["holder"] for c in refused["conflicts"]] == ["other-agent"]
    line = alock(repo, "log").out.splitlines()[0]
    assert " refused (local) claude-" in line and "src/app.py held src/** by other-agent" in line
    log = Path(git(repo, "rev-parse", "--git-common-dir").strip())
    log = (repo / log if not log.is_absolute() else log) / "agent-locks-refusals.jsonl"
    log.unlink()
    log.mkdir()  # no file can be appended there
    again = guard(repo, edit(repo, "src/app.py"))
    assert again.code == got.code and again.out == got.out, again
