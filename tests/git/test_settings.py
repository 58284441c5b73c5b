"""The one settings reader (``gitlocks.git.settings``): git's own rules, one reading for
every process, and the guard, the hooks and the store agreeing on every value."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git
from hypothesis import given
from hypothesis import strategies as st
from support.guard import denial, edit, guard

from gitlocks.agents.repos import open_repo
from gitlocks.core.record import parse_duration
from gitlocks.errors import UsageError
from gitlocks.git import settings
from gitlocks.hooks.reading import hook_config
from gitlocks.hooks.receive import receive_config
from gitlocks.identity import resolve_identity
from gitlocks.service.context import open_context
from gitlocks.store.local import Store

VALUES = [
    *("true", "TRUE", "Yes", "on", "1", "2", "0", "false", "no", "Off", ""),
    *("0x10", "1k", "maybe", " true", "10", "1M", "010", "-5", "+3", "1g", " 7", "abc"),
    *("1kb", "9223372036854775807", "9223372036854775808", "8g", "0x"),
]


def _git_says(repo: Path, kind: str, value: str | None) -> str | None:
    """What ``git config --type=KIND`` makes of ``value`` (None for a key with no ``=``);
    None when git refuses it."""
    given_as = "x.y" if value is None else f"x.y={value}"
    proc = subprocess.run(
        ["git", "-c", given_as, "config", f"--type={kind}", "x.y"],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


@pytest.mark.parametrize("value", [*VALUES, None])
def test_booleans_read_as_git_reads_them(repo: Path, value: str | None) -> None:
    given_as = "'x.y'" if value is None else f"'x.y'='{value}'"
    env_read = _read_with(repo, given_as)
    boolean = _git_says(repo, "bool", value)
    try:
        got = str(env_read.flag("x.y", False)).lower()
    except UsageError:
        got = None
    assert got == boolean


def _read_with(repo: Path, parameters: str) -> settings.Settings:
    """The settings as a process started under ``git -c`` reads them."""
    saved = os.environ.get("GIT_CONFIG_PARAMETERS")
    os.environ["GIT_CONFIG_PARAMETERS"] = parameters
    try:
        return settings.read(os.fspath(repo))
    finally:
        if saved is None:
            del os.environ["GIT_CONFIG_PARAMETERS"]
        else:
            os.environ["GIT_CONFIG_PARAMETERS"] = saved


def test_the_guard_reads_what_the_hooks_and_the_store_read(repo: Path) -> None:
    """Remote mode with ``alock.clockSkew`` unset allows 30 s everywhere, and
    ``core.ignoreCase=on`` is true everywhere."""
    git(repo, "config", "alock.remote", "origin")
    git(repo, "config", "core.ignoreCase", "on")
    found = open_repo(os.fspath(repo))
    hooks = hook_config(settings.read(os.fspath(repo)))
    assert (found.skew, found.ignore_case) == (hooks.skew, hooks.ignore_case) == (30, True)
    assert found.warnings == [] and hooks.warning is None
    git(repo, "config", "alock.clockSkew", "2m")
    assert open_repo(os.fspath(repo)).skew == hook_config(settings.read(os.fspath(repo))).skew
    assert open_repo(os.fspath(repo)).skew == 120
    git(repo, "config", "--unset", "alock.remote")
    assert open_repo(os.fspath(repo)).skew == 0  # local mode: this machine's clock
    assert receive_config(settings.read(os.fspath(repo))).skew == 120  # always remote


def test_the_guard_denies_by_case_when_core_ignore_case_is_on(repo: Path) -> None:
    git(repo, "config", "core.ignoreCase", "on")
    ctx = open_context(repo, resolve_identity("agent-a"))
    assert ctx.store.ignore_case
    from support.cli import alock

    assert alock(repo, "acquire", "src/APP.py", AGENT_ID="agent-a").code == 0
    said = denial(guard(repo, edit(repo, "src/app.py")))
    assert "held by agent-a" in said


def test_a_bare_key_and_git_dash_c_reach_the_store(repo: Path) -> None:
    git(repo, "config", "alock.ttl", "10m")
    ctx = open_context(repo, resolve_identity("agent-a"))
    assert ctx.ttl() == 600
    os.environ["GIT_CONFIG_PARAMETERS"] = "'alock.ttl'='5m' 'core.ignoreCase'"
    try:
        ctx = open_context(repo, resolve_identity("agent-a"))
    finally:
        del os.environ["GIT_CONFIG_PARAMETERS"]
    assert ctx.ttl() == 300 and ctx.store.ignore_case


def test_a_bad_duration_names_the_key_and_the_fix(repo: Path) -> None:
    git(repo, "config", "alock.ttl", "soon")
    ctx = open_context(repo, resolve_identity("agent-a"))
    with pytest.raises(UsageError, match=r"alock\.ttl 'soon'.*git config --unset alock\.ttl"):
        ctx.ttl()


def test_writes_are_read_back(repo: Path) -> None:
    store = open_context(repo, resolve_identity("agent-a")).store
    assert isinstance(store, Store)
    store.config_set("alock.staleAfter", "20m")
    assert store.config_get("alock.staleafter") == "20m"
    assert git(repo, "config", "alock.staleAfter").strip() == "20m"
    store.config_unset("alock.staleAfter")
    store.config_unset("alock.staleAfter")  # gone already: nothing to do
    assert store.config_get("alock.staleAfter") is None


# --- one git process for the settings, on the fast paths -----------------------------------


@pytest.fixture
def counted(tmp_path: Path) -> Path:
    """A ``git`` first on PATH that logs each command line, then runs the real one."""
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "git.log"
    wrapper = bindir / "git"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real.stdout.strip()} "$@"\n')
    wrapper.chmod(0o755)
    return bindir


def _config_calls(bindir: Path) -> list[str]:
    log = bindir.parent / "git.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [line for line in lines if re.search(r"(^| )config( |$)", line)]


def test_the_guard_and_the_pre_commit_check_run_git_config_once(repo: Path, counted: Path) -> None:
    from support.cli import alock

    assert alock(repo, "acquire", "src/**", AGENT_ID="agent-a").code == 0
    env = {k: v for k, v in os.environ.items() if k != "AGENT_ID"}
    env["PATH"] = f"{counted}{os.pathsep}{os.path.dirname(sys.executable)}{os.pathsep}"
    env["PATH"] += os.environ.get("PATH", "")
    proc = subprocess.run(
        [sys.executable, "-m", "gitlocks.main", "guard", "--for", "claude"],
        cwd=repo,
        input=json.dumps(edit(repo, "src/app.py")),
        capture_output=True,
        text=True,
        env=env,
    )
    assert "permissionDecision" in proc.stdout, proc
    assert len(_config_calls(counted)) == 1, _config_calls(counted)
    (counted.parent / "git.log").unlink()
    (repo / "src" / "app.py").write_text("changed\n")
    git(repo, "add", "src/app.py")
    proc = subprocess.run(
        [sys.executable, "-m", "gitlocks.main", "hook", "pre-commit"],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**env, "AGENT_ID": "agent-b"},
    )
    assert "HELD src/app.py" in proc.stderr, proc
    assert len(_config_calls(counted)) == 1, _config_calls(counted)


# --- durations ---------------------------------------------------------------------------

# The reading the duration parser had as a regular expression: the one-pass parser must
# accept exactly what it accepted, the same way.
_OLD = re.compile(r"^\s*(?:(\d+)\s*d)?\s*(?:(\d+)\s*h)?\s*(?:(\d+)\s*m)?\s*(?:(\d+)\s*s?)?\s*$")


def _old_duration(text: str) -> int | None:
    match = _OLD.match(text) if text.strip() else None
    if match is None or not any(match.groups()):
        return None
    days, hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    return total if 0 < total <= 366 * 86400 else None


@given(st.text(alphabet="0123456789dhmsx \t", max_size=14))
def test_durations_read_as_they_always_were(text: str) -> None:
    try:
        got: int | None = parse_duration(text)
    except UsageError:
        got = None
    assert got == _old_duration(text)


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90), ("1h 30", 3630), ("1d2h3m4s", 93784), (" 5 s ", 5)]
)
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


def test_a_long_bad_duration_is_refused_in_one_pass() -> None:
    # The regular expression backtracked over every split of the digits.
    with pytest.raises(UsageError):
        parse_duration("1" * 200_000 + "x")
    with pytest.raises(UsageError):
        parse_duration(" " * 200_000 + "1" + " " * 200_000 + "q")


def test_a_setting_written_while_another_git_holds_the_config_waits_its_turn(repo: Path) -> None:
    """git fails at once on a held config.lock: two installs writing one setting at the
    same moment must both land, not fail one of them."""
    import threading

    lock = repo / ".git" / "config.lock"
    lock.write_text("")  # another git, mid-write
    timer = threading.Timer(0.3, lock.unlink)
    timer.start()
    try:
        settings.write(str(repo / ".git"), "alock.guardProgram", "/x/git-alock")
    finally:
        timer.join()
    assert git(repo, "config", "alock.guardProgram").strip() == "/x/git-alock"


def test_a_config_lock_never_released_is_an_error_in_the_end(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitlocks.errors import StoreError

    monkeypatch.setattr(settings, "CONFIG_LOCK_SECONDS", 0.2)
    (repo / ".git" / "config.lock").write_text("")
    with pytest.raises(StoreError, match="could not lock config file"):
        settings.write(str(repo / ".git"), "alock.guardProgram", "/x/git-alock")
