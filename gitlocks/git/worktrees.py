"""The worktrees of a repository and their uncommitted changes, from git's porcelain."""

from __future__ import annotations

import os

from gitlocks.git import run

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from gitlocks.git.run import Process


def _start(cwd: str, *args: str) -> Process:
    # Each worktree finds its own repository: variables git sets for a hook would point
    # every command at the hook's. OSError, which the status reading catches per worktree.
    return run.start(args, cwd, env=run.Env.CLEAN, error=OSError)


def worktrees(root: str) -> list[tuple[str, str | None]]:
    """(path, branch) of every worktree of the repository, from ``git worktree list``."""
    return finish_worktrees(start_worktrees(root), root)


def start_worktrees(root: str) -> Process | None:
    """``worktrees`` begun, for a caller with other work meanwhile (None: git would not
    start, which ``finish_worktrees`` reads as the one worktree at ``root``)."""
    try:
        return _start(root, "worktree", "list", "--porcelain", "-z")
    except OSError:
        return None


def finish_worktrees(proc: Process | None, root: str) -> list[tuple[str, str | None]]:
    try:
        if proc is None:
            raise OSError
        raw = run.finish(proc, error=OSError)
    except OSError:
        return [(root, None)]
    found: list[tuple[str, str | None]] = []
    path: str | None = None
    branch: str | None = None
    bare = False
    for item in [*raw.split(b"\0"), b""]:
        text = item.decode("utf-8", "surrogateescape")
        if not text:  # an empty field ends a worktree's record
            if path is not None and not bare and os.path.isdir(path):
                found.append((path, branch))
            path, branch, bare = None, None, False
        elif text.startswith("worktree "):
            path = text[len("worktree ") :]
        elif text.startswith("branch "):
            branch = text[len("branch ") :].removeprefix("refs/heads/")
        elif text == "bare":
            bare = True
    return found


def head(worktree: str) -> str | None:
    """The commit checked out in ``worktree`` (None: unborn)."""
    proc = _start(worktree, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    raw = run.finish(proc, ok=(0, 1), error=OSError)
    return raw.decode().strip() or None


def changes(worktree: str, *, renames: bool = True) -> list[tuple[str, str]]:
    """(XY, root-relative path) for each uncommitted change, untracked files included; a
    rename as its destination (``renames=False``: both sides). No optional locks: the
    worktree is often another agent's."""
    return finish_changes(start_changes(worktree, renames=renames))


def start_changes(worktree: str, *, renames: bool = True) -> Process:
    """``changes`` begun (OSError when git will not start)."""
    args = ["--no-optional-locks", "status", "--porcelain", "-z", "--untracked-files=all"]
    return _start(worktree, *args, *([] if renames else ["--no-renames"]))


def finish_changes(proc: Process) -> list[tuple[str, str]]:
    fields = run.finish(proc, error=OSError).split(b"\0")
    changes = []
    i = 0
    while i < len(fields):
        item = fields[i].decode("utf-8", "surrogateescape")
        i += 1
        if len(item) < 4:
            continue
        xy, path = item[:2], item[3:]
        if "R" in xy or "C" in xy:
            i += 1  # the rename's source follows; the destination is where work lies
        changes.append((xy, path))
    return changes


def tracked(worktree: str) -> list[str]:
    """The root-relative paths of the files git tracks in ``worktree`` (``git ls-files``)."""
    raw = run.finish(_start(worktree, "ls-files", "-z", "--full-name", ":/"), error=OSError)
    return [p.decode("utf-8", "surrogateescape") for p in raw.split(b"\0") if p]
