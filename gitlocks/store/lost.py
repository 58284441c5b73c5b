"""A lock remote whose journal was lost, noticed (``lost_view``): a fetch that finds it gone,
moved back or replaced by a chain that does not continue it, while the view holds live
claims, reports it and leaves the view alone (docs/design.md, section 5.8).
``gitlocks.store.restore`` puts it back.
"""

from __future__ import annotations

from gitlocks.core.journal import COMPACTED
from gitlocks.core.record import LockRecord, format_time, utcnow
from gitlocks.core.shard import record_shards
from gitlocks.layout import (
    FORMAT_REF,
    JOURNAL_REF,
    LOCK_PREFIX,
    SHARD_PREFIX,
)

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Protocol

    import pygit2

    from gitlocks.core.table import Table
    from gitlocks.store.journal import Journal

    class RemoteStore(Protocol):
        """What noticing a lost table asks of the remote store (``store/remote.py``)."""

        remote: str  # the remote's name
        staging: str  # where its refs are fetched to
        skew: int
        journal_store: Journal

        @property
        def repo(self) -> pygit2.Repository: ...

        def load(self, refs: Iterable[tuple[str, str]], version: str | None) -> Table: ...
        def view_journal(self) -> str | None: ...
        def shard_count(self) -> int | None: ...
        def mirrored(self) -> dict[str, str]: ...
        def staged_lock_refs(self) -> dict[str, str]: ...
        def staged_meta(self) -> dict[str, str]: ...
        def scan_refs(self, prefixes: tuple[str, ...]) -> dict[str, str]: ...
        def beyond(self, names: Iterable[str], prefix: str, count: int) -> list[str]: ...


def _loaded(remote: RemoteStore, table: dict[str, str]) -> Table:
    loaded = remote.load(((LOCK_PREFIX + i, oid) for i, oid in sorted(table.items())), None)
    loaded.skew = remote.skew
    return loaded


def _live(remote: RemoteStore, table: dict[str, str]) -> list[LockRecord]:
    return _loaded(remote, table).live(format_time(utcnow()))


def _continues(remote: RemoteStore, new: str, view: str) -> bool:
    """Whether the journal at ``new`` continues the one at ``view``: ``view`` is an
    ancestor, or the chain at ``new`` starts at a compacted root (which names a tip this
    clone may never have fetched)."""
    if is_ancestor(remote.repo, view, new):
        return True
    entries = list(remote.journal_store.walk(new))
    root = remote.journal_store.commit_of(entries[-1].commit) if entries else None
    if root is None or root.parent_ids:
        return False
    marker = next((e for e in entries[-1].events if e.get("event") == COMPACTED), None)
    if marker is None:
        return False
    previous = remote.journal_store.commit_of(str(marker.get("previous", "")))
    if previous is None:
        return True  # a tip this clone never fetched: nothing here to hold it against
    # A compacted root carries its previous tip's tree, and that tip continues the view.
    return root.tree == previous.tree and (
        str(previous.id) == view or is_ancestor(remote.repo, view, str(previous.id))
    )


def lost_view(remote: RemoteStore, journal: str | None) -> str | None:
    """What happened to the remote's journal (now ``journal``) since the local view
    mirrored it, when the view holds live claims; None when nothing was lost."""
    view = remote.view_journal()
    if view is None or journal == view:
        return None
    if remote.shard_count() or remote.journal_store.view_tips(view) is not None:
        return _lost_shard(remote, view, journal)
    mirrored = remote.mirrored()
    if not mirrored:
        return None
    table = _loaded(remote, mirrored)
    # Unexpired claims, oldest first, by their summaries (none is read whole).
    live = sorted(table.summaries.expiring(table.cutoff(format_time(utcnow())), after=True))
    if not live:
        return None
    repo = remote.repo
    if journal is None:
        what = "has vanished"
    elif remote.journal_store.commit_of(journal) is None:
        return None  # no journal commit at all: every write stops on it already (5.5)
    elif _continues(remote, journal, view):
        if remote.journal_store.table(journal) is not None:
            return None
        # A commit of the older shape, carrying no table: the lock refs are the table
        # again, and what they no longer hold was lost with it.
        refs = remote.staged_lock_refs()
        live = [i for i in live if i not in refs]
        if not live:
            return None
        what = f"moved to {journal[:12]}, which carries no lock table, and its lock refs lost"
    elif is_ancestor(repo, journal, view):
        what = f"went back to an older commit ({journal[:12]})"
    else:
        what = f"was replaced by {journal[:12]}, which does not continue it"
    return _lost_message(remote, JOURNAL_REF, what, view, table.records[live[0]], len(live))


def _lost_shard(remote: RemoteStore, view: str, journal: str | None) -> str | None:
    """``lost_view`` for a sharded remote, or a view of one: each shard journal must
    continue the one the view names, or hold no live claim the view held there."""
    store = remote.journal_store
    if store.view_tips(journal) is None:  # no longer sharded (the format ref gone)
        if journal is not None and store.commit_of(journal) is None:
            return None  # no journal commit: every write stops on it already (5.5)
        live = _live(remote, remote.mirrored())
        if not live:
            return None
        return _lost_message(remote, FORMAT_REF, "has vanished", view, live[0], len(live))
    losses = shard_losses(remote, view, journal)
    if not losses:
        return None
    k, was, what, live = losses[0]
    return _lost_message(remote, f"{SHARD_PREFIX}{k}", what, was, live[0], len(live))


def shard_losses(
    remote: RemoteStore, view: str, journal: str | None
) -> list[tuple[int, str, str, list[LockRecord]]]:
    """(shard, the commit the view names for it, what happened, the live claims it held)
    for each shard journal that lost live claims since the view."""
    store = remote.journal_store
    before = store.view_tips(view)
    now = store.view_tips(journal) or {}
    old = before if before is not None else dict.fromkeys(now, view)
    # Laid out again in another count: every claim the view held is in the wrong shards
    # (refs beyond the count stated are one edited by hand: check_format names those).
    relaid = (
        before is not None
        and len(now) != len(before)
        and not remote.beyond(remote.staged_meta(), remote.staging + "meta/shards/", len(now))
    )
    found = []
    for k in sorted(old):
        was, tip = old[k], now.get(k)
        if was is None or (tip == was and not relaid):
            continue
        if (
            not relaid
            and tip is not None
            and store.commit_of(tip) is not None
            and _continues(remote, tip, was)
        ):
            continue  # a write since (the common case): no claim of it need be read whole
        live = [
            r
            for r in _live(remote, store.table(was) or {})
            if k in record_shards(r.paths, len(old))
        ]
        if not live:
            continue
        if relaid:
            what = f"belongs to a table laid out again in {len(now)} shards (it was {len(old)})"
        elif tip is None:
            what = "has vanished"
        elif store.commit_of(tip) is None:
            # Every write stops on it (5.5), but its table is gone from every read too.
            what = f"was moved onto {tip[:12]}, which is no gitlocks journal commit"
        elif _continues(remote, tip, was) or (
            {r.id for r in live} <= (store.table(tip) or {}).keys()
        ):
            continue  # all still held (by id: a renewal changes a blob), on whatever chain
        elif is_ancestor(remote.repo, tip, was):
            what = f"went back to an older commit ({tip[:12]})"
        else:
            what = f"was replaced by {tip[:12]}, which does not continue it"
        found.append((k, was, what, live))
    return found


def _lost_message(
    remote: RemoteStore, ref: str, what: str, view: str, first: LockRecord, live: int
) -> str:
    """What a ``ref`` that lost ``live`` claims (``first`` among them) since ``view`` says."""
    put_back = ""
    if ref == JOURNAL_REF:
        ref = f"the journal {JOURNAL_REF}"
        put_back = "git alock remote --restore puts this clone's last view back on the remote; "
    elif ref.startswith(SHARD_PREFIX):
        put_back = "git alock remote --restore puts this clone's last view of that shard back; "
    elif ref == FORMAT_REF and not remote.scan_refs((remote.staging + "meta/shards/",)):
        put_back = "git alock remote --restore puts this clone's last view of every shard back; "
    return (
        f"{ref} on the lock remote {remote.remote!r} {what} since this clone last saw it at "
        f"{view[:12]}, while {live} live claim(s) stood there (e.g. "
        f"{' '.join(first.paths)} held by {first.holder}); nothing was changed here. Plain "
        f"git on the remote (a push --mirror or --force) does this; {put_back}git alock "
        f"remote --off --forget, then git alock remote {remote.remote}, accepts the remote as "
        "it is now"
    )


def is_ancestor(repo: pygit2.Repository, older: str, newer: str) -> bool:
    import pygit2  # only when a journal moved unexpectedly: a write's usual path never asks

    try:
        return bool(repo.descendant_of(newer, older))
    except (ValueError, KeyError, pygit2.GitError):
        return False
