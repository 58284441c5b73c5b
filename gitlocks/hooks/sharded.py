"""The pre-receive guard of a sharded lock table (docs/design.md, sections 5.10 and 6.9).

Each shard journal is guarded as the single journal is (``gitlocks.hooks.hosted``); the
format ref and the single journal ref never move; every lock ref the push names holds
what the union of the shard tables says. Stdlib and git only, like the rest of the hook.
"""

from __future__ import annotations

from collections.abc import Mapping

from gitlocks.core.journal import is_journal_commit
from gitlocks.core.judging import check_record
from gitlocks.core.record import MAX_RECORD_BYTES, LockRecord
from gitlocks.core.shard import parse_format, record_shards
from gitlocks.git.changes import git_output
from gitlocks.git.objects import cat_file, parse_commit
from gitlocks.git.run import Env
from gitlocks.hooks.hosted import (
    changed_locks,
    current_refs,
    descends,
    is_zero,
    lock_path,
    lock_ref_problems,
    moved_since,
    read_heads,
    read_journal,
    refs_after,
    shard_order,
)
from gitlocks.layout import FORMAT_REF, JOURNAL_REF, LOCK_PREFIX, MAX_SHARDS, SHARD_PREFIX


def guard_shards(
    pushed: Mapping[str, tuple[str, str]],
    locks: Mapping[str, tuple[str, str]],
    tips: Mapping[str, str],
    count: int | None,
    cwd: str | None,
) -> list[str]:
    """Why a push to a sharded table (``tips``: shard ref -> commit now; ``count``: what
    the format ref states, None when unreadable) must be refused; empty when it may pass."""
    if FORMAT_REF in pushed:
        return [f"the push changes {FORMAT_REF}: the shard count of a lock table is fixed"]
    if JOURNAL_REF in pushed:
        return [
            f"the push moves {JOURNAL_REF} of a sharded lock table: it holds the notice that "
            "stops earlier versions of gitlocks from writing beside the shards"
        ]
    if count is None:
        return [f"{FORMAT_REF} states no shard count this guard reads: upgrade gitlocks here"]
    shards = {ref: values for ref, values in pushed.items() if ref.startswith(SHARD_PREFIX)}
    strays = sorted(ref for ref in shards if not shard_order({ref: ""}, count))
    if strays:
        return [f"the push writes {strays[0]}, which is no shard of this {count}-shard lock table"]
    _, refs_now = current_refs(cwd)
    stated = {**tips, **{LOCK_PREFIX + i: v for i, v in refs_now.items()}}
    moved = moved_since(pushed, [*shards, *(LOCK_PREFIX + i for i in locks)], stated)
    if moved:
        return moved
    changed: set[str] = set()
    for ref, (_, new_oid) in sorted(shards.items()):
        if is_zero(new_oid):
            return [f"the push deletes {ref}, a shard of the lock table every clone decides on"]
        old_oid = tips.get(ref)
        oids = [o for o in (old_oid, new_oid) if o is not None]
        heads, _ = read_heads(oids, cwd)
        old = heads[0] if old_oid is not None else None
        new = heads[-1]
        if new is None or new.table is None:
            return [
                f"the push moves {ref} to {new_oid[:12]}, which is no gitlocks journal commit "
                "carrying a lock table: only git alock writes it"
            ]
        if old is not None and not descends(new, old, cwd):
            return [
                f"the push moves {ref} from {old.oid[:12]} to {new_oid[:12]}, which does not "
                "descend from it: that would rewind or replace the lock table"
            ]
        base = old.tree if old is not None and old.table is not None else _empty_tree(cwd)
        changed |= set(changed_locks(base, new.tree, cwd))
    heads_after = {**tips, **{ref: new_oid for ref, (_, new_oid) in shards.items()}}
    held = _held_values(heads_after, count, sorted({*locks, *changed}), cwd)
    # The union as clients fold it: shard by shard, a later shard's entry winning.
    wanted = {i: where[max(where)][0] for i, where in held.items()}
    problems = _misplaced({i: held.get(i, {}) for i in sorted(changed)}, count)
    return problems + lock_ref_problems(locks, wanted, refs_after(refs_now, locks), changed)


def _held_values(
    tips: Mapping[str, str], count: int, lock_ids: list[str], cwd: str | None
) -> dict[str, dict[int, tuple[str, bytes]]]:
    """Lock id -> shard -> (its blob, the record) in each shard table that holds it among
    ``tips`` (shard ref -> commit): one ``cat-file``."""
    commits = shard_order(tips, count)
    names = [(k, i, f"{c}:{lock_path(i)}") for k, c in commits for i in lock_ids]
    found: dict[str, dict[int, tuple[str, bytes]]] = {}
    if not names:
        return found
    got = cat_file([n for *_, n in names], cwd, env=Env.INHERIT, limit=MAX_RECORD_BYTES)
    for (k, lock_id, _), entry in zip(names, got, strict=True):
        if entry is not None and entry[1] == "blob":
            found.setdefault(lock_id, {})[k] = (entry[0], entry[2])
    return found


def _misplaced(held: Mapping[str, Mapping[int, tuple[str, bytes]]], count: int) -> list[str]:
    """Why records a push writes are not held as every client writes them: the same entry
    in every shard of its claim and in no other (an unreadable record: in every shard),
    else an overlapping claim could lease a shard that does not hold it and win beside it."""
    problems: list[str] = []
    for lock_id, where in held.items():
        if not where:
            continue
        ref = LOCK_PREFIX + lock_id
        if len({oid for oid, _ in where.values()}) > 1:
            problems.append(
                f"the push leaves {ref} with different entries in different shards of the "
                "lock table: a record is the same in every shard that holds it"
            )
            continue
        record = check_record(next(iter(where.values()))[1])
        wanted = (
            record_shards(record.paths, count)
            if isinstance(record, LockRecord)
            else frozenset(range(count))
        )
        if set(where) != wanted:
            problems.append(
                f"the push holds {ref} in shard(s) {_names(set(where))} of the lock table, "
                f"not in those of its claim ({_names(wanted)}): only git alock writes them"
            )
    return problems


def _names(shards: set[int] | frozenset[int]) -> str:
    return " ".join(map(str, sorted(shards)))


def _empty_tree(cwd: str | None) -> str:
    out = git_output(["hash-object", "-t", "tree", "--stdin"], cwd)
    return out.decode().strip()


# What the upgrade's pushed objects may hold, read whole: its format blob (a shard count)
# and its notice commit (a header and a short message); anything larger is refused.
_FORMAT_BYTES = 64
_NOTICE_BYTES = 64 * 1024


def guard_upgrade(
    pushed: Mapping[str, tuple[str, str]],
    locks: Mapping[str, tuple[str, str]],
    cwd: str | None,
) -> list[str]:
    """Why a push that shards a single journal's table must be refused; empty when it is
    the upgrade ``git alock remote --shards`` makes (``refused`` says what that is)."""
    refused = [
        "the push shards the lock table, and is not the upgrade git alock remote --shards "
        "makes (the format ref, every shard journal on the old journal, their tables the old "
        "one's, the journal ref moved onto the notice)"
    ]
    format_values = pushed.get(FORMAT_REF)
    if format_values is None or not is_zero(format_values[0]) or locks:
        return refused
    # Read bounded: a format is a few bytes, and a pusher chooses what the blob holds.
    (blob,) = cat_file([format_values[1]], cwd, env=Env.INHERIT, limit=_FORMAT_BYTES + 1)
    ok = blob is not None and blob[1] == "blob" and len(blob[2]) <= _FORMAT_BYTES
    count = parse_format(blob[2], MAX_SHARDS) if blob is not None and ok else None
    wanted_refs = {FORMAT_REF, JOURNAL_REF, *(f"{SHARD_PREFIX}{k}" for k in range(count or 0))}
    sharding = {r for r in pushed if r.startswith(SHARD_PREFIX) or r in (FORMAT_REF, JOURNAL_REF)}
    if count is None or sharding != wanted_refs:
        return refused
    journal_now, refs_now = current_refs(cwd)
    old_value, notice = pushed[JOURNAL_REF]
    if (None if is_zero(old_value) else old_value) != journal_now:
        return ["the lock table moved since this push was prepared: fetch and decide again"]
    expected_parents = (journal_now,) if journal_now is not None else ()
    (raw,) = cat_file([notice], cwd, env=Env.INHERIT, limit=_NOTICE_BYTES + 1)
    if raw is None or raw[1] != "commit" or len(raw[2]) > _NOTICE_BYTES:
        return refused
    commit = parse_commit(notice, raw[2])
    parents = commit.parent_ids
    if parents != expected_parents or is_journal_commit(len(parents), 0, commit.message):
        return refused
    before: dict[str, str] = dict(refs_now)
    if journal_now is not None:
        old = read_journal(journal_now, cwd)
        if old is None:
            return refused  # no journal commit there: nothing gitlocks wrote to split
        if old.table is not None:
            before = old.table
    union: dict[str, str] = {}
    held: dict[str, dict[int, str]] = {}
    for k in range(count):
        tip = pushed[f"{SHARD_PREFIX}{k}"]
        if not is_zero(tip[0]):
            return refused
        shard = read_journal(tip[1], cwd)
        if shard is None or shard.table is None or shard.parents != expected_parents:
            return refused
        union.update(shard.table)
        for lock_id, oid in shard.table.items():
            held.setdefault(lock_id, {})[k] = oid
    if union != before:
        return refused
    oids = sorted({oid for where in held.values() for oid in where.values()})
    records = cat_file(oids, cwd, env=Env.INHERIT, limit=MAX_RECORD_BYTES)
    data = {oid: b"" if got is None else got[2] for oid, got in zip(oids, records, strict=True)}
    return _misplaced(
        {i: {k: (oid, data[oid]) for k, oid in where.items()} for i, where in held.items()},
        count,
    )
