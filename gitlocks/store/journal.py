"""Journal commits in the object store: each one the events of a write and the whole table.

Every write moves the journal ref to a new commit (its message: ``gitlocks.core.journal``)
whose tree is the lock table after the write: a ``format`` marker blob and
``locks/<xx>/<id>`` (``xx`` from a hash of the id), the same blob as
``refs/agent-locks/<id>``. So one ref read gives a
consistent table (docs/design.md, sections 4.4 and 5.4): a remote's lock refs can be seen
half-updated by a concurrent fetch, its journal commit cannot. Trees are built from the
parent's tree, touching only what changed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timezone
from typing import Any, NamedTuple

import pygit2

from gitlocks.core import journal
from gitlocks.core.journal import TABLE_MARKER, shard_of
from gitlocks.core.record import LOCK_ID_RE

__all__ = ["TABLE_MARKER", "Journal", "JournalEntry", "is_journal_commit", "shard_of"]
_SIGNATURE = ("gitlocks", "gitlocks@localhost")
_BLOB_MODES = (pygit2.GIT_FILEMODE_BLOB, pygit2.GIT_FILEMODE_BLOB_EXECUTABLE)


class JournalEntry(NamedTuple):
    commit: str
    events: tuple[dict[str, Any], ...]


def _is_table_tree(tree: pygit2.Tree) -> bool:
    """A ``format`` marker blob, and at most a ``locks`` tree beside it."""
    names = {entry.name for entry in tree}
    if "format" not in names or not names <= {"format", "locks"}:
        return False
    marker = tree["format"]
    if not isinstance(marker, pygit2.Blob) or marker.data != TABLE_MARKER:
        return False
    return "locks" not in names or isinstance(tree["locks"], pygit2.Tree)


def _locks_tree(tree: pygit2.Tree) -> pygit2.Tree | None:
    """The ``locks`` tree of a table tree; None for an empty table or no table."""
    if not _is_table_tree(tree) or "locks" not in tree:
        return None
    locks = tree["locks"]
    return locks if isinstance(locks, pygit2.Tree) else None


def is_journal_commit(commit: pygit2.Commit) -> bool:
    """Whether ``commit`` is one of the journal's: an empty tree or a table tree, at most
    one parent, a ``Journal-Seq`` trailer (see ``gitlocks.core.journal``)."""
    try:
        tree = commit.tree
        table = len(tree) == 0 or _is_table_tree(tree)
        return table and journal.is_journal_commit(len(commit.parent_ids), 0, commit.message)
    except (KeyError, ValueError, AttributeError, pygit2.GitError):
        return False


class Journal:
    """Writes and reads journal commits in ``repo``."""

    def __init__(self, repo: pygit2.Repository, config_get: Callable[[str], str | None]) -> None:
        self.repo = repo
        self.config_get = config_get
        self._marker: pygit2.Oid | None = None
        self._tables: dict[str | None, dict[str, str] | None] = {}

    def commit_of(self, oid: str | None) -> pygit2.Commit | None:
        """The journal commit ``oid`` names, or None (absent, or not a journal commit)."""
        if oid is None:
            return None
        try:
            commit = self.repo.get(oid)
        except (ValueError, pygit2.GitError):
            return None
        return commit if isinstance(commit, pygit2.Commit) and is_journal_commit(commit) else None

    def descends(self, later: str, earlier: str) -> bool:
        """Whether journal commit ``later`` was written on top of ``earlier``."""
        try:
            return bool(self.repo.descendant_of(later, earlier))
        except (ValueError, pygit2.GitError):
            return False

    def table(self, oid: str | None) -> dict[str, str] | None:
        """The table (lock id -> blob id) a journal commit carries; None when it carries
        none (no such commit, or one written before journal commits held the table).

        Kept per commit: a commit never changes, and one command asks about a few often.
        """
        if oid not in self._tables:
            self._tables[oid] = self._read_table(oid)
        found = self._tables[oid]
        return None if found is None else dict(found)

    def _read_table(self, oid: str | None) -> dict[str, str] | None:
        """The table (lock id -> blob id) a journal commit carries; None when it carries
        none (no such commit, or one written before journal commits held the table)."""
        commit = self.commit_of(oid)
        if commit is None or len(commit.tree) == 0:
            return None
        locks = _locks_tree(commit.tree)
        if locks is None:
            return {}
        # Only names a lock ref can have, in the subtree of their hash: any other entry
        # (written by hand, or by a hostile remote) is no lock, and no name we would ever
        # write a ref under.
        found: dict[str, str] = {}
        for shard in locks:
            subtree = (
                self.repo.get(shard.id) if shard.filemode == pygit2.GIT_FILEMODE_TREE else None
            )
            if not isinstance(subtree, pygit2.Tree):
                continue
            for e in subtree:
                name = str(e.name)
                if (
                    e.filemode in _BLOB_MODES
                    and LOCK_ID_RE.match(name)
                    and shard_of(name) == shard.name
                ):
                    found[name] = str(e.id)
        return found

    def write(
        self, parent: str | None, events: list[dict[str, Any]], refs: Mapping[str, str]
    ) -> pygit2.Oid:
        """The next journal commit on ``parent``, its tree the table ``refs`` (lock id ->
        blob id); on a long chain, on a compacted root."""
        sig = pygit2.Signature(*_SIGNATURE, int(time.time()), 0)
        head = self.commit_of(parent)
        seq = 1
        if head is None:
            parent = None  # no journal, or a ref pointing somewhere odd: start afresh
        else:
            seq = journal.parse_seq(head.message) + 1
            policy = journal.KeepPolicy.from_config(self.config_get)
            if policy.due(seq - 1) and parent is not None:
                root = self._compact(parent, policy, sig, head.tree.id)
                if root != parent:
                    parent, seq = root, 2
        tree = self.tree(head, refs)
        parents: list[pygit2.Oid] = [pygit2.Oid(hex=parent)] if parent else []
        text = journal.message(events, seq)
        commit = self.repo.create_commit(None, sig, sig, text, tree, parents)
        # The table it carries is the one just written: no need to read it back.
        self._tables[str(commit)] = {i: oid for i, oid in refs.items() if LOCK_ID_RE.match(i)}
        return commit

    def tree(self, base: pygit2.Commit | None, refs: Mapping[str, str]) -> pygit2.Oid:
        """A table tree holding ``refs``, built from ``base``'s table where there is one.

        Locks sit in 256 subtrees by a hash of their id (``locks/<xx>/<id>``), so a write
        stores and sends a few small trees, not one that grows with the table.
        """
        repo = self.repo
        old = _locks_tree(base.tree) if base is not None else None
        old_shards = (
            {str(e.name): e for e in old if e.filemode == pygit2.GIT_FILEMODE_TREE}
            if old is not None
            else {}
        )
        wanted: dict[str, dict[str, str]] = {}
        for lock_id, oid in refs.items():
            if LOCK_ID_RE.match(lock_id):
                wanted.setdefault(shard_of(lock_id), {})[lock_id] = oid
        top = repo.TreeBuilder()
        for shard in sorted(old_shards.keys() | wanted.keys()):
            entries = wanted.get(shard)
            if not entries:
                continue
            before = old_shards.get(shard)
            subtree = repo[before.id] if before is not None else None
            if isinstance(subtree, pygit2.Tree):
                had = {str(e.name): str(e.id) for e in subtree}
                if had == entries:
                    top.insert(shard, subtree.id, pygit2.GIT_FILEMODE_TREE)
                    continue
            builder = repo.TreeBuilder()
            for lock_id, oid in sorted(entries.items()):
                builder.insert(lock_id, pygit2.Oid(hex=oid), pygit2.GIT_FILEMODE_BLOB)
            top.insert(shard, builder.write(), pygit2.GIT_FILEMODE_TREE)
        if self._marker is None:
            self._marker = repo.create_blob(TABLE_MARKER)
        root = repo.TreeBuilder()
        root.insert("format", self._marker, pygit2.GIT_FILEMODE_BLOB)
        if wanted:
            root.insert("locks", top.write(), pygit2.GIT_FILEMODE_TREE)
        return root.write()

    def _compact(
        self, tip: str, policy: journal.KeepPolicy, sig: pygit2.Signature, tree: pygit2.Oid
    ) -> str:
        """A new root commit holding the events ``policy`` keeps from the chain at ``tip``.

        Returns ``tip`` itself when nothing would be dropped (an age policy on a busy day).
        """
        newest_first = (
            e
            for entry in self.walk(tip)
            for e in reversed(entry.events)
            if e.get("event") != journal.COMPACTED
        )
        kept, dropped = policy.retain(newest_first, datetime.now(timezone.utc))
        if not dropped:
            return tip
        marker = journal.compaction_marker(datetime.now(timezone.utc), len(kept), tip)
        message = journal.message([marker, *kept], 1)
        return str(self.repo.create_commit(None, sig, sig, message, tree, []))

    def walk(self, start: str | None, limit: int | None = None) -> Iterator[JournalEntry]:
        """Journal entries (commits), newest first, from ``start``.

        The chain is linear (each journal commit has at most one parent), so it is followed
        by hand: a sorted revwalk would read the whole history before the first entry.
        """
        commit = self.commit_of(start)
        count = 0
        while commit is not None and (limit is None or count < limit):
            yield JournalEntry(str(commit.id), tuple(journal.parse_events(commit.message)))
            count += 1
            parents = commit.parent_ids
            try:
                nxt = self.repo[parents[0]] if parents else None
            except KeyError:
                return  # a shallow or pruned history: the journal ends here
            commit = (
                nxt if isinstance(nxt, pygit2.Commit) and is_journal_commit(nxt) else None
            )  # never wander into project history
