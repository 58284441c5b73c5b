"""Starting git (``gitlocks.git.run``): the errors it gives, and the bounds a run against a
remote holds to whatever the remote does (talks without end, dribbles, never ends)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gitlocks.errors import StoreError
from gitlocks.git import run


def test_git_runs_in_the_directory_asked_for(repo: Path, tmp_path: Path) -> None:
    out = run.output(["rev-parse", "--show-toplevel"], str(repo / "src"), env=run.Env.CLEAN,
                     error=StoreError)  # fmt: skip
    assert Path(out.decode().strip()).resolve() == repo.resolve()
    nowhere = str(tmp_path / "nowhere")
    with pytest.raises(StoreError, match=f"cannot run git in {nowhere}: No such file"):
        run.output(["status"], nowhere, env=run.Env.CLEAN, error=StoreError)


def test_a_failure_is_reported_with_git_s_last_word(repo: Path) -> None:
    with pytest.raises(StoreError, match="git rev-parse failed: fatal: Needed a single revision"):
        run.output(["rev-parse", "--verify", "no-such-ref"], str(repo), env=run.Env.CLEAN,
                   error=StoreError)  # fmt: skip


def test_a_failure_of_git_whose_stderr_goes_nowhere_is_still_reported(repo: Path) -> None:
    proc = run.start(["rev-parse", "--verify", "no-such-ref"], str(repo), env=run.Env.CLEAN,
                     error=StoreError, keep_stderr=False)  # fmt: skip
    with pytest.raises(StoreError, match="git rev-parse failed: 128"):
        run.finish(proc, error=StoreError)


def test_no_git_on_path_is_one_error_line_and_no_traceback(repo: Path, tmp_path: Path) -> None:
    bare_path = tmp_path / "bin"
    bare_path.mkdir()
    (bare_path / "python3").symlink_to(sys.executable)
    script = Path(sys.executable).parent / "git-alock"
    proc = subprocess.run([str(script), "acquire", "src/**", "-m", "x"], cwd=repo,
                          env={**os.environ, "PATH": str(bare_path)},
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr == "error: cannot run git: No such file or directory\n"


def _bounded(args: list[str], timeout: float = 120) -> run.GitRun:
    return run.bounded(
        args, env=run.Env.REMOTE, timeout=timeout, timed_out="too slow", error=StoreError
    )


def _served(tmp_path: Path) -> Path:
    served = tmp_path / "r"
    subprocess.run(["git", "init", "-q", str(served)], check=True)
    subprocess.run(["git", "-C", str(served), "commit", "-q", "--allow-empty", "-m", "one"],
                   check=True)  # fmt: skip
    return served


def test_a_bounded_run_that_runs_out_of_time_raises_the_error_given() -> None:
    """A git whose remote never answers: killed at the bound, the caller's error raised."""
    with pytest.raises(StoreError, match="too slow"):
        _bounded(
            ["-c", "core.sshCommand=sleep 20;:", "ls-remote", "ssh://nowhere.invalid/x"],
            timeout=0.5,
        )
    done = _bounded(["--version"])
    assert done.code == 0 and done.out.startswith("git version")


def test_a_run_past_its_time_is_killed_with_all_it_started(tmp_path: Path) -> None:
    """At the bound the whole process group dies: git, and the ssh (here a shell and its
    sleep) it started, which would otherwise live on holding the remote's connection."""
    marker = tmp_path / "grandchild"
    ssh = f"sleep 30 & echo $! > {marker}; wait; :"
    with pytest.raises(StoreError, match="too slow"):
        _bounded(["-c", f"core.sshCommand={ssh}", "ls-remote", "ssh://h.invalid/x"], timeout=1)
    grandchild = int(marker.read_text())
    with pytest.raises(ProcessLookupError):
        for _ in range(500):  # gone once its parent, init, reaps it
            os.kill(grandchild, 0)
            threading.Event().wait(0.01)


def test_a_remote_that_talks_without_end_costs_a_bounded_memory(tmp_path: Path) -> None:
    """git relays what the remote says on stderr (its hooks' ``remote:`` lines, traces):
    the run keeps its first and last ``STDERR_KEPT`` bytes, and says what it left out."""
    served = _served(tmp_path)
    talk = (
        "i=0; while [ $i -lt 400 ]; do head -c 65536 /dev/zero | tr '\\0' x >&2; i=$((i+1)); done"
    )
    upload = f"echo first-words >&2; {talk}; echo last-words >&2; git-upload-pack"
    done = _bounded(["ls-remote", f"--upload-pack={upload}", str(served), "HEAD"])
    assert done.code == 0 and done.out.endswith("\tHEAD\n"), done.out
    assert len(done.err) < 3 * run.STDERR_KEPT  # of 25 MB said
    assert done.err.startswith("first-words\n")
    assert done.err.rstrip().endswith("last-words")
    assert "bytes of git's output left out" in done.err


def test_a_remote_that_dribbles_is_stopped_at_the_bound(tmp_path: Path) -> None:
    """The bound is on the whole run, not on each read: a remote saying a byte now and then,
    for a minute, then answering, is cut off at the bound all the same."""
    served = _served(tmp_path)
    dribble = "i=0; while [ $i -lt 600 ]; do printf . >&2; sleep 0.1; i=$((i+1)); done"
    upload = f"{dribble}; git-upload-pack"
    with pytest.raises(StoreError, match="too slow"):
        _bounded(["ls-remote", f"--upload-pack={upload}", str(served), "HEAD"], timeout=1)


def test_a_bounded_run_does_not_wait_for_a_daemon_its_remote_left_behind(
    tmp_path: Path,
) -> None:
    """A process that leaves git's group (a session of its own) keeping git's stderr is not
    killed with the group: the run ends at its bound anyway, before the daemon does."""
    marker, ended = tmp_path / "daemon", tmp_path / "ended"
    served = _served(tmp_path)
    daemon = f"sleep 30; touch {ended}"
    upload = f"setsid sh -c '{daemon}' & echo $! > {marker}; sleep 60; :"
    try:
        with pytest.raises(StoreError, match="too slow"):
            _bounded(["ls-remote", f"--upload-pack={upload}", str(served)], timeout=0.5)
        assert marker.exists() and not ended.exists()  # its end was not waited for
    finally:
        with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
            os.killpg(int(marker.read_text()), 9)


def test_a_bounded_run_that_finished_is_not_held_by_a_daemon_its_remote_left(
    tmp_path: Path,
) -> None:
    """git ends well, but a process its remote started in a session of its own keeps git's
    stderr: the run returns what git said, without waiting for that process to end."""
    marker, ended = tmp_path / "daemon", tmp_path / "ended"
    served = _served(tmp_path)
    daemon = f"sleep 30; touch {ended}"
    upload = f"setsid sh -c '{daemon}' & echo $! > {marker}; git-upload-pack"
    try:
        done = _bounded(["ls-remote", f"--upload-pack={upload}", str(served), "HEAD"])
        assert done.code == 0 and done.out.endswith("\tHEAD\n"), done
        assert marker.exists() and not ended.exists()  # its end was not waited for
    finally:
        with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
            os.killpg(int(marker.read_text()), 9)
