"""The ``git-alock`` script as a process: whatever its caller left closed, a failure is one
``error: ...`` line with its exit code, and the command's work is done."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).parent / "git-alock"


def closed(repo: Path, redirect: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the script itself (git, run as ``git alock``, would open the null device on
    what its caller closed) with ``redirect`` closing some of its standard streams."""
    return subprocess.run(["sh", "-c", f'exec "$0" "$@" {redirect}', str(SCRIPT), *args],
                          cwd=repo, capture_output=True, text=True)  # fmt: skip


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (["acquire", "--json"], 2, "error: Missing argument 'PATTERN...'."),
        (["no-such-verb", "--json"], 2, "error: No such command 'no-such-verb'."),
        (["-h"], 0, ""),
        (["list"], 0, ""),
    ],
)
def test_a_closed_stdout_is_no_traceback(repo: Path, args: list[str], code: int, said: str) -> None:
    proc = closed(repo, ">&-", *args)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == code
    assert proc.stderr.startswith(said)


def test_a_claim_made_with_every_stream_closed_is_made(repo: Path) -> None:
    proc = closed(repo, "<&- >&- 2>&-", "acquire", "src/**", "-m", "closed", "--json")
    assert proc.returncode == 0
    listing = subprocess.run([str(SCRIPT), "list"], cwd=repo, capture_output=True, text=True)
    assert "src/**" in listing.stdout


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["no-such-verb"], 2),
        (["acquire", "nothing-here/**", "-m", "note on stderr"], 0),  # "covers nothing" note
        (["acquire", "nothing-here/**", "-m", "again", "--json"], 0),
    ],
)
def test_a_full_stderr_keeps_the_exit_code(repo: Path, args: list[str], code: int) -> None:
    """Nobody can be told: the exit code still says what happened (a claim made is 0)."""
    proc = closed(repo, "2>/dev/full", *args)
    assert proc.returncode == code
    if code == 0:
        listing = subprocess.run([str(SCRIPT), "list"], cwd=repo, capture_output=True, text=True)
        assert "nothing-here/**" in listing.stdout


# Starts the script with SIGCHLD ignored, as a parent that ignores it leaves its children.
IGNORING = (
    "import os, signal, sys\n"
    "signal.signal(signal.SIGCHLD, signal.SIG_IGN)\n"
    "os.execv(sys.argv[1], sys.argv[1:])\n"
)


def test_a_sigchld_ignored_by_the_parent_still_reads_git_s_exit_codes(tmp_path: Path) -> None:
    """With SIGCHLD ignored the kernel reaps every child itself, and a failed git would
    read as exit 0: here, a directory that is no repository as an empty lock table."""
    proc = subprocess.run([sys.executable, "-c", IGNORING, str(SCRIPT), "list"], cwd=tmp_path,
                          env={**os.environ, "GIT_DIR": str(tmp_path / "nowhere")},
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 2
    assert "is not a git repository" in proc.stderr


# The installed script, run with a stand-in ``gitlocks.main`` that reports the collector.
_GC_PROBE = """
import gc, runpy, sys, types
stand_in = types.ModuleType("gitlocks.main")
stand_in.main = lambda: print(gc.isenabled()) or 0
sys.modules["gitlocks.main"] = stand_in
sys.argv = [sys.argv[1]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.parametrize("script", ["installed", "module"])
def test_a_command_runs_without_the_cycle_collector(tmp_path: Path, script: str) -> None:
    """A command lives for milliseconds: the script turns the collector off before its
    imports (its cost grows with the objects a large table makes)."""
    import gitlocks

    path = SCRIPT if script == "installed" else Path(gitlocks.__file__).parent / "__main__.py"
    done = subprocess.run([sys.executable, "-c", _GC_PROBE, str(path)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_the_long_lived_verbs_turn_the_collector_back_on(repo: Path) -> None:
    """mcp and watch run for hours: each turns the collector on as it starts."""
    import gc

    from gitlocks.main import main

    for args in (["mcp"], ["watch", "--timeout", "1s"]):
        gc.disable()
        try:
            saved = sys.stdin
            sys.stdin = open(os.devnull)  # noqa: SIM115 - the MCP client goes away at once
            try:
                main(args)
            finally:
                sys.stdin.close()
                sys.stdin = saved
            assert gc.isenabled(), args
        finally:
            gc.enable()


PROJECT = Path(__file__).resolve().parents[1]
DECOY = "import sys\nsys.stderr.write('decoy imported\\n')\nsys.exit(3)\n"


@pytest.mark.parametrize("through_link", [False, True])
def test_nothing_is_imported_from_beside_the_script(tmp_path: Path, through_link: bool) -> None:
    """Python puts the script's directory first on the path (its real one, links
    resolved); the script takes it off before its first import, so a ``gitlocks`` (or any
    module) lying there is never imported, and that directory never listed."""
    bin_dir = tmp_path / "bin"
    (bin_dir / "gitlocks").mkdir(parents=True)
    (bin_dir / "gitlocks" / "__init__.py").write_text(DECOY)
    (bin_dir / "_json.py").write_text(DECOY)
    script = bin_dir / "git-alock"
    shutil.copy(PROJECT / "scripts" / "git-alock", script)
    if through_link:
        (tmp_path / "link").symlink_to(bin_dir)
        script = tmp_path / "link" / "git-alock"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    done = subprocess.run(
        [sys.executable, "-S", str(script), "version"],
        env={**env, "PYTHONPATH": str(PROJECT)},  # -S: found through PYTHONPATH alone
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "decoy" not in done.stderr


@pytest.mark.parametrize(
    "safe_path",
    [
        pytest.param(["-P"], id="-P"),
        pytest.param([], id="PYTHONSAFEPATH"),
    ],
)
def test_the_script_keeps_the_first_entry_where_python_puts_no_directory_there(
    tmp_path: Path, safe_path: list[str]
) -> None:
    """With ``-P`` or ``PYTHONSAFEPATH`` Python puts no directory before the path: its first
    entry is a real one (here the only one gitlocks is found through), and is kept."""
    if sys.version_info < (3, 11):
        pytest.skip("-P and PYTHONSAFEPATH are from Python 3.11")
    script = tmp_path / "git-alock"
    shutil.copy(PROJECT / "scripts" / "git-alock", script)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(PROJECT)
    if not safe_path:
        env["PYTHONSAFEPATH"] = "1"
    done = subprocess.run(
        [sys.executable, "-S", *safe_path, str(script), "version"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "not importable" not in done.stderr and "ModuleNotFoundError" not in done.stderr


def test_the_scripts_directory_named_on_the_path_with_safe_path_is_kept(tmp_path: Path) -> None:
    """With ``-P`` the first entry is ``PYTHONPATH``'s, even where it names the script's own
    directory: asked for, and here the only one gitlocks is found through, so it is kept."""
    if sys.version_info < (3, 11):
        pytest.skip("-P is from Python 3.11")
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "gitlocks").symlink_to(PROJECT / "gitlocks")
    shutil.copy(PROJECT / "scripts" / "git-alock", tools / "git-alock")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    done = subprocess.run(
        [sys.executable, "-S", "-P", str(tools / "git-alock"), "version"],
        env={**env, "PYTHONPATH": str(tools)}, cwd=tmp_path,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("gitlocks ")
