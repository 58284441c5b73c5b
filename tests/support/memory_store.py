"""An in-memory lock store: the contract of ``store/base.py`` with no repository.

It keeps what the local store keeps, in dictionaries: lock records as blobs named by their
git object id, a ref per lock, a journal of entries, a version that moves with every
write. Records go through the same loader as the real stores' (``core.table.lazy_table``),
so a blob that is no record is a ``Problem`` here too. A write is one step under a lock,
so threads racing through ``transact`` see compare-and-swap as the real stores give it.

For tests of the services, which then run in milliseconds, and for the contract suite
that holds every store to the same behaviour (dulwich's ``DictRefsContainer`` is the
model). Landing questions answer as a repository with no branches would.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple, TypeVar

from gitlocks.core.change import Change, check_sizes
from gitlocks.core.digest import sha1_hex
from gitlocks.core.judging import Problem
from gitlocks.core.table import Table, lazy_table
from gitlocks.errors import StoreError
from gitlocks.git.settings import Settings
from gitlocks.layout import LOCK_PREFIX
from gitlocks.store.base import LockStore

T = TypeVar("T")


class MemoryEntry(NamedTuple):
    commit: str
    events: tuple[dict[str, Any], ...]


def blob_id(data: bytes) -> str:
    """The id git gives a blob of ``data`` (SHA-1 object format)."""
    return sha1_hex(b"blob %d\0" % len(data) + data)


class MemoryStore:
    """A lock table held in this process's memory."""

    remote: str | None = None  # its table is no remote's (a test may say otherwise)
    reftable = True  # no ref files to look at: a wait asks version()

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        config: Mapping[str, str] | None = None,
        files: Iterable[str] = (),
        branch: str | None = "main",
    ) -> None:
        # A directory for the files a service keeps beside the table (the refusal log). One
        # made here goes when the store does: a property test makes thousands of stores.
        if root is None:
            root = tempfile.mkdtemp(prefix="alock-mem-")
            weakref.finalize(self, shutil.rmtree, root, ignore_errors=True)
        self.root = os.fspath(root)
        self.git_dir = self.common_dir = os.path.join(self.root, ".git-memory")
        os.makedirs(self.common_dir, exist_ok=True)
        self.settings = Settings(dict(config or {}))
        self.ignore_case = self.settings.flag("core.ignoreCase", False)
        self.skew = 0
        self.breaking = False  # no record of a memory store is ever lost
        self.snapshot = False  # every read is of the current table: it costs nothing here
        self.on_journal_symref: Callable[[str], None] | None = None  # no refs: never told
        self.files = set(files)
        self.branch = branch
        self.blobs: dict[str, bytes] = {}
        self.refs: dict[str, str] = {}
        self.entries: list[MemoryEntry] = []  # oldest first
        self._lock = threading.RLock()
        self._problems: list[Problem] = []

    # --- settings and the working tree ------------------------------------------------------

    def config_get(self, key: str) -> str | None:
        return self.settings.get(key)

    def is_file(self, path: str) -> bool:
        return path in self.files

    def head_info(self) -> tuple[str | None, str | None]:
        return self.branch, None

    # --- the table --------------------------------------------------------------------------

    def version(self) -> str | None:
        return self.entries[-1].commit if self.entries else None

    def decided_version(self) -> str | None:
        return self.version()

    def symref_target(self, name: str) -> str | None:
        return None

    def journal_symref(self) -> str | None:
        return None

    def read_table(self) -> Table:
        with self._lock:
            refs = sorted(self.refs.items())
            blobs = dict(self.blobs)
            version = self.version()

        def read(oids: list[str]) -> dict[str, tuple[bytes | None, str]]:
            return {oid: (blobs.get(oid), "blob") for oid in oids}

        table, _ = lazy_table(
            refs,
            known={},
            read=read,
            version=version,
            ignore_case=self.ignore_case,
            skew=self.skew,
        )
        self._problems = table.problems
        return table

    def problems(self) -> list[Problem]:
        return self._problems

    def transact(self, decide: Callable[[Table], tuple[Change, T]], *, tries: int = 5) -> T:
        """Decide on the current table and apply the change in one step: the lock is held
        from the read to the write, as the local store's mutex is."""
        if tries < 1:
            raise StoreError("the lock store kept changing under us; try again")
        with self._lock:
            table = self.read_table()
            change, result = decide(table)
            if not change:
                return result
            check_sizes(change)
            self._apply(change)
            return result

    def _apply(self, change: Change) -> None:
        for lock_id in change.delete:
            self.refs.pop(LOCK_PREFIX + lock_id, None)
        for record in change.put:
            data = record.to_json()
            oid = blob_id(data)
            self.blobs[oid] = data
            self.refs[LOCK_PREFIX + record.id] = oid
        seq = len(self.entries) + 1
        commit = sha1_hex(f"memory journal {seq} {self.version()}".encode())
        self.entries.append(MemoryEntry(commit, tuple(change.events)))

    def plant(self, lock_id: str, data: bytes) -> str:
        """Put any bytes under a lock's ref, as a hostile or older writer might."""
        with self._lock:
            oid = blob_id(data)
            self.blobs[oid] = data
            self.refs[LOCK_PREFIX + lock_id] = oid
            return oid

    def journal(
        self, limit: int | None = None, *, start: str | None = None
    ) -> Iterator[MemoryEntry]:
        with self._lock:
            entries = list(reversed(self.entries))
        if start is not None:
            ids = [e.commit for e in entries]
            entries = entries[ids.index(start) :] if start in ids else []
        return iter(entries if limit is None else entries[:limit])

    # --- landing: a repository with no branches -----------------------------------------------

    def sync(self) -> bool:
        return False

    def fetch_branches(self, branches: list[str]) -> None:
        return None

    def landing_ref(self, branch: str) -> str:
        return f"refs/heads/{branch}"

    def commit_of(self, ref: str) -> str | None:
        return None

    def contains(self, tip: str, commit: str) -> bool:
        return False

    def paths_changed_since(self, head: str, base: str, limit: int) -> set[str] | None:
        return None


def _conforms(store: MemoryStore) -> LockStore:
    return store  # mypy holds the twin to the contract
