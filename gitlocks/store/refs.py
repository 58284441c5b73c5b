"""Writing gitlocks' refs so that a failure or a crash never leaves journal and locks apart.

A write moves the lock refs, then the journal ref (the commit point), each through ``git
update-ref --stdin``, after logging every ref's old and new value in the mutex file; a
write that fails puts back what moved, and the next writer finishes a dead one's log,
forward or backward (docs/design.md, section 4.3).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Collection, Mapping, Sequence

from gitlocks.core.record import is_object_id
from gitlocks.core.text import NAME_CHARS, made_of
from gitlocks.errors import StoreError
from gitlocks.git.files import discard
from gitlocks.git.transaction import RefsRefused, Transaction
from gitlocks.layout import JOURNAL_REF, LOCKFILE_WAIT_SECONDS, OWN_REF_PREFIXES, STAGING_PREFIX

Updates = Mapping[str, str | None]  # ref name -> new value, None to delete

_OWN_PREFIXES = (*OWN_REF_PREFIXES, STAGING_PREFIX)


def is_own_ref(name: object) -> bool:
    """Whether ``name`` is a ref gitlocks may write, safe to name as a path: inside its
    namespaces, then components of ``[A-Za-z0-9._-]``, none empty, ``.``, ``..`` or
    ending ``.lock``."""
    return (
        isinstance(name, str)
        and name.startswith(_OWN_PREFIXES)
        and made_of(name, NAME_CHARS + "/")
        and not any(part in ("", ".", "..") or part.endswith(".lock") for part in name.split("/"))
    )


class RefWriter:
    """Applies ref updates through the log in the mutex file open at ``fd``.

    ``current`` reads the values of refs, all at once (None: absent or symbolic);
    ``separate``: the lock refs and the journal ref move in two transactions (the files
    backend), else in one (reftable: docs/design.md, section 4.3).
    """

    def __init__(
        self,
        git_dir: str,
        common_dir: str,
        fd: int,
        current: Callable[[Collection[str]], dict[str, str | None]],
        *,
        hexlen: int = 40,
        separate: bool = True,
    ) -> None:
        self.git_dir = git_dir
        self.common_dir = common_dir
        self.fd = fd
        self.current = current
        self.hexlen = hexlen
        self.separate = separate

    def write(
        self,
        updates: Updates,
        *,
        message: str = "gitlocks",
        old: Mapping[str, str | None] | None = None,
        expect: Callable[[Mapping[str, str | None]], None] | None = None,
    ) -> None:
        """Move every ref in ``updates``; the journal ref, if named, last of all.

        ``old``: each ref's value as listed under the mutex, for git to compare under its
        lock (read now when not given). ``expect(values)`` runs once every ref is locked,
        before anything moves: the compare of a compare-and-swap (it raises to abandon the
        write). Raises ``RefsRefused`` (after putting back what moved) when git refuses,
        ``StoreError`` when the write fails before git is asked.
        """
        for name in updates:
            if not is_own_ref(name):
                raise StoreError(f"refusing to write {name!r}: not a gitlocks ref")
        self.recover(list(updates))
        self.wait_for_lockfiles(list(updates))
        old = self.current(updates) if old is None else {n: old.get(n) for n in updates}
        self._log({"pid": os.getpid(), "old": old, "new": dict(updates)})
        try:
            self._apply(updates, old, message, expect)
        except RefsRefused as exc:
            self._put_back(old, updates)
            raise RefsRefused(f"cannot update the lock refs: {exc}") from exc
        except BaseException:
            self._put_back(old, updates)
            raise
        self._clear()

    def _apply(
        self,
        updates: Updates,
        old: Mapping[str, str | None],
        message: str,
        expect: Callable[[Mapping[str, str | None]], None] | None = None,
    ) -> None:
        """Lock the journal ref (git's compare of its old value included), then move the
        lock refs while it stays locked, then the journal ref: the commit point."""
        locks = [n for n in updates if n != JOURNAL_REF]
        steps = [locks, [JOURNAL_REF] if JOURNAL_REF in updates else []]
        if not self.separate:
            steps = [[*locks, *steps[1]]]
        txs: list[Transaction] = []
        try:
            for names in filter(None, steps):
                txs.append(tx := Transaction(self.git_dir, message))
                tx.names = tuple(names)
                for name in names:
                    tx.queue(name, updates[name], old.get(name), self.hexlen)
            # Every ref locked before the check: the transactions prepare side by side.
            for tx in reversed(txs):
                tx.ask("prepare")
            for tx in reversed(txs):
                tx.answer()
            if expect is not None:
                expect(self._locked_values(updates, old))
            for tx in txs:
                _commit(tx)
        finally:
            for tx in txs:
                tx.abort()  # whatever was not committed moves nowhere

    def _locked_values(
        self, updates: Updates, old: Mapping[str, str | None]
    ) -> dict[str, str | None]:
        """What each ref of ``updates`` holds while every one is locked: the old value git
        compared under its lock; only a ref deleted with no value to compare is listed now."""
        unchecked = [n for n in updates if updates[n] is None and old.get(n) is None]
        values = {n: old.get(n) for n in updates}
        if unchecked:
            values.update(self.current(unchecked))
        return values

    def _put_back(self, old: Mapping[str, str | None], updates: Updates) -> None:
        """Undo a failed write: every ref that moved gets its old value back."""
        now = self.current(old)
        moved = {n: v for n, v in old.items() if now[n] == updates.get(n) != v}
        for _ in range(50):
            try:
                if moved:
                    now = {n: updates.get(n) for n in moved}
                    self._apply(moved, now, "gitlocks: undo a failed write")
            except RefsRefused:
                time.sleep(0.05)  # pack-refs again: the log stays until we manage
                continue
            self._clear()
            return
        # Left to the next writer: the log in the mutex file says what to undo.

    def recover(self, writing: Sequence[str] = ()) -> None:
        """Finish a dead writer's job from its log: forward if its journal moved, else back;
        a ref at neither side's value was moved by another git, and stays. Its ``.lock``
        files are cleared first (docs/design.md, section 4.3)."""
        try:
            text = os.pread(self.fd, 1 << 24, 0)
        except OSError as exc:
            raise StoreError(f"cannot read the store mutex: {exc.strerror}") from exc
        if not text:
            return
        old, new, listed = _read_log(text)
        named = [n for n in {*old, *new} if is_own_ref(n)]
        # A log it died writing names nothing: every .lock file on our own refs is its.
        self.remove_lockfiles([*named, *listed, *writing, *self._own_lockfiles()])
        if named:
            journal = new.get(JOURNAL_REF)
            values = self.current([*named, JOURNAL_REF])
            done = journal is not None and values[JOURNAL_REF] == journal
            target, source = (new, old) if done else (old, new)
            repair = {
                n: target.get(n)
                for n in named
                if n != JOURNAL_REF
                and n in target
                and n in source
                and values[n] == source.get(n) != target.get(n)
            }
            if repair:
                now = {n: values[n] for n in repair}
                try:
                    self._apply(repair, now, "gitlocks: finish a dead writer's update")
                except RefsRefused as exc:
                    raise StoreError(
                        f"cannot finish the update of a gitlocks process that died: {exc}"
                    ) from exc
        self._clear()

    def _own_lockfiles(self) -> list[str]:
        """The refs of every ``.lock`` file under gitlocks' own namespaces."""
        found = []
        for prefix in _OWN_PREFIXES:
            top = os.path.join(self.common_dir, prefix)
            for dirpath, _dirs, files in os.walk(top):
                rel = os.path.relpath(dirpath, self.common_dir).replace(os.sep, "/")
                found += [f"{rel}/{f[: -len('.lock')]}" for f in files if f.endswith(".lock")]
        return found

    def remove_lockfiles(self, refnames: list[str]) -> None:
        """Remove ``.lock`` files of gitlocks' own refs (we hold the mutex: nobody else
        writes them, so a lock file there is a dead writer's)."""
        for name in refnames:
            if is_own_ref(name):
                discard(os.path.join(self.common_dir, f"{name}.lock"))

    def wait_for_lockfiles(self, refnames: list[str]) -> None:
        """Wait for ``.lock`` files of live git commands on our refs and on packed-refs
        (never removed: a live ``git pack-refs`` cannot be told from a dead one)."""
        deadline = time.monotonic() + LOCKFILE_WAIT_SECONDS
        for name in [*refnames, "packed-refs"]:
            path = os.path.join(self.common_dir, f"{name}.lock")
            while os.path.exists(path):
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


def _commit(tx: Transaction) -> None:
    """Commit one transaction: its refs move (one place, so a test can fail or kill it)."""
    tx.commit()


def _read_log(
    text: bytes,
) -> tuple[dict[str, str | None], dict[str, str | None], list[str]]:
    """(old values, new values, names only: an earlier version's) from a dead writer's
    log; empty for one it died writing."""
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
        if isinstance(k, str) and (v is None or (isinstance(v, str) and is_object_id(v)))
    }
