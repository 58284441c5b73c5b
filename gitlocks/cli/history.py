"""The verbs that tell what happened and what is going on: status, log and watch."""

from __future__ import annotations

import gc
import time

from gitlocks.cli.common import AS_OPTION, JSON_OPTION, json_text, out, reply
from gitlocks.cli.context import context, warn_problems
from gitlocks.cli.declare import Exit, Option, Verbs
from gitlocks.core import journal as core_journal
from gitlocks.core.record import parse_duration, utcnow
from gitlocks.core.text import is_digits
from gitlocks.errors import EXIT_INTERRUPTED, EXIT_OK, UsageError
from gitlocks.render import journal as render_journal
from gitlocks.render import status as render_status
from gitlocks.service import journal
from gitlocks.service.status import status as status_of
from gitlocks.store.local import Store

app = Verbs()


@app.command(tool="Your locks, others', and uncommitted edits outside your claims.")
def status(as_id: str | None = AS_OPTION, as_json: bool = JSON_OPTION) -> None:
    """Your locks, others' (STALE, INTERRUPTED), and uncommitted edits outside your claims.

    Edits are read from every worktree of the repository; one inside someone else's
    claim or in no claim at all is listed, so agents that never claimed are noticed.

    Example: git alock status
    """
    ctx = context(as_id, land=True, clear=True)
    report = status_of(ctx)
    warn_problems(ctx)
    reply(report.to_dict(), render_status.status(report, ctx.now()), as_json)


@app.command(
    tool="The journal of lock events, newest first: who claimed, released, broke or "
    "took over what, and the refusals seen here."
)
def log(
    count: str | None = Option(
        "-n", "--max-count", default=None, metavar="N", help="Show at most N events."
    ),
    since: str | None = Option(
        "--since", default=None, help="Only events after: 2h, 1d, or a date/time."
    ),
    reverse: bool = Option("--reverse", default=False, help="Oldest first."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Show the journal of lock events, newest first, with local refusals marked.

    Example: git alock log -n 20 --since 2h
    """
    limit = whole_number(count, "-n") if count is not None else None
    store = Store.discover()
    after = core_journal.since_time(since, utcnow()) if since else None
    shared = journal.events(store, limit=limit, since=after)
    found = core_journal.merged(shared, journal.refusals(store, since=after), limit)
    if reverse:
        found.reverse()
    text = "\n".join(render_journal.format_event(e) for e in found) or "no events"
    reply(found, text, as_json)


@app.command()
def watch(
    interval: str = Option(
        "--interval", default="0.5", metavar="SECONDS", help="Seconds between polls (0.01 to 3600)."
    ),
    count: str | None = Option("--count", default=None, metavar="N", help="Stop after N events."),
    timeout: str | None = Option("--timeout", default=None, help="Stop after this long: 30s, 5m."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Follow the journal live, one line per event, until Ctrl-C.

    Example: git alock watch --interval 1
    """
    gc.enable()  # a long-lived process: the command's script left the collector off
    every = poll_interval(interval)
    stop_after = whole_number(count, "--count") if count is not None else None
    store = Store.discover()
    wait = None if timeout is None else parse_duration(timeout, what="--timeout")
    deadline = None if wait is None else time.monotonic() + wait
    seen = 0
    try:
        for batch in journal.follow(store, interval=every):
            for event in batch:
                line = json_text(event, sort_keys=True)
                out(line if as_json else render_journal.format_event(event))
                seen += 1
                if stop_after is not None and seen >= stop_after:
                    raise Exit(EXIT_OK)
            if deadline is not None and time.monotonic() >= deadline:
                raise Exit(EXIT_OK)
    except KeyboardInterrupt:
        raise Exit(EXIT_INTERRUPTED) from None


def whole_number(typed: str, option: str) -> int:
    """A count typed for ``option``: a whole number, at least 1. Past a billion (more than
    a journal holds; int() refuses thousands of digits) it reads as a billion."""
    text = typed.strip()
    digits = text.lstrip("0")
    if not is_digits(text) or not digits:
        shown = typed if len(typed) <= 40 else typed[:40] + "..."
        raise UsageError(f"invalid {option} {shown!r}: use a whole number of at least 1, e.g. 20")
    return 10**9 if len(digits) > 9 else int(digits)


def poll_interval(typed: str) -> float:
    """``--interval``: seconds from 0.01 to 3600 (nan and inf are refused too)."""
    try:
        value = float(typed)
    except ValueError:
        value = float("nan")
    if not 0.01 <= value <= 3600:
        raise UsageError(f"invalid --interval {typed!r}: use seconds from 0.01 to 3600, e.g. 0.5")
    return value
