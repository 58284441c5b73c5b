"""The verbs that read the lock table: list, check, status, log and watch."""

from __future__ import annotations

import json
import sys
import time
from typing import Annotated

import typer

from gitlocks.cli.common import (
    AsOption,
    FreshOption,
    JsonOption,
    dump_json,
    finish,
    out,
    reply,
    verbs,
)
from gitlocks.cli.context import context, entries, require, say_staleness, warn_problems
from gitlocks.core import journal as core_journal
from gitlocks.core.record import parse_duration, utcnow
from gitlocks.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_REFUSED, UsageError
from gitlocks.git.changes import staged_paths
from gitlocks.render import journal as render_journal
from gitlocks.render import locks as render
from gitlocks.render import status as render_status
from gitlocks.service import journal, locks
from gitlocks.service.context import live_table
from gitlocks.service.lifecycle import states
from gitlocks.service.status import status as status_of
from gitlocks.store.local import Store

app = verbs()


def _list(as_id: str | None, as_json: bool, fresh: bool) -> None:
    ctx = context(as_id, fresh=fresh)
    say_staleness(ctx.store)
    table, live = live_table(ctx)
    if table.problems:
        sys.stderr.write(render.problems(table.problems) + "\n")
    if as_json:
        dump_json([r.to_dict() for r in live])
    else:
        out(render.table(live, ctx.identity.holder, ctx.now(), states(ctx, live)))


@app.command("list")
def list_(as_id: AsOption = None, as_json: JsonOption = False, fresh: FreshOption = False) -> None:
    """Show the lock table; your locks are marked with *.

    Example: git alock list --json
    """
    _list(as_id, as_json, fresh)


@app.command("ls", hidden=True)
def ls(as_id: AsOption = None, as_json: JsonOption = False, fresh: FreshOption = False) -> None:
    """Same as list."""
    _list(as_id, as_json, fresh)


@app.command()
def check(
    paths: Annotated[list[str] | None, typer.Argument(help="Paths to ask about.")] = None,
    staged: Annotated[
        bool, typer.Option("--staged", help="Check the paths staged for the next commit.")
    ] = False,
    as_id: AsOption = None,
    as_json: JsonOption = False,
    fresh: FreshOption = False,
) -> None:
    """Say FREE, YOURS or HELD for each PATH, or each staged path (exit 1 when any is HELD).

    Example: git alock check src/api/auth.py; git alock check --staged
    """
    if staged and paths:
        raise UsageError("give paths or --staged, not both")
    ctx = context(as_id, fresh=fresh)
    say_staleness(ctx.store)
    if staged:
        items = locks.check_paths(ctx, staged_paths())
    else:
        items = locks.check(ctx, entries(ctx, require(paths, "path (or --staged)")))
    warn_problems(ctx)
    reply([i.to_dict() for i in items], render.check(items, ctx.now()), as_json)
    finish(EXIT_REFUSED if any(i.status == "held" for i in items) else EXIT_OK)


@app.command()
def status(as_id: AsOption = None, as_json: JsonOption = False) -> None:
    """Your locks, others' (STALE, INTERRUPTED), and uncommitted edits outside your claims.

    Edits are read from every worktree of the repository; one inside someone else's
    claim or in no claim at all is listed, so agents that never claimed are noticed.

    Example: git alock status
    """
    ctx = context(as_id)
    report = status_of(ctx)
    reply(report.to_dict(), render_status.status(report, ctx.now()), as_json)
    finish(EXIT_OK)


@app.command()
def log(
    count: Annotated[
        int | None, typer.Option("-n", "--max-count", help="Show at most N events.", min=1)
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", help="Only events after: 2h, 1d, or a date/time."),
    ] = None,
    reverse: Annotated[bool, typer.Option("--reverse", help="Oldest first.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Show the journal of lock events, newest first, with local refusals marked.

    Example: git alock log -n 20 --since 2h
    """
    store = Store.discover()
    after = core_journal.since_time(since, utcnow()) if since else None
    shared = journal.events(store, limit=count, since=after)
    found = core_journal.merged(shared, journal.refusals(store, since=after), count)
    if reverse:
        found.reverse()
    text = "\n".join(render_journal.format_event(e) for e in found) or "no events"
    reply(found, text, as_json)
    finish(EXIT_OK)


@app.command()
def watch(
    interval: Annotated[
        float, typer.Option("--interval", help="Seconds between polls.", min=0.01)
    ] = 0.5,
    count: Annotated[
        int | None, typer.Option("--count", help="Stop after N events.", min=1)
    ] = None,
    timeout: Annotated[
        str | None, typer.Option("--timeout", help="Stop after this long: 30s, 5m.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Follow the journal live, one line per event, until Ctrl-C.

    Example: git alock watch --interval 1
    """
    store = Store.discover()
    deadline = None
    if timeout is not None:
        deadline = time.monotonic() + parse_duration(timeout, what="--timeout")
    seen = 0
    try:
        for batch in journal.follow(store, interval=interval):
            for event in batch:
                line = json.dumps(event, ensure_ascii=False, sort_keys=True)
                out(line if as_json else render_journal.format_event(event))
                seen += 1
                if count is not None and seen >= count:
                    finish(EXIT_OK)
            sys.stdout.flush()
            if deadline is not None and time.monotonic() >= deadline:
                finish(EXIT_OK)
    except KeyboardInterrupt:
        finish(EXIT_INTERRUPTED)
