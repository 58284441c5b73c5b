"""What lands on a branch a push moves, judged beside the commits the push brings (the
pre-receive hook, docs/design.md section 6.9): commits the repository held elsewhere that
the default branch does not hold, and paths the two tips differ in that no commit
``old..new`` changes (a force push that drops others' work). Part of the hook path:
imports neither typer nor pygit2.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from gitlocks.core.table import Table
from gitlocks.errors import StoreError
from gitlocks.git.changes import finish_git, git_output, start_git
from gitlocks.hooks.check import CommittedIgnores
from gitlocks.hooks.commits import (
    Commit,
    Finding,
    Ignores,
    changed_paths,
    judge,
    log_commits,
    read_ignores,
)
from gitlocks.hooks.hosted import named_refs
from gitlocks.layout import IGNORE_FILE


def _diff_paths(old: str, new: str, cwd: str | None) -> list[str] | None:
    """The paths whose content differs between two commits' trees; None where either is
    no commit (a tag of a tree or a blob moves no files)."""
    try:
        raw = git_output(["diff-tree", "-r", "-z", "--no-renames", "--name-only",
                       f"{old}^{{commit}}", f"{new}^{{commit}}", "--"], cwd)  # fmt: skip
    except StoreError:
        return None
    return [os.fsdecode(p) for p in raw.split(b"\0") if p]


def undone(
    landing: Sequence[tuple[str, str]],
    changed: Mapping[str, Sequence[str]],
    table: Table,
    now: datetime,
    cwd: str | None,
) -> list[Finding]:
    """What lands on each branch a push moves (``landing``: old and new tips) besides the
    commits the push brings (``changed``, judged already): the commits the repository held
    elsewhere that the default branch does not hold, each judged as a new commit is (under
    its parent's list and the old tip's); and the paths the move changes that no commit
    ``old..new`` changes, as changed by the new tip's agents under the old tip's list."""
    findings: list[Finding] = []
    default = _default_tip(cwd)
    for old, new in landing:
        paths = _diff_paths(old, new, cwd)
        if not paths:
            continue
        between = log_commits([new, "--not", old, "--"], cwd)
        missing = [c for c in between if c.oid not in changed]
        read = changed_paths(missing, cwd)
        # Commits the repository had elsewhere that the default branch does not hold
        # land now (for the default branch itself: all of them, its tip is ``old``).
        args = ["rev-list", new, "--not", old, *([default] if default else []), "--"]
        arriving = set(git_output(args, cwd).decode("ascii", "replace").split())
        landed = [c for c in missing if c.oid in arriving]
        if landed:
            anchor = tuple(CommittedIgnores([old], cwd).finish())
            own = replace(read_ignores(landed, read, cwd), anchors=anchor)
            findings += judge(landed, read, table, now, own)
        explained = {p for c in between for p in (changed.get(c.oid) or read.get(c.oid) or ())}
        hidden = [p for p in paths if p not in explained]
        if not hidden:
            continue
        tip = next((c for c in between if c.oid == new), None)
        if tip is None:
            named = log_commits(["--no-walk", new, "--"], cwd)
            tip = named[0] if named else Commit(new, (), "", ())
        lists = CommittedIgnores([old, new], cwd).finish()
        ignores = Ignores({tip.oid: lists[0]}, {tip.oid: lists[1]} if IGNORE_FILE in hidden else {})
        findings += judge([tip], {tip.oid: hidden}, table, now, ignores)
    return findings


# Where HEAD names no branch that exists (``git init --bare`` leaves an unborn ``master``).
DEFAULT_BRANCHES = ("refs/heads/main", "refs/heads/master")


def _default_tip(cwd: str | None) -> str | None:
    """The commit the repository's default branch names: ``HEAD``'s, or where ``HEAD``
    names none, that of ``main`` or ``master``; None where there is none."""
    proc = start_git(["rev-parse", "-q", "--verify", "HEAD^{commit}"], cwd)
    out = finish_git(proc, ok=(0, 1)).decode("ascii", "replace").strip()
    if proc.returncode == 0 and out:
        return out
    found = named_refs(cwd, *DEFAULT_BRANCHES)
    return next((found[name] for name in DEFAULT_BRANCHES if name in found), None)
