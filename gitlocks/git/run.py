"""The one place the package starts git: every call names an environment policy.

- ``Env.INHERIT``: the environment as it is. The hooks read the repository git is
  working on, so ``GIT_DIR``, ``GIT_INDEX_FILE`` (the temporary index of ``git commit
  -a``) and the rest of what git set for the hook must be honoured.
- ``Env.CLEAN``: the variables that locate a repository removed (``REPO_VARS``), for git
  run on another repository or worktree, or named by ``--git-dir``: inside a hook they
  would point it at the hook's repository, its index or its quarantined objects.
  Everything else stays, config (``GIT_CONFIG_*``, ``-c``) and ``GIT_CEILING_DIRECTORIES``
  included: they belong to the request, not to a repository (git keeps them when it
  enters a submodule too).
- ``Env.REMOTE``: ``CLEAN``, with terminal prompts off and git's messages in one
  language (remote mode reads them); ssh, proxy and credential settings pass through.

``start``/``finish`` run git concurrently (several at once, stdin fed on finishing),
``output`` runs one call: through ``gitlocks.git.spawn``, which the commands agents and
hooks run can afford to import. ``bounded`` runs one with a time limit in its own session,
so that a timeout kills git and everything it started (ssh); only remote mode needs it.
Each caller names the error class its own callers
catch; the messages are the same for all.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Sequence
from typing import NamedTuple

from gitlocks.git.spawn import Process, TimeoutExpired


class Env(enum.Enum):
    """How git's environment is made from ours (see the module's docstring)."""

    INHERIT = enum.auto()
    CLEAN = enum.auto()
    REMOTE = enum.auto()


# Variables that locate a repository, its work tree, index or object store: git's own list
# of repository-local variables (``local_repo_env``, cleared before it runs a command in
# another repository), without those that describe the request rather than a repository
# (``GIT_CONFIG_PARAMETERS``/``_COUNT``, which git keeps for a submodule; replace objects;
# lazy fetch), plus those a hook or receive-pack sets (the namespace, the quarantine).
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


def start(
    args: Sequence[str],
    cwd: str | None = None,
    *,
    env: Env,
    error: type[Exception],
    keep_stderr: bool = True,
) -> Process:
    """Start ``git ARGS``; finish it with ``finish``, feeding its stdin then.

    ``keep_stderr=False`` for a process kept talking to (``cat-file --batch``): a pipe
    nobody reads fills up with its complaints and stops it, and us with it.
    """
    try:
        return Process(["git", *args], cwd, environment(env), keep_stderr=keep_stderr)
    except OSError as exc:
        raise error(f"cannot run git: {exc.strerror}") from exc


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
        detail = err.decode("utf-8", "replace").strip().splitlines()
        name = proc.args[1]
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
    """Run git and return its stdout (``error`` when it fails)."""
    return finish(start(args, cwd, env=env, error=error), error=error)


class Ran(NamedTuple):
    """What a ``bounded`` git run ended with."""

    returncode: int
    stdout: bytes
    stderr: bytes


LINGER_SECONDS = 1.0


def bounded(
    args: Sequence[str],
    *,
    env: Env,
    timeout: float,
    timed_out: str,
    error: type[Exception],
    cwd: str | None = None,
) -> Ran:
    """Run git in its own session, stdin closed; its exit code is the caller's to judge.

    After ``timeout`` seconds the whole process group is killed and ``error(timed_out)``
    raised. The new session also keeps ssh from prompting on our terminal. Once git has
    ended, what its pipes still carry is read for ``LINGER_SECONDS`` at most: a daemon an
    ssh wrapper or a helper left running with git's stderr does not make a run that
    finished read as one that timed out.
    """
    try:
        proc = Process(["git", *args], cwd, environment(env), session=True)
    except OSError as exc:
        raise error(f"cannot run git: {exc.strerror}") from exc
    try:
        out, err = proc.communicate(timeout=timeout, linger=LINGER_SECONDS)
    except TimeoutExpired:
        proc.kill_group()
        raise error(timed_out) from None
    return Ran(proc.wait(), out, err)
