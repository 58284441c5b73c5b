"""Starting git without ``subprocess``: the part of ``Popen`` the package relies on, with
real processes."""

from __future__ import annotations

import contextlib
import gc
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gitlocks.errors import StoreError
from gitlocks.git import run
from gitlocks.git.spawn import Process, TimeoutExpired

# Writes a megabyte to stdout and to stderr before it reads its stdin, then echoes it.
CHATTY = r"""
import sys
import threading
sys.stdout.buffer.write(b"o" * 1_000_000)
sys.stderr.buffer.write(b"e" * 1_000_000)
sys.stdout.buffer.write(sys.stdin.buffer.read())
"""


def test_a_child_that_writes_before_it_reads_never_blocks_us() -> None:
    proc = Process([sys.executable, "-c", CHATTY])
    feed = bytes(range(256)) * 4096  # a megabyte, more than any pipe holds
    out, err = proc.communicate(feed)
    assert out == b"o" * 1_000_000 + feed
    assert err == b"e" * 1_000_000
    assert proc.returncode == 0


def test_git_runs_in_the_directory_asked_for(repo: Path, tmp_path: Path) -> None:
    out = run.output(["rev-parse", "--show-toplevel"], str(repo / "src"), env=run.Env.CLEAN,
                     error=StoreError)  # fmt: skip
    assert Path(out.decode().strip()).resolve() == repo.resolve()
    with pytest.raises(StoreError, match="failed"):
        run.output(["status"], str(tmp_path / "nowhere"), env=run.Env.CLEAN, error=StoreError)


def test_a_failure_is_reported_with_git_s_last_word(repo: Path) -> None:
    with pytest.raises(StoreError, match="git rev-parse failed: fatal: Needed a single revision"):
        run.output(["rev-parse", "--verify", "no-such-ref"], str(repo), env=run.Env.CLEAN,
                   error=StoreError)  # fmt: skip


def test_exit_codes_and_signals_read_as_popen_reads_them() -> None:
    assert Process([sys.executable, "-c", "raise SystemExit(3)"]).wait() == 3
    killed = Process([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), 15)"])
    assert killed.wait() == -15


def test_the_child_gets_sigpipe_back_at_its_default() -> None:
    """Python ignores SIGPIPE; git, like any program, must die of it as usual."""
    status = Path("/proc/self/status")
    if not status.exists():
        pytest.skip("no /proc here")
    out, _ = Process(["grep", "^SigIgn:", "/proc/self/status"]).communicate()
    ignored = int(out.split()[1], 16)
    assert not ignored & (1 << (13 - 1)), out  # SIGPIPE is 13


def test_stderr_can_go_to_the_null_device(repo: Path) -> None:
    proc = Process(["git", "rev-parse", "--verify", "nothing"], str(repo), keep_stderr=False)
    assert proc.stderr is None
    out, err = proc.communicate()
    assert (out, err, proc.returncode) == (b"", b"", 128)


def test_a_wait_with_a_limit_runs_out_then_kill_ends_it() -> None:
    proc = Process([sys.executable, "-c", "import time; time.sleep(60)"])
    with pytest.raises(TimeoutExpired):
        proc.wait(timeout=0.05)
    assert proc.poll() is None
    proc.kill()
    assert proc.wait() == -9
    proc.kill()  # waited for already: nothing to do


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "polling"])
def test_a_wait_with_a_limit_returns_when_the_process_ends(
    pidfd: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Woken by the process's end through a pidfd where there is one, by polling where not
    (no ``os.pidfd_open``): either way the exit code, or minus the signal, as ``wait()``."""
    if not pidfd:
        monkeypatch.delattr(os, "pidfd_open", raising=False)
    elif not hasattr(os, "pidfd_open"):
        pytest.skip("no pidfd here")
    ended = Process([sys.executable, "-c", "import sys; sys.stdin.read(); sys.exit(3)"])
    ended.stdin.close()
    assert ended.wait(timeout=60) == 3
    assert ended.wait(timeout=60) == 3  # waited for: the same answer, at once
    killed = Process([sys.executable, "-c", "import time; time.sleep(60)"])
    with pytest.raises(TimeoutExpired, match="still runs after"):
        killed.wait(timeout=0.01)
    killed.kill()
    assert killed.wait(timeout=60) == -9
    for proc in (ended, killed):
        proc.stdout.close()
        assert proc.stderr is not None
        proc.stderr.close()


def test_a_process_dropped_unwaited_is_reaped_by_the_next_start() -> None:
    proc = Process([sys.executable, "-c", "pass"])
    pid = proc.pid
    proc.stdin.close()
    proc.stdout.close()
    assert proc.stderr is not None
    proc.stderr.close()
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # it has ended, still a zombie
    del proc
    gc.collect()
    Process([sys.executable, "-c", "pass"]).communicate()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped: no such child any more


def test_a_parent_started_without_standard_streams_still_talks_to_git(repo: Path) -> None:
    """With fd 0, 1 and 2 closed, a new pipe would take their numbers."""
    probe = (
        "from gitlocks.git import run\n"
        "from gitlocks.errors import StoreError\n"
        "out = run.finish(run.start(['hash-object', '--stdin'], env=run.Env.CLEAN, "
        "error=StoreError), b'hello\\n', error=StoreError)\n"
        "open('result', 'wb').write(out)\n"
    )
    subprocess.run(["sh", "-c", 'exec "$0" -c "$1" <&- >&- 2>&-', sys.executable, probe],
                   cwd=repo, check=True)  # fmt: skip
    expected = subprocess.run(["git", "hash-object", "--stdin"], input=b"hello\n",
                              capture_output=True, check=True).stdout  # fmt: skip
    assert (repo / "result").read_bytes() == expected


def test_no_git_on_path_is_one_error_line_and_no_traceback(repo: Path, tmp_path: Path) -> None:
    """A ``Process`` that never started is dropped quietly: nothing to reap, nothing said."""
    bare_path = tmp_path / "bin"
    bare_path.mkdir()
    (bare_path / "python3").symlink_to(sys.executable)
    script = Path(sys.executable).parent / "git-alock"
    proc = subprocess.run([str(script), "acquire", "src/**", "-m", "x"], cwd=repo,
                          env={**os.environ, "PATH": str(bare_path)},
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr == "error: cannot run git: No such file or directory\n"


def test_threads_starting_git_together_reap_the_dropped_ones_once() -> None:
    """The ui serves requests on threads: each start reaps what was dropped, and two
    reaping the same pids must not trip over each other."""
    failures: list[BaseException] = []

    def start() -> None:
        try:
            Process(["true"]).communicate()
        except BaseException as exc:  # what a thread raised is the result
            failures.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch as often as they can
    try:
        for _ in range(30):
            pids = [Process(["true"]).pid for _ in range(30)]  # dropped while running
            for pid in pids:  # ended now, and still to be reaped by a start
                with contextlib.suppress(ChildProcessError):  # unless it had ended already
                    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
            threads = [threading.Thread(target=start) for _ in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert failures == []


@pytest.mark.parametrize("timeout", [1e9, 1e12, float("inf")])
def test_a_wait_with_a_limit_longer_than_poll_takes_still_waits(timeout: float) -> None:
    """A limit of years (or none, as infinity) is no error: the process's end is waited
    for as with any other limit."""
    ended = Process([sys.executable, "-c", "import sys; sys.stdin.read(); sys.exit(4)"])
    ended.stdin.close()
    assert ended.wait(timeout=timeout) == 4
    ended.stdout.close()
    assert ended.stderr is not None
    ended.stderr.close()


def test_a_session_child_past_its_time_is_killed_with_all_it_started(tmp_path: Path) -> None:
    """``communicate(timeout=...)`` gives up on time; ``kill_group`` ends the child and the
    grandchild holding its stdout (were the grandchild left, reading to the end would wait
    for it), and reaps."""
    marker = tmp_path / "grandchild"
    script = f"sleep 20 & echo $! > {marker}; echo started; wait"
    proc = Process(["sh", "-c", script], session=True)
    with pytest.raises(TimeoutExpired):
        proc.communicate(timeout=0.3)
    assert os.getsid(proc.pid) == proc.pid  # a session of its own
    grandchild = int(marker.read_text())
    proc.kill_group()
    assert proc.returncode == -9
    with pytest.raises(ProcessLookupError):
        for _ in range(200):  # gone once its parent, init, reaps it: bounded
            os.kill(grandchild, 0)
            threading.Event().wait(0.01)


def test_a_bounded_run_that_runs_out_of_time_raises_the_error_given() -> None:
    """A git whose remote never answers: killed at the bound, the caller's error raised."""
    with pytest.raises(StoreError, match="too slow"):
        run.bounded(
            ["-c", "core.sshCommand=sleep 20;:", "ls-remote", "ssh://nowhere.invalid/x"],
            env=run.Env.REMOTE,
            timeout=0.5,
            timed_out="too slow",
            error=StoreError,
        )
    done = run.bounded(
        ["--version"], env=run.Env.REMOTE, timeout=30, timed_out="", error=StoreError
    )
    assert done.returncode == 0 and done.stdout.startswith(b"git version")


@pytest.mark.parametrize("seconds", [0.0, 0.0001, 0.001, 0.0015, 0.3, 1.0, 1.0001, 2.5, 86400.0])
def test_waits_round_up_to_whole_milliseconds(seconds: float) -> None:
    import math

    from gitlocks.git.spawn import _milliseconds

    assert _milliseconds(seconds) == math.ceil(seconds * 1000)


def test_a_bounded_run_does_not_wait_for_a_daemon_its_remote_left_behind(
    tmp_path: Path,
) -> None:
    """A process that leaves git's group (a session of its own) keeping git's stderr is not
    killed with the group: the run ends at its bound anyway, before the daemon does."""
    marker, ended = tmp_path / "daemon", tmp_path / "ended"
    subprocess.run(["git", "init", "-q", str(tmp_path / "r")], check=True)
    daemon = f"sleep 30; touch {ended}"
    upload = f"setsid sh -c '{daemon}' & echo $! > {marker}; sleep 60; :"
    try:
        with pytest.raises(StoreError, match="too slow"):
            run.bounded(
                ["ls-remote", f"--upload-pack={upload}", str(tmp_path / "r")],
                env=run.Env.REMOTE,
                timeout=0.5,
                timed_out="too slow",
                error=StoreError,
            )
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
    subprocess.run(["git", "init", "-q", str(tmp_path / "r")], check=True)
    subprocess.run(
        ["git", "-C", str(tmp_path / "r"), "commit", "-q", "--allow-empty", "-m", "one"],
        check=True,
    )
    daemon = f"sleep 30; touch {ended}"
    upload = f"setsid sh -c '{daemon}' & echo $! > {marker}; git-upload-pack"
    try:
        done = run.bounded(
            ["ls-remote", f"--upload-pack={upload}", str(tmp_path / "r"), "HEAD"],
            env=run.Env.REMOTE,
            timeout=120,
            timed_out="too slow",
            error=StoreError,
        )
        assert done.returncode == 0 and done.stdout.endswith(b"\tHEAD\n"), done
        assert marker.exists() and not ended.exists()  # its end was not waited for
    finally:
        with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
            os.killpg(int(marker.read_text()), 9)
