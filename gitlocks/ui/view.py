"""What the page shows, as one JSON-ready document: claims, holders, the tree, the edits,
built from the same service calls as ``list`` and ``status`` so that the page and the
terminal agree. Nothing here changes the store or renders markup (the page draws every
value as text).
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TypeAlias

from gitlocks.core import journal as core_journal
from gitlocks.core.queue import place, wait_ends
from gitlocks.core.record import LockRecord, format_time
from gitlocks.core.scope import has_wildcards, literal_part
from gitlocks.errors import GitlocksError
from gitlocks.git.worktrees import tracked
from gitlocks.identity import sessions
from gitlocks.render.journal import format_event
from gitlocks.service import journal, landing
from gitlocks.service.context import Context
from gitlocks.service.results import Status, WorktreeEdits
from gitlocks.service.status import same_dir
from gitlocks.service.status import status as status_of

if TYPE_CHECKING:
    from gitlocks.core.journal import Event
    from gitlocks.store.base import LockStore

# Files the tree shows at most: beyond, only what claims and edits touch.
MAX_FILES = 50_000
JOURNAL_EVENTS = 200  # events the page starts with; it adds the new ones as they come
# What a holder's card says of where it runs: its most recently active claim's.
WHERE_FIELDS = ("host", "session", "pid", "worktree", "branch", "last_active")


Memo: TypeAlias = "dict[int, tuple[LockRecord, dict[str, Any]]]"


def snapshot(ctx: Context, memo: Memo | None = None) -> dict[str, Any]:
    """Everything the page draws, at this moment. ``memo`` keeps each record's page form
    between snapshots: the store hands back the same record objects while nothing moved."""
    report = status_of(ctx)
    store = ctx.store
    gone = _landed(ctx)
    records = [r for r in report.yours + report.others if r.id not in gone]
    records.sort(key=lambda r: (r.created_at, r.id))
    locks = _locks(records, report, {} if memo is None else memo)
    files = _files(os.fspath(store.root))
    branches = {t.path: t.branch for t in report.worktrees}
    remote = store.config_get("alock.remote")
    return {
        "repo": os.path.basename(os.fspath(store.root).rstrip("/")) or "/",
        "root": os.fspath(store.root),
        "now": format_time(ctx.now()),
        "stale_after": ctx.stale_seconds(),
        "remote": None if not remote else {"name": remote, "synced_at": _synced_at(store, remote)},
        "locks": locks,
        "holders": _holders(locks, _running(ctx), branches),
        "files": files[:MAX_FILES],
        "files_left_out": max(0, len(files) - MAX_FILES),
        "worktrees": [_worktree(t) for t in report.worktrees],
        # Claims waiting their turn, in queue order (docs/design.md §4.7): what the page may list.
        "waiters": [
            {
                **w.brief(),
                "place": place(w),
                "reason": w.reason,
                "since": w.created_at,
                "until": wait_ends(w),
                "shared": w.shared,
            }
            for w in report.waiters
        ],
        "problems": [{"ref": p.ref, "reason": p.reason} for p in store.problems()],
        "warnings": list(ctx.warnings),
    }


def recent_events(ctx: Context) -> list[dict[str, Any]]:
    """The newest journal events and local refusals, oldest first, as the page shows them."""
    shared = journal.events(ctx.store, limit=JOURNAL_EVENTS)
    found = core_journal.merged(shared, journal.refusals(ctx.store), JOURNAL_EVENTS)
    return [event_view(e) for e in reversed(found)]


def event_view(event: Event) -> dict[str, Any]:
    """One event for the page: its line as ``log`` prints it, and what it is about."""
    paths = event.get("paths")
    text = format_event(event)
    at, kind, holder = (str(event.get(k, "")) for k in ("at", "event", "holder"))
    said = f"{at} {kind}{' (local)' if event.get('local') else ''} {holder} "
    return {
        "text": text,
        "detail": text[len(said) :] if text.startswith(said) else text,
        "event": str(event.get("event", "?")),
        "at": at,
        "holder": holder,
        "id": str(event.get("id", "")),
        "paths": [str(p) for p in paths] if isinstance(paths, list) else [],
        "local": bool(event.get("local")),
    }


def anchor(pattern: str) -> tuple[str, bool]:
    """Where a claim is drawn in the tree: the literal part of its pattern ("" for the
    root), and whether the claim covers everything under it (a directory)."""
    return "/".join(literal_part(pattern)), has_wildcards(pattern)


def _locks(records: list[LockRecord], report: Status, memo: Memo) -> list[dict[str, Any]]:
    found = []
    kept: Memo = {}
    for record in records:
        seen = memo.get(id(record))
        if seen is not None and seen[0] is record:
            base = seen[1]
        else:
            base = record.to_dict()
            base["last_active"] = format_time(record.last_active())
            base["anchors"] = [list(anchor(p)) for p in record.paths]
        kept[id(record)] = (record, base)
        found.append({**base, "state": report.states.get(record.id, "live")})
    memo.clear()
    memo.update(kept)
    return found


def _holders(
    locks: list[dict[str, Any]],
    running: list[tuple[sessions.Registered, str]],
    branches: dict[str, str | None],
) -> list[dict[str, Any]]:
    """One entry per holder: where it runs, its parent and sub-agents, its claims. Every
    agent session running here (``running``) is one, holding or not: a supervisor sees an
    agent that has only started."""
    by_holder: dict[str, list[dict[str, Any]]] = {}
    for lock in locks:
        by_holder.setdefault(lock["holder"], []).append(lock)
    idle = {r.holder: (r, root) for r, root in running if r.holder not in by_holder}
    parents = {
        h: next((x["parent"] for x in xs if x["parent"]), None) for h, xs in by_holder.items()
    }
    parents.update({h: r.parent for h, (r, _) in idle.items()})
    live = {r.holder for r, _ in running}
    found: list[dict[str, Any]] = []
    for holder in sorted(parents):
        held = by_holder.get(holder, [])
        entry: dict[str, Any] = {
            "holder": holder,
            "parent": parents[holder],
            "children": sorted(h for h, p in parents.items() if p == holder),
            "running": holder in live,  # a registered agent session of this machine runs
            "locks": [x["id"] for x in held],
        }
        if held:
            # RFC 3339 UTC, one spelling: sorts as time.
            newest = max(held, key=lambda x: str(x["last_active"]))
            entry.update({k: newest[k] for k in WHERE_FIELDS})
            states = {x["state"] for x in held}
            worst = ("interrupted", "dead", "stale")
            entry["state"] = next((s for s in worst if s in states), "live")
        else:
            registered, root = idle[holder]
            entry.update(
                host=registered.session.host,
                session=registered.session.name or registered.harness,
                pid=registered.session.pid,
                worktree=root,
                branch=next((b for p, b in branches.items() if same_dir(p, root)), None),
                last_active=None,
                state="live",
            )
        found.append(entry)
    return found


def _running(ctx: Context) -> list[tuple[sessions.Registered, str]]:
    """The agent sessions of this machine that run and acted here (none when the register
    cannot be read: the claims still show)."""
    try:
        return sessions.running(os.fspath(ctx.store.common_dir))
    except OSError:
        return []


def _worktree(tree: WorktreeEdits) -> dict[str, Any]:
    """A worktree's edits, each as the page tells it: in a claim held from this worktree,
    from another one, interrupted work, or in no claim."""
    shown = []
    for edit in tree.edits:
        where: str = edit.status
        if where in ("yours", "others"):
            here = any(same_dir(r.worktree, tree.path) for r in edit.locks)
            where = "claimed" if here else "elsewhere"
        shown.append(
            {
                "path": edit.path,
                "xy": edit.xy,
                "where": where,
                "holders": sorted({r.holder for r in edit.locks}),
                "ids": [r.id for r in edit.locks],
            }
        )
    return {"path": tree.path, "branch": tree.branch, "error": tree.error, "edits": shown}


def _landed(ctx: Context) -> set[str]:
    """The claims whose landed work ``list`` would release first (local mode), asked
    read-only: left off the page, so that the page and the terminal agree."""
    store = ctx.store
    if store.config_get("alock.remote"):
        return set()
    table = store.read_table()
    if not landing.waiting_branches(table, ctx.host_id):
        return set()  # the cheap question: no claim of this machine waits
    try:
        return {r.id for r in landing.land(store, table, set(), ctx.host_id)}
    except (GitlocksError, OSError):
        return set()


def _files(root: str) -> list[str]:
    try:
        return tracked(root)
    except OSError:
        return []


def _synced_at(store: LockStore, name: str) -> str | None:
    """When the local view of the lock remote ``name`` was last refreshed (None: never)."""
    # Imported here: only remote mode has a view to age.
    from gitlocks.store.local import Store
    from gitlocks.store.remote import read_sync_times

    if not isinstance(store, Store):
        return None  # no repository, no remote view
    synced = read_sync_times(store).get(name)
    if synced is None:
        return None
    return format_time(datetime.fromtimestamp(synced, timezone.utc))
