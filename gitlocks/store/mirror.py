"""Remote mode's local side: staging as last seen, the local view that mirrors the remote's
table (``_mirror``), and when the clone last heard from the remote (docs/design.md 5.1).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Collection

from gitlocks.core.text import is_digits
from gitlocks.errors import RemoteError, RemoteTimeout, StoreError
from gitlocks.git.files import Scan, write_atomic
from gitlocks.git.remote import GitRun, PushLine, porcelain, run_git
from gitlocks.layout import JOURNAL_REF, LOCAL_JOURNAL_REF, LOCK_PREFIX, META_PREFIX, SYNC_FILE
from gitlocks.store.local import Store

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from gitlocks.store.refs import RefWriter

PACK_AFTER = 256  # loose refs written at once, past which refs are packed
_NUMBERED = LOCAL_JOURNAL_REF + "-"  # then a number: a kept local journal

VIEW_MESSAGE = "gitlocks remote"  # the reflog message of the local view's writes


def view_moves(
    basis: dict[str, str], new: dict[str, str], local: dict[str, str]
) -> dict[str, str | None]:
    """The lock refs that move the local view (``local``, lock id -> value) from the table
    last mirrored (``basis``) to ``new``, by ref name: a lock whose local value is neither
    was never pushed, and stays as it is."""
    if local == basis:  # as last mirrored (most often): only what the remote changed
        ids = {lock_id for lock_id, _ in basis.items() ^ new.items()}
    else:
        ids = basis.keys() | new.keys() | local.keys()
    updates: dict[str, str | None] = {}
    for lock_id in sorted(ids):
        mine = local.get(lock_id)
        if mine is not None and mine not in (basis.get(lock_id), new.get(lock_id)):
            continue
        if mine != new.get(lock_id):
            updates[LOCK_PREFIX + lock_id] = new.get(lock_id)
    return updates


class Mirror(Store):
    """The local half of a remote store (attributes set by ``RemoteStore.__init__``)."""

    remote: str
    timeout: float
    timeout_setting: str
    staging: str
    view_ref: str
    mirroring: bool
    remote_symrefs: dict[str, str]
    _remote_cache: object | None
    _staged_cache: tuple[dict[str, str], str | None] | None
    _meta_cache: dict[str, str] | None  # staging's meta/ refs (``ShardedPush.staged_meta``)
    # When set (time.monotonic()), every run against the remote ends by then (the guard's).
    deadline: float | None = None
    # A firm deadline (the guard's): asking whether a push landed gets no time of its own.
    deadline_firm = False
    # Every local ref of gitlocks' namespaces, listed once under the mutex (where only we
    # move them), until a move of our own forgets the listing.
    _held: Scan | None = None

    def _scan_with_git(self, patterns: tuple[str, ...]) -> Scan:
        spaces = (LOCK_PREFIX, META_PREFIX, self.staging)
        if self._mutex_fd is None or not all(_within(p, spaces) for p in patterns):
            return super()._scan_with_git(patterns)
        if self._held is None:
            self._held = super()._scan_with_git(spaces)
            target = self._held.symbolic.get(JOURNAL_REF)
            if target is not None and self.on_journal_symref is not None:
                told, self.on_journal_symref = self.on_journal_symref, None
                told(target)  # once, as a local write says it
        held = self._held
        return Scan(
            {n: v for n, v in held.refs.items() if _matches(n, patterns)},
            {n: t for n, t in held.symbolic.items() if _matches(n, patterns)},
        )

    def forget_listing(self) -> None:
        """Refs moved (or may have): the next question lists them anew."""
        self._held = None

    # What we listed or cached may move while we do not hold the mutex.
    def _take_mutex(self, timeout: float) -> None:
        self._held = self._staged_cache = self._meta_cache = None
        super()._take_mutex(timeout)

    def _drop_mutex(self, fd: int | None = None) -> None:
        self._held = self._staged_cache = self._meta_cache = None
        super()._drop_mutex(fd)

    def ref_writer(self) -> RefWriter:
        """The writer of our refs: it reads their values from git, never the listing."""
        self._held = None
        writer = super().ref_writer()
        writer.current = self._values_now
        return writer

    def _values_now(self, names: Collection[str]) -> dict[str, str | None]:

        found = super()._scan_with_git(tuple(names)) if names else Scan({}, {})
        return {n: None if n in found.symbolic else found.refs.get(n) for n in names}

    def _time_left(self, what: str) -> float:
        """How long a run against the remote may take (``RemoteTimeout``: no time left)."""
        timeout = self.timeout
        if self.deadline is not None:
            timeout = min(timeout, self.deadline - time.monotonic())
            if timeout <= 0:
                raise RemoteTimeout(
                    f"{what} {self.remote!r} not tried: the lock remote took {self.timeout:g}s "
                    f"({self.timeout_setting}) already; nothing changed locally"
                )
        return timeout

    def _git(self, args: list[str], *, what: str) -> GitRun:
        timeout = self._time_left(what)
        return run_git(
            self.git_dir,
            args,
            remote=self.remote,
            what=what,
            timeout=timeout,
            setting=self.timeout_setting,
            cwd=self.root,  # a relative remote path is the worktree's, as git reads it
        )

    def _push_atomic(self, leases: list[str], specs: list[str]) -> tuple[GitRun, list[PushLine]]:
        """One ``git push --atomic`` of ``specs`` under ``leases`` (our hooks not run)."""
        run = self._git(
            ["push", "--atomic", "--porcelain", "--no-verify", *leases, self.remote, *specs],
            what="push to",
        )
        return run, porcelain(run.out)

    def lock_refs(self, prefix: str) -> dict[str, str]:
        """Lock id -> blob id of the refs right under ``prefix`` (a deeper name is a probe's,
        never a lock)."""
        return {
            name[len(prefix) :]: oid
            for name, oid in self.scan_refs((prefix,)).items()
            if "/" not in name[len(prefix) :]
        }

    def local_locks(self) -> dict[str, str]:
        """The local view: lock id -> blob id."""
        return self.lock_refs(LOCK_PREFIX)

    def mirrored(self) -> dict[str, str]:
        """The remote's table as the local view last mirrored it (lock id -> blob id)."""
        view = self.ref_value(self.view_ref)
        return (self.journal_store.table(view) or {}) if view is not None else {}

    def _mirror(
        self,
        old: dict[str, str],
        new: dict[str, str],
        journal: str | None,
        *,
        write_staging: bool,
        table: dict[str, str] | None = None,
        previous: str | None = None,
        staged_meta: dict[str, str] | None = None,
    ) -> None:
        """Move staging (when asked) from the remote's lock refs ``old`` to ``new`` and, when
        ``mirroring``, the local view to the remote's table (``table``, else its journal
        commit's), and note when we last heard from the remote. ``staged_meta``: the shard
        journals a sharded write moved (``journal`` is then their view commit)."""
        updates: dict[str, str | None] = {}
        if write_staging and staged_meta is not None:
            updates.update(staged_meta)
        elif write_staging:
            if journal is not None:
                updates[f"{self.staging}meta/journal"] = journal
            if self.journal_store.table(journal) is None:  # lock refs are the table
                for lock_id in sorted(old.keys() | new.keys()):
                    if old.get(lock_id) != new.get(lock_id):
                        updates[f"{self.staging}locks/{lock_id}"] = new.get(lock_id)
        if self.mirroring:
            if table is None:
                table = self.journal_store.table(journal)
            if table is None:  # a journal from before commits carried the table
                table = {i: v for i, v in new.items() if LOCK_PREFIX + i not in self.remote_symrefs}
            updates.update(self.view_updates(old, table, journal))
            local = self.version()
            if local is not None and local not in (journal, self.view_journal(), previous):
                # Not the remote's (alock.remote set by hand on a clone with local history).
                updates.update(self.keep_local_journal(local))
        self.set_refs(updates)
        if self.mirroring:
            self.stamp_sync()

    def view_journal(self) -> str | None:
        return self.ref_value(self.view_ref)

    def view_updates(
        self, old: dict[str, str], new: dict[str, str], journal: str | None
    ) -> dict[str, str | None]:
        """What moves the local view to the remote's table ``new``, repaired from the whole
        table (docs/design.md, section 5.1); ``old``: the remote's refs, for a clone with
        no view ref yet."""
        view = self.view_journal()  # read once: nothing moves it while we decide
        basis = (self.journal_store.table(view) or {}) if view is not None else old
        updates = view_moves(basis, new, self.local_locks())
        if journal is not None:
            if self.version() != journal:
                updates[JOURNAL_REF] = journal
            if view != journal:
                updates[self.view_ref] = journal
        return updates

    def keep_local_journal(self, journal: str) -> dict[str, str | None]:
        """Save a local journal as ``local-journal`` (an older one moves to
        ``local-journal-N``): the remote's journal replaces it in the local view."""
        updates: dict[str, str | None] = {LOCAL_JOURNAL_REF: journal}
        kept = self.ref_value(LOCAL_JOURNAL_REF)
        if kept is not None and kept != journal:
            numbers = [
                int(number)
                for name in self.scan_refs((META_PREFIX,))
                if name.startswith(_NUMBERED) and is_digits(number := name[len(_NUMBERED) :])
            ]
            updates[f"{LOCAL_JOURNAL_REF}-{max(numbers, default=0) + 1}"] = kept
        return updates

    def distrust(self) -> None:
        super().distrust()
        self._remote_cache = None  # the remote's table, read with the same verdicts

    def set_refs(self, updates: dict[str, str | None]) -> None:
        """Set or (``None``) delete refs in one local transaction."""
        if not updates:
            return
        held, old = self._held, None
        if held is not None:  # listed under the mutex: the values git compares, as listed
            old = {n: None if n in held.symbolic else held.refs.get(n) for n in updates}
        try:
            self.ref_writer().write(updates, message=VIEW_MESSAGE, old=old)
        except StoreError as exc:
            raise RemoteError(f"cannot update the local view of the lock remote: {exc}") from exc
        finally:
            self._cache = None
            self._remote_cache = None
            self._staged_cache = self._meta_cache = None
            self._held = None
        self.pack_if_many(len(updates))

    def pack_if_many(self, written: int) -> None:
        """Pack refs after a mirror wrote many loose ones (a switch, a first fetch): nothing
        else would (gitlocks runs git with gc.auto off)."""
        if written >= PACK_AFTER:
            self._git(["pack-refs", "--all"], what="pack-refs in")
            self._staged_cache = self._meta_cache = None

    def _clear_staging_lockfiles(self) -> None:
        """Remove ``.lock`` files a killed fetch left under staging (only our fetches
        write there, under the mutex we hold)."""
        base = os.path.join(self.common_dir, self.staging)
        for dirpath, dirs, names in os.walk(base):
            for name in (n for n in (*dirs, *names) if n.endswith(".lock")):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, self.common_dir).replace(os.sep, "/")
                self.ref_writer().remove_lockfiles([rel[: -len(".lock")]])

    def stamp_sync(self) -> None:
        write_sync_times(self, {**read_sync_times(self), self.remote: time.time()})


def _within(pattern: str, spaces: tuple[str, ...]) -> bool:
    """Whether ``for-each-ref``'s ``pattern`` (no wildcards) lists only refs under
    ``spaces`` (each ending in ``/``)."""
    return pattern.startswith(spaces) and not any(c in pattern for c in "*?[\\")


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    """As ``for-each-ref`` matches a pattern without wildcards: the whole name, or a
    leading part of it up to a ``/``."""
    return any(name == p or name.startswith(p if p.endswith("/") else p + "/") for p in patterns)


def read_sync_times(store: Store) -> dict[str, float]:
    try:
        with open(os.path.join(store.common_dir, SYNC_FILE)) as f:
            data = json.loads(f.read())
    except (OSError, ValueError, RecursionError):  # absent, not JSON, hostile
        return {}
    if not isinstance(data, dict):
        return {}
    found = {}
    for key, value in data.items():
        try:
            if isinstance(value, (int, float)) and float(value) - float(value) == 0.0:
                found[key] = float(value)  # finite: NaN and infinities give NaN above
        except OverflowError:
            continue
    return found


def write_sync_times(store: Store, times: dict[str, float]) -> None:
    path = os.path.join(store.common_dir, SYNC_FILE)
    try:
        write_atomic(path, json.dumps(times, sort_keys=True).encode())
    except OSError as exc:
        raise RemoteError(f"cannot record the sync time in {path}: {exc.strerror}") from exc
