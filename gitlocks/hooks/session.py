"""Which process is the session, seen from inside a git hook.

Light on purpose (no scope engine, no lock table): the commit-msg hook of an agent with
``AGENT_ID`` needs nothing more, and runs on every commit.
"""

from __future__ import annotations

import os

from gitlocks.hooks import HOOKS
from gitlocks.identity import SessionProcess, parent_pid, session_process


def _runs_hooks(proc: SessionProcess) -> bool:
    """A hook script, or the pre-commit framework: between git and us, never the session."""
    if proc.name.startswith(tuple(HOOKS)):  # comm is cut at 15 characters
        return True
    args = _cmdline(proc.pid)
    return any(a in ("pre_commit", "-mpre_commit") or a.endswith("/pre-commit") for a in args)


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [os.fsdecode(a) for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def hook_session() -> SessionProcess:
    """The session process as the command line sees it, seen from inside a hook.

    The command line's chain is ``session -> shell -> git -> git-alock``; a hook adds git's
    hook process (named after the hook, not a shell) and maybe the pre-commit framework,
    which would otherwise be taken for the session and give the committer another id.
    """
    pid = os.getppid()
    proc = session_process(pid)
    for _ in range(8):
        if not _runs_hooks(proc):
            break
        parent = parent_pid(proc.pid)
        if parent is None or parent <= 1:
            break
        proc = session_process(parent)
    return proc
