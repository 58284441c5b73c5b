"""The post-commit hook: a commit is a heartbeat for the committer's own claims
(docs/design.md, section 6.8). Asked on the hooks' fast path; only a commit that touches
its holder's live claims pays for the write. git ignores post-commit's exit code; this
hook never fails anyway.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from datetime import datetime

from gitlocks.core.record import LockRecord, format_time, utcnow
from gitlocks.core.scope import path_entry
from gitlocks.core.table import Table
from gitlocks.core.text import printable
from gitlocks.errors import GitlocksError
from gitlocks.git.changes import git_output
from gitlocks.hooks import report_bug
from gitlocks.hooks.reading import TableReader, bound_mutex, committer
from gitlocks.hooks.session import hook_session
from gitlocks.identity import Identity, resolve_identity
from gitlocks.layout import DEFAULT_TTL_SECONDS
from gitlocks.render.hooks import PREFIX

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any

# In remote mode the heartbeat is a push. A commit is made already and waits for it: a
# remote that does not answer soon, or a store another process holds (a sync waiting on a
# slow remote holds it for up to twice alock.remoteTimeout), is left for the next commit.
HEARTBEAT_TIMEOUT_SECONDS = 5.0


_DIFF = ["diff-tree", "-r", "-z", "--name-only", "--no-renames"]


def committed(cwd: str | None = None) -> tuple[str, list[str]]:
    """HEAD's id and the paths it changed against its first parent (all, for a root): one
    ``diff-tree``, unless it shows nothing (a merge, or no change): then the parents are asked."""
    raw = git_output([*_DIFF, "--root", "HEAD"], cwd)
    head, _, paths = raw.partition(b"\0")
    if head:
        return os.fsdecode(head), [os.fsdecode(p) for p in paths.split(b"\0") if p]
    ids = os.fsdecode(git_output(["rev-list", "--parents", "-n1", "HEAD"], cwd)).split()
    against = [ids[1], ids[0]] if len(ids) > 1 else ["--root", ids[0]]
    raw = git_output([*_DIFF, "--no-commit-id", *against], cwd)
    return ids[0], [os.fsdecode(p) for p in raw.split(b"\0") if p]


def own_claims(
    table: Table, identity: Identity, now: datetime, paths: Sequence[str]
) -> list[LockRecord]:
    """The holder's own live locks covering any of ``paths``, oldest first. Not an
    ancestor's: a sub-agent editing inside its lead's claim claims the file for itself, so
    that sibling sub-agents block each other there as ``acquire`` says (docs/design.md §3.2)."""
    stamp = format_time(now)
    mine = [r for r in table.held_by(identity.holder) if table.is_live(r, stamp)]
    if not mine:
        return []
    entries = [e for e in map(path_entry, paths) if e is not None]
    table.prepare(entries)
    found = {i for entry in entries for i in table.covering(entry)}
    return [r for r in mine if r.id in found]


def run(cwd: str | None = None) -> list[LockRecord]:
    """Renew the committer's claims the last commit touched; the locks renewed."""
    reading = TableReader(cwd)
    commit, paths = committed(cwd)
    _, table = reading.finish()
    now = utcnow()
    identity, _ = committer(table, resolve_identity(None, session=hook_session()), now)
    claims = own_claims(table, identity, now, paths) if paths else []
    if not claims:
        return []
    # Imported here: only a commit inside the committer's own claims writes, and the
    # store brings in pygit2, which the hooks' fast path avoids.
    from gitlocks.service.context import open_context
    from gitlocks.service.locks import heartbeat

    ctx = open_context(cwd, identity)
    claims = [
        r
        for r in claims
        if (r.until_merged and commit not in r.awaiting)
        or ctx.renewal_due(r, r.ttl or DEFAULT_TTL_SECONDS)
    ]
    if not claims:
        return []  # fresh enough: a push would tell nobody anything (remote mode)
    store: Any = ctx.store  # a remote store has a timeout; a commit never waits long on it
    if store.remote:
        store.timeout = min(store.timeout, HEARTBEAT_TIMEOUT_SECONDS)
    bound_mutex(ctx.store, HEARTBEAT_TIMEOUT_SECONDS)
    return heartbeat(ctx, [r.id for r in claims], commit)


def quietly(run: Callable[[], list[LockRecord]], skipped: str) -> list[LockRecord]:
    """``run()`` for a hook whose exit code git ignores (post-commit, post-merge,
    post-rewrite): an error is said on stderr with what was ``skipped``, a bug reported."""
    try:
        return run()
    except GitlocksError as exc:
        sys.stderr.write(f"{PREFIX}error: {printable(str(exc))}; {skipped}\n")
    except Exception as exc:  # a bug: say so; the commit or merge is made already
        report_bug(exc)
    return []


def main(argv: Sequence[str]) -> int:
    """``git-alock hook post-commit``: renew quietly (the journal says it); always exit 0."""
    quietly(run, "claims not renewed")
    return 0
