"""The one place the package starts git: every call names an environment policy (``Env``).

- ``Env.INHERIT``: the environment as it is: a hook must honour what git set for it
  (``GIT_DIR``, the temporary ``GIT_INDEX_FILE`` of ``git commit -a``, a quarantine).
- ``Env.CLEAN``: ``REPO_VARS`` removed, for git run on another repository or worktree;
  config (``GIT_CONFIG_*``, ``-c``) and ``GIT_CEILING_DIRECTORIES`` belong to the request
  and stay, as git keeps them when it enters a submodule.
- ``Env.REMOTE``: ``CLEAN``, prompts off and git's messages in one language (remote mode
  reads them); ssh, proxy and credential settings pass through.

``start``/``finish`` run git concurrently, ``output`` one call; ``bounded`` runs one
against a remote under a wall-clock deadline. Each caller names the error class to raise.
"""

from __future__ import annotations

import enum
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Sequence

from gitlocks.core.value import Value

Process = subprocess.Popen[bytes]  # a git process ``start`` began


class Env(enum.Enum):
    """How git's environment is made from ours (see the module's docstring)."""

    INHERIT = enum.auto()
    CLEAN = enum.auto()
    REMOTE = enum.auto()


# Variables that locate a repository: git's ``local_repo_env`` without those of the request
# (config parameters, replace objects, lazy fetch), plus a hook's namespace and quarantine.
REPO_VARS = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_IMPLICIT_WORK_TREE",
        "GIT_COMMON_DIR",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_QUARANTINE_PATH",
        "GIT_GRAFT_FILE",
        "GIT_SHALLOW_FILE",
        "GIT_NAMESPACE",
        "GIT_PREFIX",
        "GIT_INTERNAL_SUPER_PREFIX",
        "GIT_CONFIG",  # one repository's config file, read by git config alone
    }
)


def environment(policy: Env) -> dict[str, str] | None:
    """The environment git gets under ``policy``; None: ours, inherited as it is."""
    if policy is Env.INHERIT:
        return None
    env = {k: v for k, v in os.environ.items() if k not in REPO_VARS}
    if policy is Env.REMOTE:
        env["GIT_TERMINAL_PROMPT"] = "0"
        env["LC_ALL"] = "C"  # we read git's messages, so keep them in one language
    return env


# While a command takes SIGINT itself (``gitlocks.service.waiting``), git runs in a session
# of its own: a terminal's Ctrl-C would kill it in the middle of a step of the wait.
_shielded = False


def shield(on: bool) -> bool:
    """Start git in a session of its own from now on (``on``) or not; what was so before."""
    global _shielded
    before, _shielded = _shielded, on
    return before


def start(
    args: Sequence[str],
    cwd: str | None = None,
    *,
    env: Env,
    error: type[Exception],
    keep_stderr: bool = True,
) -> Process:
    """Start ``git ARGS``; finish it with ``finish``, feeding its stdin then.
    ``keep_stderr=False`` for a process kept talking to: a pipe nobody reads would stop it."""
    try:
        return subprocess.Popen(
            ["git", *args],
            cwd=cwd,
            env=environment(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if keep_stderr else subprocess.DEVNULL,
            start_new_session=_shielded,
        )
    except OSError as exc:
        raise error(_cannot_run(exc, cwd)) from exc


def finish(
    proc: Process,
    feed: bytes = b"",
    *,
    ok: Sequence[int] = (0,),
    error: type[Exception],
) -> bytes:
    """Feed ``proc`` and wait for it; its stdout, or ``error`` when its exit code is not ``ok``."""
    out, err = proc.communicate(feed)
    if proc.returncode not in ok:
        detail = (err or b"").decode("utf-8", "replace").strip().splitlines()
        name = proc.args[1] if isinstance(proc.args, list) else "git"  # ``start``'s: a list
        raise error(f"git {name} failed: {detail[-1] if detail else proc.returncode}")
    return out


def finish_all(procs: Sequence[Process], *, error: type[Exception]) -> list[bytes]:
    """Every process's output; the first failure is raised once all have been reaped."""
    outs: list[bytes] = []
    failure: Exception | None = None
    for proc in procs:
        try:
            outs.append(finish(proc, error=error))
        except error as exc:
            failure = failure or exc
    if failure is not None:
        raise failure
    return outs


def output(
    args: Sequence[str], cwd: str | None = None, *, env: Env, error: type[Exception]
) -> bytes:
    return finish(start(args, cwd, env=env, error=error), error=error)


def _cannot_run(exc: OSError, cwd: str | None) -> str:
    """What a git that could not be started says: no git, or no directory to run it in."""
    if cwd is not None and exc.filename == cwd:
        return f"cannot run git in {cwd}: {exc.strerror}"
    return f"cannot run git: {exc.strerror}"


def close_pipes(proc: Process) -> None:
    """Close our end of every pipe to ``proc``, without waiting for it; one the child has
    closed already is no error here (its exit code says what happened)."""
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass


class GitRun(Value):
    """What a ``bounded`` git run ended with: its exit code and output. ``err`` is git's
    as far as ``STDERR_KEPT`` allows: its head and tail, with a line saying what was left out."""

    __slots__ = ("code", "err", "out")

    def __init__(self, code: int, out: str, err: str) -> None:
        self.code = code
        self.out = out
        self.err = err


# The messages remote mode reads are in stderr's first and last lines: a remote that talks
# without end (hook output, GIT_TRACE*) costs this much memory and no more.
STDERR_KEPT = 16 * 1024  # bytes of stderr kept from its start, and again from its end
LINGER_SECONDS = 1.0
_CHUNK = 1 << 16
_STEP = 0.05  # seconds: how often a read waiting on pipes another process holds looks at git


class Kept:
    """A stream's bytes, kept whole (``limit`` None) or as its first and last ``limit``."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        if self.limit is None or len(self.head) + len(chunk) <= self.limit:
            self.head += chunk
            return
        room = self.limit - len(self.head)
        self.head += chunk[:room]
        self.tail += chunk[room:]
        if len(self.tail) > self.limit:
            self.dropped += len(self.tail) - self.limit
            del self.tail[: len(self.tail) - self.limit]

    def value(self) -> str:
        if not self.dropped:
            return (self.head + self.tail).decode("utf-8", "replace")
        cut = f"\n[{self.dropped} bytes of git's output left out]\n"
        return f"{self.head.decode('utf-8', 'replace')}{cut}{self.tail.decode('utf-8', 'replace')}"


def bounded(
    args: Sequence[str],
    *,
    env: Env,
    timeout: float,
    timed_out: str,
    error: type[Exception],
    cwd: str | None = None,
) -> GitRun:
    """Run git in its own session (ssh cannot prompt on our terminal), stdin closed; its
    exit code is the caller's to judge. ``timeout`` is wall-clock time for the whole run: at
    it the whole process group (git, ssh, a remote helper) is killed and ``error(timed_out)``
    raised. Once git has ended its pipes are read for ``LINGER_SECONDS`` at most: a daemon
    left holding git's stderr does not make a finished run read as one that timed out."""
    deadline = time.monotonic() + timeout
    try:
        proc = subprocess.Popen(
            ["git", *args],
            cwd=cwd,
            env=environment(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise error(_cannot_run(exc, cwd)) from exc
    out, err = Kept(None), Kept(STDERR_KEPT)
    try:
        _read(proc, {proc.stdout: out, proc.stderr: err}, deadline)
    except TimeoutError:
        _kill_group(proc)
        raise error(timed_out) from None
    finally:
        close_pipes(proc)
    return GitRun(proc.wait(), out.value(), err.value())


def _read(proc: Process, sinks: dict[object, Kept], deadline: float) -> None:
    """Read ``proc``'s pipes into ``sinks`` as the bytes come, until both end (or
    ``LINGER_SECONDS`` after git did); ``TimeoutError`` at ``deadline``."""
    with selectors.DefaultSelector() as waiting:
        for stream in sinks:
            waiting.register(stream, selectors.EVENT_READ)  # type: ignore[arg-type]
        until = deadline
        while waiting.get_map():
            left = until - time.monotonic()
            if left <= 0:
                if until < deadline:
                    return  # git ended: what another process still holds is not waited for
                raise TimeoutError
            for key, _ in waiting.select(min(left, _STEP)):
                chunk = os.read(key.fd, _CHUNK)
                if chunk:
                    sinks[key.fileobj].add(chunk)
                else:
                    waiting.unregister(key.fileobj)
            if until == deadline and proc.poll() is not None:
                until = min(deadline, time.monotonic() + LINGER_SECONDS)


def _kill_group(proc: Process) -> None:
    """SIGKILL to git's process group (git, ssh, a remote helper), then reap git; our
    pipes are closed unread, so a process that left the group is not waited for."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    close_pipes(proc)
    proc.wait()
