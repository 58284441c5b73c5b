"""The remote's lock refs, listed (``ls-remote --symref``) on a thread while a write whose
journal carries the table decides and pushes (docs/design.md, section 5.2).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from gitlocks.core.record import is_lock_id
from gitlocks.core.text import canonical_number
from gitlocks.errors import GitlocksError
from gitlocks.git.remote import GitRun
from gitlocks.layout import LOCK_PREFIX, SHARD_PREFIX
from gitlocks.store.push import RemoteTable, parse_listing


def listed(
    refs: dict[str, str], symrefs: dict[str, str], leases: dict[str, str]
) -> tuple[dict[str, str], dict[int, str]]:
    """The lock refs ``refs`` (ref -> value, as listed or advertised) holds at a value
    other than its lease in ``leases`` (lock id -> value), symbolic refs aside, and the
    shard journals' tips. Each of 10,000 refs is one lookup: only those out of step are
    checked for a lock id's shape."""
    moved = {}
    tips = {}
    start = len(LOCK_PREFIX)
    for name, oid in refs.items():
        if name.startswith(LOCK_PREFIX):
            lock_id = name[start:]
            if leases.get(lock_id) != oid and is_lock_id(lock_id) and name not in symrefs:
                moved[lock_id] = oid
        elif name.startswith(SHARD_PREFIX):
            number = canonical_number(name[len(SHARD_PREFIX) :])  # as gitlocks names one
            if number is not None:
                tips[number] = oid
    return moved, tips


class Listing:
    """The remote's lock refs, listed on a thread while a write pushes: what it shows
    decides nothing; a listing out of step makes the write ask the remote again."""

    def __init__(
        self,
        remote: str,
        sharded: bool,
        git: Callable[[list[str]], GitRun],
        not_a_blob: Callable[[str], bool],
        view_tips: Callable[[str | None], dict[int, str | None] | None],
    ) -> None:
        """``git`` runs a git command against the remote; ``not_a_blob`` says whether an
        object this repository holds is no blob; ``view_tips`` gives the shard tips of a
        local view commit (``Journal.view_tips``)."""
        self.run: GitRun | None = None
        self.refs: dict[str, str] | None = None  # listed: ref -> value
        self.symrefs: dict[str, str] = {}
        self.not_a_blob = not_a_blob
        self.view_tips = view_tips
        # Shard journals too: they tell another clone's write from a ref pushed by hand.
        patterns = [f"{LOCK_PREFIX}*", *([f"{SHARD_PREFIX}*"] if sharded else [])]
        args = ["-c", "protocol.version=2", "ls-remote", "--symref", remote, *patterns]

        def ask() -> None:
            try:
                self.run = git(args)
            except GitlocksError:
                pass

        # A daemon thread: a command that ends before it answers does not wait for it.
        self._asking = threading.Thread(target=ask, name="ls-remote", daemon=True)
        self._asking.start()

    def join(self) -> None:
        """Wait for the answer (at once when it is in)."""
        self._asking.join()

    def out_of_step(
        self, decided: RemoteTable, now: Callable[[], tuple[dict[str, str], str | None]]
    ) -> bool:
        """Whether a lock ref listed holds neither its value in the table decided on nor
        in the table after the write (``now()``: its locks and journal); symrefs and refs at
        no blob aside (never repaired). A listing that failed says nothing. On a sharded
        remote, a shard listed where neither table has it was written since: its lock refs
        are that write's, and none can be put right (docs/design.md, section 5.10)."""
        self.join()
        if self.refs is None:
            if self.run is None or self.run.code != 0:
                return False
            self.refs, self.symrefs = parse_listing(self.run.out)
        moved, tips = listed(self.refs, self.symrefs, decided.leases)
        moved = {i: v for i, v in moved.items() if not self.not_a_blob(v)}
        if not moved:
            return False
        locks, journal = now()
        if not any(locks.get(i) != value for i, value in moved.items()):
            return False
        if not decided.shards:
            return True
        after = self.view_tips(journal) or {}
        return not any(tips.get(k) not in (t, after.get(k)) for k, t in decided.shards.items())
