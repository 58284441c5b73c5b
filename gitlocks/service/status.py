"""``status``: your locks, others' with their state, and where each worktree's edits lie."""

from __future__ import annotations

import os

from gitlocks.core.ignore import IgnoreList
from gitlocks.core.liveness import State
from gitlocks.core.record import LockRecord
from gitlocks.core.scope import entry_covers, path_entry
from gitlocks.core.table import Friends, Table, record_entries
from gitlocks.git.worktrees import changes, worktrees
from gitlocks.service.context import Context, live_table
from gitlocks.service.results import Edit, Status, WorktreeEdits


def status(ctx: Context) -> Status:
    """Your locks, others' (with their state), and where each worktree's edits lie."""
    ident = ctx.identity
    table, live = live_table(ctx)
    life = ctx.liveness()
    friends = table.family(ident.holder, ident.parent)
    states_by_id = {r.id: life.state(r) for r in live}
    yours = [r for r in live if r in friends]
    others = [r for r in live if r not in friends]
    claims = {r.id for r in live if states_by_id[r.id] != "dead"}
    trees = []
    for path, branch in worktrees(ctx.store.root):
        tree = WorktreeEdits(path, branch, current=_same_dir(path, ctx.store.root))
        try:
            edits = changes(path)
        except OSError as exc:
            tree.error = str(exc)
            edits = []
        ignore = IgnoreList.of_tree(path)
        for xy, changed in edits:
            if ignore and ignore.ignored(changed):
                continue  # in .alockignore: nobody needs to claim it
            found = _claims_covering(table, changed, claims)
            tree.edits.append(_classify(changed, xy, found, friends, states_by_id))
        trees.append(tree)
    quiet = {r.id: life.quiet_seconds(r) for r in live}
    return Status(ident.holder, ident.parent, yours, others, states_by_id, quiet, trees)


def _classify(
    path: str,
    xy: str,
    found: list[LockRecord],
    friends: Friends,
    states_by_id: dict[str, State],
) -> Edit:
    if not found:
        return Edit(path, xy, "unclaimed")
    if any(r in friends for r in found):
        return Edit(path, xy, "yours", [r for r in found if r in friends])
    if all(states_by_id[r.id] == "interrupted" for r in found):
        return Edit(path, xy, "interrupted", found)
    return Edit(path, xy, "others", [r for r in found if states_by_id[r.id] != "interrupted"])


def _claims_covering(table: Table, path: str, claims: set[str]) -> list[LockRecord]:
    """The records among ``claims`` whose scope covers the concrete ``path``, by id.

    A path is a file name, not typed input: one that no pattern can spell (a control
    character in its name) is decided one claim at a time instead of through the index.
    """
    entry = path_entry(path)
    if entry is not None:
        ids = [i for i in table.covering(entry) if i in claims]
    else:
        fold = table.ignore_case
        ids = [
            lock_id
            for lock_id in claims
            for entries in [record_entries(table.records[lock_id])]
            if any(entry_covers(e, path, ignore_case=fold) for e in entries)
        ]
    return [table.records[i] for i in sorted(ids)]


def _same_dir(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
