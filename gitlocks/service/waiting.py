"""A claim that waits its turn: the loop around ``locks.acquire``, which joins the queue
once, then sleeps until the table may have changed and asks again (how often, locally and
in remote mode: docs/design.md, section 4.7)."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any, NoReturn

from gitlocks.core.change import Change
from gitlocks.core.record import LockRecord, format_time, parse_duration
from gitlocks.core.scope import ScopeEntry
from gitlocks.core.table import Table
from gitlocks.errors import GitlocksError, RemoteError
from gitlocks.git import run
from gitlocks.identity import process_start_time
from gitlocks.layout import DEFAULT_WAIT_SECONDS, JOURNAL_REF
from gitlocks.service import locks
from gitlocks.service.context import Context, drop
from gitlocks.service.results import AcquireResult
from gitlocks.store.base import LockStore

# Seconds between reads of the journal ref (locally), and between fetches (remote mode):
# from the first to the last, growing by half each time nothing moved.
LOCAL_POLL = (0.05, 0.25)
REMOTE_POLL = (0.5, 5.0)
# Seconds after which a waiter asks again although nothing moved (an expiry, a death).
LOCAL_RECHECK, REMOTE_RECHECK = 1.0, 10.0


def wait_seconds(ctx: Context, typed: str | None, *, what: str = "--wait") -> int:
    """How long ``--wait`` waits: ``typed``, else ``alock.waitDefault``, else 5 minutes."""
    if typed:
        return parse_duration(typed, what=what)
    return ctx.store.settings.duration("alock.waitDefault", DEFAULT_WAIT_SECONDS)


def acquire(
    ctx: Context,
    entries: list[ScopeEntry],
    *,
    wait: float,
    on_waiting: Callable[[AcquireResult], None] | None = None,
    interruptible: bool = False,
    on_note: Callable[[str], None] | None = None,
    **claim: Any,
) -> AcquireResult:
    """``locks.acquire`` that waits up to ``wait`` seconds for its turn.

    ``on_waiting`` is told when the claim joins the queue and whenever what stands in its way
    changes; ``on_note``, in one sentence, when a stopped wait could not take its waiter out
    of the queue, and once when the lock remote did not answer (the wait goes on).
    ``interruptible``: SIGINT ends the wait, the waiter leaves the queue and
    ``KeyboardInterrupt`` is raised (exit 130); SIGTERM and SIGHUP end it alike, then the
    process as that signal does. Only the main thread can."""
    started = time.monotonic()
    ends = started + wait
    deadline = ctx.now() + timedelta(seconds=wait)
    # Ctrl-C is taken from the start: one between joining the queue and the loop must
    # still take the waiter out.
    with _interrupts(interruptible) as stop:
        try:
            result = locks.acquire(ctx, entries, deadline=deadline, **claim)
        except BaseException:
            # Ctrl-C reaches git too: one that ends the join's write mid-way may leave the
            # waiter written, and unknown here. Any this process wrote leaves.
            if stop.is_set():
                leave(ctx, None)
                stop.end()
            raise
        if result.status != "waiting" or result.waiter is None:
            # A signal during a write that granted the claim came too late to stop it: the
            # answer says so (ACQUIRED), rather than leave a claim its holder never heard of.
            if stop.is_set() and result.status not in ("acquired", "already_yours"):
                stop.end()
            return result
        waiter = result.waiter
        try:
            if on_waiting is not None:
                on_waiting(result)
            seen = _blockers(result)
            watch = Watch(ctx.store)
            said_silent = False  # a lock remote that does not answer is said once
            silent: RemoteError | None = None  # out of time, and the lock remote silent
            while result.status == "waiting":
                if not stop.is_set():
                    watch.wait(ends, stop)
                if stop.is_set():
                    raise KeyboardInterrupt
                if watch.failed is not None and time.monotonic() >= ends:
                    # Out of time, its last fetch failed: no ask that would take as long again
                    # to fail (the wait ends at most one remote timeout late, exit 2).
                    silent = watch.failed
                    raise silent
                # Out of time by this clock: the decision must see it so, whatever the
                # clock it reads says (it counts whole seconds).
                cut = deadline if time.monotonic() < ends else ctx.now() - timedelta(seconds=1)
                try:
                    result = locks.acquire(ctx, entries, deadline=cut, queued=waiter, **claim)
                except RemoteError as exc:
                    if time.monotonic() >= ends:
                        silent = exc
                        raise  # out of time, and the lock remote still cannot say
                    watch.failed = watch.failed or exc
                else:
                    if result.status == "waiting" and result.waiter is not None:
                        # The record as last written (renewed, or joined again once it
                        # lapsed): the next ask, and leaving, name it.
                        waiter = result.waiter
                if watch.failed is not None:
                    if on_note is not None and not said_silent:
                        on_note(
                            f"the lock remote did not answer ({watch.failed}); still waiting, "
                            f"and asking again, until {format_time(deadline)}"
                        )
                    said_silent, watch.failed = True, None
                if result.status == "waiting" and _blockers(result) != seen:
                    seen = _blockers(result)
                    if on_waiting is not None:
                        on_waiting(result)
        except BaseException:
            # A remote silent to the end is not asked again to take the waiter out: its
            # record expires a few seconds after its wait (``queue.waiter_expiry``).
            stuck = leave(ctx, waiter) if silent is None else _stuck(waiter, silent)
            if stuck is not None and on_note is not None:
                on_note(stuck)
            if stop.is_set():
                stop.end()
            raise
    result.waiter = waiter
    result.waited = time.monotonic() - started
    return result


def _stuck(waiter: LockRecord, why: object) -> str:
    return (
        f"the waiter {waiter.id} could not leave the queue ({why}); a write from this "
        f"host takes it out as dead, and it expires at {waiter.expires_at}"
    )


def _blockers(result: AcquireResult) -> list[str]:
    return [c.record.id for c in result.conflicts]


def leave(ctx: Context, waiter: LockRecord | None) -> str | None:
    """Take ``waiter`` out of the queue (a wait stopped), or (None) every waiter this very
    process wrote (its pid, start time and machine: a join stopped mid-write, whose waiter
    this process never saw). None when it is out, else why it is not (its death, seen on
    this host, or its expiry takes it out anyway)."""
    pid = os.getpid()
    start = (process_start_time(pid) or "") if waiter is None else ""

    def decide(table: Table) -> tuple[Change, None]:
        change, now = Change(), ctx.now()
        if waiter is not None:
            found = [waiter] if waiter.id in table.records else []
        else:
            mine, waiters = (pid, start, ctx.host_id), table.waiters(format_time(now))
            found = [r for r in waiters if (r.pid, r.pid_start, r.host_id) == mine]
        for record in found:
            drop(change, set(), "left_queue", record, now, why="stopped", by=ctx.identity.holder)
        return change, None

    try:
        ctx.store.transact(decide)
    except GitlocksError as exc:
        return None if waiter is None else _stuck(waiter, exc)
    return None


class Stop(threading.Event):
    """Set by the signal that stops a wait (``signum``)."""

    def __init__(self) -> None:
        super().__init__()
        self.signum = signal.SIGINT

    def caught(self, signum: int, _frame: object) -> None:
        self.signum = signal.Signals(signum)
        self.set()

    def end(self) -> NoReturn:
        """End as the signal asks, the waiter out of the queue: Ctrl-C as an interrupt
        (exit 130), any other as that signal ends a process (the exit status says so)."""
        if self.signum == signal.SIGINT:
            raise KeyboardInterrupt
        signal.signal(self.signum, signal.SIG_DFL)
        os.kill(os.getpid(), self.signum)
        raise SystemExit(128 + self.signum)  # not reached: the signal ends the process


# The signals that stop a wait: Ctrl-C, a harness's time limit, a closed terminal.
STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def _interrupts(wanted: bool) -> Iterator[Stop]:
    """An event set by SIGINT, SIGTERM or SIGHUP while inside, instead of an exception
    raised anywhere (in the middle of a write) or an end with the waiter left in the
    queue, where only a write from this machine could judge it dead: the loop sees it
    between two waits. A signal ignored (``nohup``) stays ignored. Meanwhile the git it
    starts runs in a session of its own (``run.shield``), out of reach of a terminal's
    Ctrl-C: the step git takes (joining, a fetch's mirror, leaving) is finished, not cut
    in half, and a second Ctrl-C does not cut the leaving short (docs/design.md, 4.7)."""
    stop = Stop()
    if not wanted or threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = {}
    for signum in STOPPING:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            previous[signum] = signal.signal(signum, stop.caught)
    shielded = run.shield(True)
    try:
        yield stop
    finally:
        run.shield(shielded)
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class Watch:
    """Sleeps until the lock table may have changed: the journal ref moved (local), a fetch
    brought something (remote), a recheck is due, the time is out, or ``stop`` is set.
    Locally the ref files are looked at (``os.stat``), not asked of git, so that a long wait
    starts no thousands of processes; git is asked, less often, where refs are no files."""

    def __init__(self, store: LockStore) -> None:
        self.store = store
        self.remote = bool(store.remote)
        self.files = not self.remote and not store.reftable
        self.first, self.last = REMOTE_POLL if self.remote else LOCAL_POLL
        if self.files:
            self.last = self.first  # a stat costs microseconds: no need to back off
        self.recheck = REMOTE_RECHECK if self.remote else LOCAL_RECHECK
        self.seen = None if self.remote else self._stamp()
        self.failed: RemoteError | None = None  # the last fetch or ask the remote failed

    def wait(self, ends: float, stop: threading.Event) -> None:
        pause = self.first
        due = min(ends, time.monotonic() + self.recheck)
        while not stop.is_set():
            left = due - time.monotonic()
            if left <= 0:
                return
            if stop.wait(min(pause, left)) or time.monotonic() >= due:
                return  # out of time, the waiter asks anyway: no fetch before it
            if self._moved():
                return
            pause = min(self.last, pause * 1.5)

    def _moved(self) -> bool:
        if self.remote:
            # A fetch, never a push. One that fails ends no wait (the remote may answer
            # the next): it is kept for the waiter to say, and nothing is known to move.
            try:
                return self.store.sync()
            except RemoteError as exc:
                self.failed = exc
                return False
        now = self._stamp()
        moved, self.seen = now != self.seen, now
        return moved

    def _stamp(self) -> object:
        if not self.files:
            return self.store.version()
        found: list[tuple[int, int, int] | None] = []
        for path in (JOURNAL_REF, "packed-refs"):
            try:
                info = os.stat(os.path.join(self.store.common_dir, path))
            except OSError:
                found.append(None)
            else:
                found.append((info.st_mtime_ns, info.st_size, info.st_ino))
        return tuple(found)
