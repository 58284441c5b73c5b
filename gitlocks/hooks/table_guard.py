"""The pre-receive guard of the lock table: which refs of the lock namespaces a push
moves, and the guard that judges them (``gitlocks.hooks.hosted`` for one journal,
``gitlocks.hooks.sharded`` for shard journals). docs/design.md, sections 5.10 and 6.9.
"""

from __future__ import annotations

from collections.abc import Sequence

from gitlocks.hooks.hosted import guard_journal, sharded_state
from gitlocks.hooks.sharded import guard_shards, guard_upgrade
from gitlocks.layout import FORMAT_REF, JOURNAL_REF, LOCK_PREFIX, PROBE_PREFIXES, SHARD_PREFIX


def guard(lines: Sequence[str], cwd: str | None = None) -> list[str]:
    """Why a push must be refused for what it does to the lock table (empty: it may pass),
    from pre-receive's ``<old> <new> <ref>`` lines. Probe refs pass."""
    split = [line.split() for line in lines]
    pushed = {parts[2]: (parts[0], parts[1]) for parts in split if len(parts) == 3}
    locks = {
        ref[len(LOCK_PREFIX) :]: values
        for ref, values in pushed.items()
        if ref.startswith(LOCK_PREFIX) and not ref.startswith(PROBE_PREFIXES)
    }
    sharding = any(r == FORMAT_REF or r.startswith(SHARD_PREFIX) for r in pushed)
    if JOURNAL_REF not in pushed and not locks and not sharding:
        return []
    state = sharded_state(cwd)
    if state is not None:
        return guard_shards(pushed, locks, state[1], state[0], cwd)
    if sharding:
        return guard_upgrade(pushed, locks, cwd)
    return guard_journal(pushed, locks, cwd)
