"""``status``: your locks, others' with their state, and where each worktree's edits lie."""

from __future__ import annotations

import os
from collections.abc import Iterator

from gitlocks.core.ignore import IgnoreList
from gitlocks.core.judging import record_entries
from gitlocks.core.record import LockRecord, format_time
from gitlocks.core.scope import entry_covers, path_entry
from gitlocks.core.table import Friends, Table
from gitlocks.git.run import Process
from gitlocks.git.worktrees import finish_changes, finish_worktrees, start_changes, start_worktrees
from gitlocks.service.context import Context, live_table
from gitlocks.service.results import Edit, Status, WorktreeEdits

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from gitlocks.core.liveness import State

AT_ONCE = 16  # git processes status runs side by side, at most


def status(ctx: Context) -> Status:
    """Your locks, others' (with their state), and where each worktree's edits lie."""
    ident = ctx.identity
    root = ctx.store.root
    # git lists the worktrees and the edits here while the table is read: each costs a
    # process, which the other core runs meanwhile. Other worktrees are asked side by side,
    # ``AT_ONCE`` at most.
    listing: Process | None = start_worktrees(root)
    asked: dict[str, Process | OSError] = {root: _start(root)}
    try:
        table, live = live_table(ctx)
        life = ctx.liveness()
        friends = table.family(ident.holder, ident.parent)
        states_by_id = {r.id: life.state(r) for r in live}
        yours = [r for r in live if r in friends]
        others = [r for r in live if r not in friends]
        claims = {r.id for r in live if states_by_id[r.id] != "dead"}
        trees = []
        listed = finish_worktrees(listing, root)
        listing = None
        here = next((path for path, _ in listed if same_dir(path, root)), None)
        if here is not None:
            asked[here] = asked.pop(root)
        ahead = iter([path for path, _ in listed])  # the next worktrees to ask
        for path, branch in listed:
            _ask_ahead(asked, ahead)
            tree = WorktreeEdits(path, branch, path == here)
            started = asked.pop(path) if path in asked else _start(path)  # listed twice
            try:
                if isinstance(started, OSError):
                    raise started
                edits = finish_changes(started)
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
    finally:
        # The edits here when git lists no worktree here; everything, when the table
        # could not be read: no git is left running, nor unreaped.
        for proc in [listing, *asked.values()]:
            if proc is not None and not isinstance(proc, OSError):
                proc.kill()
                proc.communicate()
    quiet = {r.id: life.quiet_seconds(r) for r in live}
    queued = table.waiters(format_time(ctx.now()))
    return Status(ident.holder, ident.parent, yours, others, states_by_id, quiet, trees, queued)


def _ask_ahead(asked: dict[str, Process | OSError], ahead: Iterator[str]) -> None:
    """Start the next worktrees' ``git status`` until ``AT_ONCE`` run: each holds three
    descriptors of ours, and a repository with hundreds of worktrees would run out."""
    running = sum(not isinstance(a, OSError) for a in asked.values())
    while running < AT_ONCE:
        path = next(ahead, None)
        if path is None:
            return
        if path not in asked:
            asked[path] = _start(path)
            running += 1


def _start(worktree: str) -> Process | OSError:
    """A worktree's edits asked of git; the error, to be told where its edits go."""
    try:
        return start_changes(worktree)
    except OSError as exc:
        return exc


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
    """The records among ``claims`` whose scope covers the concrete ``path``, by id; a file
    name no pattern can spell (a control character) is decided one claim at a time."""
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


def same_dir(a: str, b: str) -> bool:
    """Whether two paths name one directory; as written, where either cannot be read."""
    if not a:
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.normpath(a) == os.path.normpath(b)
