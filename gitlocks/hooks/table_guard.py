"""The pre-receive guard of the lock table: which refs of the lock namespaces a push
moves, and the guard that judges them, for a table kept in one journal
(``gitlocks.hooks.hosted``) or in shard journals (``gitlocks.hooks.sharded``, also for a
push that shards the table). docs/design.md, sections 5.10 and 6.9.

Stdlib and git only, like the rest of the hook.
"""

from __future__ import annotations

from collections.abc import Sequence

from gitlocks.errors import StoreError
from gitlocks.hooks.hosted import guard_journal, sharded_state
from gitlocks.hooks.sharded import guard_shards, guard_upgrade
from gitlocks.layout import FORMAT_REF, JOURNAL_REF, LOCK_PREFIX, PROBE_PREFIXES, SHARD_PREFIX


def guard(lines: Sequence[str], cwd: str | None = None) -> list[str]:
    """Why a push must be refused for what it does to the lock table (empty: it may pass).

    ``lines``: pre-receive's ``<old> <new> <ref>`` lines (only those in the lock namespaces
    matter). Probe refs (``git alock remote NAME`` checks a remote with them) pass. A
    claim's push costs a few git processes whatever the size of the table.
    """
    pushed: dict[str, tuple[str, str]] = {}
    for line in lines:
        parts = line.split()
        if len(parts) == 3:
            pushed[parts[2]] = (parts[0], parts[1])
    locks = {
        ref[len(LOCK_PREFIX) :]: values
        for ref, values in pushed.items()
        if ref.startswith(LOCK_PREFIX) and not ref.startswith(PROBE_PREFIXES)
    }
    sharding = any(_sharding(r) for r in pushed)
    if JOURNAL_REF not in pushed and not locks and not sharding:
        return []
    state = sharded_state(cwd)
    if state is not None:
        return guard_shards(pushed, locks, state[1], state[0], cwd)
    if sharding:
        return guard_upgrade(pushed, locks, cwd)
    return guard_journal(pushed, locks, cwd)


def _sharding(ref: str) -> bool:
    return ref == FORMAT_REF or ref.startswith(SHARD_PREFIX)


def guard_or_error(lines: Sequence[str], cwd: str | None = None) -> list[str]:
    """``guard``, where a failure to read the table is a refusal too: a table that cannot
    be read cannot be shown to stay whole."""
    try:
        return guard(lines, cwd)
    except (StoreError, ValueError) as exc:
        return [f"the lock table could not be read ({exc})"]
