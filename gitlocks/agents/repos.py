"""Which repository an edited file belongs to, and its settings, as the guard reads them:
the repository that tracks the file decides, not the session's directory nor the nearest
``.git`` (docs/design.md, section 6.5). Through git alone (no pygit2): the guard runs
before every edit.
"""

from __future__ import annotations

import os

from gitlocks.agents.harnesses import Event, Pass
from gitlocks.core.ignore import IgnoreList
from gitlocks.core.value import Value
from gitlocks.errors import GitlocksError
from gitlocks.git import settings
from gitlocks.git.changes import finish_git, start_git
from gitlocks.git.settings import Settings
from gitlocks.hooks.check import CommittedIgnores

MODES = ("claim", "block", "warn")


class Repo(Value):
    """The repository an event happens in, as the fast path reads it (no pygit2)."""

    __slots__ = (
        "common_dir",
        "git_dir",
        "ignore",
        "ignore_case",
        "mode",
        "object_format",
        "remote",
        "root",
        "settings",
        "skew",
        "warnings",
    )

    def __init__(
        self,
        root: str,
        common_dir: str,
        mode: str,
        remote: str,
        ignore_case: bool,
        skew: int,
        warnings: list[str],
        ignore: IgnoreList,
        git_dir: str,
        object_format: str | None,
        settings: Settings,
    ) -> None:
        self.root = root
        self.common_dir = common_dir
        self.mode = mode
        self.remote = remote  # alock.remote: the lock remote in remote mode, else ""
        self.ignore_case = ignore_case
        self.skew = skew
        self.warnings = warnings
        self.ignore = ignore  # .alockignore as committed at HEAD, never as being edited
        # What the store needs to open it, as read here: a claim starts no git to find it again.
        self.git_dir = git_dir
        self.object_format = object_format  # None: git did not say
        self.settings = settings


def duration(settings: Settings, key: str, default: int) -> int:
    """A duration setting; a bad value is ``default``: a setting never stops an edit."""
    try:
        return settings.duration(key, default)
    except GitlocksError:
        return default


def open_repo(directory: str, *, edited: str = "") -> Repo:
    """The working tree around ``directory`` and the settings the guard reads; ``edited``
    names the file whose repository it is, for the message when there is none."""
    if not os.path.isdir(directory):
        raise Pass(f"the session's directory {directory!r} {_what_is(directory)}")
    where = ["--show-toplevel", "--git-common-dir", "--absolute-git-dir", "--show-object-format"]
    top = start_git(["rev-parse", *where], directory)
    config = settings.start(directory)
    # .alockignore as committed at HEAD, asked of git beside the other two calls.
    committed = CommittedIgnores(["HEAD"], directory)
    nowhere = (
        f"{edited} is outside any git working tree: not guarded"
        if edited
        else f"{directory!r} is not inside a git working tree"
    )
    try:
        lines = os.fsdecode(finish_git(top)).splitlines()
    except GitlocksError:
        config.kill()
        config.communicate()
        committed.drop()
        raise Pass(nowhere) from None
    configured = settings.finish(config)
    if len(lines) < 4:
        committed.drop()
        raise Pass(nowhere)
    root, common, git_dir, object_format = lines[:4]
    common = common if os.path.isabs(common) else os.path.join(directory, common)
    (ignore,) = committed.finish()
    warnings = []
    mode = (configured.get("alock.guardMode") or "claim").strip().lower() or "claim"
    if mode not in MODES:
        warnings.append(f"unknown alock.guardMode {mode!r} (claim, block or warn): claim")
        mode = "claim"
    # As the hooks read them (``gitlocks.hooks.reading.hook_config``): the same reader.
    ignore_case, case_warning = configured.lenient_flag("core.ignoreCase", False)
    skew, skew_warning = configured.clock_skew()
    warnings += [w for w in (case_warning, skew_warning) if w]
    remote = configured.get("alock.remote") or ""
    known = object_format if object_format in ("sha1", "sha256") else None
    return Repo(
        root, common, mode, remote, ignore_case, skew, warnings, ignore, git_dir, known, configured
    )


def _what_is(path: str) -> str:
    """What stands at ``path``, when it is no directory: for a message."""
    if os.path.isfile(path):
        return "is a file, not a directory"
    return "is not a directory" if os.path.lexists(path) else "does not exist"


def _anchor(directory: str) -> str:
    """The nearest directory from ``directory`` (absolute) up that holds a ``.git``: git
    finds the same repository from every directory below it."""
    here = directory
    while not os.path.lexists(os.path.join(here, ".git")):
        if os.path.dirname(here) == here:
            return ""
        here = os.path.dirname(here)
    return here


def _relative(path: str, top: str) -> str | None:
    """``path`` from ``top`` ("." for itself), both absolute and normal; None: outside."""
    if path == top:
        return "."
    prefix = top.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else None


def deciding_repo(here: str, edited: str) -> Repo:
    """The repository that decides for files in the directory ``here``: the one that tracks
    them. A ``.git`` made inside another repository's tree takes none of its tracked files
    out of its claims, unless it is a registered submodule or a worktree of the same
    repository; a ``.git`` git cannot open leaves the decision to the one around it."""
    try:
        inner = open_repo(here, edited=edited)
    except Pass:
        anchor = _anchor(here)
        parent = os.path.dirname(anchor) if anchor else None
        if parent is None or parent == anchor or not _anchor(parent):
            raise
        return deciding_repo(parent, edited)  # a broken .git: the repository around it
    parent = os.path.dirname(inner.root)
    if parent == inner.root or not _anchor(parent):
        return inner  # no repository around it: the common case costs no git call
    try:
        outer = deciding_repo(parent, edited)
    except Pass:
        return inner
    if os.path.realpath(outer.common_dir) == os.path.realpath(inner.common_dir):
        return inner  # a worktree of the same repository: the same claims
    rel = _relative(os.path.realpath(inner.root), os.path.realpath(outer.root))
    if rel is None:
        return inner
    return inner if _own_repository(outer, rel) else outer


def _own_repository(outer: Repo, rel: str) -> bool:
    """Whether the repository at ``rel`` inside ``outer``'s tree decides for its own files:
    a submodule ``outer`` records, or a directory ``outer`` tracks nothing in."""
    listed = start_git(["ls-files", "-s", "-z", "--", rel], outer.root)
    entries = [e for e in finish_git(listed).split(b"\0") if e]
    for entry in entries:
        info, _, name = entry.partition(b"\t")
        if info.startswith(b"160000 ") and os.fsdecode(name) == rel:
            return True  # a submodule: it decides for its files
    return not entries


def locate(event: Event, path: str, found: dict[str, Repo]) -> tuple[Repo, str]:
    """The repository the edited file ``path`` lies in (``deciding_repo``, asked from the
    file's nearest existing directory), and its path from the top of that tree; a relative
    ``path`` is the event's ``cwd``'s. ``found`` keeps the repositories already asked, by the
    directory holding their ``.git``: a patch of thousands of files asks git once per one."""
    full = os.path.realpath(os.path.join(event.cwd, path))  # what exists resolved
    if os.path.isdir(full):
        raise Pass(f"{path} is a directory, and {event.tool} edits files: not guarded")
    parts = full.split("/")  # "" first: the root
    # Inside a .git directory git has no working tree: ask from the one around it.
    inside = [i for i, part in enumerate(parts) if part.casefold() == ".git"]
    here = ("/".join(parts[: inside[-1]]) or "/") if inside else os.path.dirname(full)
    while not os.path.isdir(here):  # "/" is one
        if os.path.lexists(here):
            raise Pass(f"{path} cannot be a file: {here} {_what_is(here)}")
        here = os.path.dirname(here)
    anchor = _anchor(here)
    repo = found.get(anchor) if anchor else None
    if repo is None:
        repo = deciding_repo(here, path)
        if anchor:
            found[anchor] = repo
    rel = _relative(full, os.path.realpath(repo.root))
    if rel is None:
        raise Pass(f"{path} is outside the repository at {repo.root}: not guarded")
    if rel == "." or any(part.casefold() == ".git" for part in rel.split("/")):
        raise Pass(f"{path} is no file of the working tree: not guarded")
    return repo, rel
