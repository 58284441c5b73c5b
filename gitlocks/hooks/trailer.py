"""The commit-msg hook: an ``Agent-Id`` trailer naming the agent that makes the commit.

``git alock verify`` and a remote's pre-receive hook read it to tell an agent's own work
from work inside someone else's claim (docs/design.md, section 6.7). The trailer is
written by git's own ``interpret-trailers`` (so git's trailer rules, separators and
comment handling apply) with ``--if-exists addIfDifferent``: an amend by the same agent
never adds a second one. Rebases and cherry-picks do not run commit-msg (unless a message
is edited), so the trailers they carry over stay as they were. A message that is empty
but for comments is left alone: git aborts that commit, and a trailer would make it go on.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from gitlocks.core.record import utcnow
from gitlocks.core.text import printable
from gitlocks.errors import GitlocksError
from gitlocks.git.changes import finish_git, git_output, start_git
from gitlocks.hooks.session import hook_session
from gitlocks.identity import resolve_identity

TRAILER = "Agent-Id"
PREFIX = "alock: "  # the hooks' prefix (``render.hooks``, which needs the table to import)
SCISSORS = " ------------------------ >8 ------------------------"


def agent_id(cwd: str | None = None) -> str | None:
    """The id of the agent committing, or None when no agent is known (docs/design.md,
    section 6.7): ``AGENT_ID`` costs no git call; otherwise the lock table is read."""
    identity = resolve_identity(None, session=hook_session())
    if identity.holder_source != "session":
        return identity.holder
    # Imported here: only without AGENT_ID is the lock table (and its engine) needed.
    from gitlocks.hooks.check import TableReader, committer

    _, table = TableReader(cwd).finish()
    found, known = committer(table, identity, utcnow())
    return found.holder if known else None


def has_content(message: str, comment: str) -> bool:
    """Whether ``message`` says anything once comments and a ``-v`` diff are gone."""
    for line in message.splitlines():
        if comment and line.startswith(comment):
            if line == comment + SCISSORS:
                return False  # what follows is the diff git shows, never the message
            continue
        if line.strip():
            return True
    return False


def comment_char(cwd: str | None) -> str:
    """``core.commentChar`` as git reads it (``auto`` picks a character git then
    strips anyway, so ``#`` is as good a guess as any for deciding emptiness)."""
    proc = start_git(["config", "--get", "core.commentChar"], cwd)
    value = os.fsdecode(finish_git(proc, ok=(0, 1))).rstrip("\n")
    return "#" if not value or value == "auto" else value


def add_trailer(message_file: str, agent: str, cwd: str | None = None) -> bool:
    """Add ``Agent-Id: agent`` to the message file unless it says it already, or says
    nothing at all. Returns whether the file was changed."""
    with open(message_file, "rb") as f:
        before = f.read()
    if not has_content(before.decode("utf-8", "replace"), comment_char(cwd)):
        return False
    git_output(
        [
            "interpret-trailers",
            "--in-place",
            "--if-exists",
            "addIfDifferent",
            "--trailer",
            f"{TRAILER}: {agent}",
            message_file,
        ],
        cwd,
    )
    with open(message_file, "rb") as f:
        return f.read() != before


def main(argv: Sequence[str]) -> int:
    """``git-alock hook commit-msg FILE``: never stops a commit, whatever happens."""
    if len(argv) < 2:
        sys.stderr.write("error: usage: git-alock hook commit-msg MESSAGE-FILE\n")
        return 0
    try:
        agent = agent_id()
        if agent is not None:
            add_trailer(argv[1], agent)
    except (GitlocksError, OSError) as exc:
        sys.stderr.write(f"{PREFIX}error: {printable(str(exc))}; no {TRAILER} trailer added\n")
    except Exception as exc:  # a bug: say so, but a trailer is never worth a lost commit
        import traceback  # only on this path: a bug in a hook

        sys.stderr.write(
            f"{PREFIX}error: internal error: {exc.__class__.__name__}: {printable(str(exc))}\n"
            "This is a bug in gitlocks; please report it with the traceback below.\n"
        )
        traceback.print_exc()
    return 0
