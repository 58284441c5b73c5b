"""Starting git with ``os.posix_spawnp`` and pipes: what ``subprocess`` would do for us, for
a fraction of its import cost.

Importing ``subprocess`` brings ``signal``, ``threading``, ``selectors`` and ``locale``
(3 to 4 ms, more than any command spends in git). The commands agents and hooks run need
only this: start a process with its standard streams piped (or stderr sent to the null
device), talk to it, read everything it says, and wait for it. ``Process`` offers the part
of ``subprocess.Popen``'s interface the package uses, with the same behaviour:

- the child gets ``SIGPIPE`` and ``SIGXFSZ`` back at their default actions (Python ignores
  the first), as ``Popen``'s ``restore_signals`` does;
- the pipes' other ends are never inherited (Python opens every descriptor
  close-on-exec), so the child holds only its own three;
- ``returncode`` is the exit code, or minus the signal that ended the process;
- ``communicate`` feeds stdin and drains stdout and stderr together, so a child that
  writes much before it has read everything cannot block on us while we block on it.

A working directory becomes ``git -C DIR`` (``posix_spawn`` cannot change directory):
git does the same ``chdir`` before anything else. A process dropped without being waited
for is reaped the next time one starts, so a long-lived process (the MCP server) leaves
no zombies behind.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # ``signal`` builds enums: 0.5 ms more
import _thread  # ``threading`` is what ``subprocess`` costs
import os
import time
from io import BufferedWriter
from select import PIPE_BUF, POLLERR, POLLHUP, POLLIN, POLLOUT, poll

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

_RESTORED = (_signal.SIGPIPE, _signal.SIGXFSZ)
_KILL = _signal.SIGKILL
_CHUNK = 1 << 16
_LONGEST_POLL = 86400.0  # seconds: the longest one poll() waits for a process to end
_DRAIN_SECONDS = 1.0  # what a killed group has left to say is read this long at most
_unreaped: list[int] = []  # pids of processes dropped while still running
_reaping = _thread.allocate_lock()  # one thread at a time reaps them (the ui's are many)


class TimeoutExpired(Exception):
    """A wait with a time limit ran out."""


class Process:
    """One git process, started at once (see the module's docstring)."""

    def __init__(
        self,
        args: Sequence[str],
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        *,
        keep_stderr: bool = True,
        session: bool = False,
    ) -> None:
        """``session``: the child leads a session of its own (``setsid``), without our
        terminal, and the process group :meth:`kill_group` ends."""
        _reap_dropped()
        self.args = list(args)
        argv = [self.args[0], "-C", cwd, *self.args[1:]] if cwd is not None else self.args
        child_in, ours_in = _pipe()
        ours_out, child_out = _pipe()
        ours_err, child_err = _pipe() if keep_stderr else (-1, -1)
        actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = [
            (os.POSIX_SPAWN_DUP2, child_in, 0),
            (os.POSIX_SPAWN_DUP2, child_out, 1),
        ]
        if keep_stderr:
            actions.append((os.POSIX_SPAWN_DUP2, child_err, 2))
        else:
            actions.append((os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0))
        try:
            self.pid = os.posix_spawnp(
                argv[0],
                argv,
                os.environ if env is None else env,
                file_actions=actions,
                setsigdef=_RESTORED,
                setsid=session,
            )
        except BaseException:
            for fd in (ours_in, ours_out, ours_err):
                if fd >= 0:
                    os.close(fd)
            raise
        finally:
            for fd in (child_in, child_out, child_err):
                if fd >= 0:
                    os.close(fd)
        # Set only once there is a process: one that never started has nothing to reap.
        self.returncode: int | None = None
        self.stdin = os.fdopen(ours_in, "wb")
        self.stdout = os.fdopen(ours_out, "rb")
        self.stderr = os.fdopen(ours_err, "rb") if keep_stderr else None

    def communicate(
        self, feed: bytes = b"", timeout: float | None = None, linger: float | None = None
    ) -> tuple[bytes, bytes]:
        """Write ``feed`` to stdin and close it, read stdout and stderr to their ends, and
        wait: ``(stdout, stderr)``. For a process not yet read from through ``stdout``
        (what a stream has buffered is not seen here). ``TimeoutExpired`` when that takes
        more than ``timeout`` seconds; the process is left running, its pipes open.

        ``linger``: once the process has ended, its pipes are read this many seconds more
        at most, then closed (where a pidfd tells when it ends: Linux). A process it
        started and left behind holding them (a daemon) is not waited for."""
        deadline = None if timeout is None else time.monotonic() + timeout
        ended = _pidfd(self.pid) if linger is not None and self.returncode is None else -1
        out: list[bytes] = []
        err: list[bytes] = []
        sinks: dict[int, list[bytes]] = {}
        waiting = poll()
        feeding = -1  # stdin's descriptor while there is something left to feed
        if not self.stdin.closed:
            try:
                self.stdin.flush()
            except BrokenPipeError:
                feed = b""
            if feed:
                feeding = self.stdin.fileno()
                sinks[feeding] = []
                waiting.register(feeding, POLLOUT)
            else:
                _close(self.stdin)
        for stream, sink in ((self.stdout, out), (self.stderr, err)):
            if stream is not None and not stream.closed:
                sinks[stream.fileno()] = sink
                waiting.register(stream, POLLIN)
        if ended >= 0:
            waiting.register(ended, POLLIN)
        view = memoryview(feed)
        try:
            self._pump(waiting, sinks, view, feeding, deadline, ended, linger)
        finally:
            if ended >= 0:
                os.close(ended)
        _close(self.stdin)  # open still where the pipes were let go with feed unsent
        for stream in (self.stdout, self.stderr):
            if stream is not None:
                stream.close()
        self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return b"".join(out), b"".join(err)

    def _pump(
        self,
        waiting: Any,
        sinks: dict[int, list[bytes]],
        view: memoryview,
        feeding: int,
        deadline: float | None,
        ended: int,
        linger: float | None,
    ) -> None:
        """``communicate``'s loop: feed stdin, read stdout and stderr into ``sinks`` until
        every pipe has ended, or ``linger`` seconds after the process did (``ended``: its
        pidfd, or -1)."""
        drain_until: float | None = None
        while sinks:
            wait = _milliseconds_left(deadline, self.args)
            if drain_until is not None:
                left = drain_until - time.monotonic()
                if left <= 0:
                    return
                wait = _milliseconds(left) if wait is None else min(wait, _milliseconds(left))
            ready = waiting.poll(wait)
            for fd, event in ready:
                if fd == ended:
                    waiting.unregister(fd)
                    drain_until = time.monotonic() + (linger or 0.0)
                    continue
                if fd == feeding:
                    try:  # at most PIPE_BUF: what a pipe that polls writable takes at once
                        view = view[os.write(fd, view[:PIPE_BUF]) :]
                    except BrokenPipeError:
                        view = view[:0]
                    if not view or event & (POLLERR | POLLHUP):
                        waiting.unregister(fd)
                        del sinks[fd]
                        feeding = -1
                        _close(self.stdin)
                    continue
                chunk = os.read(fd, _CHUNK) if event & (POLLIN | POLLHUP | POLLERR) else b""
                if chunk:
                    sinks[fd].append(chunk)
                else:
                    waiting.unregister(fd)
                    del sinks[fd]

    def poll(self) -> int | None:
        """The exit code, or None while the process runs."""
        if self.returncode is None:
            pid, status = _waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the process to end (``TimeoutExpired`` after ``timeout`` seconds)."""
        if self.returncode is not None:
            return self.returncode
        if timeout is None:
            _, status = _waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
            return self.returncode
        ended = _wait_for_exit(self.pid, timeout)  # woken the moment it ends, where we can be
        if ended is not None:
            if not ended:
                raise TimeoutExpired(f"{self.args[:2]} still runs after {timeout} s")
            return self.wait()
        deadline = time.monotonic() + timeout
        pause = 0.0005
        while (code := self.poll()) is None:
            if time.monotonic() >= deadline:
                raise TimeoutExpired(f"{self.args[:2]} still runs after {timeout} s")
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
        return code

    def kill(self) -> None:
        """Send SIGKILL, unless the process has already been waited for."""
        if self.returncode is None:
            try:
                os.kill(self.pid, _KILL)
            except ProcessLookupError:
                pass

    def kill_group(self) -> None:
        """SIGKILL to the process group of a ``session`` child: git and whatever it
        started (ssh, a remote helper). Then read what is left and reap it. A process that
        left the group (a daemon in a session of its own) and kept our pipes would make
        reading to their end wait for as long as it lives: what it has not said within
        ``_DRAIN_SECONDS`` is not waited for, the pipes are closed and git is reaped."""
        if self.returncode is None:
            try:
                os.killpg(self.pid, _KILL)
            except OSError:
                self.kill()
        try:
            self.communicate(timeout=_DRAIN_SECONDS)
        except TimeoutExpired:
            self.close_pipes()
            self.wait()

    def close_pipes(self) -> None:
        """Close our end of every pipe to the child. One the child has closed already (it
        died, leaving our unsent input unsendable) is no error here: its exit code says
        what happened."""
        for stream in (self.stdin, self.stdout, self.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass

    def __del__(self) -> None:
        if getattr(self, "returncode", 0) is None and self.poll() is None:
            _unreaped.append(self.pid)


def _milliseconds(seconds: float) -> int:
    """``seconds`` in whole milliseconds, rounded up (``math.ceil``, without its module)."""
    return -int(-seconds * 1000 // 1)


def _milliseconds_left(deadline: float | None, args: list[str]) -> int | None:
    """How long the next poll may wait: None (for ever) without a deadline;
    ``TimeoutExpired`` once it has passed."""
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutExpired(f"{args[:2]} did not finish in time")
    return _milliseconds(min(left, _LONGEST_POLL))


def _wait_for_exit(pid: int, timeout: float) -> bool | None:
    """Wait up to ``timeout`` seconds for the child ``pid`` to end, through a pidfd
    (Linux): whether it ended (it is left to be reaped), or None where there is no pidfd
    and the caller polls instead (a sleep between polls adds up to half the wait again)."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux, a kernel before 5.3, or a sandbox
        return None
    try:
        waiting = poll()
        waiting.register(fd, POLLIN)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            # poll takes a C int of milliseconds: a longer wait (a day, no limit) is
            # waited a day at a time.
            step = left if left < _LONGEST_POLL else _LONGEST_POLL
            if waiting.poll(max(0, _milliseconds(step))):
                return True
            if left <= _LONGEST_POLL:
                return False
    finally:
        os.close(fd)


def _pidfd(pid: int) -> int:
    """A descriptor that polls readable once the child ``pid`` has ended (Linux), or -1."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux, a kernel before 5.3, or a sandbox
        return -1


def _close(stream: BufferedWriter) -> None:
    """Close our end of the child's stdin; a child that has gone away already is no error
    here (its exit code says what happened)."""
    try:
        stream.close()
    except BrokenPipeError:
        pass


def _pipe() -> tuple[int, int]:
    """A pipe whose two descriptors are neither 0, 1 nor 2 (a parent started with a
    standard stream closed would otherwise hand out one of those, and the child's
    ``dup2`` onto it would keep it close-on-exec)."""
    r, w = os.pipe()
    if min(r, w) > 2:
        return r, w
    import fcntl  # only then

    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3) for fd in (r, w)]
    os.close(r)
    os.close(w)
    return moved[0], moved[1]


def _waitpid(pid: int, options: int) -> tuple[int, int]:
    try:
        return os.waitpid(pid, options)
    except ChildProcessError:  # reaped already (a SIGCHLD handler of an embedding program)
        return pid, 0


def _reap_dropped() -> None:
    """Reap the dropped processes that have ended. One thread at a time: two would each
    remove the same pid, or one would wait on a pid the other's reaping had freed for a
    new process to take; a start finding another thread at it leaves it to that one."""
    if not _unreaped or not _reaping.acquire(False):
        return
    try:
        for pid in list(_unreaped):
            if _waitpid(pid, os.WNOHANG)[0]:
                _unreaped.remove(pid)
    finally:
        _reaping.release()
