"""Who is asking, of which store, at what time (``Context``); and the steps every write
shares: ``event`` builds a journal event, ``sweep`` removes expired and landed records."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime, timedelta

from gitlocks.core.change import Change
from gitlocks.core.record import LockRecord, format_time, parse_duration, parse_time, utcnow
from gitlocks.core.table import Table
from gitlocks.errors import UsageError
from gitlocks.git.settings import Settings
from gitlocks.identity import Identity, host_identity, process_alive
from gitlocks.layout import (
    DEFAULT_INTERRUPTED_KEEP_SECONDS,
    DEFAULT_STALE_SECONDS,
    DEFAULT_TTL_SECONDS,
)
from gitlocks.store.local import Store
from gitlocks.store.location import Location

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any, TypeVar

    from gitlocks.core.liveness import Liveness
    from gitlocks.store.base import LockStore

    T = TypeVar("T")


class Context:
    """Who is asking, of which store, at what time. ``alive(pid, start_time)``: whether that
    is still the same running process (injectable for tests, as is ``clock``)."""

    __slots__ = (
        "alive",
        "clock",
        "host",
        "host_id",
        "identity",
        "keep_interrupted",
        "stale_after",
        "store",
        "warnings",
    )

    def __init__(
        self,
        store: LockStore,
        identity: Identity,
        clock: Callable[[], datetime] = utcnow,
        alive: Callable[[int, str], bool] = process_alive,
    ) -> None:
        self.store = store
        self.identity = identity
        self.clock = clock
        self.alive = alive
        self.host = os.uname().nodename
        # Where this process can judge a pid (boot id and pid namespace): see Liveness.
        self.host_id = host_identity()
        self.stale_after: int | None = None  # seconds, once read: alock.staleAfter, else 10m
        self.keep_interrupted: int | None = None  # alock.interruptedKeep, else 7d
        # What the command should tell the user but could decide without (a bad setting that
        # only shapes what is shown): the command line prints these on stderr.
        self.warnings: list[str] = []

    def now(self) -> datetime:
        return self.clock()

    def write(self, decide: Callable[[Table, datetime, Change, set[str]], T]) -> T:
        """Run ``decide(table, now, change, gone)`` under the store's mutex once ``sweep`` has
        put the expired and landed records (``gone``) in ``change``, as every write starts; the
        store applies ``change`` and returns what ``decide`` answers."""

        def run(table: Table) -> tuple[Change, T]:
            now = self.now()
            change = Change()
            gone = sweep(self, table, now, change)
            return change, decide(table, now, change, gone)

        return self.store.transact(run)

    def renewal_due(self, record: LockRecord, lifetime: int, *, share: bool = False) -> bool:
        """Whether renewing ``record`` for ``lifetime`` from now is worth a write: always in
        local mode; in remote mode, where it is a push, only once less than half its lifetime is
        left or its holder has been quiet for half of ``alock.staleAfter`` (a quarter of each when
        ``share``: it rides on a push made anyway). docs/design.md, section 5.9."""
        if not self.store.remote:
            return True
        now = self.now()
        left = (parse_time(record.expires_at) - now).total_seconds()
        quiet = (now - record.last_active()).total_seconds()
        if share:
            return left < lifetime * 0.75 or quiet >= self.stale_seconds() * 0.25
        return left < lifetime * 0.5 or quiet >= self.stale_seconds() * 0.5

    def stale_seconds(self) -> int:
        """``alock.staleAfter``: it only marks quiet holders STALE, so a bad value falls
        back to the default with a warning instead of stopping the command."""
        if self.stale_after is None:
            try:
                self.stale_after = self.store.settings.duration(
                    "alock.staleAfter", DEFAULT_STALE_SECONDS
                )
            except UsageError as exc:
                self.warnings.append(f"{exc}; using the default, 10m")
                self.stale_after = DEFAULT_STALE_SECONDS
        return self.stale_after

    def session_fields(self) -> dict[str, Any]:
        """The fields naming this session in a record it writes or takes over. Its
        ``host_id`` is ours for a session on this host, "" (never judged) for one we only
        know by another host's name."""
        session = self.identity.session
        same = not session.host or session.host == self.host
        return {
            "host": session.host or self.host,
            "host_id": self.host_id if same else "",
            "pid": session.pid,
            "pid_start": session.start_time,
            "session": session.name,
        }

    def liveness(self) -> Liveness:
        """A judge of holders for one decision (remembers each process it asked about)."""
        from gitlocks.core.liveness import Liveness  # only where holders are judged

        return Liveness(self.host_id, self.alive, self.now(), self.stale_seconds())

    def ttl(self, typed: str | None = None, *, what: str = "--ttl") -> int:
        """A claim's lifetime: ``typed`` if given, else ``alock.ttl``, else 30 minutes."""
        if typed is not None:
            return parse_duration(typed, what=what)
        return self.store.settings.duration("alock.ttl", DEFAULT_TTL_SECONDS)

    def interrupted_keep(self) -> int:
        """How long expired interrupted work is kept: ``alock.interruptedKeep``, else 7d."""
        if self.keep_interrupted is None:
            self.keep_interrupted = self.store.settings.duration(
                "alock.interruptedKeep", DEFAULT_INTERRUPTED_KEEP_SECONDS
            )
        return self.keep_interrupted


def open_context(
    start: str | os.PathLike[str] | None,
    identity: Identity | Callable[[], Identity],
    *,
    opened: tuple[str, str | None, Settings] | None = None,
) -> Context:
    """The service context of the repository at ``start`` (its remote's store in remote mode).
    ``identity`` may be a function, called once the repository is found. ``opened``: its git
    directory, object format and settings, read already by the caller (the guard)."""
    if opened is None:
        store = Store.discover(start)
    else:
        git_dir, object_format, configured = opened
        where = Location(git_dir, os.fspath(start or "."), False, object_format)
        store = Store(where, configured=configured)
    if store.config_get("alock.remote"):
        # Imported here: the remote protocol costs start-up time; only remote mode needs it.
        from gitlocks.store.remote import RemoteStore

        store = RemoteStore(store.where, configured=store.settings)
    who = identity if isinstance(identity, Identity) else identity()
    if who.session_source == "harness":
        # A harness session acting here, through its shell or MCP: its end releases, and
        # its turns renew, what it claims in this repository too (docs/design.md, §6.5).
        from gitlocks.identity.sessions import add_repository

        add_repository(who.session, os.fspath(store.common_dir), os.fspath(store.root))
    return Context(store=store, identity=who)


def event(kind: str, record: LockRecord, now: datetime, **extra: Any) -> dict[str, Any]:
    return {"event": kind, "at": format_time(now), **record.brief(), **extra}


def put(change: Change, kind: str, record: LockRecord, now: datetime, **extra: Any) -> None:
    """Write ``record`` by ``change``, journaled as ``kind``."""
    change.put.append(record)
    change.events.append(event(kind, record, now, **extra))


def drop(
    change: Change, gone: set[str], kind: str, record: LockRecord, now: datetime, **extra: Any
) -> None:
    """Delete ``record`` by ``change``, journaled as ``kind``; its id joins ``gone``."""
    change.delete.append(record.id)
    change.events.append(event(kind, record, now, **extra))
    gone.add(record.id)


def sweep(ctx: Context, table: Table, now: datetime, change: Change) -> set[str]:
    """Schedule every expired record for deletion, and every claim whose work has landed
    (``landing``); return their ids. Interrupted work is kept past its expiry until
    ``alock.interruptedKeep`` has passed (docs/design.md, section 3.6)."""
    gone: set[str] = set()
    expired = table.expired(format_time(now))
    life = ctx.liveness() if any(r.notes for r in expired) else None
    for record in expired:
        if life is not None and record.notes and life.dead(record):
            kept_until = record.expires() + timedelta(seconds=ctx.interrupted_keep())
            if now < kept_until:
                continue
            extra: dict[str, Any] = {"interrupted": True}
        else:
            extra = {}
        # ``by``: whose write swept it (the journal names who removed what, every time).
        drop(change, gone, "expired", record, now, by=ctx.identity.holder, **extra)
    if not table.landing():  # found from the summaries: most tables have none
        return gone
    from gitlocks.service import landing  # only when some claim waits on a merge

    for record in landing.land(ctx.store, table, gone, ctx.host_id):
        by, branch, commits = ctx.identity.holder, record.until_merged, list(record.awaiting)
        drop(change, gone, "landed", record, now, by=by, branch=branch, commits=commits)
    return gone


def live_table(ctx: Context) -> tuple[Table, list[LockRecord]]:
    """The table and its unexpired records, oldest first."""
    table = ctx.store.read_table()
    now = format_time(ctx.now())
    return table, table.live(now)
