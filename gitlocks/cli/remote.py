"""The remote-mode verbs: ``remote [NAME|--off]`` shows, checks and switches the mode;
``sync`` refreshes the local view of the lock remote."""

from __future__ import annotations

from gitlocks.cli.common import JSON_OPTION, reply
from gitlocks.cli.context import context
from gitlocks.cli.declare import Argument, Exit, Option, Verbs
from gitlocks.errors import EXIT_OK, EXIT_REFUSED, UsageError
from gitlocks.layout import MAX_SHARDS
from gitlocks.render import remote as render
from gitlocks.service import remote as service
from gitlocks.store import switch
from gitlocks.store.local import Store

app = Verbs()


@app.command("remote")
def remote_(
    name: str | None = Argument(
        default=None, metavar="[NAME]", help="A git remote to share locks on.", complete="remotes"
    ),
    off: bool = Option("--off", default=False, help="Return to local mode."),
    forget: bool = Option(
        "--forget", default=False, help="With --off: drop the locks mirrored from the remote."
    ),
    restore: bool = Option(
        "--restore",
        default=False,
        help="Put this clone's last view back on the remote, whose journal was lost.",
    ),
    shards: int | None = Option(
        "--shards",
        default=None,
        metavar="N",
        help="Keep the lock remote's table in N shard journals, so that claims that "
        "cannot overlap never wait on each other: a new remote gets 64 unless told; "
        "1 keeps one journal, as earlier versions did (the count is fixed once sharded; "
        "every clone needs this version).",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Show, check or switch remote mode (locks decided on a shared git remote).

    Example: git alock remote origin   (then: git alock remote --off;
    git alock remote origin --shards 1 keeps a new remote's table in one journal;
    git alock remote --shards 64 shards a remote kept in one)
    """
    if off and name:
        raise UsageError("give a remote name or --off, not both")
    if forget and not off:
        raise UsageError("--forget goes with --off")
    if restore and (off or name):
        raise UsageError("--restore goes alone (the lock remote is alock.remote)")
    if shards is not None and (off or restore):
        raise UsageError("--shards goes with a remote name, or alone (on alock.remote)")
    if shards is not None and not 1 <= shards <= MAX_SHARDS:
        raise UsageError(f"--shards takes a count from 1 to {MAX_SHARDS}, not {shards}")
    store = Store.discover()
    if (restore or (shards is not None and not name)) and not store.config_get("alock.remote"):
        what = "restore" if restore else "shard"
        raise UsageError(f"local mode: there is no lock remote to {what} (git alock remote NAME)")
    if shards is not None and not name:
        # Imported here: only this rare verb needs it.
        from gitlocks.store.upgrade import shard

        sharded = shard(store, shards)
        reply(sharded.to_dict(), render.sharded(sharded), as_json)
    elif restore:
        # Imported here: only this rare verb needs it.
        from gitlocks.store.restore import restore as put_back

        done = put_back(store)
        reply(done.to_dict(), render.restored(done), as_json)
    elif off:
        left = switch.disable(store, forget=forget)
        reply(left.to_dict(), render.switched_off(left), as_json)
    elif name:
        result = switch.enable(store, name, shards)
        if shards is not None and shards > 1 and result.shards == 1 and not result.conflicts:
            # A table kept in one journal, asked for shards: the upgrade, as --shards alone.
            from gitlocks.store.upgrade import shard

            result.shards, result.upgraded = shard(store, shards).shards, True
        reply(result.to_dict(), render.switched_on(result), as_json)
        raise Exit(EXIT_REFUSED if result.conflicts else EXIT_OK)
    else:
        shown = service.show(store)
        reply(shown.to_dict(), render.state(shown), as_json)


@app.command("sync")
def sync(as_json: bool = JSON_OPTION) -> None:
    """Refresh the local view of the lock remote (fetches only the lock refs), and
    release your claims whose work has landed (--until-merged); in local mode, only that.

    Example: git alock sync
    """
    result = service.sync(context(None))
    reply(result.to_dict(), render.synced(result), as_json)
