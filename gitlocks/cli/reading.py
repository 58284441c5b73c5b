"""The verbs that read the lock table: list and check."""

from __future__ import annotations

from gitlocks.cli.common import AS_OPTION, FRESH_OPTION, JSON_OPTION, dump_json, out, reply
from gitlocks.cli.context import context, entries, require, warn_problems
from gitlocks.cli.declare import NOT_IN_TOOL, Argument, Exit, InTool, Option, Verbs
from gitlocks.core.record import format_time
from gitlocks.errors import EXIT_OK, EXIT_REFUSED, UsageError
from gitlocks.render import locks as render
from gitlocks.service import locks
from gitlocks.service.context import live_table
from gitlocks.service.lifecycle import states

app = Verbs()


LONG_OPTION = Option(
    "--long",
    "-l",
    default=False,
    help="Also show where each holder runs: host, session, worktree.",
    tool=NOT_IN_TOOL,
)


@app.command("list", tool="Every live lock.")
def list_(
    as_id: str | None = AS_OPTION,
    as_json: bool = JSON_OPTION,
    fresh: bool = FRESH_OPTION,
    long: bool = LONG_OPTION,
) -> None:
    """Show the lock table; your locks are marked with *.

    Example: git alock list --long; git alock list --json
    """
    ctx = context(as_id, fresh=fresh, land=True, clear=True)
    table, live = live_table(ctx)
    if as_json:
        dump_json([r.to_dict() for r in live])
    else:
        out(render.table(live, ctx.identity.holder, ctx.now(), states(ctx, live), long=long))
        queued = table.waiters(format_time(ctx.now()))
        if queued:
            out(render.queue(queued, ctx.identity.holder, ctx.now()))
    warn_problems(ctx)


@app.command("ls", hidden=True)
def ls(
    as_id: str | None = AS_OPTION,
    as_json: bool = JSON_OPTION,
    fresh: bool = FRESH_OPTION,
    long: bool = LONG_OPTION,
) -> None:
    """Show the lock table (same as list); your locks are marked with *.

    Example: git alock ls; git alock ls --long
    """
    list_(as_id, as_json, fresh, long)


@app.command(tool="FREE, YOURS or HELD for each path.")
def check(
    # Without --staged, which no tool offers, paths are needed.
    paths: list[str] | None = Argument(
        default=None,
        metavar="[PATH...]",
        help="Paths to ask about.",
        tool=InTool(required=True),
        complete="paths",
    ),
    staged: bool = Option(
        "--staged",
        default=False,
        help="Check the paths staged for the next commit.",
        tool=NOT_IN_TOOL,
    ),
    as_id: str | None = AS_OPTION,
    as_json: bool = JSON_OPTION,
    fresh: bool = FRESH_OPTION,
) -> None:
    """Say FREE, YOURS or HELD for each PATH, or each staged path (exit 1 when any is HELD).

    Example: git alock check src/api/auth.py; git alock check --staged
    """
    if staged and paths:
        raise UsageError("give paths or --staged, not both")
    ctx = context(as_id, fresh=fresh, land=True)
    if staged:
        from gitlocks.git.changes import staged_paths  # only --staged reads the index

        items = locks.check_paths(ctx, staged_paths())
    else:
        items = locks.check(ctx, entries(ctx, require(paths, "path (or --staged)")))
    warn_problems(ctx)
    reply([i.to_dict() for i in items], render.check(items, ctx.now()), as_json)
    raise Exit(EXIT_REFUSED if any(i.status == "held" for i in items) else EXIT_OK)
