"""The Gemini CLI, Codex CLI and GitHub Copilot CLI guard, and their installer, under attack.

Each test failed on the code before its fix. The guard runs as the harness runs it (``git
alock guard --for NAME``, one JSON event on stdin) in real repositories; what Codex itself
would do with a patch is taken from its source (``codex-rs/apply-patch/src/parser.rs`` and
``invocation.rs``: lines split as Rust's ``str::lines``, markers trimmed as ``str::trim``,
``apply_patch`` also run from its shell tool as a heredoc).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import test_harnesses as h
from support.cli import Result, alock

from gitlocks.agents.commands import HOOK_FILES
from gitlocks.agents.harnesses import TOOLS

OTHER = h.OTHER


def codex_shell(repo: Path, command: object, workdir: str = "") -> dict[str, object]:
    """Codex's shell tool as its hook sees it: ``tool_name`` "Bash", the script as
    ``tool_input.command`` (core/src/tools/handlers/shell/shell_command.rs); ``workdir``
    as a payload that carries the call's would (Codex 0.171.0's does not)."""
    tool_input: dict[str, object] = {"command": command}
    if workdir:
        tool_input["workdir"] = workdir
    return h.codex_event(repo, "PreToolUse", "s-1", tool_name="Bash", tool_use_id="call-2",
                         tool_input=tool_input)  # fmt: skip


def heredoc(text: str, cd: str = "") -> str:
    return (f"cd {cd} && " if cd else "") + "apply_patch <<'EOF'\n" + text + "EOF\n"


# --- 1. a patch is split into lines as Codex splits it -----------------------------------------

# Python's str.splitlines also breaks at these; Rust's str::lines (Codex) only at "\n".
BREAKERS = ["\x0c", "\x0b", "\r", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("char", BREAKERS, ids=[f"U+{ord(c):04X}" for c in BREAKERS])
def test_a_line_break_codex_does_not_see_cannot_smuggle_a_held_file(repo: Path, char: str) -> None:
    """A form feed in a new file's text (common in C and Python sources) made the guard read
    no patch at all, and let the whole patch through into another's claim."""
    assert alock(repo, "acquire", "src/**", "-m", "mine", **OTHER).code == 0
    text = h.patch(f"*** Add File: docs/a.md\n+page{char}break\n",
                   "*** Update File: src/app.py\n@@\n-print('app')\n+print('b')\n")  # fmt: skip
    reason = h.claude_style_denial(h.run_guard(repo, "codex", h.codex_patch(repo, text, "s-1")))
    assert "src/app.py is inside another agent's claim" in reason
    assert list(h.holders(repo)) == ["other-agent"]


@pytest.mark.parametrize(
    ("text", "paths"),
    [
        (h.patch("*** Add File: a\x1f\n+x\n"), ("a\x1f",)),  # str::trim keeps U+001F
        (h.patch("*** Add File: src/a\u2028b.py\n+x\n"), ("src/a\u2028b.py",)),
        (h.patch("*** Add File: a\n+x\ry\n", "*** Delete File: b\n"), ("a", "b")),
        ("*** Begin Patch\r\n*** Add File: a\r\n+x\r\n*** End Patch\r\n", ("a",)),
        (h.patch("*** Add File: a\n+x\n", "*** Update File: b\n*** Move to: \n@@\n-x\n+y\n"),
         ("a", "b", "")),
    ],
    ids=["unit-separator", "line-separator-in-name", "lone-cr", "crlf", "empty-move"],
)  # fmt: skip
def test_patch_paths_read_names_as_codex_does(text: str, paths: tuple[str, ...]) -> None:
    assert TOOLS["apply_patch"]({"command": text}) == paths


def test_an_empty_move_target_does_not_hide_the_rest_of_the_patch(repo: Path) -> None:
    """Codex applies a patch's hunks one by one: the new file is written before the move to
    "" fails. The guard took the empty name for no patch, and let it all through."""
    assert alock(repo, "acquire", "src/**", **OTHER).code == 0
    text = h.patch("*** Add File: src/new.py\n+x\n",
                   "*** Update File: README.md\n*** Move to: \n@@\n-hello\n+hi\n")  # fmt: skip
    got = h.run_guard(repo, "codex", h.codex_patch(repo, text, "s-1"))
    assert "src/new.py is inside another agent's claim" in h.claude_style_denial(got)


# --- 2. apply_patch run from Codex's shell tool ---------------------------------------------


def test_apply_patch_through_codexs_shell_is_guarded(repo: Path) -> None:
    """Codex intercepts `apply_patch <<'EOF' ...` (and `cd DIR && apply_patch ...`) sent to
    its shell tool and applies it itself; its hook sees tool "Bash", which the guard was
    never registered for, and would not have read."""
    assert alock(repo, "acquire", "src/**", "-m", "mine", **OTHER).code == 0
    update = h.patch("*** Update File: src/app.py\n@@\n-print('app')\n+print('b')\n")
    got = h.run_guard(repo, "codex", codex_shell(repo, heredoc(update), "."))
    assert "src/app.py is inside another agent's claim" in h.claude_style_denial(got)
    add = h.patch("*** Add File: new.py\n+x\n")
    got = h.run_guard(repo, "codex", codex_shell(repo, heredoc(add, cd="src"), "."))
    assert "src/new.py is inside another agent's claim" in h.claude_style_denial(got)
    argv = ["bash", "-lc", heredoc(update)]  # a command array, as older shell tools send it
    assert "held by other-agent" in h.claude_style_denial(
        h.run_guard(repo, "codex", codex_shell(repo, argv, "."))
    )
    got = h.run_guard(
        repo, "codex", codex_shell(repo, heredoc(h.patch("*** Add File: d.md\n+x\n")), str(repo))
    )
    assert got == Result(0, "", ""), got
    assert h.holders(repo)["other-agent"] == ["src/**"] and len(h.holders(repo)) == 2


@pytest.mark.parametrize("command", ["ls -la", "git status", "echo '*** Begin Patch'", ""])
def test_other_shell_commands_get_silence(repo: Path, command: str) -> None:
    """Every shell command now reaches the guard: one that applies no patch is answered with
    silence (exit 0), so that Codex does not log a failed hook for each."""
    assert h.run_guard(repo, "codex", codex_shell(repo, command)) == Result(0, "", "")


def test_install_registers_the_guard_for_codexs_shell_too(repo: Path) -> None:
    assert h.install(repo, "codex").startswith("INSTALLED")
    hooks = json.loads((repo / h.FILES["codex"]).read_text())["hooks"]
    assert hooks["PreToolUse"][0]["matcher"] == "^(apply_patch|Bash)$"
    assert h.uninstall(repo, "codex").startswith("UNINSTALLED")
    assert not (repo / ".codex").exists()


# --- 3. a patch of thousands of files ---------------------------------------------------------


def test_a_patch_of_thousands_of_files_is_decided_in_seconds(repo: Path) -> None:
    """Each file of a patch ran two git processes to find its repository: 4,000 files took
    about 6 s (Copilot's hooks time out at 30 s, Gemini's at 60 s)."""
    assert alock(repo, "acquire", "gen/**", **OTHER).code == 0
    for d in range(40):
        (repo / "gen" / f"d{d}").mkdir(parents=True)
    text = h.patch(*(f"*** Add File: gen/d{i % 40}/f{i}.py\n+x\n" for i in range(4000)))
    trace = repo.parent / "trace2.json"
    got = h.run_guard(repo, "codex", h.codex_patch(repo, text, "s-1"), GIT_TRACE2_EVENT=str(trace))
    assert h.claude_style_denial(got).endswith("And 3997 more file(s).")
    # Counted, not timed: git is asked a fixed number of times, not once per file.
    starts = [line for line in trace.read_text().splitlines() if '"event":"start"' in line]
    assert len(starts) < 20, len(starts)


# --- 4. a malformed hook command line never blocks ------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["--for", "gemini", "--verbose"],
        ["--for", "codex", "--for", "codex"],
        ["--for=copilot", "x"],
    ],
)
def test_a_bad_option_beside_a_harness_never_exits_2(repo: Path, argv: list[str]) -> None:
    """Exit 2 is every harness's "block" (and any non-zero exit Copilot CLI's): a hook
    command line with a typo (or an option of a later version) denied every edit."""
    import subprocess
    import sys

    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    proc = subprocess.run(["git", "alock", "guard", *argv], cwd=repo, input="{}", env=env,
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0 and "usage" in proc.stderr, proc


# --- 5. the installer ---------------------------------------------------------------------------


def test_gemini_settings_with_comments_are_named_as_such(repo: Path) -> None:
    """Gemini CLI reads its settings.json with comments allowed (strip-json-comments): the
    installer called such a file invalid JSON and asked the user to "fix" it."""
    path = repo / h.FILES["gemini"]
    path.parent.mkdir()
    before = '{\n  // the model we use\n  "model": {"name": "gemini-2.5-pro"} /* pinned */\n}\n'
    path.write_text(before)
    got = alock(repo, "install-agent-hooks", "--for", "gemini")
    assert got.code == 2 and "comments" in got.err and "not valid JSON" not in got.err, got
    assert path.read_text() == before


# --- 6. a big write -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["gemini", "copilot"])
def test_a_big_write_into_a_claim_is_still_denied(repo: Path, name: str) -> None:
    """A write of a file over 4 MiB (a lockfile, generated code) was let through unread,
    into another's claim."""
    assert alock(repo, "acquire", "package-lock.json", **OTHER).code == 0
    content = "x" * (5 * 1024 * 1024)
    target = str(repo / "package-lock.json")
    if name == "gemini":
        event = h.gemini_event(repo, "BeforeTool", "s-1", tool_name="write_file",
                               tool_input={"file_path": target, "content": content})  # fmt: skip
        reason = h.gemini_denial(h.run_guard(repo, name, event))
    else:
        args = json.dumps({"path": target, "old_str": "a", "new_str": content})
        event = h.copilot_event(repo, "s-1", toolName="edit", toolArgs=args)
        reason = h.copilot_denial(h.run_guard(repo, name, event, "preToolUse"))
    assert "held by other-agent" in reason


def test_shell_patch_paths_never_raise() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from gitlocks.agents.codex_patch import shell_patch_paths
    from gitlocks.agents.edits import Unjudgeable

    parts = st.sampled_from(["apply_patch", "cd a && ", "<<'EOF'", "EOF", "*** Begin Patch",
                             "*** End Patch", "*** Add File: x", "+y", "*** Move to: ", "\n",
                             "\r", " ", "'", '"', "\x0c"])  # fmt: skip

    @settings(max_examples=300, deadline=None)
    @given(st.lists(parts, max_size=30).map("".join), st.booleans())
    def check(text: str, as_list: bool) -> None:
        try:
            found = shell_patch_paths({"command": text.split("\n") if as_list else text})
        except Unjudgeable:  # the guard denies, saying which form to use
            return
        assert found is None or (isinstance(found, tuple) and found)

    check()


@pytest.mark.parametrize("name", h.NAMES)
def test_uninstall_keeps_the_entries_the_file_already_had(repo: Path, name: str) -> None:
    """A committed settings file already held one of the guard's entries (a teammate's, or
    an older version's): install added the others, and uninstall removed all of them, the
    one it found too."""
    spec = HOOK_FILES[name]
    event, entry = next(iter(spec.entries.items()))
    path = repo / h.FILES[name]
    path.parent.mkdir(parents=True)
    before = json.dumps({"hooks": {event: [entry]}}, indent=2).encode()
    path.write_bytes(before)
    assert h.install(repo, name).startswith("INSTALLED")
    assert h.uninstall(repo, name).startswith("UNINSTALLED")
    assert path.read_bytes() == before


# --- the installer's memory and the files it may not write -----------------------------------


def test_a_read_only_settings_file_is_left_alone(repo: Path) -> None:
    path = repo / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"model": "x"}\n')
    path.chmod(0o444)
    got = alock(repo, "install-agent-hooks", "--for", "claude")
    assert got.code == 2 and "read-only" in got.err
    assert path.read_text() == '{"model": "x"}\n' and (path.stat().st_mode & 0o777) == 0o444


def test_a_settings_file_deleted_by_hand_is_new_again_for_uninstall(repo: Path) -> None:
    path = repo / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"model": "x"}\n')
    h.install(repo, "claude")
    path.unlink()  # by hand: the file install found is gone
    h.install(repo, "claude")
    h.uninstall(repo, "claude")
    assert not path.exists()  # it was made by the last install: uninstall takes it away


FILES = {"claude": ".claude/settings.json", **h.FILES}


def test_installs_for_several_harnesses_at_once_keep_every_memory(repo: Path) -> None:
    import subprocess
    import sys

    for name in ("claude", "gemini", "codex", "copilot"):
        target = repo / FILES[name]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({"kept": name}) + "\n")
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    procs = [
        subprocess.Popen(["git", "alock", "install-agent-hooks", "--for", name], cwd=repo, env=env)
        for name in ("claude", "gemini", "codex", "copilot")
    ]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    for name in ("claude", "gemini", "codex", "copilot"):
        h.uninstall(repo, name)
        assert (repo / FILES[name]).read_text() == json.dumps({"kept": name}) + "\n"
