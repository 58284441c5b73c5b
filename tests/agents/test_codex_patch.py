"""Codex's patches, wherever its shell could apply them: the directory a shell command
runs ``apply_patch`` in is read as the shell decides it, or the call is denied with the
form to use; a claim is never recorded on a guessed path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git
from support.cli import Result, alock
from support.records import stored

from gitlocks.agents.codex_patch import shell_patch_paths
from gitlocks.agents.edits import Candidates, Unjudgeable

OTHER = {"AGENT_ID": "other-agent"}
PATCH = "*** Begin Patch\n*** Update File: auth.py\n@@\n-a\n+b\n*** End Patch\n"


def heredoc(before: str, patch: str = PATCH) -> str:
    return f"{before}apply_patch <<'EOF'\n{patch}EOF\n"


def codex_shell(repo: Path, command: object, workdir: str | None = None) -> dict[str, object]:
    """Codex's shell tool as its PreToolUse hook sees it (tool "Bash"; Codex 0.171.0 sends
    the command alone: ``workdir`` is for a harness whose payload carries the call's)."""
    tool_input: dict[str, object] = {"command": command}
    if workdir is not None:
        tool_input["workdir"] = workdir
    return {"session_id": "s-1", "turn_id": "turn-1", "transcript_path": None,
            "cwd": str(repo), "hook_event_name": "PreToolUse", "model": "gpt-5",
            "permission_mode": "default", "tool_name": "Bash", "tool_use_id": "call-1",
            "tool_input": tool_input}  # fmt: skip


@pytest.fixture
def codex(tmp_path: Path) -> Path:
    """A stand-in ``codex``: a process of that name running the hook through ``sh -c``, as
    Codex runs its hooks."""
    bindir = tmp_path / "harness"
    bindir.mkdir()
    program = bindir / "codex"
    program.write_text("#!/bin/sh\nsh -c 'git alock guard --for codex'\n")
    program.chmod(0o755)
    return program


def run_codex(codex: Path, repo: Path, event: dict[str, object]) -> Result:
    env = {k: v for k, v in os.environ.items() if k != "AGENT_ID"}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(
        [str(codex)], cwd=repo, env=env, input=json.dumps(event), capture_output=True, text=True
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def denial(got: Result) -> str:
    assert got.code == 0, got
    out = json.loads(got.out)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny", out
    reason: str = out["permissionDecisionReason"]
    return reason


def claims(repo: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for record in stored(repo):
        found.setdefault(record["holder"], []).extend(record["paths"])
    return found


@pytest.fixture
def api(repo: Path) -> Path:
    """``repo`` with src/api/auth.py, claimed by another agent."""
    (repo / "src" / "api").mkdir()
    (repo / "src" / "api" / "auth.py").write_text("a\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "api")
    assert alock(repo, "acquire", "src/api/**", "-m", "auth", **OTHER).code == 0
    return repo


# --- each shell form that reaches the claimed directory is judged there ---------------------

FORMS = {
    "semicolon": heredoc("cd src/api; "),
    "subshell": "(" + heredoc("cd src/api && ").rstrip("\n") + "\n)",
    "two-cds": heredoc("cd src && cd api && "),
    "pwd": heredoc("cd $PWD/src/api && "),
    "pwd-quoted": heredoc('cd "${PWD}/src/api" && '),
    "pushd": heredoc("pushd src/api && "),
    "env-C": heredoc("env -C src/api "),
    "mkdir-first": heredoc("mkdir -p src/api && cd src/api && "),
    "newlines": heredoc("set -e\ncd src\ncd api\n"),
}


@pytest.mark.parametrize("script", FORMS.values(), ids=FORMS.keys())
def test_a_patch_run_from_a_claimed_directory_is_denied(
    api: Path, codex: Path, script: str
) -> None:
    reason = denial(run_codex(codex, api, codex_shell(api, script, workdir=str(api))))
    assert "src/api/auth.py is inside another agent's claim" in reason
    assert claims(api) == {"other-agent": ["src/api/**"]}, "nothing claimed on a guess"


def test_a_shell_patch_is_read_against_the_calls_workdir(api: Path, codex: Path) -> None:
    """Issue 38: a held src/api/auth.py patched as auth.py with workdir src/api was let
    through, and a phantom auth.py at the top claimed."""
    for workdir in ("src/api", str(api / "src" / "api")):
        reason = denial(run_codex(codex, api, codex_shell(api, heredoc(""), workdir)))
        assert "src/api/auth.py is inside another agent's claim" in reason
    assert claims(api) == {"other-agent": ["src/api/**"]}, "no phantom auth.py claimed"


def test_a_shell_patch_without_its_workdir_is_denied_never_guessed(api: Path, codex: Path) -> None:
    """Codex applies it in the call's workdir, which its hook does not send: the names
    cannot be read against cwd on a guess (issue 38)."""
    reason = denial(run_codex(codex, api, codex_shell(api, heredoc(""))))
    assert "cannot be checked against other agents' claims" in reason
    assert "workdir" in reason and "use the apply_patch tool" in reason
    assert claims(api) == {"other-agent": ["src/api/**"]}, "nothing claimed on a guess"
    # An absolute directory needs no workdir: it is judged.
    reason = denial(run_codex(codex, api, codex_shell(api, heredoc(f"cd {api}/src/api && "))))
    assert "src/api/auth.py is inside another agent's claim" in reason


def test_the_argv_form_is_read_as_its_shell_reads_it(api: Path, codex: Path) -> None:
    argv = ["bash", "-lc", heredoc("cd src/api && ")]
    reason = denial(run_codex(codex, api, codex_shell(api, argv, workdir=str(api))))
    assert "src/api/auth.py is inside another agent's claim" in reason
    argv = ["env", "-C", "src/api", "apply_patch", PATCH]  # no shell: a program and its args
    got = run_codex(codex, api, codex_shell(api, argv, workdir="."))
    assert "src/api/auth.py" in denial(got)
    assert claims(api) == {"other-agent": ["src/api/**"]}


UNKNOWN = {
    "variable": heredoc("cd $SERVICE_DIR && "),
    "substitution": heredoc('cd "$(git rev-parse --show-toplevel)/src/api" && '),
    "backticks": heredoc("cd `pwd`/src/api && "),
    "unknown-command": heredoc("source env.sh && "),
    "or": heredoc("cd src/api || cd lib && "),
    "home": heredoc("cd ~/project && "),
    "cdpath": heredoc("CDPATH=/elsewhere cd api && "),
    "function": heredoc("go() { cd src/api; }; go && "),
    "pipe": f"cat <<'EOF' | apply_patch\n{PATCH}EOF\n",
    "two-patches": heredoc("") + heredoc("cd src/api && "),
    "sudo": heredoc("sudo -D src/api "),
}


@pytest.mark.parametrize("script", UNKNOWN.values(), ids=UNKNOWN.keys())
def test_an_unknown_directory_is_denied_saying_which_form_to_use(
    api: Path, codex: Path, script: str
) -> None:
    reason = denial(run_codex(codex, api, codex_shell(api, script)))
    assert "cannot be checked against other agents' claims" in reason
    assert "use the apply_patch tool" in reason and "cd to an absolute directory" in reason
    assert claims(api) == {"other-agent": ["src/api/**"]}, "nothing claimed on a guess"


def test_a_known_directory_claims_there_and_candidates_claim_nothing(
    repo: Path, codex: Path
) -> None:
    add = "*** Begin Patch\n*** Add File: new.py\n+x\n*** End Patch\n"
    got = run_codex(codex, repo, codex_shell(repo, heredoc("cd src && ", add), "."))
    assert got.code == 0 and got.out == "", got
    [(holder, paths)] = claims(repo).items()
    assert holder.startswith("codex-") and paths == ["src/new.py"]
    # A cd that may fail before ";": the patch may land in either place; both are
    # judged (neither is held), neither is claimed.
    other = "*** Begin Patch\n*** Add File: other.py\n+x\n*** End Patch\n"
    got = run_codex(codex, repo, codex_shell(repo, heredoc("cd src; ", other), "."))
    assert got.code == 0 and got.out == "" and "not claimed: src/other.py other.py" in got.err
    assert list(claims(repo).values()) == [["src/new.py"]]


# --- the directories, as the shell itself decides them ---------------------------------------


ORACLE = {
    **{name: FORMS[name] for name in ("semicolon", "two-cds", "pwd", "pwd-quoted", "pushd")},
    **{name: FORMS[name] for name in ("env-C", "mkdir-first", "newlines", "subshell")},
    "missing-dir-semicolon": heredoc("cd nowhere; "),
    "group": heredoc("{ cd src; } && "),
    "subshell-before": heredoc("(cd src) && "),
    "quoted-name": heredoc("cd 'sp ace' && "),
    "dotdot": heredoc("cd src/api && cd .. && "),
    "continued": heredoc("cd src/api \\\n  && "),
    "comment": heredoc("# go there\ncd src/api # the api\n"),
    "group-around": "{ " + heredoc("cd src/api && ").rstrip("\n") + "\n}",
}


@pytest.mark.parametrize("script", ORACLE.values(), ids=ORACLE.keys())
def test_the_directory_is_where_bash_runs_apply_patch(tmp_path: Path, script: str) -> None:
    """A stand-in ``apply_patch`` on bash's PATH says where bash ran it: that directory is
    always one the parser names the file in."""
    top = tmp_path / "top"
    (top / "src" / "api").mkdir(parents=True)
    (top / "sp ace").mkdir()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "where"
    (bindir / "apply_patch").write_text(f"#!/bin/sh\npwd -P >> {log}\ncat >/dev/null\n")
    (bindir / "apply_patch").chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(["bash", "-c", script], cwd=top, env=env, capture_output=True, check=False)
    [where] = log.read_text().splitlines()
    named = shell_patch_paths({"command": script})
    assert named is not None
    assert os.path.join(where, "auth.py") in {os.path.realpath(top / p) for p in named}


def test_shapes() -> None:
    assert shell_patch_paths({"command": heredoc("")}) == ("auth.py",)
    assert shell_patch_paths({"command": heredoc("cd src/api; ")}) == Candidates(
        ("src/api/auth.py", "auth.py")
    )
    assert isinstance(shell_patch_paths({"command": heredoc("cd src/api; ")}), Candidates)
    assert shell_patch_paths({"command": ["apply_patch", PATCH]}) == ("auth.py",)
    assert shell_patch_paths({"command": "ls -la"}) is None
    assert shell_patch_paths({"command": "echo '*** Begin Patch'"}) is None
    # A patch whose text mentions apply_patch is one patch, read whole.
    doc = "*** Begin Patch\n*** Add File: d.md\n+run apply_patch <<'EOF'\n*** End Patch\n"
    assert shell_patch_paths({"command": heredoc("cd docs && ", doc)}) == ("docs/d.md",)
    with pytest.raises(Unjudgeable):
        shell_patch_paths({"command": ["sh", "-c", heredoc("cd $X && ")]})


@pytest.mark.parametrize(
    "command",
    [
        "grep -rn 'apply_patch' docs; echo '*** Begin Patch'",
        ["grep", "apply_patch", "*** Begin Patch"],
        "echo '*** Begin Patch' | apply_patch",
    ],
)
def test_a_command_with_no_file_to_write_gets_silence(repo: Path, command: object) -> None:
    """No patch naming a file: nothing is written, nothing to deny or claim."""
    assert shell_patch_paths({"command": command}) is None
