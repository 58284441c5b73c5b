"""Which process is the session, seen from inside a git hook. Light on purpose (no scope
engine, no lock table): the commit-msg hook runs on every commit."""

from __future__ import annotations

import os

from gitlocks.hooks import HOOKS
from gitlocks.identity import SessionProcess, parent_pid, session_process


def _runs_hooks(proc: SessionProcess) -> bool:
    """A hook script, or the pre-commit framework: between git and us, never the session."""
    if proc.name.startswith(tuple(HOOKS)):  # comm is cut at 15 characters
        return True
    args = cmdline(proc.pid)
    return any(a in ("pre_commit", "-mpre_commit") or a.endswith("/pre-commit") for a in args)


def cmdline(pid: int) -> list[str]:
    """The arguments of process ``pid``; empty when they cannot be read (no ``/proc``)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [os.fsdecode(a) for a in f.read().split(b"\0")[:-1]]
    except OSError:
        return []


def hook_session() -> SessionProcess:
    """The session process as the command line sees it, seen from inside a hook: git's
    hook process and the pre-commit framework between git and us are passed over."""
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
