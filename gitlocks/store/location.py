"""Finding the repository a command runs in, as git finds it: its git directory, its
working tree, and its settings, read once (``git rev-parse`` and ``git config`` run side
by side). ``GIT_DIR`` and ``GIT_WORK_TREE`` are honoured as git honours them.
"""

from __future__ import annotations

import os

from gitlocks.core.value import Value
from gitlocks.errors import NotARepository
from gitlocks.git import settings
from gitlocks.git.run import Env, start


def current_directory() -> str:
    """``os.getcwd()``, or a clear error when the directory was deleted under us."""
    try:
        return os.getcwd()
    except FileNotFoundError:
        raise NotARepository(
            "the current directory no longer exists (deleted or moved away): cd into the "
            "working tree again"
        ) from None


class Location(Value):
    """Where a repository is: its git directory and working tree (None when bare), and
    the object format git says it has (None: not asked)."""

    __slots__ = ("bare", "git_dir", "object_format", "workdir")

    def __init__(
        self,
        git_dir: str,
        workdir: str | None,
        bare: bool,
        object_format: str | None = None,
    ) -> None:
        self.git_dir = git_dir
        self.workdir = workdir
        self.bare = bare
        self.object_format = object_format


_WHERE = ["rev-parse", "--show-object-format", "--absolute-git-dir", "--is-bare-repository",
          "--is-inside-git-dir", "--show-toplevel"]  # fmt: skip


def discover_location(cwd: str) -> Location:
    """The repository around ``cwd``, as git finds it."""
    proc = start(_WHERE, cwd, env=Env.CLEAN, error=NotARepository)
    out, err = proc.communicate()
    lines = out.decode("utf-8", "surrogateescape").splitlines()
    if len(lines) < 4:
        detail = err.decode("utf-8", "replace").strip().splitlines()
        if not detail or "not a git repository" in detail[-1]:
            raise NotARepository(
                "not a git repository (or any of the parent directories): "
                "run git alock inside a repository's working tree"
            )
        reason = detail[-1].removeprefix("fatal: ")
        if reason.startswith("bad "):  # a setting git cannot read: its own words say which
            raise NotARepository(reason)
        raise NotARepository(f"cannot open a git repository at {cwd}: {reason}")
    fmt, git_dir, bare, inside = lines[:4]
    if bare != "true" and (inside == "true" or len(lines) < 5):
        # Anywhere inside the git directory: no working tree to anchor patterns in.
        raise NotARepository("run git alock inside the working tree, not inside .git")
    top = None if bare == "true" else lines[4]
    return Location(git_dir, top, bare == "true", known_format(fmt))


def location_from_environment(
    git_dir: str, work_tree: str | None
) -> tuple[Location, settings.Settings]:
    """The repository ``GIT_DIR`` names, as git opens it (``git --git-dir ... alock``): its
    working tree is ``GIT_WORK_TREE``, else ``core.worktree``, else the current directory.
    Its settings come with it, read once."""
    path = os.path.abspath(git_dir)
    proc = start(["--git-dir", path, "rev-parse", "--show-object-format", "--absolute-git-dir"],
                 env=Env.CLEAN, error=NotARepository)  # fmt: skip
    out, err = proc.communicate()
    if proc.returncode != 0:
        detail = err.decode("utf-8", "replace").strip().splitlines()
        reason = detail[-1].removeprefix("fatal: ") if detail else "not a repository"
        raise NotARepository(f"GIT_DIR {git_dir!r} is not a git repository: {reason}")
    fmt, _, path = out.decode("utf-8", "surrogateescape").strip().partition("\n")
    found = settings.read(git_dir=path)
    if work_tree is not None:
        top = os.path.abspath(work_tree)
    else:
        configured = found.get("core.worktree")
        top = os.path.join(path, str(configured)) if configured else os.getcwd()
    if not os.path.isdir(top):
        raise NotARepository(f"cannot use the working tree {work_tree!r}: not a directory")
    return Location(path, os.path.abspath(top), False, known_format(fmt)), found


def common_dir_of(git_dir: str) -> str:
    """A linked worktree's git dir names the shared one in its ``commondir`` file."""
    try:
        with open(os.path.join(git_dir, "commondir")) as pointer:
            text = pointer.read().strip()
    except OSError:
        return git_dir
    return os.path.realpath(os.path.join(git_dir, text))


def known_format(said: str) -> str | None:
    """An object format ``rev-parse --show-object-format`` printed, or None (a git too old
    to know the option echoes it back)."""
    return said if said in ("sha1", "sha256") else None
