"""The commit-msg hook: an ``Agent-Id`` trailer naming the agent that makes the commit
(docs/design.md, section 6.7), written by git's own ``interpret-trailers``. ``git revert``
and ``git cherry-pick`` run no commit-msg, so prepare-commit-msg adds it to their commits.
A message that is empty but for comments git will strip is left alone (git aborts that
commit); comment lines git keeps are the message, and get it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from gitlocks.core.record import utcnow
from gitlocks.core.text import printable
from gitlocks.errors import GitlocksError
from gitlocks.git import settings
from gitlocks.git.changes import git_output
from gitlocks.hooks import report_bug
from gitlocks.hooks.session import cmdline, hook_session
from gitlocks.identity import parent_pid, resolve_identity

TRAILER = "Agent-Id"
PREFIX = "alock: "  # the hooks' prefix (``render.hooks``, which needs the table to import)
SCISSORS = " ------------------------ >8 ------------------------"
COMMENT_CHOICES = "#;@!$%^&|:"  # git's own choices for core.commentChar=auto


def agent_id(cwd: str | None = None) -> str | None:
    """The id of the agent committing, or None when no agent is known (docs/design.md,
    section 6.7): ``AGENT_ID`` costs no git call; otherwise the lock table is read."""
    identity = resolve_identity(None, session=hook_session())
    if not identity.derived:
        return identity.holder
    # Imported here: only without AGENT_ID is the lock table (and its engine) needed.
    from gitlocks.hooks.reading import TableReader, committer

    _, table = TableReader(cwd).finish()
    found, known = committer(table, identity, utcnow())
    return found.holder if known else None


def has_content(message: str, comment: str, *, comments_kept: bool = False) -> bool:
    """Whether ``message`` says anything once comments and a ``-v`` diff are gone;
    ``comments_kept``: git keeps comment lines, so they are content too (``-m "#123 fix"``)."""
    for line in message.splitlines():
        if comment and line.startswith(comment):
            if line == comment + SCISSORS:
                return False  # what follows is the diff git shows, never the message
            if not comments_kept:
                continue
        if line.strip():
            return True
    return False


def cleanup_settings(cwd: str | None) -> tuple[str, str]:
    """(``core.commentChar``, ``commit.cleanup``) as git reads them, in one call."""
    configured = settings.read(cwd)
    char = configured.raw("core.commentChar") or ""
    cleanup = (configured.get("commit.cleanup") or "default").strip().lower()
    return ("#" if not char or char == "auto" else char), cleanup


def editor_used(parent: int | None = None) -> bool:
    """Whether git had this message edited (or may have): only then does its default
    cleanup strip comment lines. git sets ``GIT_EDITOR=:`` for a hook when no editor ran,
    unless the committing git inherited it (the user's own setting, which tells nothing).
    Unreadable (no ``/proc``): yes, so a comments-only message never gets a trailer."""
    if os.environ.get("GIT_EDITOR") != ":":
        return True
    pid = os.getppid() if parent is None else parent
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            inherited = f.read().split(b"\0")
    except OSError:
        return True
    return b"GIT_EDITOR=:" in inherited


def comments_kept(cleanup: str, edited: bool) -> bool:
    """Whether git keeps comment lines in the message it commits (``git commit``'s
    ``--cleanup`` modes: ``default`` strips them only when the message was edited)."""
    return cleanup in ("verbatim", "whitespace", "scissors") or (cleanup != "strip" and not edited)


def add_trailer(
    message_file: str, agent: str, cwd: str | None = None, *, if_exists: str = "addIfDifferent"
) -> bool:
    """Add ``Agent-Id: agent`` to the message file unless it says it already (``doNothing``:
    names any agent) or says nothing at all; whether the file was changed."""
    with open(message_file, "rb") as f:
        before = f.read()
    comment, cleanup = cleanup_settings(cwd)
    kept = comments_kept(cleanup, editor_used())
    text = before.decode("utf-8", "replace")
    if not has_content(text, comment, comments_kept=kept):
        return False
    if not before.endswith(b"\n"):  # ``git merge -m``'s: else no trailer to git
        with open(message_file, "ab") as f:
            f.write(b"\n")
    # Lines git keeps are no comments to interpret-trailers either: it is told a comment
    # character that starts no line.
    options = []
    if kept:
        starts = {line[:1] for line in text.splitlines()}
        free = [c for c in COMMENT_CHOICES if c not in starts]
        if free:
            options = ["-c", f"core.commentChar={free[0]}"]
    git_output(
        [
            *options,
            "interpret-trailers",
            "--in-place",
            "--if-exists",
            if_exists,
            "--if-missing",  # whatever trailer.ifMissing says: the trailer is the point
            "add",
            "--trailer",
            f"{TRAILER}: {agent}",
            message_file,
        ],
        cwd,
    )
    with open(message_file, "rb") as f:
        return f.read() != before


# git's options that come before its command and take the next word as their value.
_GIT_VALUE_OPTIONS = (
    "-c",
    "-C",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--exec-path",
    "--config-env",
    "--attr-source",
    "--super-prefix",
)


def git_command(pid: int) -> list[str]:
    """The command and arguments of the git process ``pid`` (``["revert", "--no-edit",
    "HEAD"]``), without git's own options; empty when it cannot be read (no ``/proc``)."""
    words = cmdline(pid)
    if not words or os.path.basename(words[0]) != "git":
        return []
    rest = words[1:]
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] in _GIT_VALUE_OPTIONS else rest[1:]
    return rest


def _nearest_git(pid: int | None) -> tuple[int, list[str]] | None:
    """The nearest git among ``pid`` and its ancestors, with its command: the hook's
    parent when git runs it, a few steps up when a hook framework (pre-commit) runs it."""
    for _ in range(6):
        if pid is None or pid < 1:  # git itself may be process 1 (a container's entrypoint)
            return None
        command = git_command(pid)
        if command:
            return pid, command
        pid = parent_pid(pid)
    return None


def sequenced_by(parent: int | None = None) -> str | None:
    """``revert`` or ``cherry-pick`` when that is what makes this commit (the committing
    git, or the one that runs ``git commit -n`` for an edited message); else None."""
    found = _nearest_git(os.getppid() if parent is None else parent)
    if found is not None and found[1][:1] == ["commit"] and "-n" in found[1]:
        found = _nearest_git(parent_pid(found[0]))
    if found is None:
        return None
    return found[1][0] if found[1][:1] in (["revert"], ["cherry-pick"]) else None


def main(argv: Sequence[str]) -> int:
    """``git-alock hook commit-msg FILE``, or ``prepare-commit-msg FILE [SOURCE [SHA]]``
    (which acts only for a revert or a cherry-pick): never stops a commit, whatever happens."""
    if len(argv) < 2:
        sys.stderr.write(f"error: usage: git-alock hook {argv[0]} MESSAGE-FILE\n")
        return 0
    try:
        if argv[0] == "prepare-commit-msg":
            by = sequenced_by()
            if by is None:
                return 0  # commit-msg runs after it, and adds the trailer then
        else:
            by = None
        agent = agent_id()
        if agent is not None:
            keep = "doNothing" if by == "cherry-pick" else "addIfDifferent"
            add_trailer(argv[1], agent, if_exists=keep)
    except (GitlocksError, OSError) as exc:
        sys.stderr.write(f"{PREFIX}error: {printable(str(exc))}; no {TRAILER} trailer added\n")
    except Exception as exc:  # a bug: say so, but a trailer is never worth a lost commit
        report_bug(exc)
    return 0
