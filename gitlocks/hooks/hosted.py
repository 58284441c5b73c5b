"""The lock table of a repository you host, as its pre-receive hook reads and guards it
(docs/design.md, sections 5.4 and 6.9): the table the journal commit carries, never the
lock refs. A push to the lock namespaces is judged against it (``guard_journal``, picked
by ``hooks/table_guard.py``): the journal only moves forward onto journal commits that
carry a table, and every lock ref ends as the new table says. The guard judges the
table's shape and history, not who writes it. Stdlib and git only, like the rest of the hook.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from gitlocks.core.journal import COMPACTED, TABLE_MARKER, is_journal_commit, parse_events, shard_of
from gitlocks.core.record import is_lock_id
from gitlocks.core.shard import parse_format
from gitlocks.core.text import canonical_number
from gitlocks.git import files
from gitlocks.git.changes import finish_git, git_output, start_git
from gitlocks.git.objects import MODE_TREE, Found, cat_file, parse_commit, parse_tree
from gitlocks.git.run import Env
from gitlocks.layout import (
    FORMAT_REF,
    JOURNAL_REF,
    LOCK_PREFIX,
    MAX_SHARDS,
    SHARD_PREFIX,
)

_ENTRY_RE = re.compile(r"^locks/([0-9a-f]{2})/([^/]+)$")


def is_zero(oid: str) -> bool:
    return not oid.strip("0")


@dataclass(frozen=True)
class JournalCommit:
    """A journal commit as stored: its parents, events and (None: written before journal
    commits carried it) its table, lock id -> blob id."""

    oid: str
    parents: tuple[str, ...]
    tree: str
    message: str
    table: dict[str, str] | None


def lock_path(lock_id: str) -> str:
    return f"locks/{shard_of(lock_id)}/{lock_id}"


def read_heads(
    oids: Sequence[str], cwd: str | None, lookups: Sequence[str] = ()
) -> tuple[list[JournalCommit | None], dict[str, str | None]]:
    """The journal commits ``oids`` name (None: no journal commit), their tables not yet
    read (``{}`` for a table commit, None for one from before commits carried it); and the
    value the last of them gives each lock id in ``lookups``. One ``cat-file`` in all."""
    names = [n for oid in oids for n in (oid, f"{oid}^{{tree}}", f"{oid}:format")]
    last = oids[-1] if oids else ""
    names += [f"{last}:{lock_path(i)}" for i in lookups]
    got = cat_file(names, cwd, env=Env.INHERIT)
    heads = [_head(oid, *got[3 * n : 3 * n + 3]) for n, oid in enumerate(oids)]
    found = {
        lock_id: entry[0] if entry is not None and entry[1] == "blob" else None
        for lock_id, entry in zip(lookups, got[3 * len(oids) :], strict=False)
    }
    return heads, found


def _head(
    oid: str,
    commit: Found | None,
    tree: Found | None,
    marker: Found | None,
) -> JournalCommit | None:
    if commit is None or commit[1] != "commit" or tree is None:
        return None
    parsed = parse_commit(oid, commit[2])
    parents, body = parsed.parent_ids, parsed.message
    if not is_journal_commit(len(parents), 0, body):
        return None
    if not tree[2]:  # an empty tree: a journal from before commits carried the table
        return JournalCommit(oid, parents, tree[0], body, None)
    try:
        names = {e.name: e.mode for e in parse_tree(tree[2], len(tree[0]) // 2)}
    except ValueError:  # no tree git would read (a pushed object is never trusted)
        return None
    if not names.keys() <= {"format", "locks"} or names.get("locks", MODE_TREE) != MODE_TREE:
        return None
    if marker is None or marker[1:] != ("blob", TABLE_MARKER):
        return None
    return JournalCommit(oid, parents, tree[0], body, {})


def _lock_at(path: bytes) -> str | None:
    """The lock id a table tree's entry at ``path`` holds: names a lock ref can have, in
    the subtree of their hash; anything else there is no lock, as for clients."""
    match = _ENTRY_RE.match(os.fsdecode(path))
    if match is None or not is_lock_id(match[2]) or shard_of(match[2]) != match[1]:
        return None
    return match[2]


def read_table_of(oid: str, cwd: str | None) -> dict[str, str]:
    """Every lock of a table commit's tree (``ls-tree``)."""
    listing = git_output(["ls-tree", "-r", "-z", "--full-tree", oid], cwd)
    table: dict[str, str] = {}
    for entry in listing.split(b"\0"):
        meta, _, path = entry.partition(b"\t")
        parts, lock_id = meta.decode("ascii", "replace").split(" "), _lock_at(path)
        if len(parts) == 3 and parts[1] == "blob" and lock_id is not None:
            table[lock_id] = parts[2]
    return table


def read_journal(oid: str, cwd: str | None = None) -> JournalCommit | None:
    """The journal commit ``oid`` names with its whole table; None when it is none."""
    (head,), _ = read_heads([oid], cwd)
    if head is None or head.table is None:
        return head
    return replace(head, table=read_table_of(oid, cwd))


def changed_locks(old_tree: str, new_tree: str, cwd: str | None) -> dict[str, str | None]:
    """Lock id -> its value in ``new_tree`` (None: gone) for every lock the two table trees
    hold differently (``diff-tree``: only what changed is read, however large the table)."""
    raw = git_output(["diff-tree", "-r", "-z", "--no-renames", old_tree, new_tree], cwd)
    fields = raw.split(b"\0")
    found: dict[str, str | None] = {}
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        parts, lock_id = meta.decode("ascii", "replace").split(" "), _lock_at(path)
        if len(parts) == 5 and lock_id is not None:
            blob = parts[1] in ("100644", "100755")
            found[lock_id] = parts[3] if blob and not is_zero(parts[3]) else None
    return found


def named_refs(cwd: str | None, *patterns: str) -> dict[str, str]:
    """Ref name -> value of the refs ``for-each-ref PATTERNS`` lists."""
    out = git_output(["for-each-ref", "--format=%(refname) %(objectname)", *patterns], cwd)
    return dict(line.rsplit(" ", 1) for line in out.decode("utf-8", "replace").splitlines())


def current_refs(cwd: str | None = None) -> tuple[str | None, dict[str, str]]:
    """(the journal ref's value, lock id -> value of each lock ref) as the repository has
    them now; probe refs (deeper names) are no locks."""
    refs = named_refs(cwd, LOCK_PREFIX, JOURNAL_REF)
    journal = refs.pop(JOURNAL_REF, None)
    named = {name[len(LOCK_PREFIX) :]: oid for name, oid in refs.items()}
    return journal, {lock_id: oid for lock_id, oid in named.items() if "/" not in lock_id}


def sharded_state(cwd: str | None = None) -> tuple[int | None, dict[str, str]] | None:
    """(the shard count the format ref states, None when it states none this version
    reads; shard journal ref -> its commit), or None where the table is one journal."""
    tips = named_refs(cwd, FORMAT_REF, SHARD_PREFIX)
    stated = tips.pop(FORMAT_REF, None)
    if stated is None:
        return None
    (blob,) = cat_file([stated], cwd, env=Env.INHERIT)
    count = parse_format(blob[2], MAX_SHARDS) if blob is not None and blob[1] == "blob" else None
    return count, tips


def shard_order(tips: Mapping[str, str], count: int) -> list[tuple[int, str]]:
    """(shard, commit) of the shards ``0..count-1`` among ``tips``, in shard order: the order
    clients fold the union in (a ref beyond them is no shard, and read by nobody)."""
    found = [(canonical_number(ref[len(SHARD_PREFIX) :]), oid) for ref, oid in tips.items()]
    return sorted((k, oid) for k, oid in found if k is not None and k < count)


def table_refs(cwd: str | None = None) -> files.Scan | None:
    """The table the journal commit carries, as lock refs (name -> blob); None where the
    repository has no journal, or one from before journal commits carried the table
    (then its lock refs are the table, as for clients). A sharded table is the union of
    its shard journals' tables (all of them when the format ref states no count)."""
    state = sharded_state(cwd)
    table: dict[str, str] = {}
    if state is not None:
        for _, tip in shard_order(state[1], state[0] or MAX_SHARDS):
            shard = read_journal(tip, cwd)
            table.update(shard.table or {} if shard is not None else {})
    else:
        journal, _ = current_refs(cwd)
        found = read_journal(journal, cwd) if journal is not None else None
        if found is None or found.table is None:
            return None
        table = found.table
    return files.Scan({LOCK_PREFIX + i: oid for i, oid in table.items()}, {})


def descends(new: JournalCommit, old: JournalCommit, cwd: str | None) -> bool:
    """Whether ``new`` continues the chain at ``old``: ``old`` is an ancestor, or ``new``
    stands on a compacted root that names ``old`` and carries its table."""
    proc = start_git(["merge-base", "--is-ancestor", old.oid, new.oid], cwd)
    finish_git(proc, ok=(0, 1))
    if proc.returncode == 0:
        return True
    for oid in (new.oid, *new.parents[:1]):
        commit = new if oid == new.oid else read_heads([oid], cwd)[0][0]
        if commit is None or commit.parents:
            continue
        for event in parse_events(commit.message):
            if event.get("event") == COMPACTED and event.get("previous") == old.oid:
                return commit.tree == old.tree
    return False


def _journal_problem(
    pushed: Mapping[str, tuple[str, str]],
    journal_now: str | None,
    old: JournalCommit | None,
    new: JournalCommit | None,
    cwd: str | None,
) -> str | None:
    """What is wrong with where the push moves the journal, if anything."""
    if JOURNAL_REF not in pushed:
        return None
    new_oid = pushed[JOURNAL_REF][1]
    if is_zero(new_oid):
        if journal_now is None:
            return None
        return (
            f"the push deletes {JOURNAL_REF}, the lock table every clone decides on (a git "
            "push --mirror or --prune from a clone that never fetched it?): push without it "
            "(name the refs to push)"
        )
    if new is None:
        return (
            f"the push moves {JOURNAL_REF} to {new_oid[:12]}, which is no gitlocks journal "
            "commit: only git alock writes it"
        )
    if old is not None and old.table is not None and new.table is None:
        return (
            f"the push moves {JOURNAL_REF} to {new_oid[:12]}, a journal commit that carries "
            "no lock table, after one that does: that would hand the table back to the "
            "lock refs (only a client from before commits carried the table writes those)"
        )
    if old is not None and not descends(new, old, cwd):
        return (
            f"the push moves {JOURNAL_REF} from {old.oid[:12]} to {new_oid[:12]}, which does "
            "not descend from it: that would rewind or replace the lock table (git alock "
            "sync, then write again)"
        )
    return None


def guard_journal(
    pushed: Mapping[str, tuple[str, str]], locks: Mapping[str, tuple[str, str]], cwd: str | None
) -> list[str]:
    """Why a push must be refused for what it does to a table kept in one journal (empty:
    it may pass): ``pushed`` names each ref's old and new value, ``locks`` the lock refs
    among them by lock id. One ``cat-file`` and one ``diff-tree``, whatever the table."""
    journal_now, refs_now = current_refs(cwd)
    stated = {JOURNAL_REF: journal_now, **{LOCK_PREFIX + i: v for i, v in refs_now.items()}}
    moved = moved_since(pushed, [JOURNAL_REF, *(LOCK_PREFIX + i for i in locks)], stated)
    if moved:
        return moved
    new_oid = pushed[JOURNAL_REF][1] if JOURNAL_REF in pushed else journal_now
    if new_oid is not None and is_zero(new_oid):
        new_oid = None
    oids = [o for o in (journal_now, new_oid) if o is not None]
    heads, wanted = read_heads(oids, cwd, sorted(locks) if new_oid is not None else ())
    old = heads[0] if journal_now is not None else None
    new = heads[-1] if new_oid is not None else None
    problem = _journal_problem(pushed, journal_now, old, new, cwd)
    if problem is not None:
        return [problem]
    if new is None or new.table is None:
        return []  # no table here: the lock refs are the table, as for clients
    # The locks whose entry the push changes in the table: each ref must move with it.
    changed: Mapping[str, str | None]
    if old is not None and old.table is not None:
        changed = changed_locks(old.tree, new.tree, cwd) if old.oid != new.oid else {}
    else:  # no table before (the lock refs were the table): the whole new table
        table = read_table_of(new.oid, cwd)
        before = refs_now if old is not None else {}
        changed = {
            i: table.get(i) for i in before.keys() | table.keys() if before.get(i) != table.get(i)
        }
    return lock_ref_problems(locks, {**changed, **wanted}, refs_after(refs_now, locks), changed)


def moved_since(
    pushed: Mapping[str, tuple[str, str]], guarded: Iterable[str], now: Mapping[str, str | None]
) -> list[str]:
    """The refusal of a push that names an old value for one of the ``guarded`` refs that
    is no longer its value ``now`` (None: there is none): a write that lost a race, refused
    here since a push that is not atomic would still apply its other refs."""
    stale = sorted(
        name
        for name in set(guarded) & pushed.keys()
        if (None if is_zero(pushed[name][0]) else pushed[name][0]) != now.get(name)
    )
    if not stale:
        return []
    return [
        f"the lock table moved since this push was prepared ({stale[0]} is no longer "
        "what it names as its old value): fetch and decide again"
    ]


def refs_after(now: Mapping[str, str], locks: Mapping[str, tuple[str, str]]) -> dict[str, str]:
    """Lock id -> value of every lock ref once the push has moved ``locks``."""
    after = dict(now)
    for lock_id, (_, value) in locks.items():
        if is_zero(value):
            after.pop(lock_id, None)
        else:
            after[lock_id] = value
    return after


def lock_ref_problems(
    locks: Mapping[str, object],
    wanted: Mapping[str, str | None],
    after: Mapping[str, str],
    changed: Iterable[str] = (),
) -> list[str]:
    """What is wrong with each lock ref the push moves (``locks``), its value ``after`` the
    push against the one the lock table holds (``wanted``), and with each other lock whose
    entry the push ``changed`` in the table: its ref must move with it."""
    problems: list[str] = []
    for lock_id in sorted(locks):
        want, have = wanted.get(lock_id), after.get(lock_id)
        if want == have:
            continue
        ref = LOCK_PREFIX + lock_id
        if have is None:
            problems.append(
                f"the push deletes {ref}, a claim the lock table still holds (release or "
                "break it with git alock)"
            )
        elif want is None:
            problems.append(
                f"the push sets {ref}, a lock the lock table does not hold (claim with "
                "git alock acquire)"
            )
        else:
            problems.append(f"the push sets {ref} to a value the lock table does not hold")
    for lock_id in sorted(set(changed) - set(locks)):
        if after.get(lock_id) != wanted.get(lock_id):
            problems.append(
                f"the push changes {LOCK_PREFIX}{lock_id} in the lock table but leaves its "
                "lock ref as it was"
            )
    return problems
