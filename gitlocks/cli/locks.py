"""The ``git alock`` command line: the only module that prints or chooses exit codes.

Each verb parses its arguments, calls one function of ``gitlocks.service.locks`` and renders the
result: a human reply whose first word an agent can act on, or one JSON document.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from gitlocks import __version__
from gitlocks.cli import hooks as cli_hooks
from gitlocks.cli import lifecycle as cli_lifecycle
from gitlocks.cli import remote as cli_remote
from gitlocks.cli.common import AsOption, FreshOption, JsonOption, TtlOption, dump_json, out
from gitlocks.core.record import parse_duration
from gitlocks.core.scope import ScopeEntry, make_entry
from gitlocks.errors import EXIT_ERROR, EXIT_OK, EXIT_REFUSED, GitlocksError, UsageError
from gitlocks.identity import resolve_identity
from gitlocks.layout import DEFAULT_TTL_SECONDS
from gitlocks.render import locks as render
from gitlocks.service import locks
from gitlocks.service.context import Context, live_table
from gitlocks.store.local import Store

app = typer.Typer(
    name="git alock",
    help=(
        "Advisory path locks for coding agents sharing one git repository.\n\n"
        "Claim a region before editing it; others who try to claim an overlapping "
        "region are refused and told who holds what.\n\n"
        "Example: git alock acquire 'src/api/**' -m 'rewrite auth'"
    ),
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


# --- plumbing -----------------------------------------------------------------------------


def _context(as_id: str | None, *, fresh: bool = False) -> Context:
    store = Store.discover()
    if store.config_get("alock.remote"):
        from gitlocks.store.remote import RemoteStore

        store = RemoteStore(store.repo)
        if fresh:
            store.sync()
    return Context(store=store, identity=resolve_identity(as_id))


def _say_staleness(store: Store) -> None:
    note = cli_remote.staleness(store)
    if note:
        sys.stderr.write(note + "\n")


def _cwd(store: Store) -> str:
    here = Path.cwd().resolve()
    try:
        rel = here.relative_to(store.root)
    except ValueError:
        return ""
    return rel.as_posix() if rel.parts else ""


def _entries(ctx: Context, patterns: list[str]) -> list[ScopeEntry]:
    store = ctx.store
    cwd = _cwd(store)
    entries: list[ScopeEntry] = []
    for typed in patterns:
        entry = make_entry(typed, cwd=cwd, root=os.fspath(store.root), is_file=store.is_file)
        if entry not in entries:
            entries.append(entry)
    return entries


def _ttl(ctx: Context, ttl: str | None) -> int:
    if ttl is not None:
        return parse_duration(ttl, what="--ttl")
    configured = ctx.store.config_get("alock.ttl")
    if configured is not None:
        return parse_duration(configured, what="alock.ttl")
    return DEFAULT_TTL_SECONDS


def _text(value: str, what: str, limit: int) -> str:
    """A reason or note as typed: valid UTF-8 and of a sane size (records stay small)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"the {what} is not valid UTF-8") from None
    if len(value) > limit:
        raise UsageError(f"the {what} is {len(value)} characters long; at most {limit}")
    return value


def _warn_problems(ctx: Context) -> None:
    found = ctx.store.read_table().problems
    if found:
        sys.stderr.write(render.problems(found) + "\n")


def _exit(code: int) -> NoReturn:
    raise typer.Exit(code)


def _require(patterns: list[str] | None, what: str) -> list[str]:
    if not patterns:
        raise UsageError(f"name at least one {what}")
    return patterns


# --- verbs --------------------------------------------------------------------------------


@app.command()
def acquire(
    patterns: Annotated[list[str], typer.Argument(help="Glob patterns to claim.")],
    reason: Annotated[str, typer.Option("-m", "--reason", help="Why you claim it.")] = "",
    ttl: TtlOption = None,
    as_id: AsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Claim PATTERN..., all or none.

    Example: git alock acquire 'src/api/**' docs/api.md -m "rewrite auth" --ttl 1h
    """
    ctx = _context(as_id)
    entries = _entries(ctx, patterns)
    lifetime = _ttl(ctx, ttl)
    result = locks.acquire(ctx, entries, reason=_text(reason, "reason", 1000), ttl=lifetime)
    _warn_problems(ctx)
    if as_json:
        dump_json(result.to_dict())
    else:
        out(render.acquire(result, ctx.now()))
    _exit(EXIT_OK if result.status in ("acquired", "already_yours") else EXIT_REFUSED)


@app.command()
def release(
    patterns: Annotated[list[str] | None, typer.Argument(help="Patterns to give back.")] = None,
    all_: Annotated[
        bool, typer.Option("--all", help="Release all yours and your sub-agents'.")
    ] = False,
    as_id: AsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Give back PATTERN... of your locks, or --all of them.

    Example: git alock release 'src/api/**'
    """
    if all_ and patterns:
        raise UsageError("give patterns or --all, not both")
    ctx = _context(as_id)
    entries = None if all_ else _entries(ctx, _require(patterns, "pattern (or --all)"))
    result = locks.release(ctx, entries)
    if as_json:
        dump_json(
            {
                "status": "released" if result.released else "not_locked",
                "released": [
                    {
                        "id": r.record.id,
                        "paths": r.patterns,
                        "remaining": r.remaining.to_dict() if r.remaining else None,
                    }
                    for r in result.released
                ],
                "not_locked": result.not_locked,
                "held": [{"pattern": p, "lock": rec.to_dict()} for p, rec in result.held_by_others],
            }
        )
    else:
        out(render.release(result))
    _exit(EXIT_REFUSED if result.held_by_others else EXIT_OK)


@app.command()
def renew(
    patterns: Annotated[list[str] | None, typer.Argument(help="Patterns to renew.")] = None,
    ttl: TtlOption = None,
    as_id: AsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Extend your locks' expiry from now (all of yours without PATTERN).

    Example: git alock renew --ttl 1h
    """
    ctx = _context(as_id)
    entries = _entries(ctx, patterns) if patterns else None
    asked = parse_duration(ttl, what="--ttl") if ttl is not None else None
    renewed = locks.renew(ctx, entries, ttl=asked, default_ttl=_ttl(ctx, None))
    now = ctx.now()
    if as_json:
        dump_json(
            {
                "status": "renewed" if renewed else "not_locked",
                "locks": [r.to_dict() for r in renewed],
            }
        )
    elif renewed:
        out(
            "\n".join(
                f"RENEWED {' '.join(r.paths)}, {render.expires(r, now)} [lock {r.id}]"
                for r in renewed
            )
        )
    else:
        out("NOT LOCKED: you hold no live lock to renew; acquire again")
    _exit(EXIT_OK if renewed else EXIT_REFUSED)


def _list(as_id: str | None, as_json: bool, fresh: bool) -> None:
    ctx = _context(as_id, fresh=fresh)
    _say_staleness(ctx.store)
    table, live = live_table(ctx)
    if table.problems:
        sys.stderr.write(render.problems(table.problems) + "\n")
    if as_json:
        dump_json([r.to_dict() for r in live])
    else:
        from gitlocks.service.lifecycle import states

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
    ctx = _context(as_id, fresh=fresh)
    _say_staleness(ctx.store)
    if staged:
        from gitlocks.git.changes import staged_paths

        items = locks.check_paths(ctx, staged_paths())
    else:
        items = locks.check(ctx, _entries(ctx, _require(paths, "path (or --staged)")))
    _warn_problems(ctx)
    if as_json:
        dump_json([i.to_dict() for i in items])
    else:
        out(render.check(items, ctx.now()))
    _exit(EXIT_REFUSED if any(i.status == "held" for i in items) else EXIT_OK)


@app.command()
def note(
    pattern: Annotated[str, typer.Argument(help="A pattern of your lock.")],
    text: Annotated[str, typer.Argument(help="The progress note.")],
    as_id: AsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Append a progress note to your lock on PATTERN (also shows you are alive).

    Example: git alock note 'src/api/**' "auth done, tests next"
    """
    if not text.strip():
        raise UsageError("the note is empty")
    ctx = _context(as_id)
    [entry] = _entries(ctx, [pattern])
    noted = locks.note(ctx, entry, _text(text, "note", 4000))
    if as_json:
        dump_json(
            {
                "status": "noted" if noted else "not_locked",
                "lock": noted.to_dict() if noted else None,
            }
        )
    elif noted:
        out(f"NOTED {' '.join(noted.paths)} [lock {noted.id}]")
    else:
        out(f"NOT LOCKED {entry.pattern}: you hold no lock there")
    _exit(EXIT_OK if noted else EXIT_REFUSED)


@app.command("break")
def break_(
    targets: Annotated[list[str], typer.Argument(help="Lock ids or patterns.")],
    as_id: AsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Forcibly release locks by ID, or every lock crossing PATTERN; journaled.

    Example: git alock break 0193a7c2b1f-4a2b9c1d
    """
    ctx = _context(as_id)
    result = locks.break_locks(ctx, [(t, _entries(ctx, [t])[0]) for t in targets])
    done = bool(result.locks or result.unusable)
    now = ctx.now()
    if as_json:
        dump_json(
            {
                "status": "broken" if done else "not_locked",
                "locks": [r.to_dict() for r in result.locks],
                "unusable": result.unusable,
            }
        )
    elif done:
        lines = [
            f"BROKEN {' '.join(r.paths)} held by {r.holder} ({render.expires(r, now)})"
            f" [lock {r.id}]"
            for r in result.locks
        ]
        lines += [f"BROKEN unusable ref refs/agent-locks/{i}" for i in result.unusable]
        out("\n".join(lines))
    else:
        out(f"NOT LOCKED {' '.join(targets)}: no lock of another holder to break")
    _exit(EXIT_OK if done else EXIT_REFUSED)


@app.command()
def whoami(as_id: AsOption = None, as_json: JsonOption = False) -> None:
    """Show your agent id and parent, and where each came from.

    Example: AGENT_ID=worker-1 git alock whoami
    """
    ident = resolve_identity(as_id)
    session = ident.session
    data = {
        "holder": ident.holder,
        "holder_source": ident.holder_source,
        "parent": ident.parent,
        "parent_source": ident.parent_source,
        "session": {
            "id": ident.session_id,
            "pid": session.pid,
            "start_time": session.start_time,
            "name": session.name,
            "host": session.host,
        },
    }
    if as_json:
        dump_json(data)
        return
    parent = f"{ident.parent} (from {ident.parent_source})" if ident.parent else "none"
    out(
        f"holder: {ident.holder} (from {ident.holder_source})\n"
        f"parent: {parent}\n"
        f"session: {session.name} pid {session.pid} on {session.host} ({ident.session_id})"
    )


@app.command()
def version(as_json: JsonOption = False) -> None:
    """Show the version."""
    if as_json:
        dump_json({"version": __version__})
    else:
        out(f"gitlocks {__version__}")


# Feature verbs live in their own modules; each keeps its heavy imports inside its verbs.
for _feature in (cli_hooks, cli_lifecycle, cli_remote):
    _feature.register(app)


# --- entry --------------------------------------------------------------------------------


def _command_for(args: list[str]) -> tuple[Any, list[str], str]:
    """The click command to run: only the named verb when there is one.

    Converting every verb to a click command costs milliseconds on each run, so a
    command line that names its verb builds just that one.
    """
    if args and not args[0].startswith("-"):
        for info in app.registered_commands:
            callback = info.callback
            name = info.name or (callback.__name__ if callback else "")
            if name == args[0]:
                single = typer.Typer(
                    add_completion=False,
                    pretty_exceptions_enable=False,
                    context_settings={"help_option_names": ["-h", "--help"]},
                )
                single.registered_commands.append(info)
                return typer.main.get_command(single), args[1:], f"git alock {args[0]}"
    return typer.main.get_command(app), args, "git alock"


def run(args: list[str]) -> int:
    """Run one command line; return its exit code. Never raises, except on a bug."""
    if not args:
        run(["--help"])
        sys.stderr.write("error: name a verb, e.g. git alock acquire PATTERN\n")
        return EXIT_ERROR
    command, args, prog_name = _command_for(args)
    try:
        rv = command.main(args=args, prog_name=prog_name, standalone_mode=False)
    except GitlocksError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return exc.exit_code
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        return 130
    except typer.exceptions.TyperException as exc:  # click's usage errors
        sys.stderr.write(f"error: {exc.format_message()}\n")
        sys.stderr.write("hint: git alock --help lists the verbs and their options\n")
        return EXIT_ERROR
    return rv if isinstance(rv, int) else EXIT_OK
