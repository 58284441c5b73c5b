"""Writing gitlocks' refs so that a failure or a crash never leaves journal and locks apart.

A write moves some lock refs and (usually) the journal ref. libgit2 applies a
transaction's refs one by one in no set order, and a delete of a packed ref can fail
half-way when ``git pack-refs`` holds ``packed-refs.lock``. So a write here is two steps
with one commit point (docs/design.md, section 4.3):

1. the lock refs move, in one transaction, while the journal ref stays locked;
2. the journal ref moves: the commit point.

Before step 1 the writer records an undo/redo log in the mutex file it holds: every ref
it touches with its old and new value. A write that fails puts back the refs it moved, so
it leaves no event behind. A writer that dies leaves the log, and the next one (holding
the mutex, so it knows the writer is dead) finishes the job: forward when the journal
ref already has the new value, backward otherwise. It removes only the ``.lock`` files of
refs the log names inside gitlocks' namespaces, never ``packed-refs.lock`` (waited for,
as for any live git command, then named in the error).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pygit2

from gitlocks.errors import StoreError
from gitlocks.layout import JOURNAL_REF, LOCKFILE_WAIT_SECONDS, OWN_REF_PREFIXES, STAGING_PREFIX

Updates = Mapping[str, str | None]  # ref name -> new value, None to delete
_HEX_RE = re.compile(r"^[0-9a-f]{40,64}\Z")

# A ref name gitlocks may write: inside its namespaces, plain components, nothing odd.
_OWN_REF_RE = re.compile(
    r"^(?:"
    + "|".join(re.escape(p) for p in (*OWN_REF_PREFIXES, STAGING_PREFIX))
    + r")[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)*\Z"
)


def is_own_ref(name: object) -> bool:
    """Whether ``name`` is a ref inside gitlocks' namespaces, safe to name as a path."""
    return (
        isinstance(name, str)
        and _OWN_REF_RE.match(name) is not None
        and not any(part in ("", ".", "..") or part.endswith(".lock") for part in name.split("/"))
    )


class RefWriter:
    """Applies ref updates through the log in the mutex file open at ``fd``."""

    def __init__(self, repo: pygit2.Repository, common_dir: Path, fd: int) -> None:
        self.repo = repo
        self.common_dir = common_dir
        self.fd = fd

    def current(self, name: str) -> str | None:
        try:
            ref = self.repo.references.get(name)
        except (pygit2.GitError, ValueError):
            return None
        if ref is None or not isinstance(ref.target, pygit2.Oid):
            return None
        return str(ref.target)

    def write(
        self,
        updates: Updates,
        *,
        message: str = "gitlocks",
        expect: Callable[[], None] | None = None,
    ) -> None:
        """Move every ref in ``updates``; the journal ref, if named, last of all.

        ``expect`` runs once every ref is locked, before anything moves: the compare of a
        compare-and-swap (it raises to abandon the write). Raises ``StoreError`` (after
        putting back what moved) when git refuses.
        """
        for name in updates:
            if not is_own_ref(name):
                raise StoreError(f"refusing to write {name!r}: not a gitlocks ref")
        self.recover(list(updates))
        self.wait_for_lockfiles(list(updates))
        old = {name: self.current(name) for name in updates}
        self._log({"pid": os.getpid(), "old": old, "new": dict(updates)})
        try:
            self._apply(updates, message, expect)
        except pygit2.GitError as exc:
            self._put_back(old, updates)
            raise StoreError(f"cannot update the lock refs: {exc}") from exc
        except BaseException:
            self._put_back(old, updates)
            raise
        self._clear()

    def _apply(
        self, updates: Updates, message: str, expect: Callable[[], None] | None = None
    ) -> None:
        locks = {n: v for n, v in updates.items() if n != JOURNAL_REF}
        with self.repo.transaction() as journal_tx:
            if JOURNAL_REF in updates:
                journal_tx.lock_ref(JOURNAL_REF)  # held while the locks move
            if locks:
                with self.repo.transaction() as tx:  # commits the locks on leaving
                    for name in locks:
                        tx.lock_ref(name)
                    if expect is not None:
                        expect()
                    for name, value in locks.items():
                        _queue(tx, self.repo, name, value, message)
            elif expect is not None:
                expect()
            if JOURNAL_REF in updates:  # the commit point, on leaving
                _queue(journal_tx, self.repo, JOURNAL_REF, updates[JOURNAL_REF], message)

    def _put_back(self, old: Mapping[str, str | None], updates: Updates) -> None:
        """Undo a failed write: every ref that moved gets its old value back."""
        moved = {n: v for n, v in old.items() if self.current(n) == updates.get(n) != v}
        for _ in range(50):
            try:
                if moved:
                    self._apply(moved, "gitlocks: undo a failed write")
            except pygit2.GitError:
                time.sleep(0.05)  # pack-refs again: the log stays until we manage
                continue
            self._clear()
            return
        # Left to the next writer: the log in the mutex file says what to undo.

    def recover(self, writing: Sequence[str] = ()) -> None:
        """Finish a dead writer's job from its log: forward if its journal moved, else back.

        Its ``.lock`` files are cleared first: those of the refs its log names and of the
        refs about to be written (a log it died writing names nothing).
        """
        try:
            text = os.pread(self.fd, 1 << 24, 0)
        except OSError as exc:
            raise StoreError(f"cannot read the store mutex: {exc.strerror}") from exc
        if not text:
            return
        old, new, listed = _read_log(text)
        named = [n for n in {*old, *new} if is_own_ref(n)]
        # A log it died writing names nothing: then every .lock file on our own refs is its
        # (we hold the mutex, and nothing but gitlocks writes them).
        self.remove_lockfiles([*named, *listed, *writing, *self._own_lockfiles()])
        if named:
            journal = new.get(JOURNAL_REF)
            done = journal is not None and self.current(JOURNAL_REF) == journal
            target = new if done else old
            repair = {
                n: target.get(n)
                for n in named
                if n != JOURNAL_REF and n in target and self.current(n) != target.get(n)
            }
            if repair:
                try:
                    self._apply(repair, "gitlocks: finish a dead writer's update")
                except pygit2.GitError as exc:
                    raise StoreError(
                        f"cannot finish the update of a gitlocks process that died: {exc}"
                    ) from exc
        self._clear()

    def _own_lockfiles(self) -> list[str]:
        """The refs of every ``.lock`` file under gitlocks' own namespaces."""
        found = []
        for prefix in (*OWN_REF_PREFIXES, STAGING_PREFIX):
            top = self.common_dir / prefix
            for dirpath, _dirs, files in os.walk(top):
                rel = Path(dirpath).relative_to(self.common_dir).as_posix()
                found += [f"{rel}/{f[: -len('.lock')]}" for f in files if f.endswith(".lock")]
        return found

    def remove_lockfiles(self, refnames: list[str]) -> None:
        """Remove ``.lock`` files of gitlocks' own refs (we hold the mutex: nobody else
        writes them, so a lock file there is a dead writer's)."""
        for name in refnames:
            if is_own_ref(name):
                (self.common_dir / f"{name}.lock").unlink(missing_ok=True)

    def wait_for_lockfiles(self, refnames: list[str]) -> None:
        """Wait for ``.lock`` files of live git commands on our refs and on packed-refs.

        ``packed-refs.lock`` is never removed: a live ``git pack-refs`` or ``gc`` cannot be
        told from a dead one by its file, so after the wait we fail, naming it.
        """
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

    def _log(self, entry: dict[str, object]) -> None:
        data = json.dumps(entry).encode()
        try:
            os.pwrite(self.fd, data, 0)
            os.ftruncate(self.fd, len(data))
        except OSError as exc:
            raise StoreError(f"cannot write the store mutex: {exc.strerror}") from exc

    def _clear(self) -> None:
        os.ftruncate(self.fd, 0)


def _queue(
    tx: pygit2.ReferenceTransaction,
    repo: pygit2.Repository,
    name: str,
    value: str | None,
    message: str,
) -> None:
    if value is None:
        if repo.references.get(name) is not None:
            tx.remove(name)
    else:
        tx.set_target(name, pygit2.Oid(hex=value), message=message)


def _read_log(
    text: bytes,
) -> tuple[dict[str, str | None], dict[str, str | None], list[str]]:
    """(old values, new values, names only) from a dead writer's log; empty for one it died
    writing. Names only: the log of an earlier version, which listed refs without values."""
    try:
        data = json.loads(text)
        old, new, listed = data.get("old", {}), data.get("new", {}), data.get("refs", [])
    except (ValueError, RecursionError, AttributeError):
        return {}, {}, []
    if not isinstance(old, dict) or not isinstance(new, dict) or not isinstance(listed, list):
        return {}, {}, []
    return _values(old), _values(new), [n for n in listed if is_own_ref(n)]


def _values(data: dict[object, object]) -> dict[str, str | None]:
    """The entries that name a ref and a value (an object id, or None: absent)."""
    return {
        k: v
        for k, v in data.items()
        if isinstance(k, str) and (v is None or (isinstance(v, str) and _HEX_RE.match(v)))
    }
