"""Lock records made outside the command line: planted by hand as plain git or a hostile
clone would, or seeded in bulk through the store (bench/ and the scale tests)."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # bench/ imports this module where the package may not be importable
    from gitlocks.core.summaries import Columns, Summary


def write_blob(repo: Path, data: bytes | str | dict[str, Any]) -> str:
    """``data`` (a dict as JSON) stored as a blob in ``repo``, as plain git would; its id."""
    raw = json.dumps(data).encode() if isinstance(data, dict) else data
    raw = raw.encode() if isinstance(raw, str) else raw
    proc = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=repo,
        input=raw,
        capture_output=True,
        check=True,
    )
    return proc.stdout.decode().strip()


def plant(repo: Path, lock_id: str, data: bytes | str | dict[str, Any]) -> str:
    """Point ``refs/agent-locks/<lock_id>`` at ``data``, as a hostile clone or a hand edit
    would (no gitlocks code involved); the blob's id."""
    blob = write_blob(repo, data)
    subprocess.run(["git", "update-ref", f"refs/agent-locks/{lock_id}", blob], cwd=repo, check=True)
    return blob


def seed_locks(repo: Path, count: int, holders: int = 7) -> None:
    """``count`` live locks on ``area<i>/**`` held by ``agent-<i % holders>``, expiring 2h
    ahead, written in one store transaction, then ``git pack-refs --all``.

    They name no session process (pid 0), so liveness never judges them dead: they live by
    their TTL, like claims made with an explicit id. 10,000 take a few seconds.
    """
    # Imported here: bench/ re-runs itself as a stand-in harness (a Python that may not
    # see the package) and needs only the builders that do not write through the store.
    from gitlocks.core.change import Change
    from gitlocks.core.record import LockRecord, expiry_from, format_time, new_lock_id, utcnow
    from gitlocks.store.local import Store

    store = Store.discover(repo)
    branch, head = store.head_info()
    now = utcnow()
    stamp = format_time(now)
    ttl = 2 * 3600
    records = [
        LockRecord(
            id=f"{new_lock_id()}-{i:06d}",
            holder=f"agent-{i % holders}",
            paths=(f"area{i}/**",),
            reason=f"seeded lock {i}",
            created_at=stamp,
            renewed_at=stamp,
            expires_at=expiry_from(now, ttl),
            host=socket.gethostname(),
            worktree=str(repo),
            branch=branch,
            head=head,
            ttl=ttl,
        )
        for i in range(count)
    ]
    event = {"event": "seeded", "at": stamp, "holder": "bench", "paths": [], "count": count}
    store.transact(lambda table: (Change(put=records, events=[event]), None))
    subprocess.run(["git", "pack-refs", "--all"], cwd=repo, check=True)


def summary_columns(rows: list[Summary]) -> Columns:
    """``rows`` as the columns a kept judgement is decoded to (``Summaries.of_columns``)."""
    return (
        [s.id for s in rows],
        [s.holder for s in rows],
        [s.parent for s in rows],
        [s.expires_at for s in rows],
        ["\n".join(s.buckets) for s in rows],
        [s.landing for s in rows],
    )


def stored(repo: Path) -> list[dict[str, Any]]:
    """The unexpired records of the table, oldest first, as ``list --json`` shows them but
    without its write: a listing clears dead holders' locks first (docs/design.md, 3.3), and
    a test's stand-in harness session has often ended by the time its claims are looked at."""
    from gitlocks.core.record import format_time, utcnow
    from gitlocks.store.local import Store

    return [r.to_dict() for r in Store.discover(repo).read_table().live(format_time(utcnow()))]


def edit_cache(common: Path, edit: Callable[[Any], Any], section: int = 0) -> None:
    """The cache of the repository at ``common`` (its common git directory) with one
    section's document edited (``edit`` returns it), as gitlocks would have written it:
    its check sum made anew. What a hand that knows the format could write. Sections: 0
    the verdicts, 1 the shards of a table tree."""
    import zlib

    from gitlocks.layout import CACHE_FILE

    path = common / CACHE_FILE
    lines = path.read_bytes().split(b"\n")
    body = json.dumps(edit(json.loads(lines[1 + section].partition(b" ")[2])))
    raw = body.encode()
    lines[1 + section] = b"%d %s" % (zlib.crc32(raw), raw)
    path.write_bytes(b"\n".join(lines))
