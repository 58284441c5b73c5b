"""Identity: holder ids, parents and the session process, with real processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import git
from hypothesis import given
from hypothesis import strategies as st

from gitlocks import identity
from gitlocks.core.record import is_holder, validate_holder
from gitlocks.errors import InvalidHolder, UsageError
from gitlocks.identity import (
    Identity,
    SessionProcess,
    process_alive,
    process_start_time,
    processes,
    resolve_identity,
    session_holder_id,
    session_process,
)

SOURCE_ROOT = Path(identity.__file__).resolve().parents[2]

# A child that prints the session it sees, as JSON.
PROBE = textwrap.dedent(
    """
    import json, os
    from gitlocks.identity import session_process
    found = session_process()
    fields = ("pid", "start_time", "name", "host", "terminal")
    print(json.dumps({"self": os.getpid(), **{f: getattr(found, f) for f in fields}}))
    """
)


def child_env() -> dict[str, str]:
    """The environment of a child that runs ``git alock``: this venv's, on PATH or not."""
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    return {**os.environ, "PYTHONPATH": str(SOURCE_ROOT), "PATH": path}


def run_json(args: list[str], cwd: Path | None = None) -> dict[str, object]:
    out = subprocess.run(
        args, cwd=cwd, env=child_env(), check=True, capture_output=True, text=True
    ).stdout
    result: dict[str, object] = json.loads(out)
    return result


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


# --- holder ids --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", ["a", "agent-1", "Claude_2.sub", "x" * 64, "-dash", "...", "a..b", "0"]
)
def test_valid_holders_are_returned(value: str) -> None:
    assert validate_holder(value) == value
    assert is_holder(value)


@pytest.mark.parametrize(
    "value",
    ["", "bad name", "../x", "a/b", "x" * 65, ".", "..", "a\n", "tab\t", "é", "a:b", "a*"],
)
def test_invalid_holders_are_refused(value: str) -> None:
    with pytest.raises(InvalidHolder) as info:
        validate_holder(value, what="AGENT_ID")
    message = str(info.value)
    assert repr(value) in message
    assert "AGENT_ID" in message
    assert isinstance(info.value, UsageError)


def test_refusal_names_the_rule() -> None:
    with pytest.raises(InvalidHolder, match=r"1 to 64 of the characters A-Z a-z 0-9 \. _ -"):
        validate_holder("a b")


def test_trailing_newline_does_not_match_pattern() -> None:
    assert not is_holder("abc\n")


# --- process facts -----------------------------------------------------------------------


@pytest.fixture(params=["proc", "ps"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test with /proc (where there is one) and with the ``ps`` fallback."""
    if request.param == "proc" and not processes._has_proc():
        pytest.skip("no /proc here")
    if request.param == "ps":
        if shutil.which("ps") is None:
            pytest.skip("no ps here")
        monkeypatch.setattr(processes, "_has_proc", lambda: False)
    return str(request.param)


@pytest.mark.usefixtures("backend")
def test_start_time_is_stable_across_reads(sleeper: subprocess.Popen[bytes]) -> None:
    first = process_start_time(sleeper.pid)
    assert first
    assert process_start_time(sleeper.pid) == first


@pytest.mark.usefixtures("backend")
def test_alive_while_running_then_dead_once_reaped(sleeper: subprocess.Popen[bytes]) -> None:
    started = process_start_time(sleeper.pid)
    assert started is not None
    assert process_alive(sleeper.pid, started)
    sleeper.kill()
    sleeper.wait()
    assert not process_alive(sleeper.pid, started)
    assert process_start_time(sleeper.pid) is None


@pytest.mark.usefixtures("backend")
def test_exited_but_unreaped_child_is_not_alive(sleeper: subprocess.Popen[bytes]) -> None:
    started = process_start_time(sleeper.pid)
    assert started is not None
    os.kill(sleeper.pid, signal.SIGKILL)  # a zombie until the fixture reaps it
    assert wait_until(lambda: not process_alive(sleeper.pid, started))


@pytest.mark.usefixtures("backend")
def test_reused_pid_is_not_alive(sleeper: subprocess.Popen[bytes]) -> None:
    # Same pid, another start time: what a recycled pid looks like to a reader.
    assert not process_alive(sleeper.pid, "some-other-start")
    assert not process_alive(sleeper.pid, "")


@pytest.mark.usefixtures("backend")
def test_no_such_process() -> None:
    assert process_start_time(0) is None
    assert process_start_time(-1) is None
    assert process_start_time(2**22 + 12345) is None
    assert not process_alive(2**22 + 12345, "x")


@pytest.mark.skipif(shutil.which("ps") is None, reason="no ps")
def test_ps_fallback_agrees_with_proc(sleeper: subprocess.Popen[bytes]) -> None:
    info = processes._ps_info(sleeper.pid)
    assert info is not None
    assert info.ppid == os.getpid()
    assert processes._ps_info(sleeper.pid) == info
    if processes._has_proc():
        linux = processes._linux_info(sleeper.pid)
        assert linux is not None
        assert (linux.ppid, linux.name) == (info.ppid, info.name)
    sleeper.kill()
    sleeper.wait()
    assert processes._ps_info(sleeper.pid) is None


# --- the session process -----------------------------------------------------------------


def test_session_skips_shells_up_to_the_test_process() -> None:
    # pytest -> sh -> bash -> env -> python probe; "; exit" stops the shells from exec'ing.
    inner = f'env "{sys.executable}" -c "$0"; exit $?'
    args = ["sh", "-c", 'bash -c "$1" "$0"; exit $?', PROBE, inner]
    if shutil.which("bash") is None:
        args = ["sh", "-c", '"$1" -c "$0"; exit $?', PROBE, sys.executable]
    seen = run_json(args)
    assert seen["pid"] == os.getpid()
    assert seen["start_time"] == process_start_time(os.getpid())
    assert seen["host"] == session_process(os.getpid()).host


def test_session_skips_git_and_the_git_subcommand(tmp_path: Path) -> None:
    # What `git alock` does: git runs a `git-<name>` executable from PATH, and that
    # process (us) starts the walk at its parent, git.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "git-probe"
    script.write_text(f"#!{sys.executable}\n{PROBE}")
    script.chmod(0o755)
    env = {**child_env(), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run(
        ["git", "probe"], cwd=tmp_path, env=env, check=True, capture_output=True, text=True
    ).stdout
    seen = json.loads(out)
    assert seen["pid"] == os.getpid()


@pytest.mark.usefixtures("backend")
def test_session_from_an_explicit_pid_includes_that_pid() -> None:
    me = session_process(os.getpid())
    assert me.pid == os.getpid()
    assert me.start_time == process_start_time(os.getpid())
    assert me.name and not processes.is_pass_through(me.name)


@pytest.mark.usefixtures("backend")
def test_session_of_a_shell_walks_above_it() -> None:
    shell = subprocess.Popen(["sh", "-c", "sleep 60; exit 0"])
    try:
        assert wait_until(lambda: processes._proc_info(shell.pid) is not None)
        assert wait_until(lambda: session_process(shell.pid).pid == os.getpid())
    finally:
        shell.kill()
        shell.wait()


def test_session_of_a_missing_pid_is_unknown_not_an_error() -> None:
    proc = session_process(2**22 + 12345)
    assert proc.start_time == ""
    assert not process_alive(proc.pid, proc.start_time)
    assert is_holder(session_holder_id(proc))


def test_pass_through_names() -> None:
    for name in ("sh", "bash", "zsh", "env", "sudo", "git", "git-alock", "git-remote-https"):
        assert processes.is_pass_through(name), name
    for name in ("claude", "python3", "pytest", "node", "gitk", "codex"):
        assert not processes.is_pass_through(name), name


def _wrapper(bin_dir: Path, name: str) -> None:
    """A runner that waits on its command instead of exec'ing it (``uv run``, ``make``)."""
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / name
    script.write_text('#!/bin/sh\n"$@"\nstatus=$?\nexit $status\n')
    script.chmod(0o755)


def _through_wrapper(tmp_path: Path, name: str, env: dict[str, str] | None = None) -> int:
    bin_dir = tmp_path / "bin"
    _wrapper(bin_dir, name)
    full = {**child_env(), **(env or {})}
    out = subprocess.run(
        [str(bin_dir / name), sys.executable, "-c", PROBE],
        env=full,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    seen = json.loads(out)
    assert seen["self"] != seen["pid"]
    pid = seen["pid"]
    assert isinstance(pid, int)
    return pid


@pytest.mark.parametrize("runner", ["uv", "poetry", "make", "npx", "just", "tox", "direnv"])
def test_session_skips_runners_that_do_not_exec(tmp_path: Path, runner: str) -> None:
    """A runner waiting on ``git alock`` dies with it: the session is above it."""
    assert _through_wrapper(tmp_path, runner) == os.getpid()


def test_agent_session_skip_names_more_runners(tmp_path: Path) -> None:
    assert _through_wrapper(tmp_path, "mywrap") != os.getpid()  # unknown: it is the session
    skip = {"AGENT_SESSION_SKIP": "other, mywrap ,"}
    assert _through_wrapper(tmp_path, "mywrap", skip) == os.getpid()
    # Linux cuts process names to 15 bytes; the full name in the variable still matches.
    long_name = "my-long-runner-name"
    assert _through_wrapper(tmp_path, long_name, {"AGENT_SESSION_SKIP": long_name}) == os.getpid()


def test_agent_session_skip_reaches_resolve_identity(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    _wrapper(bin_dir, "mywrap")
    probe = (
        "import json\n"
        "from gitlocks.identity import resolve_identity\n"
        "print(json.dumps(resolve_identity(env={'AGENT_SESSION_SKIP': 'mywrap'}).session.pid))\n"
    )
    out = subprocess.run(
        [str(bin_dir / "mywrap"), sys.executable, "-c", probe],
        env=child_env(),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert json.loads(out) == os.getpid()


def test_runner_names_and_retitled_runners() -> None:
    for name in ("uv", "uvx", "poetry", "pdm", "hatch", "npm", "npm exec vitest", "pnpm", "yarn"):
        assert processes.is_pass_through(name), name
    for name in ("node", "python3", "claude", "codex", "tmux: server", "uvicorn"):
        assert not processes.is_pass_through(name), name
    extra = processes.skip_names({"AGENT_SESSION_SKIP": " a, ,b-c "})
    assert extra == {"a", "b-c"}
    assert processes.is_pass_through("b-c", extra) and not processes.is_pass_through("b", extra)
    assert processes.is_pass_through("abcdefghijklmno", frozenset({"abcdefghijklmnopqr"}))
    assert not processes.is_pass_through("abcdefgh", frozenset({"abcdefghijklmnopqr"}))


@pytest.mark.usefixtures("backend")
def test_parent_pid(sleeper: subprocess.Popen[bytes]) -> None:
    assert processes.parent_pid(sleeper.pid) == os.getpid()
    assert processes.parent_pid(2**22 + 12345) is None


# --- session holder ids ------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["claude", "", ".", "..", "a b/c", "x" * 200, "(sd-pam)", "tmux: server", "é", "-", "..x.."],
)
def test_session_holder_id_is_always_valid(name: str) -> None:
    proc = SessionProcess(pid=1234, start_time="s", name=name, host="h")
    holder = session_holder_id(proc, user="u")
    assert validate_holder(holder) == holder
    assert len(holder) <= 64


def test_session_holder_id_shape_and_stability() -> None:
    proc = SessionProcess(pid=1234, start_time="s", name="claude", host="h")
    holder = session_holder_id(proc, user="u")
    assert holder.startswith("claude-")
    assert len(holder) == len("claude-") + 8
    assert session_holder_id(proc, user="u") == holder
    assert session_holder_id(proc) == session_holder_id(proc)
    assert session_holder_id(SessionProcess(1234, "t", "claude", "h"), user="u") != holder
    assert session_holder_id(SessionProcess(1235, "s", "claude", "h"), user="u") != holder
    assert session_holder_id(SessionProcess(1234, "s", "claude", "g"), user="u") != holder
    assert session_holder_id(proc, user="v") != holder
    assert session_holder_id(SessionProcess(1234, "s", "", "h"), user="u").startswith("agent-")


# --- resolve_identity --------------------------------------------------------------------

SESSION = SessionProcess(pid=4242, start_time="boot:99", name="claude", host="box")
SESSION_ID = session_holder_id(SESSION)


def test_session_holder_when_nothing_is_set() -> None:
    ident = resolve_identity(env={}, session=SESSION)
    assert ident == Identity(SESSION_ID, "session", None, None, SESSION, SESSION_ID)


def test_agent_id_is_the_holder_and_has_no_inferred_parent() -> None:
    """A parent is only ever declared (docs/design.md, 3.2): never the shell that ran us."""
    ident = resolve_identity(env={"AGENT_ID": "worker-1"}, session=SESSION)
    assert (ident.holder, ident.holder_source) == ("worker-1", "AGENT_ID")
    assert (ident.parent, ident.parent_source) == (None, None)


def test_as_beats_agent_id() -> None:
    ident = resolve_identity("me", env={"AGENT_ID": "worker-1"}, session=SESSION)
    assert (ident.holder, ident.holder_source) == ("me", "--as")
    assert (ident.parent, ident.parent_source) == (None, None)


def test_an_explicit_id_has_no_session_unless_one_is_named() -> None:
    """Without AGENT_SESSION_PID an explicit id's locks name no process: they live by
    their TTL, and no wrapper that ran git alock takes them with it when it exits."""
    ident = resolve_identity(env={"AGENT_ID": "worker-1"})
    assert (ident.session.pid, ident.session.start_time, ident.session_source) == (0, "", "none")
    named = resolve_identity(env={"AGENT_ID": "worker-1", "AGENT_SESSION_PID": str(os.getpid())})
    assert named.session.pid == os.getpid() and named.session_source == "AGENT_SESSION_PID"
    assert named.session.start_time == process_start_time(os.getpid())
    derived = resolve_identity(env={})
    assert derived.session.pid > 0 and derived.session_source == "session"


@pytest.mark.parametrize("value", ["abc", "-3", "0", "1.5"])
def test_a_bad_agent_session_pid_is_a_usage_error(value: str) -> None:
    with pytest.raises(UsageError, match="AGENT_SESSION_PID"):
        resolve_identity(env={"AGENT_ID": "w", "AGENT_SESSION_PID": value})


def test_agent_parent_id_declares_the_parent() -> None:
    env = {"AGENT_ID": "worker-1", "AGENT_PARENT_ID": "lead"}
    ident = resolve_identity(env=env, session=SESSION)
    assert (ident.parent, ident.parent_source) == ("lead", "AGENT_PARENT_ID")
    ident = resolve_identity(env={"AGENT_PARENT_ID": "lead"}, session=SESSION)
    assert (ident.holder_source, ident.parent, ident.parent_source) == (
        "session",
        "lead",
        "AGENT_PARENT_ID",
    )


def test_holder_equal_to_session_id_has_no_parent() -> None:
    ident = resolve_identity(env={"AGENT_ID": SESSION_ID}, session=SESSION)
    assert (ident.holder, ident.parent, ident.parent_source) == (SESSION_ID, None, None)
    ident = resolve_identity(SESSION_ID, env={}, session=SESSION)
    assert (ident.holder_source, ident.parent) == ("--as", None)


def test_parent_equal_to_holder_is_dropped() -> None:
    env = {"AGENT_ID": "worker-1", "AGENT_PARENT_ID": "worker-1"}
    ident = resolve_identity(env=env, session=SESSION)
    assert (ident.parent, ident.parent_source) == (None, None)


def test_empty_variables_count_as_unset() -> None:
    ident = resolve_identity(env={"AGENT_ID": "", "AGENT_PARENT_ID": ""}, session=SESSION)
    assert (ident.holder_source, ident.parent) == ("session", None)


@pytest.mark.parametrize(
    ("as_id", "env", "named"),
    [
        ("bad name", {}, "--as"),
        ("", {}, "--as"),
        (None, {"AGENT_ID": "a/b"}, "AGENT_ID"),
        (None, {"AGENT_ID": "ok", "AGENT_PARENT_ID": "../x"}, "AGENT_PARENT_ID"),
        ("ok", {"AGENT_PARENT_ID": ".."}, "AGENT_PARENT_ID"),
    ],
)
def test_invalid_ids_are_refused(as_id: str | None, env: dict[str, str], named: str) -> None:
    with pytest.raises(InvalidHolder, match=named):
        resolve_identity(as_id, env=env, session=SESSION)


def test_defaults_read_the_environment_and_the_real_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENT_ID", "from-env")
    ident = resolve_identity()
    assert (ident.holder, ident.holder_source) == ("from-env", "AGENT_ID")
    assert ident.session_id == session_holder_id(session_process())
    assert ident.parent is None and ident.session.pid == 0  # nothing inferred, nothing bound
    monkeypatch.delenv("AGENT_ID")
    derived = resolve_identity()
    assert derived.holder == ident.session_id and derived.session == session_process()


# --- terminals, panes and launchers ------------------------------------------------


@pytest.mark.parametrize(
    ("tty_nr", "name"),
    [(0, ""), ((136 << 8) | 4, "pts4"), ((137 << 8) | 2, "pts258"), ((4 << 8) | 1, "tty1")],
)
def test_tty_names(tty_nr: int, name: str) -> None:
    assert processes._tty_name(tty_nr) == name


def test_a_terminal_sessions_id_names_the_terminal_and_the_user() -> None:
    proc = SessionProcess(1234, "b:1", "bash", "h", terminal="tmux-3")
    holder = session_holder_id(proc, user="alice")
    assert holder.startswith("tmux-3-alice-") and is_holder(holder)
    other = session_holder_id(
        SessionProcess(1235, proc.start_time, proc.name, proc.host, proc.terminal), user="alice"
    )
    assert other != holder and other.startswith("tmux-3-alice-")


def test_terminal_servers_are_never_the_session() -> None:
    for name in ("tmux: server", "screen", "sshd", "gnome-terminal-", "kitty"):
        assert processes.is_terminal_server(name)
    # An init system is no terminal: a command it adopted has no terminal's shell above it.
    for name in ("claude", "codex", "node", "python3", "bash", "systemd", "init"):
        assert not processes.is_terminal_server(name)


def _tmux_panes(tmp_path: Path, repo: Path, script: str, panes: int) -> list[str]:
    """Run ``script`` in ``panes`` panes of a fresh tmux server; each pane's output."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    socket = str(tmp_path / "tmux.sock")
    env = child_env()
    env.pop("AGENT_ID", None)
    env.pop("TMUX", None)
    env.pop("TMUX_PANE", None)
    outs = [tmp_path / f"pane{i}.out" for i in range(panes)]
    done = [tmp_path / f"pane{i}.done" for i in range(panes)]
    base = ["tmux", "-S", socket, "-f", "/dev/null"]
    try:
        for i in range(panes):
            body = f"cd {repo} && {{ {script}; }} > {outs[i]} 2>&1; touch {done[i]}; sleep 30"
            cmd = ["new-session", "-d", "-s", "t"] if i == 0 else ["split-window", "-t", "t"]
            subprocess.run([*base, *cmd, "sh", "-c", body], env=env, check=True)
            assert wait_until(done[i].exists, timeout=20), f"pane {i} never finished"
        return [o.read_text() for o in outs]
    finally:
        subprocess.run([*base, "kill-server"], env=env, capture_output=True)


def test_two_tmux_panes_are_two_holders(tmp_path: Path, repo: Path) -> None:
    """Without AGENT_ID, each pane is its own holder, named after its pane: the second
    pane's overlapping claim is refused."""
    script = "git alock whoami; git alock acquire 'pane/**'"
    first, second = _tmux_panes(tmp_path, repo, script, 2)
    assert "holder: tmux-" in first and "ACQUIRED pane/**" in first, first
    assert "holder: tmux-" in second and "REFUSED" in second, second
    holder = first.split("holder: ", 1)[1].split(" ", 1)[0]
    assert f"by {holder}" in second, second


def test_a_claim_through_a_short_lived_wrapper_warns(repo: Path) -> None:
    """A launcher that waits on one command is taken for the session only with a warning
    (its exit would end the claim)."""
    env = child_env()
    env.pop("AGENT_ID", None)
    wrapper = (
        "import subprocess, sys; sys.exit(subprocess.call(['git', 'alock', 'acquire', 'w/x']))"
    )
    got = subprocess.run(
        [sys.executable, "-c", wrapper], cwd=repo, env=env, capture_output=True, text=True
    )
    assert got.returncode == 0 and got.stdout.startswith("ACQUIRED w/x"), got
    assert "warning: the session process started just before this command" in got.stderr
    explicit = subprocess.run(
        [sys.executable, "-c", wrapper.replace("w/x", "w/y")],
        cwd=repo,
        env={**env, "AGENT_ID": "named"},
        capture_output=True,
        text=True,
    )
    assert explicit.returncode == 0 and "warning" not in explicit.stderr, explicit


def test_a_closed_tmux_panes_claim_ends_with_it(tmp_path: Path, repo: Path) -> None:
    """The pane's shell is the session: close the pane and its claim is released by the
    next overlapping claim from another pane."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    socket = str(tmp_path / "tmux.sock")
    env = child_env()
    for key in ("AGENT_ID", "TMUX", "TMUX_PANE"):
        env.pop(key, None)
    base = ["tmux", "-S", socket, "-f", "/dev/null"]
    out_a, out_b = tmp_path / "a.out", tmp_path / "b.out"
    try:
        subprocess.run([*base, "new-session", "-d", "-s", "t", "sleep", "60"], env=env, check=True)
        body = f"cd {repo} && git alock acquire 'pane/**' > {out_a} 2>&1; sleep 60"
        pane = subprocess.run(
            [*base, "split-window", "-t", "t", "-P", "-F", "#{pane_id}", "sh", "-c", body],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        assert wait_until(lambda: "ACQUIRED" in (out_a.read_text() if out_a.exists() else ""))
        subprocess.run([*base, "kill-pane", "-t", pane], env=env, check=True)
        body = f"cd {repo} && git alock acquire 'pane/x' > {out_b} 2>&1; sleep 60"
        subprocess.run([*base, "split-window", "-t", "t", "sh", "-c", body], env=env, check=True)
        assert wait_until(lambda: out_b.exists() and out_b.read_text().strip() != "")
        assert out_b.read_text().startswith("ACQUIRED pane/x"), out_b.read_text()
        assert "warning" not in out_a.read_text() + out_b.read_text()  # a pane is no launcher
    finally:
        subprocess.run([*base, "kill-server"], env=env, capture_output=True)
    log = git(repo, "log", "--format=%B", "refs/agent-locks-meta/journal")
    assert '"event": "auto_released"' in log


def test_a_pane_is_named_from_the_panes_own_environment(tmp_path: Path, repo: Path) -> None:
    """TMUX_PANE as the pane's shell has it, not as one command's environment says."""
    script = "git alock whoami; TMUX_PANE=%77 git alock whoami; env -u TMUX_PANE git alock whoami"
    [out] = _tmux_panes(tmp_path, repo, script, 1)
    ids = [ln.split()[1] for ln in out.splitlines() if ln.startswith("holder: ")]
    assert len(ids) == 3 and len(set(ids)) == 1 and ids[0].startswith("tmux-"), out


@given(st.text(st.sampled_from(list("ab-._%/ é\n")), max_size=15) | st.text(max_size=15))
def test_name_part_is_the_pattern(text: str) -> None:
    """Each run of characters a holder id may not hold becomes one ``-``."""
    import re

    from gitlocks.identity import name_part

    assert name_part(text) == re.sub(r"[^A-Za-z0-9._-]+", "-", text)
