"""The ``git-alock`` script as a process: whatever its caller left closed, a failure is one
``error: ...`` line with its exit code, and the command's work is done."""

from __future__ import annotations

import os
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


# The command as a process (``main()`` with no arguments), its verb a stand-in that reports
# the collector.
_GC_PROBE = """
import gc, sys
import gitlocks.main
gitlocks.main._main = lambda argv: print(gc.isenabled()) or 0
sys.exit(gitlocks.main.main())
"""


def test_a_command_runs_without_the_cycle_collector(tmp_path: Path) -> None:
    """A command lives for milliseconds: it turns the collector off as it starts (its cost
    grows with the objects a large table makes)."""
    done = subprocess.run([sys.executable, "-c", _GC_PROBE], cwd=tmp_path,
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


@pytest.mark.parametrize("command", ["entry point", "python -m gitlocks"])
def test_the_installed_command_and_the_module_run_the_same_main(repo: Path, command: str) -> None:
    """``git-alock`` is an ordinary entry point (``gitlocks.main:main``) and
    ``python -m gitlocks`` runs the same function."""
    args = [str(SCRIPT)] if command == "entry point" else [sys.executable, "-m", "gitlocks"]
    done = subprocess.run([*args, "version"], cwd=repo, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("gitlocks ")
