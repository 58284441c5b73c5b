"""Claims that end when their work lands: ``acquire --until-merged BRANCH``.

A claim made so keeps the holder's commits inside it (``awaiting``, added by the
post-commit hook). It is released, journaled ``landed``, once those commits are in BRANCH
(the lock remote's copy of it in remote mode) and the holder's worktree has no
uncommitted change inside the claim. Every write asks (``sweep``), and ``sync`` too; only
records whose summary says they wait are read, so the question costs nothing in a table
without them (docs/design.md, section 6.8).
"""

from __future__ import annotations

import os

from gitlocks.core.record import BRANCH_RE, LockRecord
from gitlocks.core.scope import entry_covers
from gitlocks.core.table import Table, record_entries
from gitlocks.errors import UsageError
from gitlocks.git import worktrees
from gitlocks.store.local import Store

MAIN_LINE_GUESSES = ("main", "master", "trunk")


def main_line(store: Store) -> str:
    """The repository's main line, which ``--until-merged`` waits for when not told.

    The branch the remote's HEAD names (``refs/remotes/R/HEAD``; R is the lock remote in
    remote mode, else ``origin``); else ``init.defaultBranch`` when that branch exists;
    else the first of main, master, trunk that exists.
    """
    remote = store.config_get("alock.remote") or "origin"
    head = store.symref_target(f"refs/remotes/{remote}/HEAD")
    prefix = f"refs/remotes/{remote}/"
    if head is not None and head.startswith(prefix):
        return head[len(prefix) :]
    configured = store.config_get("init.defaultBranch")
    guesses = ([configured] if configured else []) + list(MAIN_LINE_GUESSES)
    for name in guesses:
        if BRANCH_RE.match(name) and store.commit_of(store.landing_ref(name)) is not None:
            return name
    raise UsageError(
        "cannot tell this repository's main line (no remote HEAD, and no main, master or "
        "trunk branch): name it, e.g. --until-merged main"
    )


def check_branch(store: Store, branch: str) -> str:
    """``branch`` if a claim may wait for it: a branch name whose ref exists now."""
    name = branch.removeprefix("refs/heads/")
    if not BRANCH_RE.match(name):
        raise UsageError(f"invalid branch name {branch!r} for --until-merged")
    if store.commit_of(store.landing_ref(name)) is None:
        where = store.landing_ref(name)
        raise UsageError(
            f"no branch {name!r} to wait for ({where} does not exist): "
            "name a branch that exists, e.g. the one your work is merged into"
        )
    return name


def landed(store: Store, record: LockRecord, table: Table, host_id: str) -> bool:
    """Whether ``record``'s work has landed in its branch.

    Its commits are in the branch, or (a rebase made them anew) no longer in the holder's
    worktree's HEAD, at least one being in the branch; and that worktree, which must be
    on this machine to be asked, has no uncommitted change inside the claim.
    """
    if not record.until_merged or not record.awaiting:
        return False
    tip = store.commit_of(store.landing_ref(record.until_merged))
    if tip is None:
        return False
    inside = [c for c in record.awaiting if store.contains(tip, c)]
    if not inside:
        return False
    if record.host_id != host_id or not _our_worktree(store, record.worktree):
        return False  # the holder's worktree is not here to be asked
    try:
        head = worktrees.head(record.worktree)
        dirty = worktrees.changes(record.worktree)
    except OSError:
        return False
    rest = [c for c in record.awaiting if c not in inside]
    if head is not None and any(store.contains(head, c) for c in rest):
        return False  # some of the holder's work is not in the branch yet
    entries = record_entries(record)
    case = table.ignore_case
    return not any(entry_covers(e, p, ignore_case=case) for _, p in dirty for e in entries)


def _our_worktree(store: Store, path: str) -> bool:
    """Whether ``path`` is a worktree of this repository on this machine. Only such a
    directory is ever asked for its status: a record is anyone's text, and git run in a
    directory it names would obey that directory's own configuration."""
    if not path or not os.path.isabs(path) or not os.path.isdir(path):
        return False
    real = os.path.realpath(path)
    return any(os.path.realpath(tree) == real for tree, _ in worktrees.worktrees(store.root))


def land(store: Store, table: Table, gone: set[str], host_id: str) -> list[LockRecord]:
    """The records (not already ``gone``) whose work has landed, oldest first."""
    return [r for r in table.landing() if r.id not in gone and landed(store, r, table, host_id)]


def waiting_branches(table: Table, host_id: str) -> list[str]:
    """The branches this machine's claims wait on (for ``sync`` to refresh first)."""
    return sorted(
        {r.until_merged for r in table.landing() if r.until_merged and r.host_id == host_id}
    )
