"""Command-line verbs for the remote feature, registered on the main app by ``gitlocks.cli.locks``.

``git alock remote [NAME|--off]`` shows, checks and switches the mode; ``git alock sync``
refreshes the local view of the lock remote. Heavy imports stay inside the verbs.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gitlocks.cli.common import JsonOption, dump_json
from gitlocks.errors import EXIT_OK, EXIT_REFUSED, UsageError

if TYPE_CHECKING:
    from gitlocks.store.local import Store


def _emit(data: Any, text: str, as_json: bool) -> None:
    if as_json:
        dump_json(data)
    elif text:
        sys.stdout.write(text + "\n")


def _age(seconds: float | None) -> str:
    from gitlocks.core.record import format_duration

    return "never" if seconds is None else f"{format_duration(seconds)} ago"


def staleness(store: Store) -> str | None:
    """A note saying how old the local view of the lock remote is (None in local mode)."""
    name = store.config_get("alock.remote")
    if not name:
        return None
    from gitlocks.store.remote import read_sync_times

    synced = read_sync_times(store).get(name)
    age = None if synced is None else max(0.0, time.time() - synced)
    return (
        f"note: lock view of remote {name!r} as of {_age(age)}; "
        "git alock sync (or --fresh) refreshes it"
    )


def fresh(store: Store) -> None:
    """Fetch the lock remote first (``--fresh``); nothing to do in local mode."""
    from gitlocks.store.remote import RemoteStore

    if isinstance(store, RemoteStore):
        store.sync()


def register(app: typer.Typer) -> None:
    """Add this feature's verbs to ``app``."""

    @app.command("remote")
    def remote_(
        name: Annotated[str | None, typer.Argument(help="A git remote to share locks on.")] = None,
        off: Annotated[bool, typer.Option("--off", help="Return to local mode.")] = False,
        forget: Annotated[
            bool,
            typer.Option("--forget", help="With --off: drop the locks mirrored from the remote."),
        ] = False,
        as_json: JsonOption = False,
    ) -> None:
        """Show, check or switch remote mode (locks decided on a shared git remote).

        Example: git alock remote origin   (then: git alock remote --off)
        """
        from gitlocks.store import switch as remote
        from gitlocks.store.local import Store

        if off and name:
            raise UsageError("give a remote name or --off, not both")
        if forget and not off:
            raise UsageError("--forget goes with --off")
        store = Store.discover()
        if off:
            _off(remote.disable(store, forget=forget), as_json)
        elif name:
            _on(remote.enable(store, name), as_json)
        else:
            _show(store, as_json)

    @app.command("sync")
    def sync(
        as_json: JsonOption = False,
    ) -> None:
        """Refresh the local view of the lock remote (fetches only the lock refs).

        Example: git alock sync
        """
        from gitlocks.store.local import Store
        from gitlocks.store.remote import RemoteStore

        store = Store.discover()
        if not store.config_get("alock.remote"):
            raise UsageError("local mode: there is no lock remote to sync (git alock remote NAME)")
        remote = RemoteStore(store.repo)
        moved = remote.sync()
        count = len(remote.remote_table())
        _emit(
            {"status": "synced", "remote": remote.remote, "changed": moved, "locks": count},
            f"SYNCED {remote.remote}: {count} lock(s) on the remote"
            + ("" if moved else ", no change"),
            as_json,
        )


def _show(store: Store, as_json: bool) -> None:
    from gitlocks.store.remote import RemoteStore, read_sync_times

    name = store.config_get("alock.remote")
    if not name:
        _emit(
            {"status": "local", "remote": None},
            "LOCAL: locks live in this repository only (git alock remote NAME shares them)",
            as_json,
        )
        return
    remote = RemoteStore(store.repo)
    remote.probe()
    synced = read_sync_times(store).get(name)
    age = None if synced is None else time.time() - synced
    url = store.config_get(f"remote.{name}.url")
    _emit(
        {"status": "remote", "remote": name, "url": url, "atomic": True, "synced_ago": age},
        f"REMOTE {name} ({url}): reachable, takes atomic pushes; last synced {_age(age)}",
        as_json,
    )


def _on(result: Any, as_json: bool) -> None:
    from gitlocks.core.record import utcnow
    from gitlocks.render.locks import expires

    now = utcnow()
    if result.conflicts:
        lines = [
            f"REFUSED: still in local mode; these local locks overlap locks on {result.remote}:"
        ]
        for mine, theirs in result.conflicts:
            lines.append(
                f"HELD {' '.join(theirs.paths)} by {theirs.holder} on {result.remote} "
                f"(crosses local {' '.join(mine.paths)} of {mine.holder}), "
                f"{expires(theirs, now)} [lock {theirs.id}]"
            )
        lines.append("hint: release or let one side's lock expire, then run git alock remote again")
        _emit(result.to_dict(), "\n".join(lines), as_json)
        raise typer.Exit(EXIT_REFUSED)
    lines = [f"REMOTE {result.remote}: every change is now decided on {result.remote}"]
    if result.pushed:
        lines.append(f"pushed {len(result.pushed)} live local lock(s) to {result.remote}")
    if result.dropped_expired:
        lines.append(f"dropped {len(result.dropped_expired)} expired local lock(s)")
    if result.refreshed:
        lines.append(
            f"{len(result.refreshed)} lock(s) copied from {result.remote} earlier were replaced "
            "by its current state (never pushed back)"
        )
    for record in result.superseded:
        lines.append(
            f"warning: the local change to lock {record.id} ({' '.join(record.paths)} of "
            f"{record.holder}) was not pushed: {result.remote} changed or released it since"
        )
    lines.append(f"{result.on_remote} lock(s) on the remote")
    _emit(result.to_dict(), "\n".join(lines), as_json)
    raise typer.Exit(EXIT_OK)


def _off(result: Any, as_json: bool) -> None:
    if result.remote is None:
        _emit({"status": "local", "remote": None}, "LOCAL: already in local mode", as_json)
        return
    if result.invalid:
        _emit(
            {"status": "local", "remote": result.remote, "invalid": result.invalid},
            f"LOCAL: alock.remote was invalid ({result.invalid}); unset it, nothing else changed",
            as_json,
        )
        return
    if result.forgotten:
        kept = f"dropped the {result.forgotten} lock(s) mirrored from {result.remote}"
    else:
        kept = (
            f"the {result.mirrored} lock(s) mirrored from {result.remote} stay in the local "
            "view as local locks until they expire (--forget drops them); "
            f"your locks on {result.remote} are not released there"
        )
    text = f"LOCAL: left remote mode ({result.remote}); {kept}"
    if result.still_set:
        text += f"\nwarning: alock.remote is still set to {result.still_set!r} in another config"
    _emit(
        {
            "status": "local",
            "remote": result.remote,
            "mirrored": result.mirrored,
            "forgotten": result.forgotten,
        },
        text,
        as_json,
    )
