"""Remote mode as text: the mode shown, switched on or off, synced, and how old the view is."""

from __future__ import annotations

from gitlocks.core.record import format_duration, utcnow
from gitlocks.core.text import printable_lines
from gitlocks.render.locks import expires

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from gitlocks.service.remote import RemoteState, SyncResult
    from gitlocks.store.restore import RestoreResult
    from gitlocks.store.switch import OffResult, SwitchResult
    from gitlocks.store.upgrade import ShardResult


def age(seconds: float | None) -> str:
    return "never" if seconds is None else f"{format_duration(seconds)} ago"


def staleness(name: str, seconds: float | None) -> str:
    """The note saying how old the local view of the lock remote is."""
    return (
        f"note: lock view of remote {name!r} as of {age(seconds)}; "
        "git alock sync (or --fresh) refreshes it"
    )


def state(shown: RemoteState) -> str:
    if shown.remote is None:
        return "LOCAL: locks live in this repository only (git alock remote NAME shares them)"
    sharded = f"; its lock table in {shown.shards} shards" if shown.shards else ""
    return (
        f"REMOTE {shown.remote} ({shown.url}): reachable, takes atomic pushes; "
        f"last synced {age(shown.synced_ago)}{sharded}"
    )


def synced(result: SyncResult) -> str:
    if result.remote is None:
        lines = [f"SYNCED local mode: {result.locks} lock(s), no lock remote to fetch"]
    else:
        lines = [
            f"SYNCED {result.remote}: {result.locks} lock(s) on the remote"
            + ("" if result.changed else ", no change")
        ]
    lines += [
        f"LANDED {' '.join(r.paths)} of {r.holder}: its work is in {r.until_merged}, "
        f"claim released [lock {r.id}]"
        for r in result.landed
    ]
    return printable_lines(lines)


def switched_on(result: SwitchResult) -> str:
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
        return printable_lines(lines)
    lines = [f"REMOTE {result.remote}: every change is now decided on {result.remote}"]
    if result.upgraded:
        lines.append(
            f"sharded its lock table into {result.shards} shard journals; every clone writing "
            "there needs this version of gitlocks (older ones stop writing)"
        )
    elif result.laid_out and result.shards > 1:
        lines.append(
            f"laid out the new lock remote's table in {result.shards} shard journals: claims "
            "in different top-level directories never wait on each other (every clone "
            "writing there needs this version of gitlocks; older ones stop writing)"
        )
    elif result.laid_out:
        lines.append("laid out the new lock remote's table in one journal (--shards 1)")
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
    return printable_lines(lines)


def switched_off(result: OffResult) -> str:
    if result.remote is None:
        return "LOCAL: already in local mode"
    if result.invalid:
        return f"LOCAL: alock.remote was invalid ({result.invalid}); unset it, nothing else changed"
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
    return text


def sharded(result: ShardResult) -> str:
    if result.already and result.shards == 1:
        return f"ONE JOURNAL: {result.remote} keeps its lock table in one journal"
    if result.shards == 1:
        return f"LAID OUT {result.remote}: its new lock table is kept in one journal"
    if result.already:
        return f"ALREADY SHARDED: {result.remote} keeps its lock table in {result.shards} shards"
    return (
        f"SHARDED {result.remote}: {result.locks} lock(s) in {result.shards} shard journals; "
        "every clone writing there needs this version of gitlocks (older ones stop writing)"
    )


def restored(result: RestoreResult) -> str:
    if not result.restored:
        return f"NOTHING TO RESTORE on {result.remote}: {result.reason}"
    journal = (result.journal or "")[:12]
    return f"RESTORED {result.locks} lock(s) on {result.remote} (journal {journal})"
