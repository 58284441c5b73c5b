"""A sharded lock remote (docs/design.md, section 5.10): the table kept in shard journals
``refs/agent-locks-meta/shards/<k>`` (``refs/agent-locks-meta/format`` states the count),
so that writes whose scopes cannot overlap lease no common ref. A record is held in every
shard its claim can touch; locally the union of the shard tables is one view commit
(``Journal.view``), and a write leases exactly the shards its change touches.
"""

from __future__ import annotations

from collections.abc import Iterable

from gitlocks.core.change import Change, check_sizes
from gitlocks.core.record import format_time, is_lock_id, utcnow
from gitlocks.core.shard import parse_format, record_shards
from gitlocks.errors import RemoteError
from gitlocks.layout import FORMAT_REF, JOURNAL_REF, MAX_SHARDS, SHARD_PREFIX
from gitlocks.store.push import RemotePush, RemoteTable

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any


class ShardedPush(RemotePush):
    """Reading and writing a sharded remote (``RemoteStore`` decides and retries)."""

    # Refs under refs/agent-locks-meta/ as the last ls-remote listed them (sharded only).
    listed_meta: dict[str, str]
    _views: dict[tuple[tuple[int, str | None], ...], str]
    _format_read: tuple[str, int] | None = None  # (format blob, the count it states)

    def staged_meta(self) -> dict[str, str]:
        """Staging's refs under ``meta/`` by name: one listing, kept while the staged table
        is (until staging moves or the mutex is taken or dropped)."""
        if self._meta_cache is None:
            self._meta_cache = self.scan_refs((self.staging + "meta/",))
        return self._meta_cache

    def shard_count(self) -> int | None:
        """The shard count staging's format ref states: None for a remote with one
        journal, 0 for a format ref that states none this version reads."""
        oid = self.staged_meta().get(self.staging + "meta/format")
        if oid is None:
            return None
        if self._format_read is None or self._format_read[0] != oid:
            found = self.journal_store.objects.read(oid)
            count = 0 if found is None or found[0] != "blob" else parse_format(found[1], MAX_SHARDS)
            self._format_read = (oid, count or 0)
        return self._format_read[1]

    def check_format(self) -> None:
        """Before a write: a format ref this version cannot read stops it."""
        if self.shard_count() == 0:
            raise RemoteError(
                f"refs/agent-locks-meta/format on the lock remote {self.remote!r} states no "
                f"shard count this gitlocks reads (1 to {MAX_SHARDS}): a newer gitlocks wrote "
                "it, or it was edited by hand; nothing was changed. Upgrade gitlocks"
            )
        count = self.shard_count()
        if count:
            # The single journal ref must hold the notice (no journal commit), or an earlier
            # gitlocks could grant claims beside the shards.
            journal = self.staged_journal()
            if journal is None or self.journal_store.commit_of(journal) is not None:
                where = "is gone" if journal is None else f"holds the journal commit {journal[:12]}"
                raise RemoteError(
                    f"the lock remote {self.remote!r} is sharded, but its {JOURNAL_REF} {where} "
                    "instead of the notice that stops earlier versions of gitlocks, which would "
                    "now decide on that journal and grant claims the shards hold; nothing was "
                    f"changed. Put a commit that is no journal commit back at {JOURNAL_REF} on "
                    "the remote itself (the notice git alock remote --shards wrote), then write "
                    "again"
                )
            prefix = self.staging + "meta/shards/"
            beyond = self.beyond(self.staged_meta(), prefix, count)
            if beyond:
                raise RemoteError(
                    f"the lock remote {self.remote!r} holds {SHARD_PREFIX}{beyond[0]}, beyond "
                    f"the {count} shards its {FORMAT_REF} states: one of them was changed by "
                    "hand, and claims held there are read by nobody; nothing was changed. Put "
                    "it right on the remote itself"
                )

    @staticmethod
    def beyond(names: Iterable[str], prefix: str, count: int) -> list[str]:
        """The shard names among ``names`` (refs under ``prefix``) that are no shard of
        ``count``."""
        shards = {str(k) for k in range(count)}
        found = (n[len(prefix) :] for n in names if n.startswith(prefix))
        return sorted(n for n in found if n not in shards)

    def staged_tips(self, count: int) -> dict[int, str | None]:
        """Shard -> its journal commit as last fetched or pushed (None: absent)."""
        prefix = self.staging + "meta/shards/"
        found = self.staged_meta()
        return {k: found.get(f"{prefix}{k}") for k in range(count)}

    def view_of(
        self,
        tips: dict[int, str | None],
        union: dict[str, str],
        events: list[dict[str, Any]] | None = None,
    ) -> str:
        """The view commit of the shards at ``tips``: the view ref's own when it names
        them, else a new one on it carrying ``events`` (by default the shard journals'
        events since it)."""
        key = tuple(sorted(tips.items()))
        if key not in self._views:
            previous = self.view_journal()
            store = self.journal_store
            if store.view_tips(previous) == tips:
                self._views[key] = str(previous)
            else:
                if events is None:
                    since = store.view_tips(previous) or {}
                    events = store.shard_events(tips, since, previous)
                self._views[key] = store.view(tips, union, previous, events)
        return self._views[key]

    def union(self, tips: dict[int, str | None]) -> dict[str, str]:
        tables = self.shard_tables(tips)
        return {i: v for k in sorted(tables) for i, v in tables[k].items()}

    def shard_tables(self, tips: dict[int, str | None]) -> dict[int, dict[str, str]]:
        return {k: self.journal_store.table(tip) or {} for k, tip in tips.items()}

    def tips_listed(self, table: RemoteTable) -> bool:
        """Whether the last ls-remote found every shard where ``table`` was read (a lock ref
        no shard table holds was then pushed by hand)."""
        return all(
            self.listed_meta.get(f"{SHARD_PREFIX}{k}") == tip for k, tip in table.shards.items()
        )

    def readable(self, table: RemoteTable) -> bool:
        """Whether every shard holds a journal commit (else a lock ref that shard alone
        holds would read as pushed by hand)."""
        return all(self.journal_store.commit_of(t) for t in table.shards.values())

    def repairable(self, table: RemoteTable) -> list[str]:
        """On a sharded remote a lock ref no shard holds is deleted only where every shard
        is as listed and readable."""
        found = super().repairable(table)
        if not table.shards or (self.tips_listed(table) and self.readable(table)):
            return found
        return [i for i in found if i in table.refs]

    @staticmethod
    def repair_shards(table: RemoteTable, ids: list[str]) -> frozenset[int]:
        """The shards holding the lock refs ``ids``: a follow-up leases them."""
        return frozenset(k for k, held in table.held.items() if held.keys() & set(ids))

    def leased_shards(self, table: RemoteTable, change: Change) -> set[int]:
        """The shards ``change`` must lease: every shard of a record it puts, and every
        shard holding a record it replaces or deletes."""
        count = len(table.shards)
        touched = {*change.delete, *(r.id for r in change.put)}
        leased = {k for k, held in table.held.items() if touched & held.keys()}
        for record in change.put:
            leased |= record_shards(record.paths, count)
        # A change no shard holds (a lock ref pushed by hand, deleted) is journaled in shard 0.
        return leased or {0}

    @staticmethod
    def holders_shards(table: RemoteTable, change: Change, leased: Iterable[int]) -> list[int]:
        """Shards a write leases as they stand (pushed unchanged) so that its holders learn
        of claims plain git took from the remote: for each live claim of a holder whose
        records ``change`` puts or deletes, held in no shard the write leases, the first
        shard holding it (docs/design.md 5.10)."""
        cutoff = table.cutoff(format_time(utcnow()))
        summaries = table.summaries
        holders = {r.holder for r in change.put}
        for lock_id in change.delete:
            summary = summaries.get(lock_id)
            if summary is not None and summary.expires_at > cutoff:
                holders.add(summary.holder)
        ids: set[str] = set()
        for holder in holders:
            ids |= summaries.held_by(holder)
        mine = {i for i in ids if (s := summaries.get(i)) is not None and s.expires_at > cutoff}
        if not mine:
            return []
        where: dict[str, list[int]] = {}
        for k, held in sorted(table.held.items()):
            if table.shards.get(k) is not None:
                for lock_id in mine.intersection(held):
                    where.setdefault(lock_id, []).append(k)
        covered = set(leased)
        steady = []
        for shards in where.values():
            if covered.isdisjoint(shards):
                covered.add(shards[0])
                steady.append(shards[0])
        return sorted(steady)

    def _push_sharded(
        self, table: RemoteTable, change: Change, also: frozenset[int] = frozenset()
    ) -> bool:
        """``_push`` for a sharded remote: a lease per shard it touches, and on the shards
        ``also`` (a follow-up's, whose lock refs it puts right)."""
        self._rejected = None
        check_sizes(change)
        count = len(table.shards)
        blobs = {r.id: self.objects.write_blob(r.to_json()) for r in change.put}
        wants = {r.id: record_shards(r.paths, count) for r in change.put}
        touched = {*change.delete, *blobs}
        leased = sorted(self.leased_shards(table, change) | also)
        new_held: dict[int, dict[str, str]] = {}
        for k in leased:
            held = {i: v for i, v in table.held[k].items() if i not in touched}
            held.update({i: blobs[i] for i, where in wants.items() if k in where})
            new_held[k] = held
        new = {i: v for i, v in table.refs.items() if i not in touched}
        new.update(blobs)
        # Only the lock refs of the leased shards: another's table may be older here.
        ids = {i for k in leased for i in (*table.held[k], *new_held[k])}
        ids |= touched - table.refs.keys()  # named by the change, held by no shard
        # Shards leased as they are, pushed unchanged: those holding the writer's other claims.
        steady = self.holders_shards(table, change, leased)
        if self.lease_override is not None and self.tips_listed(table) and self.readable(table):
            ids |= table.leases.keys() - table.refs.keys()  # pushed by hand: deleted
            # A listing is no snapshot: every shard is leased as listed, so a write landing
            # within it fails this push instead of losing its lock ref here.
            steady = [k for k in range(count) if k not in leased and table.shards[k]]
        differ = [i for i in sorted(ids) if table.leases.get(i) != new.get(i) and is_lock_id(i)]
        for k in leased:
            self._check_shard(k, table.shards[k])
            if table.shards[k] is None:
                raise RemoteError(
                    f"the shard journal {SHARD_PREFIX}{k} is missing on the lock remote "
                    f"{self.remote!r} (deleted by hand?), so the claims it held are unknown "
                    "here; nothing was changed. git alock remote --restore, from a clone "
                    "that saw them, puts it back"
                )
        if self.lease_override is not None:
            self.check_symrefs()  # leases as the remote listed them (section 5.5)
        commits = {
            k: str(self.journal_store.write(table.shards[k], change.events, new_held[k]))
            for k in leased
        }
        leases = [f"--force-with-lease={SHARD_PREFIX}{k}:{table.shards[k] or ''}" for k in leased]
        specs = [f"{commits[k]}:{SHARD_PREFIX}{k}" for k in leased]
        leases += [f"--force-with-lease={SHARD_PREFIX}{k}:{table.shards[k]}" for k in steady]
        specs += [f"{table.shards[k]}:{SHARD_PREFIX}{k}" for k in steady]
        self.lock_ref_specs(table, new, differ, touched, leases, specs)
        notice = self.staged_journal()
        if notice is not None:
            # The notice leased as it is: a journal moved back by hand fails this push.
            leases.append(f"--force-with-lease={JOURNAL_REF}:{notice}")
            specs.append(f"{notice}:{JOURNAL_REF}")

        def landed() -> bool | None:
            now = self.staged_tips(count)
            first = leased[0]
            mine = commits[first]
            if self.journal_store.holds(now[first], mine):
                return True
            return None if all(now[k] == table.shards[k] for k in leased) else False

        def mirrored() -> tuple[str, dict[str, str]]:
            view = self.view_of({**table.shards, **commits}, new, change.events)
            return view, {f"{self.staging}meta/shards/{k}": commits[k] for k in leased}

        return self._send(
            table,
            new,
            (leases, specs),
            ({f"{SHARD_PREFIX}{k}" for k in leased}, "!="),  # the steady ones report "="
            mirrored,
            landed,
            lambda: self._moved({f"{SHARD_PREFIX}{k}": table.shards[k] for k in leased}),
        )

    def _check_shard(self, k: int, tip: str | None) -> None:
        """A shard ref holding anything but a journal commit is never written over."""
        if tip is None or self.journal_store.commit_of(tip) is not None:
            return
        raise RemoteError(
            f"the shard journal {SHARD_PREFIX}{k} on the lock remote {self.remote!r} holds "
            f"{tip[:12]}, which is not a gitlocks journal commit (moved by hand); nothing was "
            "changed. Put it right on the remote itself"
        )
