"""The coding-agent integration under attack: each test fails on the code before its fix.

The guard is run as the harness runs it (``git alock guard --for claude``, one JSON event
on stdin), in real repositories, worktrees and nested repositories; the installer on
real settings files; the MCP server through the SDK's own client over stdio.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import test_guard as base
from conftest import git
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli import Result, alock
from support.guard import denial, edit, event, guard

from gitlocks.agents.commands import HOOK_FILES, guard_command
from gitlocks.agents.mcp import mend
from gitlocks.core.ignore import IgnoreList

OTHER = {"AGENT_ID": "other-agent"}
BACKTRACKING = "*a" * 20 + "*b"


def records(repo: Path) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = alock(repo, "list", "--json").json()
    return result


def let_through(got: Result, *words: str) -> None:
    """The guard's answer when there is nothing to guard: exit 0, the reason on stderr
    only because the tests set GITLOCKS_GUARD_TRACE, no traceback."""
    assert got.code == 0 and got.out == "", got
    assert got.err.startswith("gitlocks guard: ") and "Traceback" not in got.err, got
    for word in words:
        assert word in got.err, got


# --- 1. a hostile .alockignore ------------------------------------------------------------


def test_a_backtracking_alockignore_cannot_stall_the_guard(repo: Path) -> None:
    lines = [f"{BACKTRACKING}{i}" for i in range(60_000 // (len(BACKTRACKING) + 4))]
    (repo / ".alockignore").write_text("\n".join(lines) + "\n")
    long = "/".join(["a" * 200] * 8) + "/" + "a" * 250
    # A backtracking matcher takes hours here; the bound only keeps a hang from stalling
    # the suite, far above what a linear one needs.
    got = guard(repo, edit(repo, long), timeout=60)
    assert got.code == 0 and [r["paths"] for r in records(repo)] == [[long]]
    probe = (
        "from gitlocks.core.ignore import IgnoreList\n"
        f"ignore = IgnoreList({BACKTRACKING!r})\n"
        "print(ignore.ignored('a' * 4000), ignore.ignored('a' * 4000 + 'b'))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.stdout.split() == ["False", "True"], done


# --- 6. .alockignore reads as git reads a .gitignore --------------------------------------

ATOMS = ["a", "b", "ab", "*", "**", "?", "/", "[ab]", "[!a]", "[a-b]", "\\", "\\*", " ", "!"]
ATOMS += ["#", "a/", "/**", "**/", "a**", "[[:alpha:]]", "[]a]", "é", "\\ ", "\r", "[z-a]", "["]
NAMES = ["a", "b", "ab", "ba", "aa", "a b", "a*", "[a]", "é", "a.b", "!a", "#a", "\\"]


@pytest.fixture
def oracle(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "oracle"
    git(tmp_path, "init", "-q", str(path))
    yield path


def git_ignores(repo: Path, text: str, paths: list[str]) -> set[str]:
    (repo / ".gitignore").write_bytes(text.encode())
    proc = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin", "-z"],
        cwd=repo,
        input="\0".join(paths).encode() + b"\0",
        capture_output=True,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return {p.decode() for p in proc.stdout.split(b"\0") if p}


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(
        st.lists(st.sampled_from(ATOMS), min_size=1, max_size=5), min_size=1, max_size=4
    ),
    paths=st.lists(
        st.lists(st.sampled_from(NAMES), min_size=1, max_size=4), min_size=1, max_size=8
    ),
)
def test_alockignore_decides_as_git_check_ignore(
    oracle: Path, lines: list[list[str]], paths: list[list[str]]
) -> None:
    text = "\n".join("".join(line) for line in lines) + "\n"
    names = sorted({"/".join(p) for p in paths})
    ignored = git_ignores(oracle, text, names)
    ours = IgnoreList(text)
    assert {p for p in names if ours.ignored(p)} == ignored, text


def test_a_file_in_an_excluded_directory_cannot_be_re_included(repo: Path, oracle: Path) -> None:
    text = "src/\n!src/a.py\nbuild/**\n!build/keep.txt\n*.log\n!keep.log\n"
    paths = ["src/a.py", "build/keep.txt", "build/x/keep.txt", "x/keep.log", "x/y.log"]
    assert {p for p in paths if IgnoreList(text).ignored(p)} == git_ignores(oracle, text, paths)
    assert IgnoreList(text).ignored("src/a.py") and not IgnoreList(text).ignored("keep.log")
    (repo / ".alockignore").write_text(text)
    git(repo, "add", ".alockignore")
    git(repo, "commit", "-q", "-m", "alockignore")  # the committed list decides
    assert guard(repo, edit(repo, "src/a.py")).code == 0
    assert records(repo) == []  # ignored: nobody claims it


# --- 2 and 4. the file decides the repository; a relative path is the cwd's ---------------


def test_a_file_in_another_worktree_is_decided_against_the_shared_table(
    repo: Path, worktree: Path
) -> None:
    assert alock(repo, "acquire", "src/**", "-m", "refactor", **OTHER).code == 0
    from_a = edit(repo, "x")
    from_a["tool_input"]["file_path"] = str(worktree / "src" / "app.py")
    assert "src/** held by other-agent" in denial(guard(repo, from_a))
    from_a["tool_input"]["file_path"] = str(worktree / "docs" / "new.md")
    assert guard(repo, from_a).code == 0
    [mine] = [r for r in records(repo) if r["holder"] != "other-agent"]
    assert mine["paths"] == ["docs/new.md"] and Path(mine["worktree"]) == worktree.resolve()


def test_a_file_in_a_nested_repository_is_decided_against_its_own_table(repo: Path) -> None:
    inner = repo / "inner"
    inner.mkdir()
    git(inner, "init", "-q")
    git(inner, "commit", "-q", "--allow-empty", "-m", "inner")
    assert alock(inner, "acquire", "**", "-m", "inner work", **OTHER).code == 0
    assert "held by other-agent" in denial(guard(repo, edit(repo, "inner/x.py")))
    assert records(repo) == []  # nothing claimed in the outer repository
    assert alock(inner, "release", "--all", **OTHER).code == 0
    assert alock(repo, "acquire", "**", **OTHER).code == 0  # the outer table has no say
    assert guard(repo, edit(repo, "inner/y.py")).code == 0
    assert [r["paths"] for r in records(inner)] == [["y.py"]]


def test_a_relative_file_path_is_the_events_cwds(repo: Path, worktree: Path) -> None:
    relative = {**edit(repo, "x"), "cwd": str(repo / "src")}
    relative["tool_input"]["file_path"] = "app.py"
    assert guard(repo, relative).code == 0
    assert [r["paths"] for r in records(repo)] == [["src/app.py"]]
    assert alock(repo, "release", "--all", AGENT_ID=records(repo)[0]["holder"]).code == 0
    assert alock(repo, "acquire", "src/**", **OTHER).code == 0
    elsewhere = {**relative, "cwd": str(worktree / "src")}  # run from the main worktree
    assert "held by other-agent" in denial(guard(repo, elsewhere))


# --- 7. nothing inside a .git directory is guarded ------------------------------------------


@pytest.mark.parametrize("path", [".git/config", ".Git/config", "nested/.git/config", "a/.GIT/x"])
def test_no_git_directory_is_ever_claimed_or_denied(repo: Path, path: str) -> None:
    assert alock(repo, "acquire", "**", **OTHER).code == 0
    nested = repo / "nested"
    nested.mkdir()
    git(nested, "init", "-q")
    let_through(guard(repo, edit(repo, path)), "no file of the working tree")
    assert [r["holder"] for r in records(repo)] == ["other-agent"]


# --- 8. malformed input, directories, a cwd that is a file ----------------------------------


@pytest.mark.parametrize("bad", ["src/a\0b.py", "src/\ud800.py"], ids=["nul", "surrogate"])
def test_a_nul_or_lone_surrogate_in_a_path_is_malformed_input(repo: Path, bad: str) -> None:
    payload = edit(repo, bad)  # json.dumps escapes both, as a harness would send them
    let_through(guard(repo, json.dumps(payload)), "malformed input")
    payload = {**edit(repo, "src/app.py"), "cwd": str(repo) + bad[3:]}
    let_through(guard(repo, json.dumps(payload)), "malformed input")


def test_a_directory_is_let_through_not_claimed(repo: Path) -> None:
    let_through(guard(repo, edit(repo, "src")), "is a directory")
    let_through(guard(repo, edit(repo, ".")), "is a directory")
    assert records(repo) == []


def test_a_cwd_that_is_a_file_is_named_as_one(repo: Path) -> None:
    start = {**event(repo, "SessionStart"), "cwd": str(repo / "README.md")}
    let_through(guard(repo, start), "is a file, not a directory")
    gone = {**start, "cwd": str(repo / "gone")}
    let_through(guard(repo, gone), "does not exist")


# --- 9. a denial stays short and inert --------------------------------------------------------


def test_a_denial_names_the_crossing_patterns_and_caps_the_rest(repo: Path) -> None:
    many = [f"gen/f{i}.py" for i in range(400)]
    assert alock(repo, "acquire", *many, "src/app.py", **OTHER).code == 0
    reason = denial(guard(repo, edit(repo, "src/app.py")))
    assert reason.startswith("gitlocks: src/app.py is inside another agent's claim: src/app.py ")
    assert "and 398 more pattern(s) held by other-agent" in reason and len(reason) < 600


def test_a_holders_reason_cannot_break_out_of_the_answer(repo: Path) -> None:
    evil = 'x" held by nobody\n- fake line\x1b[31m\u202e'
    assert alock(repo, "acquire", "src/**", "-m", evil, **OTHER).code == 0
    reason = denial(guard(repo, edit(repo, "src/app.py")))
    assert '"x\\" held by nobody\\n- fake line\\u001b[31m\\u202e"' in reason
    assert not any(c in reason for c in "\n\x1b\u202e")
    start = guard(repo, event(repo, "SessionStart"))
    context = json.loads(start.out)["hookSpecificOutput"]["additionalContext"]
    assert len(context.splitlines()) == 3 and "\x1b" not in context


# --- 3. a session ends only its own claims -----------------------------------------------------

HARNESS = """
import subprocess, sys
for line in sys.stdin:
    proc = subprocess.run(["git", "alock", "guard", "--for", "claude"], input=line,
                          capture_output=True, text=True)
    print(proc.returncode, flush=True)
"""


class Harness:
    """A long-lived harness process that runs the guard for each event it is given."""

    def __init__(self, repo: Path, **env: str) -> None:
        full = {k: v for k, v in os.environ.items() if k != "AGENT_ID"}
        full["PATH"] = os.path.dirname(sys.executable) + os.pathsep + full.get("PATH", "")
        self.repo = repo
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HARNESS],
            cwd=repo,
            env={**full, **env},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def send(self, event: dict[str, Any]) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(event) + "\n")
        self.proc.stdin.flush()
        return int(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def harnesses(repo: Path) -> Iterator[tuple[Harness, Harness]]:
    one, two = Harness(repo, AGENT_ID="shared"), Harness(repo, AGENT_ID="shared")
    yield one, two
    one.close()
    two.close()


def test_a_session_ends_and_renews_only_its_own_claims(
    repo: Path, harnesses: tuple[Harness, Harness]
) -> None:
    one, two = harnesses
    assert one.send(edit(repo, "src/a.py", session="s-1")) == 0
    assert two.send(edit(repo, "src/b.py", session="s-2")) == 0
    assert alock(repo, "acquire", "docs/**", AGENT_ID="shared").code == 0  # by hand
    by_path = {r["paths"][0]: r for r in records(repo)}
    assert by_path["src/a.py"]["pid"] == one.proc.pid and by_path["src/b.py"]["pid"] == two.proc.pid
    assert two.send(event(repo, "Stop", session="s-2")) == 0
    renewed = git(repo, "log", "--format=%B", "refs/agent-locks-meta/journal")
    assert renewed.count('"event": "renewed"') == 1 and by_path["src/b.py"]["id"] in renewed
    assert one.send(event(repo, "SessionEnd", session="s-1")) == 0
    assert sorted(r["paths"][0] for r in records(repo)) == ["docs/**", "src/b.py"]


# --- 5. the installer gives back exactly what it found -----------------------------------------

OURS = HOOK_FILES["claude"].entries
GUARD = guard_command("claude")
EDIT = OURS["PreToolUse"]["matcher"]


def install(repo: Path) -> str:
    got = alock(repo, "install-agent-hooks", "--for", "claude")
    assert got.code == 0, got
    return got.word


def uninstall(repo: Path) -> str:
    got = alock(repo, "uninstall-agent-hooks", "--for", "claude")
    assert got.code == 0, got
    return got.word


def ours(data: dict[str, Any], event: str) -> int:
    return sum(g == OURS[event] for g in data["hooks"][event])


@pytest.mark.parametrize(
    "before",
    [
        b"",
        b"{}",
        b'{"hooks": {}}',
        b'{\n    "hooks": {"Stop": []},\n    "model": "x"\n}\n',
        b'\xef\xbb\xbf{"permissions": {"allow": []}}\r\n',
        json.dumps(base.EXISTING, indent="\t").encode(),
    ],
    ids=["empty", "object", "empty-hooks", "empty-list", "bom-crlf", "tabs"],
)
def test_uninstall_gives_back_the_very_bytes_it_found(repo: Path, before: bytes) -> None:
    path = repo / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_bytes(before)
    path.chmod(0o600)
    assert install(repo).startswith("INSTALLED")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes().startswith(b"\xef\xbb\xbf") == before.startswith(b"\xef\xbb\xbf")
    assert uninstall(repo).startswith("UNINSTALLED")
    assert path.read_bytes() == before and stat.S_IMODE(path.stat().st_mode) == 0o600


def test_uninstall_keeps_what_the_user_added_meanwhile(repo: Path) -> None:
    path = repo / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_bytes(b'\xef\xbb\xbf{"hooks": {}}')
    install(repo)
    data = json.loads(path.read_bytes().removeprefix(b"\xef\xbb\xbf"))
    data["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "notify.sh"}]})
    data["model"] = "y"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(data).encode())
    uninstall(repo)
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    assert json.loads(path.read_bytes().removeprefix(b"\xef\xbb\xbf")) == {
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify.sh"}]}]},
        "model": "y",
    }


def test_only_our_own_group_counts_and_only_it_is_removed(repo: Path) -> None:
    theirs = {
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": GUARD}]},
                {"matcher": EDIT, "hooks": [{"type": "command", "command": GUARD, "timeout": 9}]},
            ],
            "Stop": [{"matcher": "x", "hooks": [{"type": "command", "command": GUARD}]}],
        }
    }
    path = repo / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(theirs))
    assert install(repo).startswith("INSTALLED")
    data = json.loads(path.read_text())
    assert all(ours(data, e) == 1 for e in ("PreToolUse", "SessionStart", "SessionEnd", "Stop"))
    assert install(repo).startswith("ALREADY INSTALLED")
    assert uninstall(repo).startswith("UNINSTALLED")
    assert json.loads(path.read_text()) == theirs
    assert uninstall(repo).startswith("NOT INSTALLED")  # the user's look-alikes stay theirs


def test_install_writes_through_a_symlink(repo: Path, tmp_path: Path) -> None:
    target = tmp_path / "shared-settings.json"
    target.write_text('{"model": "z"}')
    (repo / ".claude").mkdir()
    link = repo / ".claude" / "settings.json"
    link.symlink_to(target)
    install(repo)
    assert link.is_symlink() and ours(json.loads(target.read_text()), "Stop") == 1
    uninstall(repo)
    assert link.is_symlink() and target.read_text() == '{"model": "z"}'


def test_without_its_memory_uninstall_still_removes_only_ours(repo: Path) -> None:
    path = repo / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(base.EXISTING))
    install(repo)
    (repo / ".git" / "agent-locks-settings.json").unlink(
        missing_ok=True
    )  # installed by someone else
    uninstall(repo)
    assert json.loads(path.read_text()) == base.EXISTING


# --- 10. the MCP server answers every call with our document -----------------------------------


def mcp_session(repo: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Each call's result (parsed), made by the SDK's own client over stdio."""
    mcp = pytest.importorskip("mcp")
    import anyio
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {k: v for k, v in os.environ.items() if k != "AGENT_ID"}
    env["AGENT_ID"] = "mcp-agent"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "gitlocks.main", "mcp"], env=env, cwd=str(repo)
    )

    async def session() -> list[Any]:
        answers = []
        async with stdio_client(params) as (read, write), mcp.ClientSession(read, write) as client:
            await client.initialize()
            for name, arguments in calls:
                with anyio.fail_after(30):
                    result = await client.call_tool(name, arguments)
                failed = getattr(result, "is_error", getattr(result, "isError", False))
                doc = json.loads(result.content[0].text)
                errored = isinstance(doc, dict) and doc.get("status") == "error"
                assert bool(failed) == errored, doc  # an error is a tool error, only an error
                answers.append(doc)
        return answers

    result: list[Any] = anyio.run(session)
    return result


def test_mcp_bad_arguments_get_our_error_document(repo: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("acquire", {"paths": "src/app.py"}),
        ("acquire", {"paths": [1]}),
        ("release", {"all": "yes"}),
        ("release", {"all": "true"}),
        ("note", {"path": ["x"], "text": "t"}),
        ("acquire", {"paths": ["a"], "colour": "red"}),
        ("check", {}),
        ("check", {"paths": ["x"] * 100_000}),
        ("acquire", {"paths": ["src/a\0.py"]}),
        ("acquire", {"paths": ["docs/**"], "reason": "5"}),
    ]
    got = mcp_session(repo, calls)
    *errors, fine = got
    assert all(e["status"] == "error" and e["exit_code"] == 2 for e in errors), errors
    words = [e["error"] for e in errors]
    assert "paths must be an array" in words[0] and "paths[0] must be a string" in words[1]
    assert "all must be true or false" in words[2] and "all must be true or false" in words[3]
    assert "path must be a string" in words[4] and "no argument 'colour'" in words[5]
    assert "needs the argument 'paths'" in words[6] and "at most 1000" in words[7]
    assert "NUL" in words[8]
    assert fine["status"] == "acquired" and fine["lock"]["reason"] == "5"
    assert [r["paths"] for r in records(repo)] == [["docs/**"]]


def test_mcp_answers_a_request_holding_a_lone_surrogate(repo: Path) -> None:
    """The SDK's client cannot send one (it refuses to encode it): the request is written
    as a harness may write it, JSON with an escaped lone surrogate."""
    pytest.importorskip("mcp")
    env = {**os.environ, "AGENT_ID": "mcp-agent"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gitlocks.main", "mcp"],
        cwd=repo,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    first = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    then = [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "acquire", "arguments": {"paths": ["src/\ud800.py"], "reason": "\\ud800"}}},
    ]  # fmt: skip
    raw = "".join(json.dumps(r) + "\n" for r in then).encode()
    assert b'"src/\\ud800.py"' in raw
    watchdog = threading.Timer(30, proc.kill)
    watchdog.start()
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps(first).encode() + b"\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
        proc.stdin.write(raw)
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline() or b"null")
    finally:
        watchdog.cancel()
        proc.kill()
        proc.wait()
    assert answer is not None and answer["id"] == 2, "no answer"
    text = answer["result"]["content"][0]["text"]
    assert json.loads(text)["status"] == "error" and "unpaired surrogate" in text
    assert records(repo) == []


def test_mend_touches_only_lone_surrogate_escapes() -> None:
    assert mend(b'"\\ud800"') == b'"\\u0000"'
    assert mend(b'"\\ud83d\\ude00 \\\\ud800 \\udc00x"') == b'"\\ud83d\\ude00 \\\\ud800 \\u0000x"'
