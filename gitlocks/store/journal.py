"""Journal commits in the object store: each one the events of a write and the whole table,
its tree a ``format`` marker blob and ``locks/<xx>/<id>`` (docs/design.md, section 4.4).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timezone

from gitlocks.core import journal
from gitlocks.core.journal import TABLE_MARKER, VIEW_EVENT, shard_of
from gitlocks.core.record import is_lock_id, lock_ids_only
from gitlocks.core.text import is_digits
from gitlocks.core.value import Value
from gitlocks.errors import StoreError
from gitlocks.git import cache, pruned
from gitlocks.git.objects import BLOB_MODES, MODE_BLOB, MODE_TREE, Commit, Entry, Objects
from gitlocks.git.run import Env, finish, start
from gitlocks.layout import JOURNAL_REF

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any

VIEW_CHAIN = 2000  # local view commits in one chain
SHARD_EVENTS = 200  # shard journal commits a view reads back, per shard
SHARD_EVENTS_FIRST = 20  # ... for a clone's first view
# Locks from which the shards of the last table tree written are kept (docs/design.md 4.4).
TREE_CACHE_AFTER = 1000

__all__ = ["TABLE_MARKER", "VIEW_EVENT", "Journal", "JournalEntry", "is_journal_commit", "shard_of"]


class JournalEntry(Value):
    __slots__ = ("commit", "events")

    def __init__(
        self,
        commit: str,
        events: tuple[dict[str, Any], ...],
    ) -> None:
        self.commit = commit
        self.events = events


def _is_table_tree(objects: Objects, tree: list[Entry]) -> bool:
    """A ``format`` marker blob, and at most a ``locks`` tree beside it."""
    names = {entry.name: entry for entry in tree}
    if "format" not in names or not names.keys() <= {"format", "locks"}:
        return False
    marker = objects.read(names["format"].id)
    if marker is None or marker != ("blob", TABLE_MARKER):
        return False
    return "locks" not in names or names["locks"].mode == MODE_TREE


def is_journal_commit(objects: Objects, commit: Commit) -> bool:
    """Whether ``commit`` is one of the journal's: an empty tree or a table tree, at most
    one parent, a ``Journal-Seq`` trailer (see ``gitlocks.core.journal``)."""
    tree = objects.tree(commit.tree)
    if tree is None:
        return False
    table = len(tree) == 0 or _is_table_tree(objects, tree)
    return table and journal.is_journal_commit(len(commit.parent_ids), 0, commit.message)


class Journal:
    """Writes and reads journal commits in the object database ``objects``."""

    def __init__(self, objects: Objects, config_get: Callable[[str], str | None]) -> None:
        self.objects = objects
        self.config_get = config_get
        self._marker: str | None = None
        self._tables: dict[str | None, dict[str, str] | None] = {}
        self._common_dir = os.path.dirname(objects.directory)  # where the cache is

    def commit_of(self, oid: str | None) -> Commit | None:
        """The journal commit ``oid`` names, or None (absent, or not a journal commit)."""
        commit = self.objects.commit(oid)
        return commit if commit is not None and is_journal_commit(self.objects, commit) else None

    def head(self, oid: str | None) -> Commit | None:
        """The journal commit ``oid``, for the next one to follow; None for no journal, or a
        ref moved onto a commit of another kind (a fresh chain). A journal commit or table
        the object store lacks is an error, never a fresh chain (docs/design.md 4.6)."""
        found = self.commit_of(oid)
        if found is not None or oid is None:
            return found
        if pruned.put_back(self.objects.directory):  # what a prune took, kept: read again
            self._tables.clear()
            found = self.commit_of(oid)
            if found is not None:
                return found
        commit = self.objects.commit(oid)
        if commit is not None:
            if not journal.is_journal_commit(len(commit.parent_ids), 0, commit.message):
                return None  # not the journal's
            tree = self.objects.tree(commit.tree)
            if tree is not None and all(self.objects.read(e.id) for e in tree):
                return None  # the journal's shape, not its table: no journal commit
        elif self.objects.read(oid) is not None:
            return None  # no commit at all
        raise StoreError(
            f"the journal ({JOURNAL_REF}) names {oid}, and the object store lacks it or its "
            "table (did git gc --prune=now run beside a write?); a new journal would drop "
            f"its history, so nothing is written. To start one (the locks are kept): git "
            f"update-ref -d {JOURNAL_REF}"
        )

    def holds(self, tip: str | None, commit: str) -> bool:
        """Whether journal commit ``tip`` (None: none) is ``commit`` or was written on it."""
        if tip is None or tip == commit:
            return tip is not None
        proc = start(
            ["--git-dir", self.objects.git_dir, "merge-base", "--is-ancestor", commit, tip],
            env=Env.CLEAN,
            error=StoreError,
        )
        finish(proc, ok=(0, 1, 128), error=StoreError)  # 128: no such commit here
        return proc.returncode == 0

    def table(self, oid: str | None) -> dict[str, str] | None:
        """The table (lock id -> blob id) a journal commit carries, kept per commit; None
        when it carries none (no such commit, or one written before commits held it)."""
        if oid not in self._tables:
            self._tables[oid] = self._read_table(oid)
        found = self._tables[oid]
        return None if found is None else dict(found)

    def _read_table(self, oid: str | None) -> dict[str, str] | None:
        commit = self.commit_of(oid)
        tree = self.objects.tree(commit.tree) if commit is not None else None
        if not tree:
            return None
        # A journal commit's tree, not empty: a table tree (``is_journal_commit``).
        entry = next((e for e in tree if e.name == "locks"), None)
        locks = self.objects.tree(entry.id) if entry is not None else None
        if locks is None:
            return {}
        # Only names a lock ref can have, in the subtree of their hash: any other is no lock.
        found: dict[str, str] = {}
        shards = [e for e in locks if e.mode == MODE_TREE]
        if len(shards) > 16:
            # A subtree whose members were kept here is not read again (docs/design.md 4.4).
            kept = self._kept()
            if kept is not None:
                members, subtrees = kept[1], kept[2]
                for e in shards:
                    if subtrees.get(e.name) == e.id:
                        found.update(members[e.name])
                shards = [e for e in shards if subtrees.get(e.name) != e.id]
        read = self.objects.read_many(e.id for e in shards)
        for shard in shards:
            found_tree = read.get(shard.id)
            if found_tree is None or found_tree[0] != "tree":
                continue
            for e in self.objects.parse_tree(found_tree[1]):
                name = e.name
                if e.mode in BLOB_MODES and is_lock_id(name) and shard_of(name) == shard.name:
                    found[name] = e.id
        return found

    def write(
        self, parent: str | None, events: list[dict[str, Any]], refs: Mapping[str, str]
    ) -> str:
        """The next journal commit on ``parent``, its tree the table ``refs`` (lock id ->
        blob id); on a long chain, on a compacted root."""
        when = int(time.time())
        head = self.head(parent)
        seq = 1
        if head is None:
            parent = None  # no journal, or a ref moved onto another commit: start afresh
        else:
            seq = journal.parse_seq(head.message) + 1
            policy = journal.KeepPolicy.from_config(self.config_get)
            if policy.due(seq - 1) and parent is not None:
                root = self._compact(parent, policy, when, head.tree)
                if root != parent:
                    parent, seq = root, 2
        tree = self.tree(head, refs)
        text = journal.message(events, seq)
        commit = self.objects.write_commit(tree, [parent] if parent else [], text, when)
        # The table it carries is the one just written: no need to read it back.
        self._tables[commit] = lock_ids_only(refs)
        return commit

    def view(
        self,
        tips: Mapping[int, str | None],
        refs: Mapping[str, str],
        parent: str | None,
        events: list[dict[str, Any]],
    ) -> str:
        """The view commit of a sharded table (written here only, never pushed): its tree the
        union ``refs`` of the shard tables at ``tips``, its first event naming the tips, the
        others the shard journals' ``events`` since ``parent``, the previous view. Past
        ``VIEW_CHAIN`` views a new chain starts."""
        marker = {"event": VIEW_EVENT, "shards": {str(k): tips[k] or "" for k in sorted(tips)}}
        head = self.commit_of(parent)
        seq = journal.parse_seq(head.message) + 1 if head is not None else 1
        if head is None or seq > VIEW_CHAIN:
            parent, seq = None, 1
        text = journal.message([marker, *events], seq)
        tree = self.tree(None, refs)
        commit = self.objects.write_commit(tree, [parent] if parent else [], text, int(time.time()))
        self._tables[commit] = lock_ids_only(refs)
        return commit

    def view_tips(self, oid: str | None) -> dict[int, str | None] | None:
        """The shard tips a view commit names; None for any other commit."""
        commit = self.commit_of(oid)
        if commit is None:
            return None
        events = journal.parse_events(commit.message)
        if not events or events[0].get("event") != VIEW_EVENT:
            return None
        named = events[0].get("shards")
        if not isinstance(named, dict):
            return None
        tips: dict[int, str | None] = {}
        for key, value in named.items():
            if not (isinstance(key, str) and is_digits(key) and isinstance(value, str)):
                return None
            tips[int(key)] = value or None
        return tips

    def shard_events(
        self, tips: Mapping[int, str | None], since: Mapping[int, str | None], stop: str | None
    ) -> list[dict[str, Any]]:
        """The events of the shard journals at ``tips`` written after ``since`` (shard ->
        the tip last seen; or, for every shard, ``stop``), oldest first, each once, bounded
        per shard."""
        seen: set[str] = set()
        found: list[tuple[str, int, dict[str, Any]]] = []
        for k in sorted(tips):
            known = {since.get(k), stop} - {None}
            limit = SHARD_EVENTS if known else SHARD_EVENTS_FIRST
            for entry in self.walk(tips[k], limit):
                if entry.commit in known:
                    break
                if entry.events and entry.events[0].get("event") == journal.COMPACTED:
                    break  # a compacted root repeats events already told
                for n, event in enumerate(entry.events):
                    key = json.dumps(event, sort_keys=True)
                    if key not in seen:
                        seen.add(key)
                        found.append((str(event.get("at", "")), n, event))
        found.sort(key=lambda item: (item[0], item[1]))
        return [event for _, _, event in found]

    def tree(self, base: Commit | None, refs: Mapping[str, str]) -> str:
        """A table tree holding ``refs``; in a large table only the subtrees that differ
        from ``base``'s (the parent's) are hashed again (``_from_base``)."""
        built = None
        if len(refs) >= TREE_CACHE_AFTER:
            try:  # a file's junk
                built = self._from_base(base, refs)
            except (TypeError, ValueError, AttributeError):
                pass
        if built is None:
            shards: dict[str, dict[str, str]] = {}
            match = is_lock_id
            for lock_id, oid in refs.items():
                if match(lock_id):
                    shards.setdefault(shard_of(lock_id), {})[lock_id] = oid
            subtrees = {shard: self._subtree(members) for shard, members in shards.items()}
        else:
            shards, subtrees = built
        objects = self.objects
        if self._marker is None:
            self._marker = objects.write_blob(TABLE_MARKER)
        root = [Entry(MODE_BLOB, "format", self._marker)]
        if shards:
            top = [Entry(MODE_TREE, shard, subtrees[shard]) for shard in sorted(shards)]
            locks = objects.write_tree(top)
            root.append(Entry(MODE_TREE, "locks", locks))
            if len(refs) >= TREE_CACHE_AFTER and base is not None:  # not for a view
                cache.keep_shards(self._common_dir, locks, shards, subtrees)
        return objects.write_tree(root)

    def _subtree(self, members: Mapping[str, str]) -> str:
        """The tree of one shard: blobs whose names hold no "/" (git's order is theirs)."""
        raw = b"".join(
            b"100644 %s\0%s" % (lock_id.encode(), bytes.fromhex(members[lock_id]))
            for lock_id in sorted(members)
        )
        return self.objects.write("tree", raw)

    def _from_base(
        self, base: Commit | None, refs: Mapping[str, str]
    ) -> tuple[dict[str, dict[str, str]], dict[str, str]] | None:
        """The shards of ``refs`` (shard -> lock id -> blob) and their subtree ids, from
        ``base``'s kept shards: only those where the two tables differ are built again.
        None when ``base``'s shards are not kept."""
        kept = self._kept_shards(base)
        if kept is None:
            return None
        shards, subtrees = kept
        table: dict[str, str] = {}
        for members in shards.values():
            table.update(members)
        changed = {lock_id for lock_id, _ in refs.items() ^ table.items()}
        match = is_lock_id
        touched: dict[str, dict[str, str]] = {}
        for lock_id in changed:
            if lock_id in table or match(lock_id):
                shard = shard_of(lock_id)
                if shard not in touched:
                    touched[shard] = dict(shards.get(shard, {}))
                if lock_id in refs and match(lock_id):
                    touched[shard][lock_id] = refs[lock_id]
                else:
                    touched[shard].pop(lock_id, None)
        shards, subtrees = dict(shards), dict(subtrees)
        for shard, members in touched.items():
            if members:
                shards[shard], subtrees[shard] = members, self._subtree(members)
            else:
                shards.pop(shard, None)
                subtrees.pop(shard, None)
        return shards, subtrees

    def _kept_shards(
        self, base: Commit | None
    ) -> tuple[dict[str, dict[str, str]], dict[str, str]] | None:
        """The kept shards and subtree ids of ``base``'s ``locks`` tree, or None."""
        if base is None:
            return None
        root = self.objects.tree(base.tree)
        locks = next((e.id for e in root or () if e.name == "locks" and e.mode == MODE_TREE), None)
        kept = self._kept() if locks is not None else None
        if kept is None or kept[0] != locks:
            return None
        return kept[1], kept[2]

    def _kept(self) -> cache.Shards | None:
        """The kept ``locks`` tree id, shards and subtree ids, or None when none is kept or
        its subtree ids do not make that tree."""
        kept = cache.shards(self._common_dir)
        if kept is None:
            return None
        locks, _, subtrees = kept
        try:
            raw = b"".join(
                b"40000 %s\0%s" % (shard.encode(), bytes.fromhex(subtrees[shard]))
                for shard in sorted(subtrees)
            )
            if self.objects.hash("tree", raw) != locks:
                return None  # the subtree ids are not the tree's
        except (TypeError, ValueError):
            return None
        return kept

    def _compact(self, tip: str, policy: journal.KeepPolicy, when: int, tree: str) -> str:
        """A new root commit holding the events ``policy`` keeps from the chain at ``tip``;
        ``tip`` itself when nothing would be dropped."""
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
        return self.objects.write_commit(tree, [], message, when)

    def walk(self, start: str | None, limit: int | None = None) -> Iterator[JournalEntry]:
        """Journal entries (commits), newest first, from ``start``: the chain is linear, so
        it is followed by hand (a sorted revwalk reads it all before the first entry)."""
        commit = self.commit_of(start)
        count = 0
        while commit is not None and (limit is None or count < limit):
            yield JournalEntry(commit.id, tuple(journal.parse_events(commit.message)))
            count += 1
            parents = commit.parent_ids
            # Absent, or not a journal commit: the journal ends here.
            commit = self.commit_of(parents[0]) if parents else None
