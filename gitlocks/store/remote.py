"""Remote mode: the lock table lives on a shared git remote, the authority for every clone.

A clone keeps staging (the remote's refs as last seen), the local view (mirrored, read
offline) and, after ``remote --off``, detached copies (docs/design.md, sections 5.1 and
5.6). Writers are optimistic: they decide on the last known remote table and push a
compare-and-swap (``gitlocks.store.push``); a lost race fetches and decides again, with
jittered backoff and bounded tries (5.2). An answer that changes nothing is confirmed by
a fetch before it is given.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gitlocks.core.change import Change
from gitlocks.core.journal import REPAIRED
from gitlocks.core.judging import Problem
from gitlocks.core.record import LockRecord, format_time, is_lock_id, utcnow
from gitlocks.core.table import Table
from gitlocks.core.text import ALNUM, NAME_CHARS, made_of
from gitlocks.errors import GitlocksError, RemoteError, UsageError
from gitlocks.git import pruned
from gitlocks.git.remote import failure
from gitlocks.git.settings import Settings
from gitlocks.layout import (
    DEFAULT_REMOTE_TIMEOUT_SECONDS,
    DEFAULT_SKEW_SECONDS,
    JOURNAL_REF,
    LOCK_PREFIX,
    MUTEX_TIMEOUT_SECONDS,
    SHARD_PREFIX,
    STAGING_PREFIX,
)
from gitlocks.store.listing import Listing
from gitlocks.store.mirror import read_sync_times, write_sync_times
from gitlocks.store.mutex import jitter
from gitlocks.store.push import RemoteTable
from gitlocks.store.sharded import ShardedPush

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import TypeVar

    import pygit2

    from gitlocks.store.location import Location

    T = TypeVar("T")

__all__ = ["RemoteStore", "RemoteTable", "read_sync_times", "write_sync_times"]

# A busy remote can make one writer lose many times in a row: retries are bounded by
# count and by time (alock.remoteTimeout), with a short jitter.
TRIES = 60
BACKOFF_CAP_SECONDS = 0.2
# Refused pushes in a row while the remote's journal stood still before a write gives up
# (lock refs moved beside it are leased again as listed; a cause that stays is named).
STILL_TRIES = 4


# Only our refspecs: --refmap= stops the remote's configured ones updating other refs.
FETCH = ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules",
         "--refmap="]  # fmt: skip
MAX_LANDING_BRANCHES = 8  # branches one sync fetches for claims waiting to land


class RemoteStore(ShardedPush):
    """A store whose writes are decided on ``alock.remote`` by compare-and-swap pushes."""

    def __init__(
        self,
        repo: Location | pygit2.Repository,
        remote: str | None = None,
        *,
        configured: Settings | None = None,
    ) -> None:
        super().__init__(repo, configured)
        name = remote if remote is not None else self.config_get("alock.remote")
        if not name:
            raise UsageError("no lock remote: set one with git alock remote NAME")
        where = "" if remote is not None else " (alock.remote)"
        if not _is_remote_name(name):
            raise UsageError(f"invalid remote name {name!r}{where}")
        if self.config_get(f"remote.{name}.url") is None:
            if remote is not None:
                raise RemoteError(
                    f"no such remote {name!r}; nothing changed (git remote -v lists them; "
                    f"git remote add {name} URL adds one)"
                )
            raise RemoteError(
                f"alock.remote names {name!r}, but this repository has no such remote "
                f"(git remote -v lists them; git alock remote --off returns to local mode)"
            )
        self.remote = name
        self.timeout = self.settings.duration("alock.remoteTimeout", DEFAULT_REMOTE_TIMEOUT_SECONDS)
        self.timeout_setting = "alock.remoteTimeout"  # named when a timeout ends a run
        self.skew = self.settings.duration("alock.clockSkew", DEFAULT_SKEW_SECONDS, zero=True)
        self.staging = f"{STAGING_PREFIX}{name}/"
        self.detached = f"{self.staging}detached/"
        self.detached_journal = f"{self.staging}detached-journal"
        # False while a switch to remote mode is undecided: only staging moves.
        self.mirroring = True
        self._remote_cache: RemoteTable | None = None
        self._staged_cache: tuple[dict[str, str], str | None] | None = None
        self._meta_cache: dict[str, str] | None = None
        self._rejected: str | None = None
        self.view_ref = f"{self.staging}view"  # the remote journal the local view mirrors
        # The remote's lock refs (ls-remote) where they differ from its table: leased on.
        self.lease_override: dict[str, str] | None = None
        # Symbolic refs in the remote's lock namespaces (name -> target): never followed.
        self.remote_symrefs: dict[str, str] = {}
        self.listed_meta = {}
        self._views = {}

    def decided_version(self) -> str | None:
        """The local view's journal: a refusal is placed among the events mirrored there."""
        return self.version()

    def staged(self) -> tuple[dict[str, str], str | None]:
        """(lock id -> blob id, journal commit) of the remote as last fetched or pushed."""
        count = self.shard_count() if self._staged_cache is None else None
        if count:  # sharded: the union of the shard tables, as one view commit
            tips = self.staged_tips(count)
            union = self.union(tips)
            self._staged_cache = (union, self.view_of(tips, union))
        elif self._staged_cache is None:
            journal = self.staged_journal()
            table = self.journal_store.table(journal)
            if table is not None:  # the journal carries the table: its refs mirror it
                self._staged_cache = (table, journal)
            else:  # a journal from before commits carried the table: its lock refs
                self._staged_cache = (self.staged_lock_refs(), journal)
        locks, journal = self._staged_cache
        return dict(locks), journal

    def staged_journal(self) -> str | None:
        return self.staged_meta().get(self.staging + "meta/journal")

    def staged_lock_refs(self) -> dict[str, str]:
        """The remote's lock refs as last fetched (for a journal that carries no table)."""
        return self.lock_refs(self.staging + "locks/")

    def staging_refs(self) -> dict[str, str]:
        """Every ref a fetch or push writes under staging, probes included (to restore)."""
        return self.scan_refs((self.staging + "locks/", self.staging + "meta/"))

    def detached_copies(self) -> tuple[dict[str, str], str | None]:
        """(lock id -> value, journal) as mirrored when the clone last left this remote."""
        copies = {
            name[len(self.detached) :]: oid
            for name, oid in self.scan_refs((self.detached,)).items()
        }
        return copies, self.ref_value(self.detached_journal)

    def remote_table(self) -> RemoteTable:
        """The remote's table: its journal commit's (docs/design.md, section 5.4), else,
        from a journal written before commits carried it, its lock refs."""
        locks, journal = self.staged()
        leases = self.lease_override if self.lease_override is not None else locks
        cached = self._remote_cache
        if cached is not None and cached.version == journal and cached.leases == leases:
            return cached
        content = self.journal_store.table(journal)
        if content is None:
            content = {i: oid for i, oid in locks.items() if i not in self.remote_symrefs}
        loaded = self.load(((LOCK_PREFIX + i, oid) for i, oid in sorted(content.items())), journal)
        loaded.problems.extend(
            Problem(ref=name, oid="", reason=f"a symbolic ref to {target} on {self.remote}")
            for name, target in sorted(self.remote_symrefs.items())
            if name.startswith(LOCK_PREFIX)
        )
        if self.lease_override is not None and self.journal_store.table(journal) is not None:
            # Lock refs the table does not hold (pushed by hand): the next write deletes them.
            loaded.problems.extend(
                Problem(
                    ref=LOCK_PREFIX + i,
                    oid=oid,
                    reason=f"a lock ref on {self.remote} that its lock table does not hold",
                )
                for i, oid in sorted(leases.items())
                if i not in content and LOCK_PREFIX + i not in self.remote_symrefs
            )
        tips = self.journal_store.view_tips(journal) if self.shard_count() else None
        table = RemoteTable(
            shards=tips or {},
            held=self.shard_tables(tips) if tips else {},
            version=journal,
            ignore_case=self.ignore_case,
            records=loaded.records,
            problems=loaded.problems,
            refs=loaded.refs,
            leases=leases,
            skew=self.skew,
            summaries=loaded.summaries,
        )
        self._remote_cache = table
        return table

    def unpushed(self) -> list[LockRecord]:
        """Local locks that are not the remote's as last seen: never pushed, or changed."""
        staged, _ = self.staged()
        mirrored = self.mirrored()
        local = self.local_locks()
        if local in (mirrored, staged):
            return []  # 10,000 locks as mirrored or fetched: one comparison
        found = []
        for lock_id, oid in sorted(local.items()):
            if staged.get(lock_id) != oid and mirrored.get(lock_id) != oid:
                record = self.read_record(LOCK_PREFIX + lock_id, oid)
                if isinstance(record, LockRecord):
                    found.append(record)
        return found

    def transact(self, decide: Callable[[Table], tuple[Change, T]], *, tries: int = TRIES) -> T:
        with self.mutex(timeout=MUTEX_TIMEOUT_SECONDS + 2 * self.timeout):
            now = format_time(utcnow())
            waiting = [r for r in self.unpushed() if r.expires_at > now]
            if waiting:
                raise RemoteError(
                    f"{len(waiting)} live local lock(s) were never pushed to {self.remote!r} "
                    f"(e.g. {' '.join(waiting[0].paths)} held by {waiting[0].holder}): run "
                    f"git alock remote {self.remote} to push them, or git alock remote --off"
                )
            # Once the local view moved, the objects the write stored are kept (4.6).
            self.objects.written = {}
            try:
                result = self.transact_held(decide, tries=max(1, tries))
                pruned.keep_written(self.objects, self.objects.written or {})
            finally:
                self.objects.written = None
            return result

    def transact_held(
        self, decide: Callable[[Table], tuple[Change, T]], *, tries: int, fetched: bool = False
    ) -> T:
        """``transact`` for a caller that already holds the mutex (a mode switch); the lock
        refs are listed beside the push (docs/design.md, section 5.2)."""
        listing: Listing | None = None
        try:
            if not fetched and self.remote not in read_sync_times(self):
                self.fetch()
                fetched = True
            if self.journal_store.table(self.staged()[1]) is not None:
                self.check_not_lost()
                listing = Listing(
                    self.remote,
                    bool(self.shard_count()),
                    lambda args: self._git(args, what="ls-remote of"),
                    self._not_a_blob,
                    self.journal_store.view_tips,
                )
            elif self.look_before_writing():
                fetched = True
            return self._attempts(decide, tries, fetched, listing)
        finally:
            if listing is not None:
                listing.join()

    def _attempts(
        self,
        decide: Callable[[Table], tuple[Change, T]],
        tries: int,
        fetched: bool,
        listing: Listing | None,
    ) -> T:
        deadline = time.monotonic() + self.timeout
        still = 0  # refused pushes in a row while the remote's journal stood still
        for attempt in range(tries):
            if attempt and time.monotonic() > deadline:
                break
            try:
                self.check_format()
            except RemoteError:
                if fetched:
                    raise
                self.fetch()  # what stops writes may have been put right since the last fetch
                fetched = True
                self.check_format()
            table = self.remote_table()
            change, result = decide(table)
            self._decided = table
            if not change:
                if listing is not None and listing.out_of_step(table, self.staged):
                    # Lock refs out of step with the table: ask again, decide on that.
                    listing = None
                    if self.look_before_writing():
                        fetched = True
                    continue
                # Nothing to push, so nothing proves the view current: confirm it first.
                if fetched or not self.fetch():
                    return result
                fetched = True
                continue
            if self._push_sharded(table, change) if table.shards else self._push(table, change):
                self.lease_override = None
                if listing is not None and listing.out_of_step(table, self.staged):
                    self.repair_lock_refs()
                return result
            time.sleep(jitter() * min(BACKOFF_CAP_SECONDS, 0.01 * 2**attempt))
            moved = self.fetch()
            if moved:
                self.lease_override = None
                still = 0
            elif self._rejected:
                # Refused while the journal stood still: lease on the lock refs as they are
                # now, and the next push repairs them (docs/design.md, section 5.2).
                still += 1
                if still >= STILL_TRIES:
                    raise RemoteError(
                        f"the lock remote {self.remote!r} could not update the lock refs "
                        f"({self._rejected}) {still} times while its journal stood still; "
                        "the remote's own log may say why (a leftover .lock file under its "
                        "refs/, or lock refs it hides from pushes: receive.hideRefs?). Try "
                        "again later"
                    )
                self.lease_override = self.actual_lock_refs()
                continue
            fetched = True
        raise RemoteError(
            f"the lock remote {self.remote!r} kept changing under us (lost {attempt + 1} races "
            f"in {self.timeout}s, alock.remoteTimeout); try again"
        )

    def check_not_lost(self) -> None:
        """Raise when the remote's journal as last fetched lost live claims the local view
        holds (docs/design.md, section 5.8)."""
        if not self.mirroring:
            return  # a switch not yet decided has no view of this remote to lose
        if self.view_journal() in (None, self.staged()[1]):
            return  # the view is the remote's journal as last seen: nothing to lose
        from gitlocks.store.lost import lost_view  # only a journal that moved since the view

        lost = lost_view(self, self.staged()[1])
        if lost is not None:
            raise RemoteError(lost)

    def look_before_writing(self) -> bool:
        """Ask the remote for its lock refs (one ``ls-remote``) before a write decides; True
        when that made it fetch. Refs out of step with the journal's table are leased on as
        they are, so the write repairs them; without a table they are the table, fetched."""
        self.check_not_lost()
        actual = self.actual_lock_refs()
        table = self.remote_table()
        if self.journal_store.table(table.version) is None:
            if actual != self.staged_lock_refs():
                self.fetch()
                return True
            return False
        if table.shards and (
            self.listed_meta.get(JOURNAL_REF) != self.staged_journal()
            or self.beyond(self.listed_meta, SHARD_PREFIX, len(table.shards))
        ):
            self.fetch()  # the notice or the shards changed by hand: check_format stops it
            return True
        if actual != table.leases and (not table.shards or self.tips_listed(table)):
            self.lease_override = actual
        return False

    def repair_lock_refs(self) -> None:
        """After a write won beside lock refs out of step: ask again and push the repair
        (docs/design.md, section 5.2); one that cannot land now is left to the next write."""
        try:
            self.lease_override = None
            self.look_before_writing()  # asked afresh: this answer, not the listing, decides
            if self.lease_override is None:
                return
            table = self.remote_table()
            if not table.shards and self.listed_meta.get(JOURNAL_REF) != table.version:
                return  # a write came after ours: its lease would fail; the next write repairs
            ids = self.repairable(table)
            if ids:
                at = format_time(utcnow())
                events: list[dict[str, object]] = [
                    {"event": REPAIRED, "at": at, "id": i, "holder": None, "paths": []} for i in ids
                ]
                change = Change(events=events)
                if table.shards:
                    self._push_sharded(table, change, self.repair_shards(table, ids))
                else:
                    self._push(table, change)
        except GitlocksError:
            pass  # the write stands; the next write repairs
        finally:
            self.lease_override = None

    def fetch(self) -> bool:
        """Fetch the remote's lock namespaces into staging and mirror them; True if moved."""
        old_locks, old_journal = self.staged()
        self._clear_staging_lockfiles()
        self._staged_cache = self._meta_cache = None
        self._fetch(f"+refs/agent-locks-meta/*:{self.staging}meta/*")
        if not self.shard_count() and self.journal_store.table(self.staged_journal()) is None:
            self._fetch(f"+refs/agent-locks/*:{self.staging}locks/*")  # the refs are the table
        new_locks, new_journal = self.staged()
        self.check_not_lost()
        moved = len({*old_locks.items()} ^ {*new_locks.items()})
        self.pack_if_many(moved)
        self._mirror(old_locks, new_locks, new_journal, write_staging=False, previous=old_journal)
        return (old_locks, old_journal) != (new_locks, new_journal)

    def _fetch(self, refspec: str) -> None:
        """Fetch ``refspec`` alone into staging, pruning what the remote no longer has."""
        args = [*FETCH, "--no-show-forced-updates", "--prune", self.remote, refspec]
        run = self._git(args, what="fetch from")
        self.forget_listing()  # it moved staging (or may have, failing)
        if run.code != 0:
            raise failure(run, self.remote, "fetch")
        self._staged_cache = self._meta_cache = None

    def actual_lock_refs(self) -> dict[str, str]:
        """The remote's lock refs as it has them now (``ls-remote``): lock id -> value;
        symbolic ones are learnt too (``remote_symrefs``). The shard journals and the
        journal ref are listed beside them (``listed_meta``)."""
        sharded = bool(self.shard_count())
        patterns = [f"{LOCK_PREFIX}*", *([f"{SHARD_PREFIX}*"] if sharded else []), JOURNAL_REF]
        refs, symrefs = self.ls_remote(patterns)
        found = {}
        self.listed_meta = {}
        for name, oid in refs.items():
            lock_id = name[len(LOCK_PREFIX) :]
            if name.startswith(LOCK_PREFIX) and is_lock_id(lock_id):
                found[lock_id] = oid
            elif name.startswith(SHARD_PREFIX) or name == JOURNAL_REF:
                self.listed_meta[name] = oid
        others = {n: t for n, t in self.remote_symrefs.items() if not n.startswith(LOCK_PREFIX)}
        mine = {n: t for n, t in symrefs.items() if n.startswith(LOCK_PREFIX)}
        self.remote_symrefs = {**others, **mine}
        self._remote_cache = None
        return found

    def sync(self) -> bool:
        with self.mutex(timeout=MUTEX_TIMEOUT_SECONDS + 2 * self.timeout):
            return self.fetch()

    def landing_ref(self, branch: str) -> str:
        """The remote's branch, fetched into gitlocks' own namespace: never the user's
        remote-tracking refs (a record naming ``HEAD`` would write through to ``R/main``)."""
        return f"{self.staging}heads/{branch}"

    def fetch_branches(self, branches: list[str]) -> None:
        """Refresh ``landing_ref`` of at most MAX_LANDING_BRANCHES ``branches`` (a branch
        the remote lacks is skipped)."""
        for branch in sorted(set(branches))[:MAX_LANDING_BRANCHES]:
            refspec = f"+refs/heads/{branch}:{self.landing_ref(branch)}"
            self._git([*FETCH, self.remote, refspec], what="fetch from")  # may fail: as it was
            self.forget_listing()


def _is_remote_name(name: str) -> bool:
    """``[A-Za-z0-9][A-Za-z0-9._-]*`` components joined by ``/``, without ``..``: a name
    that cannot be read as an option, a path or a URL."""
    return (
        name[:1] in ALNUM
        and bool(name)
        and ".." not in name
        and all(part and made_of(part, NAME_CHARS) for part in name.split("/"))
    )
