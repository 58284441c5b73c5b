"""The guard behind Gemini CLI's, Codex CLI's and GitHub Copilot CLI's hooks.

Each harness is fed the JSON its own documentation (or source) shows, as a real process
(``git alock guard --for NAME``), in real repositories; the installer runs on real
settings files. The sources of every format are named in docs/agents.md.
"""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from conftest import git
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli import Result, alock
from support.harness import StandIn
from support.records import stored

from gitlocks.agents.commands import guard_command
from gitlocks.agents.harnesses import TOOLS

OTHER = {"AGENT_ID": "other-agent"}


def run_guard(repo: Path, harness: str, event: dict[str, Any] | str, named: str = "",
              **env: str) -> Result:  # fmt: skip
    """``git alock guard --for HARNESS [--event NAMED]`` with ``event`` on stdin."""
    full = {k: v for k, v in os.environ.items() if k != "AGENT_ID"}
    full["PATH"] = os.path.dirname(sys.executable) + os.pathsep + full.get("PATH", "")
    full.update(env)
    command = ["git", "alock", "guard", "--for", harness, *(["--event", named] if named else [])]
    raw = event if isinstance(event, str) else json.dumps(event)
    proc = subprocess.run(command, cwd=repo, env=full, input=raw, capture_output=True, text=True)
    return Result(proc.returncode, proc.stdout, proc.stderr)


# --- each harness's documented events -------------------------------------------------------


def gemini_event(repo: Path, name: str, session: str, **extra: Any) -> dict[str, Any]:
    """docs/hooks/reference.md, "Base input schema"."""
    return {"session_id": session, "transcript_path": str(repo / ".t.json"), "cwd": str(repo),
            "hook_event_name": name, "timestamp": "2026-01-01T00:00:00Z", **extra}  # fmt: skip


def gemini_edit(repo: Path, path: str, session: str) -> dict[str, Any]:
    tool_input = {"file_path": str(repo / path), "old_string": "a", "new_string": "b"}
    return gemini_event(repo, "BeforeTool", session, tool_name="replace", tool_input=tool_input)


def codex_event(repo: Path, name: str, session: str, **extra: Any) -> dict[str, Any]:
    """codex-rs/hooks/schema/generated/*.command.input.schema.json."""
    return {"session_id": session, "turn_id": "turn-1", "transcript_path": None,
            "cwd": str(repo), "hook_event_name": name, "model": "gpt-5",
            "permission_mode": "default", **extra}  # fmt: skip


def patch(*hunks: str) -> str:
    return "*** Begin Patch\n" + "".join(hunks) + "*** End Patch\n"


def codex_patch(repo: Path, text: str, session: str) -> dict[str, Any]:
    return codex_event(repo, "PreToolUse", session, tool_name="apply_patch",
                       tool_use_id="call-1", tool_input={"command": text})  # fmt: skip


def codex_edit(repo: Path, path: str, session: str) -> dict[str, Any]:
    return codex_patch(repo, patch(f"*** Update File: {path}\n@@\n-a\n+b\n"), session)


def copilot_event(repo: Path, session: str, **extra: Any) -> dict[str, Any]:
    """cli-hooks-reference.md, the camelCase input payloads."""
    return {"sessionId": session, "timestamp": 1704614600000, "cwd": str(repo), **extra}


def copilot_edit(repo: Path, path: str, session: str) -> dict[str, Any]:
    args = json.dumps({"path": str(repo / path), "old_str": "a", "new_str": "b"})
    return copilot_event(repo, session, toolName="edit", toolArgs=args)


def gemini_denial(got: Result) -> str:
    assert got.code == 0, got
    out = json.loads(got.out)
    assert out["decision"] == "deny", out
    reason: str = out["reason"]
    return reason


def claude_style_denial(got: Result) -> str:
    assert got.code == 0, got
    out = json.loads(got.out)["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse" and out["permissionDecision"] == "deny"
    reason: str = out["permissionDecisionReason"]
    return reason


def copilot_denial(got: Result) -> str:
    assert got.code == 0, got
    out = json.loads(got.out)
    assert out["permissionDecision"] == "deny", out
    reason: str = out["permissionDecisionReason"]
    return reason


class Spec(NamedTuple):
    name: str
    edit: Callable[[Path, str, str], dict[str, Any]]
    denial: Callable[[Result], str]
    # event -> (payload builder, the --event argument the installed command passes)
    events: dict[str, Callable[[Path, str], tuple[dict[str, Any], str]]]


SPECS = {
    "gemini": Spec("gemini", gemini_edit, gemini_denial, {
        "start": lambda r, s: (gemini_event(r, "SessionStart", s, source="startup"), ""),
        "end": lambda r, s: (gemini_event(r, "SessionEnd", s, reason="exit"), ""),
        "stop": lambda r, s: (gemini_event(r, "AfterAgent", s, prompt="p", prompt_response="r",
                                           stop_hook_active=False), ""),
    }),
    "codex": Spec("codex", codex_edit, claude_style_denial, {
        "start": lambda r, s: (codex_event(r, "SessionStart", s, source="startup"), ""),
        "end": lambda r, s: (codex_event(r, "SessionEnd", s, reason="other"), ""),
        "stop": lambda r, s: (codex_event(r, "Stop", s, stop_hook_active=False,
                                          last_assistant_message=None), ""),
    }),
    "copilot": Spec("copilot", copilot_edit, copilot_denial, {
        "end": lambda r, s: (copilot_event(r, s, reason="complete"), "sessionEnd"),
        "stop": lambda r, s: (copilot_event(r, s, transcriptPath="/t", stopReason="end_turn"),
                              "agentStop"),
    }),
}  # fmt: skip
NAMES = sorted(SPECS)


def edit_guard(repo: Path, spec: Spec, path: str, session: str = "s-1", **env: str) -> Result:
    named = "preToolUse" if spec.name == "copilot" else ""
    return run_guard(repo, spec.name, spec.edit(repo, path, session), named, **env)


def second_session_edit(repo: Path, spec: Spec, path: str) -> Result:
    """The same edit by another session: another harness process, as a real one would be."""
    named = " --event preToolUse" if spec.name == "copilot" else ""
    session = StandIn(repo.parent / "second", "node", cwd=repo)
    try:
        return session.hook(
            f"git alock guard --for {spec.name}{named}", spec.edit(repo, path, "s-2")
        )
    finally:
        session.close()


def event_guard(repo: Path, spec: Spec, kind: str, session: str = "s-1") -> Result:
    payload, named = spec.events[kind](repo, session)
    return run_guard(repo, spec.name, payload, named)


def holders(repo: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for r in stored(repo):
        found.setdefault(r["holder"], []).extend(r["paths"])
    return found


def let_through(got: Result, *words: str) -> None:
    """Nothing to guard: exit 0 and silence, every harness's quiet "go on" (issue 38). With
    GITLOCKS_GUARD_TRACE set, the reason (``words``) on stderr."""
    assert got.code == 0 and got.out == "", got
    assert "Traceback" not in got.err, got
    if got.err:
        assert got.err.startswith("gitlocks guard: "), got
        for word in words:
            assert word in got.err, got


# --- the guard, harness by harness -------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_a_free_file_is_claimed_and_another_session_is_denied(repo: Path, name: str) -> None:
    spec = SPECS[name]
    got = edit_guard(repo, spec, "src/app.py")
    assert got.code == 0 and got.out == "", got
    [(holder, paths)] = holders(repo).items()
    assert (
        holder.startswith(f"{name}-") and len(holder) == len(name) + 9 and paths == ["src/app.py"]
    )
    again = edit_guard(repo, spec, "src/app.py")
    assert again.code == 0 and again.out == ""  # its own claim
    assert len(alock(repo, "list", "--json").json()) == 1
    assert f"held by {holder}" in spec.denial(second_session_edit(repo, spec, "src/app.py"))


@pytest.mark.parametrize("name", NAMES)
def test_an_edit_inside_anothers_claim_is_denied_naming_the_holder(repo: Path, name: str) -> None:
    spec = SPECS[name]
    assert alock(repo, "acquire", "src/**", "-m", "rewrite auth", **OTHER).code == 0
    reason = spec.denial(edit_guard(repo, spec, "src/app.py"))
    assert "src/** held by other-agent" in reason and '"rewrite auth"' in reason
    assert "expires in" in reason and "git alock status" in reason
    assert list(holders(repo)) == ["other-agent"]


@pytest.mark.parametrize("name", NAMES)
def test_agent_id_names_the_holder(repo: Path, name: str) -> None:
    assert edit_guard(repo, SPECS[name], "docs/x.md", AGENT_ID="named").code == 0
    assert holders(repo) == {"named": ["docs/x.md"]}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("mode", ["block", "warn"])
def test_block_denies_and_warn_only_tells(repo: Path, name: str, mode: str) -> None:
    spec = SPECS[name]
    git(repo, "config", "alock.guardMode", mode)
    assert edit_guard(repo, spec, "src/free.py").out == ""
    assert holders(repo) == {}  # neither mode claims
    assert alock(repo, "acquire", "src/**", **OTHER).code == 0
    got = edit_guard(repo, spec, "src/app.py")
    if mode == "block":
        assert "held by other-agent" in spec.denial(got)
        return
    assert got.code == 0, got
    if name == "gemini":  # BeforeTool's documented channel short of a denial: the user's
        assert "held by other-agent" in json.loads(got.out)["systemMessage"]
    elif name == "codex":
        out = json.loads(got.out)["hookSpecificOutput"]
        assert "permissionDecision" not in out and "held by other-agent" in out["additionalContext"]
    else:  # Copilot's preToolUse has none: stderr only
        assert got.out == "" and "held by other-agent" in got.err


@pytest.mark.parametrize("name", ["gemini", "copilot"])
def test_session_end_releases_the_sessions_claims_but_keeps_noted_work(
    repo: Path, name: str
) -> None:
    spec = SPECS[name]
    assert edit_guard(repo, spec, "src/a.py").code == 0
    assert edit_guard(repo, spec, "src/b.py").code == 0
    [holder] = holders(repo)
    assert alock(repo, "note", "src/b.py", "half way", AGENT_ID=holder).code == 0
    assert second_session_edit(repo, spec, "docs/c.md").code == 0
    got = event_guard(repo, spec, "end")
    assert got.code == 0 and got.out == "", got
    left = holders(repo)
    assert left[holder] == ["src/b.py"] and len(left) == 2  # the other session's stays


def test_codexs_session_end_releases_its_claims(repo: Path) -> None:
    """Codex 0.171.0 sends SessionEnd (its reason always "other"): its claims no longer
    outlive the session (issue 38)."""
    spec = SPECS["codex"]
    assert edit_guard(repo, spec, "src/a.py").code == 0
    got = run_guard(repo, "codex", codex_event(repo, "SessionEnd", "s-1", reason="other"))
    assert got == Result(0, "", ""), got
    assert holders(repo) == {}


@pytest.mark.parametrize("name", NAMES)
def test_the_end_of_a_turn_renews_the_sessions_claims(repo: Path, name: str) -> None:
    spec = SPECS[name]
    assert edit_guard(repo, spec, "src/a.py").code == 0
    got = event_guard(repo, spec, "stop")
    assert got.code == 0 and got.out == "", got
    log = git(repo, "log", "--format=%B", "refs/agent-locks-meta/journal")
    assert '"event": "renewed"' in log


@pytest.mark.parametrize("name", ["gemini", "codex"])
def test_session_start_tells_the_agent_who_it_is(repo: Path, name: str) -> None:
    assert alock(repo, "acquire", "src/**", "-m", "refactor", **OTHER).code == 0
    got = event_guard(repo, SPECS[name], "start")
    out = json.loads(got.out)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    assert f"you are {name}-" in out["additionalContext"]
    assert "src/** held by other-agent" in out["additionalContext"]


def test_copilot_session_start_registers_the_session_and_says_nothing(repo: Path) -> None:
    """Copilot CLI ignores a sessionStart hook's output: the guard answers with silence,
    and only names the session's holder for the commands run under it."""
    start = copilot_event(repo, "s-1", source="new")
    got = run_guard(repo, "copilot", start, "sessionStart")
    assert got.code == 0 and got.out == "" and got.err == "", got


@pytest.mark.parametrize("name", NAMES)
def test_outside_paths_and_non_repositories_never_block(
    repo: Path, tmp_path: Path, name: str
) -> None:
    spec = SPECS[name]
    assert alock(repo, "acquire", "**", **OTHER).code == 0
    outside = os.path.relpath(tmp_path / "elsewhere.py", repo)
    let_through(edit_guard(repo, spec, outside), "outside any git working tree")
    let_through(edit_guard(repo, spec, ".git/config"), "no file of the working tree")
    plain = tmp_path / "plain"
    plain.mkdir()
    let_through(edit_guard(plain, spec, "a.py"), "outside any git working tree")
    assert list(holders(repo)) == ["other-agent"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("payload", ["{not json", "[]", "null", '{"cwd": "/"}'])
def test_malformed_input_lets_the_call_through(repo: Path, name: str, payload: str) -> None:
    named = "preToolUse" if name == "copilot" else ""
    let_through(run_guard(repo, name, payload, named), "let through")


@pytest.mark.parametrize("name", NAMES)
def test_an_edit_naming_no_file_lets_the_call_through(repo: Path, name: str) -> None:
    spec = SPECS[name]
    event = spec.edit(repo, "src/app.py", "s-1")
    if name == "copilot":
        event["toolArgs"] = "{not json"
    elif name == "codex":
        event["tool_input"] = {"command": "rm -rf /"}  # no patch
    else:
        event["tool_input"] = {"content": "x"}
    named = "preToolUse" if name == "copilot" else ""
    let_through(run_guard(repo, name, event, named), "names no file")
    bad = spec.edit(repo, "src/a\0b.py", "s-1")
    let_through(run_guard(repo, name, json.dumps(bad), named), "malformed input")


def test_copilot_needs_its_event_named_and_takes_args_as_an_object(repo: Path) -> None:
    let_through(run_guard(repo, "copilot", copilot_edit(repo, "a.py", "s-1")), "does not say")
    event = copilot_event(repo, "s-1", toolName="edit", toolArgs={"path": str(repo / "a.py")})
    assert run_guard(repo, "copilot", event, "preToolUse").code == 0
    assert list(holders(repo).values()) == [["a.py"]]


def test_other_tools_pass_each_harness_in_its_own_way(repo: Path) -> None:
    assert alock(repo, "acquire", "**", **OTHER).code == 0
    read = gemini_event(repo, "BeforeTool", "s", tool_name="read_file",
                        tool_input={"file_path": str(repo / "README.md")})  # fmt: skip
    let_through(run_guard(repo, "gemini", read), "read_file")
    # Codex's shell reaches the guard (it may run apply_patch): a command without a patch
    # gets silence, as does any other tool.
    shell = codex_event(repo, "PreToolUse", "s", tool_name="Bash", tool_input={"command": "ls"})
    assert run_guard(repo, "codex", shell) == Result(0, "", "")
    web = codex_event(repo, "PreToolUse", "s", tool_name="web_search", tool_input={"q": "x"})
    let_through(run_guard(repo, "codex", web), "web_search")
    # Copilot's preToolUse cannot be narrowed to edits: every other tool gets silence.
    bash = copilot_event(repo, "s", toolName="bash", toolArgs='{"command": "ls"}')
    quiet = run_guard(repo, "copilot", bash, "preToolUse")
    assert quiet == Result(0, "", ""), quiet
    assert list(holders(repo)) == ["other-agent"]


@pytest.mark.parametrize("name", NAMES)
def test_the_fast_path_never_loads_pygit2_or_typer(repo: Path, name: str) -> None:
    assert alock(repo, "acquire", "src/**", **OTHER).code == 0
    named = ["--event", "preToolUse"] if name == "copilot" else []
    probe = (
        "import sys, json\n"
        "from gitlocks.main import main\n"
        f"code = main(['guard', '--for', {name!r}, *{named!r}])\n"
        "heavy = sorted(m for m in ('pygit2', 'typer', 'click') if m in sys.modules)\n"
        "sys.stderr.write('HEAVY=' + json.dumps(heavy) + '\\n')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "AGENT_ID"}
    proc = subprocess.run([sys.executable, "-c", probe], cwd=repo, capture_output=True,
                          input=json.dumps(SPECS[name].edit(repo, "src/app.py", "s")),
                          text=True, env=env)  # fmt: skip
    assert "held by other-agent" in proc.stdout, proc
    assert "HEAVY=[]" in proc.stderr, proc.stderr


def test_an_unknown_harness_or_option_is_a_usage_error(repo: Path) -> None:
    got = run_guard(repo, "nonesuch", "{}")
    assert got.code == 0 and "usage" in got.err  # never non-zero: that would block an edit
    proc = subprocess.run([sys.executable, "-m", "gitlocks.main", "guard", "--event", "x"],
                          cwd=repo, input="{}", capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 2 and "usage" in proc.stderr


# --- Codex's apply_patch: one call, many files ---------------------------------------------


def test_a_patch_touching_one_held_file_is_denied_and_claims_nothing(repo: Path) -> None:
    assert alock(repo, "acquire", "src/**", "-m", "mine", **OTHER).code == 0
    moved = "*** Update File: README.md\n*** Move to: src/readme.md\n@@\n-hello\n+hi\n"
    text = patch("*** Add File: docs/new.md\n+hello\n", moved)
    reason = claude_style_denial(run_guard(repo, "codex", codex_patch(repo, text, "s-1")))
    assert reason.startswith("gitlocks: src/readme.md is inside another agent's claim")
    assert list(holders(repo)) == ["other-agent"]  # docs/new.md was not claimed either


def test_a_patch_of_many_held_files_names_a_few(repo: Path) -> None:
    assert alock(repo, "acquire", "gen/**", **OTHER).code == 0
    text = patch(*(f"*** Add File: gen/f{i}.py\n+x\n" for i in range(50)))
    reason = claude_style_denial(run_guard(repo, "codex", codex_patch(repo, text, "s-1")))
    assert reason.count("held by other-agent") == 3 and reason.endswith("And 47 more file(s).")


def test_a_patch_of_free_files_claims_them_all_in_one_lock(repo: Path, tmp_path: Path) -> None:
    text = patch("*** Add File: docs/new.md\n+hello\n", "*** Delete File: README.md\n",
                 "*** Update File: src/app.py\n@@\n-print('app')\n+print('b')\n*** End of File\n",
                 f"*** Add File: {tmp_path / 'outside.txt'}\n+x\n")  # fmt: skip
    got = run_guard(repo, "codex", codex_patch(repo, text, "s-1"))
    assert got.code == 0 and got.out == "" and "outside any git working tree" in got.err, got
    [record] = alock(repo, "list", "--json").json()
    assert record["paths"] == ["docs/new.md", "README.md", "src/app.py"]
    assert record["reason"] == "apply_patch docs/new.md README.md src/app.py"


def test_a_patch_wrapped_in_a_heredoc_is_read_as_codex_reads_it(repo: Path) -> None:
    text = "<<'EOF'\n" + patch("*** Add File: a.txt\n+x\n") + "EOF\n"
    assert run_guard(repo, "codex", codex_patch(repo, text, "s-1")).code == 0
    assert list(holders(repo).values()) == [["a.txt"]]


@pytest.mark.parametrize(
    ("text", "paths"),
    [
        (patch("*** Add File: a\n+x\n+*** Update File: not-a-header\n"), ("a",)),
        (patch("*** Update File: a\n@@\n *** Delete File: context-line\n-x\n+y\n"), ("a",)),
        (" " + patch("*** Update File: a\n*** Move to: b/c\n@@\n-x\n+y\n").rstrip() + " ",
         ("a", "b/c")),
        (patch("*** Delete File: a\n", "  *** Delete File: b  \n"), ("a", "b")),
        (patch(), None),
        (patch("*** Frobnicate File: a\n"), None),
        ("*** Begin Patch\n*** Add File: a\n+x\n", None),
        (patch("*** Add File: \n+x\n"), None),
    ],
    ids=["add-body", "context-line", "move-padded", "padded-header", "empty", "bad-header",
         "no-end", "no-name"],
)  # fmt: skip
def test_patch_paths_follow_codexs_parser(text: str, paths: tuple[str, ...] | None) -> None:
    assert TOOLS["apply_patch"]({"command": text}) == paths


NAME = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1,
               max_size=20).map(str.strip).filter(bool)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(names=st.lists(NAME, min_size=1, max_size=5), junk=st.text(max_size=200))
def test_patch_paths_finds_every_file_and_never_raises(names: list[str], junk: str) -> None:
    hunks = [f"*** Add File: {n}\n+line\n" if i % 2 else f"*** Delete File: {n}\n"
             for i, n in enumerate(names)]  # fmt: skip
    assert TOOLS["apply_patch"]({"command": patch(*hunks)}) == tuple(names)
    TOOLS["apply_patch"]({"command": junk})
    TOOLS["apply_patch"]({"command": patch(junk)})
    TOOLS["apply_patch"](junk)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(NAMES),
    event=st.sampled_from(["preToolUse", "BeforeTool", "PreToolUse", "SessionEnd", "Stop", ""]),
    tool=st.sampled_from(["edit", "replace", "apply_patch", "write_file", "Bash", ""])
    | st.integers(),
    args=st.none() | st.text(max_size=40) | st.dictionaries(st.text(max_size=8), st.text()),
)
def test_hostile_events_never_break_any_harness(
    repo: Path, name: str, event: str, tool: Any, args: Any
) -> None:
    if not alock(repo, "list", "--json").json():
        assert alock(repo, "acquire", "held/**", **OTHER).code == 0
    payload = {"hook_event_name": event, "session_id": "s", "sessionId": "s", "cwd": str(repo)}
    payload |= {"tool_name": tool, "toolName": tool, "tool_input": args, "toolArgs": args}
    got = run_guard(repo, name, payload, event if name == "copilot" else "")
    assert got.code in (0, 1) and "Traceback" not in got.err, got
    assert "other-agent" in holders(repo)


# --- install-agent-hooks / uninstall-agent-hooks ------------------------------------------------

FILES = {
    "gemini": ".gemini/settings.json",
    "codex": ".codex/hooks.json",
    "copilot": ".github/hooks/gitlocks.json",
}


def install(repo: Path, name: str, *flags: str) -> str:
    got = alock(repo, "install-agent-hooks", "--for", name, *flags)
    assert got.code == 0, got
    return got.word


def uninstall(repo: Path, name: str) -> str:
    got = alock(repo, "uninstall-agent-hooks", "--for", name)
    assert got.code == 0, got
    return got.word


def test_install_writes_each_harness_documented_shape(repo: Path) -> None:
    for name in NAMES:
        assert install(repo, name).startswith("INSTALLED")
    gemini = json.loads((repo / FILES["gemini"]).read_text())["hooks"]
    command = {
        "name": "gitlocks-guard",
        "type": "command",
        "command": guard_command("gemini"),
    }
    assert gemini["BeforeTool"] == [{"matcher": "^(write_file|replace)$", "hooks": [command]}]
    assert (
        gemini["SessionStart"]
        == gemini["SessionEnd"]
        == gemini["AfterAgent"]
        == [{"hooks": [command]}]
    )
    codex = json.loads((repo / FILES["codex"]).read_text())["hooks"]
    command = {"type": "command", "command": guard_command("codex")}
    assert codex.pop("PreToolUse") == [{"matcher": "^(apply_patch|Bash)$", "hooks": [command]}]
    assert codex == {"SessionStart": [{"hooks": [command]}], "Stop": [{"hooks": [command]}],
                     "SessionEnd": [{"hooks": [{**command, "timeout": 3}]}]}  # fmt: skip
    copilot = json.loads((repo / FILES["copilot"]).read_text())
    assert copilot["version"] == 1 and sorted(copilot["hooks"]) == [
        "agentStop", "preToolUse", "sessionEnd", "sessionStart"]  # fmt: skip
    for event, entries in copilot["hooks"].items():
        assert entries == [{"type": "command",
                            "bash": guard_command("copilot", event)}]  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
def test_install_into_nothing_and_uninstall_leaves_nothing(repo: Path, name: str) -> None:
    top = repo / FILES[name].split("/")[0]
    assert install(repo, name).startswith("INSTALLED")
    assert install(repo, name).startswith("ALREADY INSTALLED")
    assert (repo / FILES[name]).is_file()
    assert uninstall(repo, name).startswith("UNINSTALLED")
    assert not top.exists()  # and .github/hooks/ with it, both made by install
    assert uninstall(repo, name).startswith("NOT INSTALLED")


def test_uninstall_keeps_the_directories_it_did_not_make(repo: Path) -> None:
    (repo / ".github" / "workflows").mkdir(parents=True)
    install(repo, "copilot")
    uninstall(repo, "copilot")
    assert sorted(p.name for p in (repo / ".github").iterdir()) == ["workflows"]


BEFORE: dict[str, dict[str, Any]] = {
    "gemini": {"general": {"vimMode": True}, "hooksConfig": {"disabled": ["x"]},
               "hooks": {"BeforeTool": [{"matcher": "run_shell_command",
                                         "hooks": [{"type": "command", "command": "audit.sh"}]}]}},
    "codex": {"hooks": {"PreToolUse": [{"matcher": "Bash",
                                        "hooks": [{"type": "command", "command": "check.sh"}]}],
                        "Stop": []}},
    "copilot": {"version": 1, "hooks": {"preToolUse": [{"type": "command", "bash": "audit.sh",
                                                        "timeoutSec": 10}]}},
}  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("style", ["tabs-crlf", "bom", "empty"])
def test_uninstall_gives_back_the_very_bytes_it_found(repo: Path, name: str, style: str) -> None:
    path = repo / FILES[name]
    path.parent.mkdir(parents=True)
    if style == "empty":
        before = b""
    else:
        before = json.dumps(BEFORE[name], indent="\t").replace("\n", "\r\n").encode()
        before = (b"\xef\xbb\xbf" if style == "bom" else b"") + before
    path.write_bytes(before)
    path.chmod(0o600)
    assert install(repo, name).startswith("INSTALLED")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    merged = json.loads(path.read_bytes().removeprefix(b"\xef\xbb\xbf"))
    for key, value in (BEFORE[name] if before else {}).items():
        if key != "hooks":
            assert merged[key] == value
    assert install(repo, name).startswith("ALREADY INSTALLED")
    assert uninstall(repo, name).startswith("UNINSTALLED")
    assert path.read_bytes() == before


@pytest.mark.parametrize("name", NAMES)
def test_uninstall_keeps_what_the_user_added_meanwhile(repo: Path, name: str) -> None:
    install(repo, name)
    path = repo / FILES[name]
    data = json.loads(path.read_text())
    data["theirs"] = {"kept": True}
    event = next(iter(data["hooks"]))
    mine = {"type": "command", "bash": "mine.sh"} if name == "copilot" else {
        "hooks": [{"type": "command", "command": "mine.sh"}]}  # fmt: skip
    data["hooks"][event].append(mine)
    path.write_text(json.dumps(data))
    uninstall(repo, name)
    left = json.loads(path.read_text())
    kept = {"version": 1} if name == "copilot" else {}  # what the user's hooks need now
    assert left == {**kept, "hooks": {event: [mine]}, "theirs": {"kept": True}}


@pytest.mark.parametrize("name", NAMES)
def test_a_look_alike_entry_stays_the_users(repo: Path, name: str) -> None:
    install(repo, name)
    path = repo / FILES[name]
    data = json.loads(path.read_text())
    for entries in data["hooks"].values():
        entries[0] = {**entries[0], "timeout": 9}  # the same command, run differently
    path.write_text(json.dumps(data))
    assert uninstall(repo, name).startswith("NOT INSTALLED")
    assert json.loads(path.read_text()) == data
    assert install(repo, name).startswith("INSTALLED")  # ours again, beside the user's
    assert uninstall(repo, name).startswith("UNINSTALLED")
    assert json.loads(path.read_text()) == data


def test_each_harness_remembers_its_own_file(repo: Path) -> None:
    """Claude Code's and Gemini CLI's files are both settings.json: two memories."""
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text('{"model": "c"}')
    (repo / ".gemini").mkdir()
    (repo / ".gemini" / "settings.json").write_text('{"model": "g"}')
    install(repo, "claude")
    install(repo, "gemini")
    memory = json.loads((repo / ".git" / "agent-locks-settings.json").read_text())
    assert sorted(memory) == [".gemini/settings.json", "settings.json"]
    assert base64.b64decode(memory["settings.json"]["before"]) == b'{"model": "c"}'
    uninstall(repo, "gemini")
    assert (repo / ".gemini" / "settings.json").read_text() == '{"model": "g"}'
    assert uninstall(repo, "claude").startswith("UNINSTALLED")
    assert (repo / ".claude" / "settings.json").read_text() == '{"model": "c"}'


@pytest.mark.parametrize("name", NAMES)
def test_installer_refuses_local_and_bad_files(repo: Path, name: str) -> None:
    got = alock(repo, "install-agent-hooks", "--for", name, "--local")
    assert got.code == 2 and "no personal project settings file" in got.err
    path = repo / FILES[name]
    path.parent.mkdir(parents=True)
    path.write_text('{"hooks": []}')
    got = alock(repo, "install-agent-hooks", "--for", name)
    assert got.code == 2 and '"hooks" is not an object' in got.err
    assert path.read_text() == '{"hooks": []}'
    assert alock(repo, "install-agent-hooks", "--for", "nonesuch").code == 2
    assert alock(repo, "install-agent-hooks", "--for", "vscode").code == 2
