"""Remote mode's push: one compare-and-swap (``git push --atomic`` with a lease on every
ref) of the journal and the lock refs it changes, and an answer that is always true: won,
lost a race, refused, failed on the remote's side, or settled by asking the remote whether
it landed (docs/design.md, sections 5.2 and 5.7).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gitlocks.core.change import Change, check_sizes
from gitlocks.core.record import is_lock_id
from gitlocks.core.table import Table
from gitlocks.errors import GitlocksError, RemoteError, RemoteTimeout
from gitlocks.git.remote import (
    GitRun,
    PushLine,
    failure,
    lost_race,
    not_sent,
    remote_side,
    summarise,
    unreported,
)
from gitlocks.layout import JOURNAL_REF, LOCK_PREFIX, META_PREFIX
from gitlocks.store.mirror import Mirror

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any


def differing(
    leases: dict[str, str], refs: dict[str, str], new: dict[str, str], touched: set[str]
) -> list[str]:
    """The lock ids, in order, whose value leased on (``leases``) is not their value in the
    table after the change (``new``); only those ``touched`` when the leases are the table's
    own refs (10,000 refs, one comparison)."""
    maybe = touched if leases == refs else leases.keys() | new.keys()
    return [i for i in sorted(maybe) if leases.get(i) != new.get(i) and is_lock_id(i)]


def parse_listing(out: str) -> tuple[dict[str, str], dict[str, str]]:
    """``ls-remote --symref`` output: (ref -> value, symbolic ref -> target)."""
    refs = {}
    symrefs = {}
    for line in out.split("\n"):  # not splitlines(): a ref name may hold U+2028
        if not line:
            continue
        if line.startswith("ref: ") and "\t" in line:
            target, name = line[5:].split("\t", 1)
            symrefs[name] = target
            continue
        oid, _, name = line.partition("\t")
        refs[name] = oid
    return refs, symrefs


class RemoteTable(Table):
    """The remote's table as last seen (its journal commit's), with the values its lock
    refs had when fetched: what a push leases on and repairs."""

    __slots__ = ("held", "leases", "shards")

    def __init__(
        self,
        *,
        leases: dict[str, str],
        shards: dict[int, str | None],
        held: dict[int, dict[str, str]],
        **table: Any,
    ) -> None:
        super().__init__(**table)
        self.leases = leases
        # Sharded (docs/design.md 5.10): shard -> its journal commit, and -> its table.
        self.shards = shards
        self.held = held


class RemotePush(Mirror):
    """Pushing a decided change to the remote (``RemoteStore`` decides and retries)."""

    lease_override: dict[str, str] | None
    _rejected: str | None
    pushes = 0  # pushes sent by this store (what the push budget counts)

    def fetch(self) -> bool:  # the remote store's
        raise NotImplementedError

    def staged_journal(self) -> str | None:
        raise NotImplementedError

    def _push(self, table: RemoteTable, change: Change) -> bool:
        """One compare-and-swap push of ``change``; True when it won, False on a lost race.
        Each lock ref that differs from the new table is pushed with a lease on its value as
        fetched, so the push also repairs the refs (docs/design.md, section 5.2)."""
        self._rejected = None
        check_sizes(change)
        new = dict(table.refs)
        for lock_id in change.delete:
            new.pop(lock_id, None)
        for record in change.put:
            new[record.id] = self.objects.write_blob(record.to_json())
        touched = {*change.delete, *(r.id for r in change.put)}
        differ = differing(table.leases, table.refs, new, touched)
        if not self._check_journal(table.version):
            return False
        if self.journal_store.table(table.version) is None or self.lease_override is not None:
            self.check_symrefs()  # leases as the remote listed them (section 5.5)
        commit = str(self.journal_store.write(table.version, change.events, new))
        leases = [f"--force-with-lease={JOURNAL_REF}:{table.version or ''}"]
        specs = [f"{commit}:{JOURNAL_REF}"]
        self.lock_ref_specs(table, new, differ, touched, leases, specs)

        def landed() -> bool | None:
            now = self.staged_journal()
            if self.journal_store.holds(now, commit):
                return True
            return None if now == table.version else False

        return self._send(
            table,
            new,
            (leases, specs),
            ({JOURNAL_REF}, "!"),
            lambda: (commit, None),
            landed,
            lambda: self._moved({JOURNAL_REF: table.version}),
        )

    def _send(
        self,
        table: RemoteTable,
        new: dict[str, str],
        push: tuple[list[str], list[str]],
        journals: tuple[set[str], str],
        mirrored: Callable[[], tuple[str, dict[str, str] | None]],
        landed: Callable[[], bool | None],
        moved: Callable[[], bool],
    ) -> bool:
        """Send one push of (leases, refspecs) ``push`` and answer from what came back:
        True when it won (the local view then mirrors the journal and staged refs
        ``mirrored()`` names), False on a lost race. ``journals``: the journal refs it moves,
        and the flags that say one of them did not; ``landed`` settles a push that got no
        answer (``settle``); ``moved`` says whether the journals leased moved since."""
        moving, unmoved = journals
        self.pushes += 1
        try:
            run, lines = self._push_atomic(*push)
        except RemoteTimeout as exc:
            return self.settle(landed, str(exc), gave_up=True)
        if run.code == 0 and lines:
            if any(ln.ref in moving and ln.flag == "=" for ln in lines):
                return False  # someone pushed these very journal commits: not our win
            kept = {i: v for i, v in table.leases.items() if LOCK_PREFIX + i in self.remote_symrefs}
            journal, staged = mirrored()
            try:  # granted; a view that cannot follow now is repaired by the next fetch
                self._mirror(
                    table.leases,
                    {**new, **kept},
                    journal,
                    write_staging=True,
                    table=new,
                    previous=table.version,
                    staged_meta=staged,
                )
            except GitlocksError:
                pass
            return True
        refused = not_sent(run, lines, self.remote)
        if refused is not None:
            raise refused
        if not lines or unreported(lines):  # sent, no answer (for some ref): ask the remote
            return self.settle(landed, summarise(run.err), gave_up=False)
        if lost_race(lines):
            self._rejected = "; ".join(sorted({ln.reason for ln in lines if ln.flag == "!"}))
            return False
        if any("hook declined" in ln.reason for ln in lines) and moved():
            return False  # the remote's guard refused a stale lease (docs/design.md 6.9)
        if any(ln.ref in moving and ln.flag not in unmoved for ln in lines):
            # A ref refused before the remote's atomic transaction began (one it hides)
            # leaves the rest applied: a journal moved. Ask what landed.
            return self.settle(landed, summarise(run.err), gave_up=False)
        raise self._refused(lines, run)

    def lock_ref_specs(
        self,
        table: RemoteTable,
        new: dict[str, str],
        differ: list[str],
        touched: set[str],
        leases: list[str],
        specs: list[str],
    ) -> None:
        """Add the leases and refspecs that move the lock refs ``differ`` from their values
        in ``table.leases`` to ``new``'s: a symbolic ref is never pushed to."""
        for lock_id in differ:
            have, want = table.leases.get(lock_id), new.get(lock_id)
            ref = LOCK_PREFIX + lock_id
            if ref in self.remote_symrefs or (have is not None and self._not_a_blob(have)):
                # A symref, or one the remote would not name (at a branch or tag): never
                # pushed to (a value never fetched here is deleted with a lease on it).
                if lock_id in touched:
                    raise self._symref_error(ref)
                continue  # reported, never followed, never repaired
            if have is None and want is not None and lock_id not in touched:
                continue  # missing on the remote: only a write of that lock puts it back
            leases.append(f"--force-with-lease={ref}:{have or ''}")
            specs.append(f"{want}:{ref}" if want else f":{ref}")

    def settle(self, landed: Callable[[], bool | None], said: str, *, gave_up: bool) -> bool:
        """A push whose outcome is unknown (sent, then no answer): fetch, then answer from
        ``landed``: True (ours is there, or a write on top of it), False (another write is
        there instead: decide again), None (the remote is as it was: raise, saying so).
        ``gave_up``: we stopped waiting (a timeout), so the remote may still be applying
        the push: a journal not moved yet proves nothing."""
        if self.deadline is not None and not self.deadline_firm:
            # Asking costs one more bound, never less; a firm deadline (the guard's) none.
            self.deadline = max(self.deadline, time.monotonic() + self.timeout)
        try:
            self.fetch()
        except RemoteError as exc:
            raise RemoteError(
                f"the push to the lock remote {self.remote!r} may have landed: no answer came "
                f"back ({said}), and the remote cannot be asked now whether it did ({exc}). "
                "git alock sync tells once the remote answers"
            ) from exc
        outcome = landed()
        if outcome is not None:
            if outcome:
                self.lease_override = None
            return outcome
        if gave_up:
            said = said.split(". ", 1)[0]  # what follows is said here, in full
            raise RemoteError(
                f"the push to the lock remote {self.remote!r} got no answer in time ({said}); "
                "it had not landed when the remote was asked, but the remote may still be "
                "applying it: git alock sync tells whether it did, before you try again"
            )
        raise RemoteError(
            f"the push to the lock remote {self.remote!r} broke off ({said}) and did not "
            "land: the remote's journal is unchanged, nothing was written. Try again"
        )

    def ls_remote(self, patterns: list[str]) -> tuple[dict[str, str], dict[str, str]]:
        """``ls-remote --symref`` of ``patterns``: (ref -> value, symbolic ref -> target)."""
        run = self._git(
            ["-c", "protocol.version=2", "ls-remote", "--symref", self.remote, *patterns],
            what="ls-remote of",
        )
        if run.code != 0:
            raise failure(run, self.remote, "ls-remote")
        return parse_listing(run.out)

    def _moved(self, expected: dict[str, str | None]) -> bool:
        """Whether the remote's refs (``ls-remote``) differ from ``expected`` (ref -> value,
        None: absent); False when the remote cannot be asked."""
        run = self._git(["ls-remote", self.remote, *expected], what="ls-remote of")
        now = parse_listing(run.out)[0] if run.code == 0 else expected
        return any(now.get(ref) != value for ref, value in expected.items())

    def _refused(self, lines: list[PushLine], run: GitRun, extra: str = "") -> RemoteError:
        broke = remote_side(lines, run.err)
        if broke is not None:
            return RemoteError(
                f"the lock remote {self.remote!r} failed on its own side and stored nothing "
                f"(git said: {broke}). This is no refusal of lock refs: the remote's disk "
                "or repository needs looking at (full, read-only, being repacked?). Try again "
                "later"
            )
        reasons = sorted({ln.reason for ln in lines if ln.flag == "!"}) or [summarise(run.err)]
        said = [
            line.removeprefix("remote: ").strip()
            for line in run.err.splitlines()
            if line.startswith("remote: alock: ")
        ]
        if said:  # the remote's own gitlocks hook said why: that is the answer
            return RemoteError(
                f"the lock remote {self.remote!r} refused the write: " + "; ".join(said)
            )
        return RemoteError(
            f"the lock remote {self.remote!r} refused the lock refs ({'; '.join(reasons)}). "
            f"{extra}Some hosts refuse refs outside refs/heads and refs/tags, refs that point "
            "at blobs, or deleting refs, or hide them (receive.hideRefs): use a dedicated "
            "bare repository as the lock remote, or local mode (git alock remote --off)"
        )

    def _symref_error(self, ref: str) -> RemoteError:
        target = self.remote_symrefs.get(ref)
        what = f"a symbolic ref to {target}" if target else "not a lock record (no blob)"
        return RemoteError(
            f"{ref} on the lock remote {self.remote!r} is {what}: gitlocks never writes "
            "through or over one. Remove it on the remote itself (it was not made by gitlocks)"
        )

    def repairable(self, table: RemoteTable) -> list[str]:
        """The lock refs, as listed (``table.leases``), that a push puts right (not at the
        table's value, never symbolic nor at no blob): a ``repaired`` event names these."""
        return sorted(
            i
            for i, have in table.leases.items()
            if have != table.refs.get(i)
            and LOCK_PREFIX + i not in self.remote_symrefs
            and not self._not_a_blob(have)
        )

    def _not_a_blob(self, oid: str) -> bool:
        """Whether ``oid`` is an object this repository holds that is no blob."""
        found = self.objects.read(oid)
        return found is not None and found[0] != "blob"

    def _check_journal(self, version: str | None) -> bool:
        """Before a push leases the journal ref on ``version``: it must hold a journal
        commit, or it is never written over (docs/design.md, section 5.5). False when the
        remote's journal is no longer ``version``: fetch and decide again."""
        if version is None or self.journal_store.commit_of(version) is not None:
            return True
        self.check_symrefs([JOURNAL_REF])  # raises, naming it, for a symref it can see
        if self._moved({JOURNAL_REF: version}):
            return False  # put right on the remote since we looked: fetch and decide again
        raise RemoteError(
            f"the journal ref {JOURNAL_REF} on the lock remote {self.remote!r} holds "
            f"{version[:12]}, which is not a gitlocks journal commit (moved by hand, or a "
            "symbolic ref to a branch); nothing was changed. Put it right on the remote "
            f"itself (git push {self.remote} :{JOURNAL_REF} deletes it; the next write "
            "then starts a fresh journal)"
        )

    def check_symrefs(self, names: list[str] | None = None) -> None:
        """Learn which of ``names`` (default: every ref in the remote's lock namespaces) are
        symbolic on the remote, just before we push to them or read the journal."""
        asked = names if names is not None and len(names) <= 256 else None
        found = self.ls_remote(asked or [f"{LOCK_PREFIX}*", f"{META_PREFIX}*"])[1]
        if asked is None:
            self.remote_symrefs = found
        else:
            for name in asked:
                self.remote_symrefs.pop(name, None)
            self.remote_symrefs.update({n: t for n, t in found.items() if n in asked})
        self._remote_cache = None
        if JOURNAL_REF in found:
            raise RemoteError(
                f"the journal ref {JOURNAL_REF} on the lock remote {self.remote!r} is a symbolic "
                f"ref to {found[JOURNAL_REF]}: gitlocks never writes through one. Remove it on "
                "the remote itself (it was not made by gitlocks); nothing was changed"
            )
