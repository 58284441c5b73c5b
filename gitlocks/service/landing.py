"""Claims that end when their work lands: ``acquire --until-merged BRANCH``
(docs/design.md, section 6.8). Every write asks (``sweep``), and ``sync`` too; only
records whose summary says they wait are read.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from gitlocks.core.digest import sha1_hex
from gitlocks.core.judging import record_entries
from gitlocks.core.record import LockRecord, is_branch
from gitlocks.core.scope import ScopeEntry, entry_covers
from gitlocks.core.table import Table
from gitlocks.errors import UsageError
from gitlocks.git import worktrees

if TYPE_CHECKING:
    from gitlocks.store.base import LockStore

MAIN_LINE_GUESSES = ("main", "master", "trunk")
CHECKED_COMMITS = 16  # the newest awaited commits one landing question reads
CHECKED_RECORDS = 8  # the waiting records one write asks about


def main_line(store: LockStore) -> str:
    """The repository's main line, which ``--until-merged`` waits for when not told: the
    branch the remote's HEAD names (the lock remote, else ``origin``), else
    ``init.defaultBranch``, else the first of main, master, trunk that exists."""
    remote = store.config_get("alock.remote") or "origin"
    head = store.symref_target(f"refs/remotes/{remote}/HEAD")
    prefix = f"refs/remotes/{remote}/"
    if head is not None and head.startswith(prefix):
        return head[len(prefix) :]
    configured = store.config_get("init.defaultBranch")
    guesses = ([configured] if configured else []) + list(MAIN_LINE_GUESSES)
    for name in guesses:
        refs = (f"refs/heads/{name}", prefix + name, store.landing_ref(name))
        if is_branch(name) and any(store.commit_of(ref) for ref in refs):
            return name
    raise UsageError(
        "cannot tell this repository's main line (no remote HEAD, and no main, master or "
        "trunk branch): name it, e.g. --until-merged main"
    )


def check_branch(store: LockStore, branch: str) -> str:
    """``branch`` if a claim may wait for it: a branch name whose ref exists now."""
    name = branch.removeprefix("refs/heads/")
    # HEAD is no branch (git refuses the name), though in remote mode
    # refs/remotes/R/HEAD exists: a symbolic ref that sync would never refresh.
    if not is_branch(name):
        raise UsageError(f"invalid branch name {branch!r} for --until-merged")
    if store.commit_of(store.landing_ref(name)) is None:
        store.fetch_branches([name])  # remote mode: the remote's branch, fetched now
    if store.commit_of(store.landing_ref(name)) is None:
        remote = store.config_get("alock.remote")
        where = f"the lock remote {remote} has none" if remote else "no such local branch"
        raise UsageError(
            f"no branch {name!r} to wait for ({where}): "
            "name a branch that exists, e.g. the one your work is merged into"
        )
    return name


# Commits of the holder's HEAD, not in the branch, read for changes inside the claim
# before it may land; beyond this many, the work is taken as not landed yet.
MAX_UNLANDED_COMMITS = 1000


def landed(store: LockStore, record: LockRecord, table: Table, trees: set[str]) -> bool:
    """Whether ``record``'s work has landed in its branch (the conditions: docs/design.md,
    section 6.8). ``trees``: this repository's worktrees (real paths). The cheap questions
    come first."""
    if not record.until_merged or not record.awaiting:
        return False
    tip = store.commit_of(store.landing_ref(record.until_merged))
    if tip is None:
        return False
    # The newest commits decide: the older ones are their ancestors, or were rewritten.
    # A record may list 1,000 (anyone can write one): asking about each would cost every
    # write that many ancestry walks.
    awaited = record.awaiting[-CHECKED_COMMITS:]
    inside = [c for c in awaited if store.contains(tip, c)]
    if not inside:
        return False
    # Only a worktree of this repository on this machine is asked for its status: a record
    # is anyone's text, and git run in a directory it names would obey its configuration.
    path = record.worktree
    if not (path and os.path.isabs(path) and os.path.isdir(path)):
        return False
    if os.path.realpath(path) not in trees:
        return False
    try:
        head = worktrees.head(path)
        # Untracked files included, both sides of a rename.
        dirty = [changed for _, changed in worktrees.changes(path, renames=False)]
    except OSError:
        return False
    rest = [c for c in awaited if c not in inside]
    if head is not None and any(store.contains(head, c) for c in rest):
        return False  # some of the holder's work is not in the branch yet
    entries = record_entries(record)
    case = table.ignore_case
    if any(entry_covers(e, p, ignore_case=case) for p in dirty for e in entries):
        return False
    return head is None or not _unlanded_inside(store, head, tip, entries, case)


def _unlanded_inside(
    store: LockStore, head: str, tip: str, entries: list[ScopeEntry], ignore_case: bool
) -> bool:
    """Whether a commit of ``head`` that ``tip`` lacks changes a path inside ``entries``
    (against its first parent); too many such commits to read count as yes."""
    if store.contains(tip, head):
        return False
    changed = store.paths_changed_since(head, tip, MAX_UNLANDED_COMMITS)
    if changed is None:
        return True  # too many, or cannot tell: not landed, as with any doubt
    return any(entry_covers(e, p, ignore_case=ignore_case) for p in changed for e in entries)


def land(store: LockStore, table: Table, gone: set[str], host_id: str) -> list[LockRecord]:
    """The records of this machine (not already ``gone``) whose work has landed, oldest
    first."""
    waiting = [r for r in table.landing() if r.id not in gone and r.host_id == host_id]
    if not waiting:
        return []
    trees = {os.path.realpath(tree) for tree, _ in worktrees.worktrees(store.root)}
    # At most a few a write, drawn afresh each time: planted records must neither make
    # every write slow nor, always drawn first, keep a real claim from being asked.
    if len(waiting) > CHECKED_RECORDS:
        salt = os.urandom(8).hex()
        drawn = sorted(waiting, key=lambda r: sha1_hex((salt + r.id).encode()))
        waiting = sorted(drawn[:CHECKED_RECORDS], key=lambda r: r.id)
    return [r for r in waiting if landed(store, r, table, trees)]


def waiting_branches(table: Table, host_id: str) -> list[str]:
    """The branches this machine's claims wait on (for ``sync`` to refresh first)."""
    return sorted(
        {r.until_merged for r in table.landing() if r.until_merged and r.host_id == host_id}
    )
