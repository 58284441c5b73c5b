"""Each harness as it really ships (issue 38): its events, in the shapes its package sends
(``support.payloads``, each noting its version), run through the command install-agent-hooks
wrote, in the harness's own shell form (``sh -c``, ``bash -c``, Codex's ``bash -lc`` with a
profile that resets PATH), from a process named like the harness; and the answers read as
that harness's code reads them. A held file is denied; everything else is exit 0 and
silence; a machine without gitlocks is never blocked."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from conftest import git
from support import payloads as p
from support.cli import Result, alock
from support.harness import StandIn
from support.interpreter import named_python

OTHER = {"AGENT_ID": "other-agent"}
RESET_PATH = "/usr/bin:/bin"  # what Debian's /etc/profile does for a login shell


class Product(NamedTuple):
    install: str  # the harness install-agent-hooks is run for
    file: str
    event: str  # the edit event's key in the file ("" for a hook file of its own)
    key: str  # the command's key in the entry
    process: str  # the harness's process name
    shell: tuple[str, ...]
    writes: dict[str, Callable[[Path, str], p.Payload]]
    reader: str  # whose code reads the answer


PRODUCTS = {
    "claude": Product("claude", ".claude/settings.json", "PreToolUse", "command", "claude",
                      ("sh", "-c"), p.CLAUDE_WRITES, "claude"),
    "codex": Product("codex", ".codex/hooks.json", "PreToolUse", "command", "codex",
                     ("bash", "-lc"), p.CODEX_WRITES, "codex"),
    "gemini": Product("gemini", ".gemini/settings.json", "BeforeTool", "command", "gemini",
                      ("bash", "-c"), p.GEMINI_WRITES, "gemini"),
    "copilot": Product("copilot", ".github/hooks/gitlocks.json", "preToolUse", "bash",
                       "copilot", ("bash", "-c"), p.COPILOT_WRITES, "copilot"),
    # Copilot CLI and VS Code run Claude Code's file too (VS Code ignoring its matchers).
    "copilot-claude": Product("claude", ".claude/settings.json", "PreToolUse", "command",
                              "copilot", ("bash", "-c"), p.COPILOT_CLAUDE_WRITES, "copilot"),
    "vscode": Product("claude", ".claude/settings.json", "PreToolUse", "command", "code",
                      ("sh", "-c"), p.VSCODE_WRITES, "vscode"),
    "vscode-github": Product("copilot", ".github/hooks/gitlocks.json", "preToolUse", "bash",
                             "code", ("bash", "-c"), p.VSCODE_WRITES, "vscode"),
    "cursor": Product("cursor", ".cursor/hooks.json", "preToolUse", "command", "cursor",
                      ("sh", "-c"), p.CURSOR_WRITES, "cursor"),
    "windsurf": Product("windsurf", ".windsurf/hooks.json", "pre_write_code", "command",
                        "windsurf", ("sh", "-c"), {"pre_write_code": p.windsurf}, "windsurf"),
    "cline": Product("cline", ".clinerules/hooks/PreToolUse", "", "", "code", ("/bin/sh",),
                     p.CLINE_WRITES, "cline"),
    "opencode": Product("opencode", ".opencode/plugins/gitlocks.js", "", "", "opencode",
                        ("sh", "-c"), p.OPENCODE_WRITES, "opencode"),
    "qwen": Product("qwen", ".qwen/settings.json", "PreToolUse", "command", "qwen",
                    ("bash", "-c"), p.QWEN_WRITES, "qwen"),
}  # fmt: skip
CASES = [(name, tool) for name, product in PRODUCTS.items() for tool in product.writes]


def install(repo: Path, harness: str) -> Result:
    got = alock(repo, "install-agent-hooks", "--for", harness)
    assert got.code == 0, got
    return got


def installed(repo: Path, product: Product) -> str:
    """The command the harness runs before an edit, as install wrote it."""
    path = repo / product.file
    if product.install == "cline":
        return str(path)
    if product.install == "opencode":
        found = re.search(r"^const GUARD = (\".*\");$", path.read_text(), re.M)
        assert found is not None
        script: str = json.loads(found.group(1))
        return script
    entries = json.loads(path.read_text())["hooks"][product.event]
    for entry in entries:
        for hook in entry.get("hooks", [entry]):
            command: str = hook[product.key]
            return command
    raise AssertionError(entries)


@pytest.fixture
def login_profile() -> Path:
    """A login profile that resets PATH, as Debian's /etc/profile does: Codex's hooks run
    in ``$SHELL -lc``."""
    profile = Path(os.environ["HOME"]) / ".bash_profile"
    profile.write_text(f"PATH={RESET_PATH}\nexport PATH\n")
    return profile


@pytest.fixture
def harnesses(tmp_path: Path) -> Iterator[dict[str, StandIn]]:
    made: dict[str, StandIn] = {}
    yield made
    for standin in made.values():
        standin.close()


def run(
    repo: Path, made: dict[str, StandIn], name: str, event: p.Payload | str, **env: str
) -> Result:
    """``event`` through the installed command, in the harness's shell form, from a process
    named like the harness (one per harness: one session)."""
    product = PRODUCTS[name]
    if name not in made:
        made[name] = StandIn(repo.parent / f"harness-{name}", product.process, cwd=repo)
    command = installed(repo, product)
    raw: p.Payload | str = event
    if name == "cursor" and isinstance(event, dict):
        raw = "\ufeff" + json.dumps(event)  # Cursor's payloads start with a BOM
    return made[name].hook(command, raw, product.shell, **env)


@pytest.mark.parametrize(("name", "tool"), CASES, ids=[f"{n}-{t}" for n, t in CASES])
def test_every_write_tool_of_every_harness_is_denied_in_a_held_file(
    repo: Path, harnesses: dict[str, StandIn], login_profile: Path, name: str, tool: str
) -> None:
    """Issue 38: Copilot's create, str_replace_editor and apply_patch, VS Code's tools, an
    event without sessionId, Codex through a login shell whose profile resets PATH: each
    was let through."""
    product = PRODUCTS[name]
    install(repo, product.install)
    assert alock(repo, "acquire", "src/**", "-m", "rewrite", **OTHER).code == 0
    got = run(repo, harnesses, name, product.writes[tool](repo, "src/app.py"))
    assert p.denied(product.reader, got), got
    assert "src/app.py is inside another agent's claim" in p.reason(product.reader, got), got
    assert "held by other-agent" in p.reason(product.reader, got)


NOTHING = {
    "claude-outside": ("claude", lambda r, t: p.CLAUDE_WRITES["Write"](r, str(t / "plan.md"))),
    "claude-in-git": ("claude", lambda r, t: p.CLAUDE_WRITES["Edit"](r, ".git/COMMIT_EDITMSG")),
    "claude-read": ("claude", lambda r, t: p.claude_tool(r, "Read", {"file_path": str(r)})),
    "codex-shell": ("codex", lambda r, t: p.codex(r, "PreToolUse", tool_name="Bash",
                                                  tool_input={"command": "ls"})),
    "gemini-outside": ("gemini", lambda r, t: p.GEMINI_WRITES["write_file"](r, str(t / "x"))),
    "copilot-view": ("copilot", lambda r, t: p.copilot(r, "str_replace_editor", {
        "command": "view", "path": str(r / "src/app.py")})),
    "copilot-outside": ("copilot", lambda r, t: p.COPILOT_WRITES["create"](r, str(t / "x"))),
    "copilot-bash": ("copilot", lambda r, t: p.copilot(r, "bash", {"command": "ls"})),
    "vscode-read": ("vscode", lambda r, t: p.vscode(r, "read_file", {"filePath": str(r)})),
    "vscode-outside": ("vscode", lambda r, t: p.VSCODE_WRITES["create_file"](r, str(t / "x"))),
    "cursor-shell": ("cursor", lambda r, t: p.cursor(r, "Shell", {"command": "ls"})),
    "qwen-read": ("qwen", lambda r, t: p.qwen(r, "PreToolUse", tool_name="read_file",
                                              tool_input={"file_path": str(r)})),
    "not-json": ("claude", lambda r, t: "{not json"),
}  # fmt: skip


@pytest.mark.parametrize("case", NOTHING.values(), ids=NOTHING.keys())
def test_nothing_to_guard_is_exit_0_and_silence(
    repo: Path, tmp_path: Path, harnesses: dict[str, StandIn], login_profile: Path,
    case: tuple[str, Callable[[Path, Path], Any]],
) -> None:  # fmt: skip
    """Issue 38: an edit outside the repository or inside .git, a read, another tool exited
    1: a notice for each in Claude Code and VS Code, a denial in Copilot CLI."""
    name, make = case
    install(repo, PRODUCTS[name].install)
    assert alock(repo, "acquire", "**", **OTHER).code == 0
    assert run(repo, harnesses, name, make(repo, tmp_path)) == Result(0, "", "")


@pytest.mark.parametrize("name", ["gemini", "copilot", "claude", "qwen", "cursor", "windsurf"])
def test_a_machine_without_gitlocks_is_never_blocked(
    repo: Path, tmp_path: Path, harnesses: dict[str, StandIn], name: str
) -> None:
    """Committed settings, run where gitlocks is not installed: the command installed from
    an interpreter git-alock was not beside exited 127, which Gemini CLI (with its text)
    and Copilot CLI read as a denial of every edit, and each turn's end as a new prompt."""
    product = PRODUCTS[name]
    twin = named_python(tmp_path / "installer", "python3")  # an install from elsewhere
    env = {**os.environ, "PATH": RESET_PATH}
    command = [str(twin), "-m", "gitlocks", "install-agent-hooks", "--for", product.install]
    got = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    assert got.returncode == 0, got
    git(repo, "config", "--unset-all", "alock.guardProgram", check=False)
    shutil.rmtree(tmp_path / "installer")  # that interpreter is not on this machine
    assert alock(repo, "acquire", "src/**", **OTHER).code == 0
    edit = product.writes[next(iter(product.writes))](repo, "README.md")
    answer = run(repo, harnesses, name, edit, PATH=RESET_PATH)
    assert answer.code == 0 and answer.out == "" and not p.denied(product.reader, answer)
    assert answer.err.count("\n") == 1 and "not guarded" in answer.err, answer


def test_codexs_login_shell_finds_the_clones_git_alock(
    repo: Path, harnesses: dict[str, StandIn], login_profile: Path
) -> None:
    """Codex runs ``$SHELL -lc``: a profile resetting PATH hid a venv's git-alock, and every
    edit went through (exit 1). The installed command finds it through alock.guardProgram."""
    got = install(repo, "codex")
    assert "bash -lc HOOK runs gitlocks" in got.out or "-lc HOOK runs gitlocks" in got.out, got
    program = git(repo, "config", "alock.guardProgram").strip()
    assert os.path.isabs(program) and os.access(program, os.X_OK)
    assert "alock" not in subprocess.run(["bash", "-lc", "echo $PATH"], capture_output=True,
                                         text=True).stdout  # fmt: skip
    assert alock(repo, "acquire", "src/**", **OTHER).code == 0
    edit = p.CODEX_WRITES["apply_patch"](repo, "src/app.py")
    assert p.denied("codex", run(repo, harnesses, "codex", edit))


def test_install_writes_no_path_of_this_machine(repo: Path) -> None:
    """Committed settings run on every teammate's machine: the command is the same there."""
    for harness in ("claude", "codex", "gemini", "copilot", "qwen", "cursor", "windsurf"):
        install(repo, harness)
    for name in (".claude/settings.json", ".codex/hooks.json", ".gemini/settings.json",
                 ".github/hooks/gitlocks.json", ".qwen/settings.json", ".cursor/hooks.json",
                 ".windsurf/hooks.json"):  # fmt: skip
        text = (repo / name).read_text()
        assert sys.executable not in text and sys.prefix not in text, name
        assert "sh -c '" in text and "git alock guard --for" in text, name


def test_each_harness_matcher_and_session_end_as_it_reads_them(repo: Path) -> None:
    for harness in ("claude", "codex", "gemini", "qwen"):
        install(repo, harness)

    def hooks(name: str) -> dict[str, Any]:
        found: dict[str, Any] = json.loads((repo / name).read_text())["hooks"]
        return found

    # Gemini: an unanchored regex matched every MCP tool whose name holds "replace".
    matcher = hooks(".gemini/settings.json")["BeforeTool"][0]["matcher"]
    assert re.search(matcher, "write_file") and re.search(matcher, "replace")
    assert not re.search(matcher, "mcp_docs_replace_all") and not re.search(matcher, "xwrite_file")
    matcher = hooks(".qwen/settings.json")["PreToolUse"][0]["matcher"]
    assert re.search(matcher, "edit") and not re.search(matcher, "notebook_edit")
    # Claude: SessionEnd gets 1.5 s in all unless a hook sets a timeout (seconds).
    [end] = hooks(".claude/settings.json")["SessionEnd"]
    assert end["hooks"][0]["timeout"] >= 10
    # Claude's exact-name matcher (letters, digits, "_" and "|") lists Copilot's tools too.
    matcher = hooks(".claude/settings.json")["PreToolUse"][0]["matcher"]
    assert re.fullmatch(r"[a-zA-Z0-9_|]+", matcher)
    assert {"Edit", "Write", "create", "str_replace_editor", "apply_patch"} <= set(
        matcher.split("|")
    )
    # Codex 0.171.0 sends SessionEnd; its matcher selects apply_patch (and its aliases).
    codex = hooks(".codex/hooks.json")
    assert "SessionEnd" in codex and codex["SessionEnd"][0]["hooks"][0]["timeout"] <= 3
    assert re.search(codex["PreToolUse"][0]["matcher"], "apply_patch")


@pytest.mark.parametrize(
    ("name", "reason", "kept"),
    [("claude", "clear", True), ("claude", "resume", True), ("claude", "prompt_input_exit", False),
     ("gemini", "clear", True), ("gemini", "exit", False), ("qwen", "clear", True)],
)  # fmt: skip
def test_session_end_keeps_the_claims_of_a_process_that_goes_on(
    repo: Path, harnesses: dict[str, StandIn], name: str, reason: str, kept: bool
) -> None:
    """Claude's /clear and /resume (Gemini's and Qwen's /clear) send SessionEnd while the
    same process and its uncommitted edits go on: the claims were dropped."""
    product = PRODUCTS[name]
    install(repo, product.install)
    edit = product.writes[next(iter(product.writes))](repo, "src/app.py")
    assert run(repo, harnesses, name, edit) == Result(0, "", "")
    assert [r["paths"] for r in alock(repo, "list", "--json").json()] == [["src/app.py"]]
    end = {**edit, "hook_event_name": "SessionEnd", "reason": reason}
    for key in ("tool_name", "tool_input", "tool_use_id"):
        end.pop(key, None)
    # The end runs the SessionEnd entry's command: the same command as the edit's.
    got = run(repo, harnesses, name, end)
    assert got.code == 0 and got.out == "", got
    left = alock(repo, "list", "--json").json()
    assert bool(left) is kept, left


def test_the_opencode_plugin_throws_on_a_held_file(repo: Path, tmp_path: Path) -> None:
    """OpenCode 1.18.33 calls ``tool.execute.before(input, output)`` and fails the call
    when it throws: the installed plugin, loaded by node (as Bun loads it), runs the guard."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node")
    install(repo, "opencode")
    assert alock(repo, "acquire", "src/**", **OTHER).code == 0
    plugin = (repo / ".opencode/plugins/gitlocks.js").resolve()
    script = (
        f"import {{ GitlocksGuard }} from {json.dumps(plugin.as_uri())};\n"
        f"const hooks = await GitlocksGuard({{ directory: {json.dumps(str(repo))} }});\n"
        "const call = (file) => hooks['tool.execute.before']("
        "{ tool: 'write', sessionID: 's', callID: 'c' }, { args: { filePath: file } })"
        ".then(() => 'allowed', (e) => 'denied: ' + e.message);\n"
        "console.log(JSON.stringify([await call('src/app.py'), await call('docs/new.md')]));\n"
    )
    entry = tmp_path / "run.mjs"
    entry.write_text(script)
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    got = subprocess.run([node, str(entry)], cwd=repo, env=env, capture_output=True, text=True)
    held, free = json.loads(got.stdout.strip().splitlines()[-1])
    assert held.startswith("denied: gitlocks: src/app.py is inside another agent's claim"), got
    assert free == "allowed", got


def test_the_cline_hook_file_is_executable_and_the_others_uninstall(repo: Path) -> None:
    install(repo, "cline")
    hook = repo / ".clinerules/hooks/PreToolUse"
    assert os.access(hook, os.X_OK) and hook.read_text().startswith("#!/bin/sh\n")
    assert alock(repo, "install-agent-hooks", "--for", "cline").out.startswith("ALREADY INSTALLED")
    for harness in ("cline", "opencode", "cursor", "windsurf", "qwen"):
        install(repo, harness)
        got = alock(repo, "uninstall-agent-hooks", "--for", harness)
        assert got.code == 0 and got.out.startswith("UNINSTALLED"), got
    assert sorted(p.name for p in repo.iterdir()) == [".git", "README.md", "src"]


def test_an_older_install_is_replaced_and_still_uninstalled(repo: Path) -> None:
    """Settings holding the command an older version wrote (``git alock guard --for X``,
    Gemini's unanchored matcher): install replaces it, uninstall takes either out."""
    old = {"hooks": {"BeforeTool": [{"matcher": "write_file|replace", "hooks": [
        {"name": "gitlocks-guard", "type": "command",
         "command": "git alock guard --for gemini"}]}]}}  # fmt: skip
    path = repo / ".gemini/settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(old))
    install(repo, "gemini")
    entries = json.loads(path.read_text())["hooks"]["BeforeTool"]
    assert len(entries) == 1 and entries[0]["matcher"] == "^(write_file|replace)$"
    path.write_text(json.dumps(old))
    assert alock(repo, "uninstall-agent-hooks", "--for", "gemini").out.startswith("UNINSTALLED")


# --- git alock doctor ------------------------------------------------------------------------


def test_doctor_runs_each_installed_hook_as_its_harness_would(
    repo: Path, login_profile: Path
) -> None:
    for harness in ("claude", "codex", "gemini", "copilot"):
        install(repo, harness)
    got = alock(repo, "doctor", "--json", SHELL="/bin/bash")
    assert got.code == 0, got
    report = got.json()
    found = {(c["harness"], c["file"]): c["denied"] for c in report["harnesses"]}
    assert found == {
        ("claude", ".claude/settings.json"): True,
        ("copilot-claude", ".claude/settings.json"): True,
        ("vscode", ".claude/settings.json"): True,
        ("codex", ".codex/hooks.json"): True,
        ("gemini", ".gemini/settings.json"): True,
        ("copilot", ".github/hooks/gitlocks.json"): True,
        ("vscode", ".github/hooks/gitlocks.json"): True,
    }
    assert report["ok"] is True and "alock.guardRemoteTimeout" in report["timeouts"]
    assert alock(repo, "list", "--json").json() == [], "the stand-in's claim is gone"
    # Codex's login shell no longer finds gitlocks: that integration would fail open.
    git(repo, "config", "--unset", "alock.guardProgram")
    got = alock(repo, "doctor", SHELL="/bin/bash")
    assert got.code == 1, got
    [line] = [x for x in got.out.splitlines() if "Codex CLI via" in x]
    assert line.lstrip().startswith("FAIL") and "bash -lc" in line and "not guarded" in line
    assert alock(repo, "list", "--json").json() == []


def test_doctor_with_nothing_installed_or_outside_a_repository(repo: Path, tmp_path: Path) -> None:
    got = alock(repo, "doctor")
    assert got.code == 1 and "none installed" in got.out, got
    outside = tmp_path / "plain"
    outside.mkdir()
    assert alock(outside, "doctor").code == 2
