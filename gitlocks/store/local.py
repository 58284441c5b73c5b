"""The lock store: the only module that reads or writes refs and objects.

Layout, shared by every worktree of a repository (these refs are not per-worktree):

- ``refs/agent-locks/<id>``: one blob per live lock, the JSON record.
- ``refs/agent-locks-meta/journal``: the serialisation ref. Every state change moves it to
  a new commit (unique by construction: it names its parent) whose message holds the
  events of that change, so its history is also the journal.

Why a writer needs more than per-ref locking: two claims under different ref names can
overlap, and git's ``<ref>.lock`` protocol only serialises writers of the same ref. So
every write also compare-and-swaps the journal ref, inside one ref transaction with the
lock refs it touches (docs/design.md, section 9).

Why a writer also takes ``flock`` on ``<common dir>/agent-locks.mutex`` first: a writer
killed while it holds a ``<ref>.lock`` file leaves the file behind, and pygit2 then fails
at once for everyone. A ``flock`` is released by the kernel when its process dies, so the
mutex says who is busy: nobody else is while we hold it. Before touching refs, a writer
also names them in the mutex file itself and empties it when done. So a writer that finds
the file not empty, while it holds the mutex, knows its predecessor died mid-write, and
removes the ``.lock`` files that writer named at once: that is how dead is told from busy,
and why a crash never wedges the store. A ``.lock`` file with no marker belongs to some
other git command: we wait a few seconds for it, then fail with a message naming it,
rather than delete a live process's lock.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import random
import re
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import pygit2

from gitlocks.core import journal
from gitlocks.core.record import LockRecord
from gitlocks.core.table import Problem, Table, load_table, read_record
from gitlocks.errors import NotARepository, StoreError
from gitlocks.layout import (
    JOURNAL_REF,
    LOCK_PREFIX,
    LOCKFILE_WAIT_SECONDS,
    MUTEX_NAME,
    MUTEX_TIMEOUT_SECONDS,
)

_HEX_RE = re.compile(r"^[0-9a-f]{40,64}$")
_SIGNATURE = ("gitlocks", "gitlocks@localhost")

T = TypeVar("T")


@dataclass
class Change:
    """What one write does: records to create or replace, ids to delete, events to journal."""

    put: list[LockRecord] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.put or self.delete)


class JournalEntry(NamedTuple):
    commit: str
    events: tuple[dict[str, Any], ...]


class _Conflict(Exception):
    """The store moved between our read and our write: re-read and decide again."""


class Store:
    """A repository's lock refs, with a table cached by the journal ref's value."""

    def __init__(self, repo: pygit2.Repository) -> None:
        if repo.is_bare:
            raise NotARepository("this is a bare repository: run git alock inside a working tree")
        self.repo = repo
        self.git_dir = Path(repo.path)
        self.common_dir = _common_dir(self.git_dir)
        self.root = Path(repo.workdir).resolve() if repo.workdir else Path.cwd()
        self.ignore_case = self.config_bool("core.ignoreCase", False)
        self.skew = 0  # clock-skew allowance in seconds; remote mode sets its own
        self._cache: Table | None = None
        self._cache_fingerprint: tuple[object, ...] = ()
        self._mutex_fd: int | None = None  # the open mutex file, while we hold it
        self._empty_tree: pygit2.Oid | None = None

    @classmethod
    def discover(cls, start: str | os.PathLike[str] | None = None) -> Store:
        start = os.fspath(start) if start is not None else os.getcwd()
        try:
            path = pygit2.discover_repository(start)
        except pygit2.GitError as exc:
            raise NotARepository(f"cannot open a git repository at {start}: {exc}") from exc
        if path is None:
            raise NotARepository(
                "not a git repository (or any of the parent directories): "
                "run git alock inside a repository's working tree"
            )
        try:
            repo = pygit2.Repository(path)
        except pygit2.GitError as exc:
            raise NotARepository(f"cannot open the git repository at {path}: {exc}") from exc
        if not repo.is_bare and Path(path).resolve() == Path(start).resolve():
            # Standing inside .git itself: there is no working tree to anchor patterns in.
            raise NotARepository("run git alock inside the working tree, not inside .git")
        return cls(repo)

    # --- configuration and worktree facts ---------------------------------------------

    def config_get(self, key: str) -> str | None:
        try:
            value = self.repo.config[key]
        except (KeyError, pygit2.GitError):
            return None
        return str(value)

    def config_bool(self, key: str, default: bool) -> bool:
        try:
            return bool(self.repo.config.get_bool(key))
        except (KeyError, pygit2.GitError):
            return default

    def config_set(self, key: str, value: str) -> None:
        self.repo.config[key] = value

    def is_file(self, path: str) -> bool:
        """Whether a root-relative path names a file in the working tree or the index."""
        full = self.root / path
        if full.is_file() or (full.is_symlink() and not full.is_dir()):
            return True
        try:
            return path in self.repo.index
        except pygit2.GitError:
            return False

    def head_info(self) -> tuple[str | None, str | None]:
        """(branch name or None when detached, head commit id or None when unborn)."""
        try:
            if self.repo.head_is_unborn:
                ref = self.repo.lookup_reference("HEAD").target
                return (str(ref).removeprefix("refs/heads/"), None)
            head = self.repo.head
        except pygit2.GitError:
            return (None, None)
        branch = None if self.repo.head_is_detached else head.shorthand
        return (branch, str(head.target))

    # --- reading ------------------------------------------------------------------------

    def version(self) -> str | None:
        """The journal ref's value: changes with every write to the store."""
        try:
            ref = self.repo.references.get(JOURNAL_REF)
        except pygit2.GitError:
            return None
        return None if ref is None else str(ref.target)

    def fingerprint(self) -> tuple[object, ...]:
        """What moves when any lock ref moves: the journal ref, the directory of the loose
        lock refs and packed-refs. Two stats and a ref lookup, so a cached table can be
        trusted without listing 10,000 refs, even after a ref moved outside gitlocks."""
        stamps: list[object] = [self.version()]
        for path in (self.common_dir / LOCK_PREFIX, self.common_dir / "packed-refs"):
            try:
                info = path.stat()
            except OSError:
                stamps.append(None)
            else:
                stamps.append((info.st_mtime_ns, info.st_size, info.st_ino))
        return tuple(stamps)

    def read_table(self) -> Table:
        """The current lock table; the cached one while nothing under it has moved."""
        fingerprint = self.fingerprint()
        if self._cache is not None and fingerprint == self._cache_fingerprint:
            return self._cache
        table = self._load(self.version())
        self._cache, self._cache_fingerprint = table, fingerprint
        return table

    def _load(self, version: str | None) -> Table:
        refs = sorted(self.scan_refs((LOCK_PREFIX,)).items())
        return self.load(refs, version)

    def load(self, refs: Iterable[tuple[str, str]], version: str | None) -> Table:
        """The table of ``(ref, oid)`` lock refs, through the one loader."""
        return load_table(
            (self.read_object(name, oid) for name, oid in refs),
            version=version,
            ignore_case=self.ignore_case,
            skew=self.skew,
        )

    def read_object(self, name: str, oid: str) -> tuple[str, str, bytes | None, str]:
        """``(ref, oid, data, kind)`` for the loader: data only of a blob that exists."""
        try:
            obj = self.repo[oid]
        except (KeyError, ValueError, pygit2.GitError):
            return name, oid, None, "blob"
        if not isinstance(obj, pygit2.Blob):
            return name, oid, None, obj.type_str
        return name, oid, obj.data, "blob"

    def scan_refs(self, prefixes: tuple[str, ...]) -> dict[str, str]:
        """Every ref under ``prefixes`` (each ending in ``/``) with its value, by name.

        Reads only those namespaces: the loose refs below them and their lines of packed-refs
        (one regular-expression pass over the file), never every branch, tag and
        remote-tracking ref as libgit2's iterator, which has no prefix filter, would.
        Loose refs are read first, and win, so a concurrent pack-refs loses nothing. Other ref
        storage backends (reftable) fall back to the iterator.
        """
        storage = self.config_get("extensions.refStorage")
        if storage is not None and storage.lower() != "files":
            return {
                ref.name: str(ref.target)
                for ref in self.repo.references.iterator()
                if ref.name.startswith(prefixes) and isinstance(ref.target, pygit2.Oid)
            }
        base = self.common_dir
        found: dict[str, str] = {}
        for prefix in prefixes:
            top = base / prefix
            for dirpath, _dirs, files in os.walk(top):
                rel = os.path.relpath(dirpath, base).replace(os.sep, "/")
                for filename in files:
                    if filename.endswith(".lock"):
                        continue
                    try:
                        with open(os.path.join(dirpath, filename), "rb") as fh:
                            value = fh.read(128).strip().decode("ascii", "replace")
                    except OSError:
                        continue  # deleted while we looked: gone
                    if _HEX_RE.match(value):
                        found[f"{rel}/{filename}"] = value
        try:
            packed = (base / "packed-refs").read_bytes()
        except OSError:
            return found
        alternatives = b"|".join(re.escape(p.encode()) for p in prefixes)
        pattern = rb"^([0-9a-f]{40,64}) ((?:" + alternatives + rb")[^\n]*)$"
        for match in re.finditer(pattern, packed, re.MULTILINE):
            found.setdefault(match.group(2).decode("utf-8", "replace"), match.group(1).decode())
        return found

    def read_record(self, name: str, oid: str) -> LockRecord | Problem:
        return read_record(*self.read_object(name, oid))

    # --- writing ------------------------------------------------------------------------

    def transact(self, decide: Callable[[Table], tuple[Change, T]], *, tries: int = 5) -> T:
        """Decide against the current table and apply the change, as one atomic step.

        ``decide`` must be a pure function of the table (it may run more than once).
        """
        with self.mutex():
            for _ in range(tries):
                table = self.read_table()
                change, result = decide(table)
                if not change:
                    return result
                try:
                    self._apply(table, change)
                except _Conflict:
                    self._cache = None
                    continue
                return result
        raise StoreError("the lock store kept changing under us; try again")

    @contextmanager
    def mutex(self, timeout: float = MUTEX_TIMEOUT_SECONDS) -> Iterator[None]:
        path = self.common_dir / MUTEX_NAME
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise StoreError(f"cannot open the store mutex {path}: {exc.strerror}") from exc
        try:
            _flock(fd, timeout)
            self._mutex_fd = fd
            yield
        finally:
            self._mutex_fd = None
            os.close(fd)  # closing releases the flock

    def _apply(self, table: Table, change: Change) -> None:
        repo = self.repo
        blobs = {r.id: repo.create_blob(r.to_json()) for r in change.put}
        commit = self._journal_commit(table.version, change.events)
        names = [LOCK_PREFIX + r.id for r in change.put] + [LOCK_PREFIX + i for i in change.delete]
        try:
            with self.writing([JOURNAL_REF, *names]), repo.transaction() as tx:
                tx.lock_ref(JOURNAL_REF)
                for name in names:
                    tx.lock_ref(name)
                # Compare: the refs must still be what the table says, or someone wrote
                # without the mutex (another tool, or a remote sync): re-read and re-decide.
                if self.version() != table.version:
                    raise _Conflict
                for record in change.put:
                    self._expect(record.id, table)
                for lock_id in change.delete:
                    self._expect(lock_id, table)
                # Swap.
                for record in change.put:
                    tx.set_target(LOCK_PREFIX + record.id, blobs[record.id])
                for lock_id in change.delete:
                    tx.remove(LOCK_PREFIX + lock_id)
                tx.set_target(JOURNAL_REF, commit)
        except pygit2.GitError as exc:
            self._cache = None
            raise StoreError(f"cannot update the lock refs: {exc}") from exc
        except BaseException:
            self._cache = None
            raise
        for lock_id in change.delete:
            table.remove(lock_id)
        for record in change.put:
            table.put(record)
        table.version = str(commit)
        self._cache, self._cache_fingerprint = table, self.fingerprint()

    def _expect(self, lock_id: str, table: Table) -> None:
        ref = self.repo.references.get(LOCK_PREFIX + lock_id)
        current = None if ref is None else ref.target
        known = table.get(lock_id)
        if known is None:
            if current is not None and not any(
                p.ref == LOCK_PREFIX + lock_id for p in table.problems
            ):
                raise _Conflict
            return
        if current is None:
            raise _Conflict

    def _journal_commit(self, parent: str | None, events: list[dict[str, Any]]) -> pygit2.Oid:
        """The next journal commit on ``parent``; on a long chain, on a compacted root."""
        if self._empty_tree is None:
            self._empty_tree = self.repo.TreeBuilder().write()
        now = int(time.time())
        sig = pygit2.Signature(*_SIGNATURE, now, 0)
        head = self.repo.get(parent) if parent is not None else None
        seq = 1
        if not (isinstance(head, pygit2.Commit) and is_journal_commit(head)):
            parent = None  # no journal, or a ref pointing somewhere odd: start afresh
        else:
            seq = journal.parse_seq(head.message) + 1
            policy = journal.KeepPolicy.from_config(self.config_get)
            if policy.due(seq - 1) and parent is not None:
                root = self._compact(parent, policy, sig)
                if root != parent:
                    parent, seq = root, 2
        parents: list[pygit2.Oid] = [pygit2.Oid(hex=parent)] if parent else []
        message = journal.message(events, seq)
        return self.repo.create_commit(None, sig, sig, message, self._empty_tree, parents)

    def _compact(self, tip: str, policy: journal.KeepPolicy, sig: pygit2.Signature) -> str:
        """A new root commit holding the events ``policy`` keeps from the chain at ``tip``.

        Returns ``tip`` itself when nothing would be dropped (an age policy on a busy day).
        """
        newest_first = (
            e
            for entry in self.journal(start=tip)
            for e in reversed(entry.events)
            if e.get("event") != journal.COMPACTED
        )
        kept, dropped = policy.retain(newest_first, datetime.now(timezone.utc))
        if not dropped:
            return tip
        marker = journal.compaction_marker(datetime.now(timezone.utc), len(kept), tip)
        message = journal.message([marker, *kept], 1)
        tree = self.repo.TreeBuilder().write()
        return str(self.repo.create_commit(None, sig, sig, message, tree, []))

    def _is_commit(self, oid: str) -> bool:
        try:
            return bool(self.repo[oid].type == pygit2.GIT_OBJECT_COMMIT)
        except (KeyError, ValueError):
            return False

    @contextmanager
    def writing(self, refnames: list[str]) -> Iterator[None]:
        """Mark a write to ``refnames`` for the next writer, in case we die mid-way.

        The mark lives in the mutex file we hold open: writing it costs no directory
        operation. Leftovers of a dead writer are cleared first, and a ``.lock`` file of a
        live git command is waited for (see the module docstring).
        """
        if self._mutex_fd is None:
            with self.mutex(), self.writing(refnames):
                yield
            return
        fd = self._mutex_fd
        self._recover_dead_writer(fd, refnames)
        self._wait_for_lockfiles(refnames)
        mark = json.dumps({"pid": os.getpid(), "refs": refnames}).encode()
        try:
            os.pwrite(fd, mark, 0)
            os.ftruncate(fd, len(mark))
        except OSError as exc:
            raise StoreError(f"cannot write the store mutex: {exc.strerror}") from exc
        try:
            yield
        finally:
            os.ftruncate(fd, 0)

    def _recover_dead_writer(self, fd: int, refnames: list[str]) -> None:
        try:
            text = os.pread(fd, 1 << 20, 0)
        except OSError as exc:
            raise StoreError(f"cannot read the store mutex: {exc.strerror}") from exc
        if not text:
            return
        try:
            named = [str(n) for n in json.loads(text)["refs"]]
        except (ValueError, KeyError, TypeError):
            named = []  # it died while writing the mark itself
        for name in {*named, *refnames, "packed-refs"}:
            (self.common_dir / f"{name}.lock").unlink(missing_ok=True)
        os.ftruncate(fd, 0)

    def remove_lockfiles(self, refnames: list[str]) -> None:
        """Remove ``.lock`` files on refs that only gitlocks writes, under the mutex."""
        for name in refnames:
            (self.common_dir / f"{name}.lock").unlink(missing_ok=True)

    def _wait_for_lockfiles(self, refnames: list[str]) -> None:
        deadline = time.monotonic() + LOCKFILE_WAIT_SECONDS
        for name in [*refnames, "packed-refs"]:
            path = self.common_dir / f"{name}.lock"
            while path.exists():
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"{path} exists: another git command is updating refs, or one died "
                        "and left it behind; if no git command is running, remove the file"
                    )
                time.sleep(0.02)

    # --- the journal --------------------------------------------------------------------

    def journal(
        self, limit: int | None = None, *, start: str | None = None
    ) -> Iterator[JournalEntry]:
        """Journal entries (commits), newest first, from ``start`` or the journal ref."""
        version = self.version() if start is None else start
        if version is None or not self._is_commit(version):
            return
        # The chain is linear (each journal commit has at most one parent), so follow it
        # by hand: a sorted revwalk would read the whole history before the first entry.
        commit = self.repo[version]
        count = 0
        while (
            isinstance(commit, pygit2.Commit)
            and is_journal_commit(commit)  # never wander into project history
            and (limit is None or count < limit)
        ):
            yield JournalEntry(str(commit.id), tuple(journal.parse_events(commit.message)))
            count += 1
            parents = commit.parent_ids
            try:
                commit = self.repo[parents[0]] if parents else None
            except KeyError:
                return  # a shallow or pruned history: the journal ends here


def is_journal_commit(commit: pygit2.Commit) -> bool:
    """Whether ``commit`` is one of the journal's (see ``gitlocks.core.journal``)."""
    try:
        return journal.is_journal_commit(len(commit.parent_ids), len(commit.tree), commit.message)
    except (KeyError, ValueError, AttributeError):  # a missing tree, an odd message
        return False


def _common_dir(git_dir: Path) -> Path:
    """A linked worktree's git dir names the shared one in its ``commondir`` file."""
    pointer = git_dir / "commondir"
    try:
        text = pointer.read_text().strip()
    except OSError:
        return git_dir
    common = Path(text)
    return (common if common.is_absolute() else git_dir / common).resolve()


def _flock(fd: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    delay = 0.0005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise StoreError(f"cannot lock the store mutex: {exc.strerror}") from exc
        if time.monotonic() > deadline:
            raise StoreError(
                f"the lock store is busy: another gitlocks process held it for {timeout:.0f}s"
            )
        time.sleep(delay * (1 + random.random()))
        delay = min(delay * 2, 0.02)
