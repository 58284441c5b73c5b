"""Command-line verbs for the lifecycle feature, registered on the main app.

``resume``, ``status``, ``log``, ``watch`` and ``skill``. The modules they use (and
``gitlocks.cli.locks``'s helpers, which import this module) are imported inside the verbs.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gitlocks.cli.common import AsOption, JsonOption, dump_json, out
from gitlocks.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_REFUSED

if TYPE_CHECKING:
    from datetime import datetime

    from gitlocks.service.results import ResumeResult, Status


def _resume_text(result: ResumeResult, now: datetime) -> str:
    from gitlocks.core.text import printable_lines
    from gitlocks.render import locks as render

    if result.status == "resumed" and result.lock is not None and result.previous is not None:
        lock = result.lock
        count = len(lock.notes)
        lines = [
            f"RESUMED {' '.join(lock.paths)} from {result.previous.holder} with {count} "
            f"note{'s' if count != 1 else ''}, {render.expires(lock, now)} [lock {lock.id}]"
        ]
        lines += [f"  note {n.at}: {n.text}" for n in lock.notes]
        return printable_lines(lines)
    if result.status == "refused":
        lines = ["REFUSED"] + [render.held_line(c, now) for c in result.conflicts]
        lines.append("hint: others have since claimed parts of it; resume when they release")
        return printable_lines(lines)
    if result.status == "held":
        return printable_lines(
            [
                f"HELD {' '.join(r.paths)} by {r.holder}: its holder is alive, this is not "
                f"interrupted work [lock {r.id}]"
                for r in result.held
            ]
        )
    return "NOT LOCKED: no interrupted work there (git alock list shows every claim)"


def _lock_line(record: Any, state: str, now: datetime) -> str:
    from gitlocks.render import locks as render

    word = render.state_word(record, state, now)
    extra = f", {word}" if word else ""
    count = len(record.notes)
    notes = f", {count} note{'s' if count != 1 else ''}" if count else ""
    reason = f' "{record.reason}"' if record.reason else ""
    return (
        f"{' '.join(record.paths)} by {record.holder}{reason}, {render.expires(record, now)}"
        f"{extra}{notes} [lock {record.id}]"
    )


def _status_text(report: Status, now: datetime) -> str:
    from gitlocks.core.text import printable_lines

    parent = f" (sub-agent of {report.parent})" if report.parent else ""
    lines = [f"you are {report.holder}{parent}", "", "yours:"]
    lines += [f"  {_lock_line(r, report.states[r.id], now)}" for r in report.yours] or ["  none"]
    lines += ["", "others':"]
    lines += [f"  {_lock_line(r, report.states[r.id], now)}" for r in report.others] or ["  none"]
    lines += ["", "uncommitted edits outside your claims:"]
    flagged = 0
    for tree in report.worktrees:
        branch = f" ({tree.branch})" if tree.branch else ""
        header = f"  {tree.path}{branch}"
        if tree.error:
            lines += [header, f"    cannot read its status: {tree.error}"]
            continue
        shown = [e for e in tree.edits if e.status != "yours"]
        if not shown:
            continue
        lines.append(header)
        for edit in shown:
            flagged += 1
            if edit.status == "unclaimed":
                where = "in no claim"
            else:
                holders = ", ".join(sorted({r.holder for r in edit.locks}))
                kind = "interrupted work of" if edit.status == "interrupted" else "claim of"
                where = f"inside the {kind} {holders}"
            lines.append(f"    {edit.xy.replace(' ', '.')} {edit.path}  {where}")
    if not flagged:
        lines.append("  none")
    return printable_lines(lines)


def register(app: typer.Typer) -> None:
    """Add this feature's verbs to ``app``."""

    @app.command()
    def resume(
        pattern: Annotated[str, typer.Argument(help="A pattern (or lock id) of the work.")],
        ttl: Annotated[
            str | None,
            typer.Option("--ttl", help="Lifetime: 90, 90s, 15m, 2h, 1d (default: alock.ttl)."),
        ] = None,
        as_id: AsOption = None,
        as_json: JsonOption = False,
    ) -> None:
        """Take over INTERRUPTED WORK (a dead holder's lock) with its notes.

        Example: git alock resume 'src/api/**'
        """
        from gitlocks.cli import locks as cli
        from gitlocks.core.record import LOCK_ID_RE
        from gitlocks.core.scope import ScopeEntry
        from gitlocks.service import lifecycle

        ctx = cli._context(as_id)
        target: str | ScopeEntry
        if LOCK_ID_RE.match(pattern) and ctx.store.read_table().get(pattern) is not None:
            target = pattern
        else:
            [target] = cli._entries(ctx, [pattern])
        result = lifecycle.resume(ctx, target, ttl=cli._ttl(ctx, ttl))
        if as_json:
            dump_json(result.to_dict())
        else:
            out(_resume_text(result, ctx.now()))
        raise typer.Exit(EXIT_OK if result.status == "resumed" else EXIT_REFUSED)

    @app.command()
    def status(as_id: AsOption = None, as_json: JsonOption = False) -> None:
        """Your locks, others' (STALE, INTERRUPTED), and uncommitted edits outside your claims.

        Edits are read from every worktree of the repository; one inside someone else's
        claim or in no claim at all is listed, so agents that never claimed are noticed.

        Example: git alock status
        """
        from gitlocks.cli import locks as cli
        from gitlocks.service.status import status

        ctx = cli._context(as_id)
        report = status(ctx)
        if as_json:
            dump_json(report.to_dict())
        else:
            out(_status_text(report, ctx.now()))
        raise typer.Exit(EXIT_OK)

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
        from gitlocks.core import journal as core_journal
        from gitlocks.core.record import utcnow
        from gitlocks.render import journal as render_journal
        from gitlocks.service import journal
        from gitlocks.store.local import Store

        store = Store.discover()
        after = core_journal.since_time(since, utcnow()) if since else None
        shared = journal.events(store, limit=count, since=after)
        found = core_journal.merged(shared, journal.refusals(store, since=after), count)
        if reverse:
            found.reverse()
        if as_json:
            dump_json(found)
        else:
            out("\n".join(render_journal.format_event(e) for e in found) or "no events")
        raise typer.Exit(EXIT_OK)

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
        import time

        from gitlocks.core.record import parse_duration
        from gitlocks.render import journal as render_journal
        from gitlocks.service import journal
        from gitlocks.store.local import Store

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
                        raise typer.Exit(EXIT_OK)
                sys.stdout.flush()
                if deadline is not None and time.monotonic() >= deadline:
                    raise typer.Exit(EXIT_OK)
        except KeyboardInterrupt:
            raise typer.Exit(EXIT_INTERRUPTED) from None

    @app.command()
    def skill(
        action: Annotated[str, typer.Argument(help="install or show.")],
        tool: Annotated[
            str, typer.Option("--for", help="claude, codex, cursor or agents.")
        ] = "claude",
        into: Annotated[
            str | None,
            typer.Option("--into", help="Base directory (default: the repository's root)."),
        ] = None,
        force: Annotated[
            bool, typer.Option("--force", help="Replace a different existing copy.")
        ] = False,
        as_json: JsonOption = False,
    ) -> None:
        """Install or show the instructions that teach a coding agent to use git alock.

        claude: .claude/skills/gitlocks/SKILL.md; cursor: .cursor/rules/gitlocks.mdc;
        codex and agents: a marked section of AGENTS.md.

        Example: git alock skill install --for claude
        """
        from pathlib import Path

        from gitlocks.errors import UsageError
        from gitlocks.service import skill as skills

        if action == "show":
            text = skills.text_for(tool)
            if as_json:
                dump_json({"for": tool, "text": text})
            else:
                sys.stdout.write(text)
            raise typer.Exit(EXIT_OK)
        if action != "install":
            raise UsageError(f"unknown skill action {action!r}: use install or show")
        base = Path(into) if into else _repo_root()
        done = skills.install(tool, base, force=force)
        if as_json:
            dump_json({"status": done.status, "path": str(done.path), "for": tool})
        elif done.status == "refused":
            out(f"REFUSED {done.path} exists and differs; --force replaces it")
        elif done.status == "unchanged":
            out(f"ALREADY INSTALLED {done.path}")
        else:
            out(f"INSTALLED {done.path}")
        raise typer.Exit(EXIT_REFUSED if done.status == "refused" else EXIT_OK)


def _repo_root() -> Any:
    """The working tree's root, or the current directory outside a repository."""
    from pathlib import Path

    from gitlocks.errors import NotARepository
    from gitlocks.store.local import Store

    try:
        return Store.discover().root
    except NotARepository:
        return Path.cwd()
