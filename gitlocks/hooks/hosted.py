"""The lock table of a repository you host, as its pre-receive hook reads and guards it.

Clients decide on the table the journal commit carries (``refs/agent-locks-meta/journal``,
docs/design.md section 5.4), never on the lock refs, which a remote updates one at a time.
The hook does the same: its claim check reads that table, and a push that touches the
lock namespaces is judged against it (``guard``):

- the journal is never deleted, rewound or moved to anything but a journal commit that
  descends from the one it held (a compacted root counts when it names the old tip and
  carries its table);
- after the push every lock ref the push names holds what the new table says (a deletion
  where the table holds none), and every lock whose entry the push changes in the table
  has its ref moved with it.

So a plain ``git push --mirror`` from a clone that never fetched the lock refs, a hand-made
deletion of a live claim's ref, or a planted lock ref are refused; the project's own
writes (one atomic push of the journal and the lock refs that differ) pass. The guard
judges the table's shape and history, not who writes it: a push shaped like a gitlocks
write (``git alock break``) is a write, recorded in the journal like any other.

Stdlib and git only, like the rest of the hook: no pygit2, no typer.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gitlocks.core.journal import COMPACTED, TABLE_MARKER, is_journal_commit, parse_events, shard_of
from gitlocks.core.record import LOCK_ID_RE
from gitlocks.errors import StoreError
from gitlocks.git import files
from gitlocks.git.changes import finish_git, start_git
from gitlocks.layout import JOURNAL_REF, LOCK_PREFIX, PROBE_PREFIXES

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


def _batch(names: Sequence[str], cwd: str | None) -> list[tuple[str, bytes] | None]:
    """``cat-file --batch`` of ``names``: (type, contents) each, None for a missing one."""
    out = finish_git(
        start_git(["cat-file", "--batch"], cwd), "".join(n + "\n" for n in names).encode()
    )
    found: list[tuple[str, bytes] | None] = []
    pos = 0
    while pos < len(out) and len(found) < len(names):
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        pos = end + 1
        if len(header) != 3:  # "<name> missing" / "ambiguous"
            found.append(None)
            continue
        size = int(header[2])
        found.append((header[1].decode(), out[pos : pos + size]))
        pos += size + 1
    return found


def read_journal(oid: str, cwd: str | None = None) -> JournalCommit | None:
    """The journal commit ``oid`` names, read as git stores it; None when it is none (a
    missing object, a project commit, a tree that is no table)."""
    got = _batch([oid, f"{oid}^{{tree}}"], cwd)
    if len(got) != 2 or got[0] is None or got[0][0] != "commit":
        return None
    head, _, body = got[0][1].decode("utf-8", "replace").partition("\n\n")
    tree = ""
    parents = []
    for line in head.splitlines():
        key, _, value = line.partition(" ")
        if key == "tree":
            tree = value.strip()
        elif key == "parent":
            parents.append(value.strip())
    if not is_journal_commit(len(parents), 0, body):
        return None
    listing = finish_git(start_git(["ls-tree", "-r", "-z", "--full-tree", oid], cwd))
    entries = [e for e in listing.split(b"\0") if e]
    if not entries:  # an empty tree: a journal from before commits carried the table
        return JournalCommit(oid, tuple(parents), tree, body, None)
    table: dict[str, str] = {}
    marker = None
    for entry in entries:
        meta, _, raw_path = entry.partition(b"\t")
        _mode, kind, blob = meta.decode("ascii", "replace").split(" ")
        path = os.fsdecode(raw_path)
        if path == "format" and kind == "blob":
            marker = blob
            continue
        match = _ENTRY_RE.match(path)
        if match is None:
            return None  # anything else: no table tree, so no journal commit
        shard, lock_id = match.groups()
        if kind == "blob" and LOCK_ID_RE.match(lock_id) and shard_of(lock_id) == shard:
            table[lock_id] = blob
    format_blob = _batch([marker], cwd)[0] if marker else None
    if format_blob is None or format_blob != ("blob", TABLE_MARKER):
        return None
    return JournalCommit(oid, tuple(parents), tree, body, table)


def current_refs(cwd: str | None = None) -> tuple[str | None, dict[str, str]]:
    """(the journal ref's value, lock id -> value of each lock ref) as the repository has
    them now; probe refs (deeper names) are no locks."""
    out = finish_git(
        start_git(
            ["for-each-ref", "--format=%(objectname) %(refname)", LOCK_PREFIX, JOURNAL_REF], cwd
        )
    )
    journal = None
    locks: dict[str, str] = {}
    for line in out.decode("utf-8", "replace").splitlines():
        oid, _, name = line.partition(" ")
        if name == JOURNAL_REF:
            journal = oid
        elif name.startswith(LOCK_PREFIX) and "/" not in name[len(LOCK_PREFIX) :]:
            locks[name[len(LOCK_PREFIX) :]] = oid
    return journal, locks


def table_refs(cwd: str | None = None) -> files.Scan | None:
    """The table the journal commit carries, as lock refs (name -> blob); None where the
    repository has no journal, or one from before journal commits carried the table
    (then its lock refs are the table, as for clients)."""
    journal, _ = current_refs(cwd)
    found = read_journal(journal, cwd) if journal is not None else None
    if found is None or found.table is None:
        return None
    return files.Scan({LOCK_PREFIX + i: oid for i, oid in found.table.items()}, {})


# --- guarding the table ------------------------------------------------------------------------


def _descends(new: JournalCommit, old: str, old_tree: str, cwd: str | None) -> bool:
    """Whether ``new`` continues the chain at ``old``: ``old`` is an ancestor, or ``new``
    stands on a compacted root that names ``old`` and carries its table."""
    proc = start_git(["merge-base", "--is-ancestor", old, new.oid], cwd)
    finish_git(proc, ok=(0, 1))
    if proc.returncode == 0:
        return True
    for oid in (new.oid, *new.parents[:1]):
        commit = new if oid == new.oid else read_journal(oid, cwd)
        if commit is None or commit.parents:
            continue
        for event in parse_events(commit.message):
            if event.get("event") == COMPACTED and event.get("previous") == old:
                return commit.tree == old_tree
    return False


def guard(lines: Sequence[str], cwd: str | None = None) -> list[str]:
    """Why a push must be refused for what it does to the lock table (empty: it may pass).

    ``lines``: pre-receive's ``<old> <new> <ref>`` lines (only those in the lock namespaces
    matter). Probe refs (``git alock remote NAME`` checks a remote with them) pass.
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
    if JOURNAL_REF not in pushed and not locks:
        return []
    journal_now, refs_now = current_refs(cwd)
    stated = {JOURNAL_REF: journal_now, **{LOCK_PREFIX + i: v for i, v in refs_now.items()}}
    stale = sorted(
        name
        for name, (old_value, _) in pushed.items()
        if (name == JOURNAL_REF or name[len(LOCK_PREFIX) :] in locks)
        and (None if is_zero(old_value) else old_value) != stated.get(name)
    )
    if stale:
        # A write that lost a race (another got in after git showed it the refs): refused
        # here, since a push that is not atomic would still apply its other refs. The
        # project's writer sees the journal moved, fetches and decides again.
        return [
            f"the lock table moved since this push was prepared ({stale[0]} is no longer "
            "what it names as its old value): fetch and decide again"
        ]
    old = read_journal(journal_now, cwd) if journal_now is not None else None
    problems: list[str] = []
    new = old
    if JOURNAL_REF in pushed:
        _, new_oid = pushed[JOURNAL_REF]
        if is_zero(new_oid):
            if journal_now is not None:
                return [
                    f"the push deletes {JOURNAL_REF}, the lock table every clone decides on "
                    "(a git push --mirror or --prune from a clone that never fetched it?): "
                    "push without it (name the refs to push)"
                ]
            new = None
        else:
            new = read_journal(new_oid, cwd)
            if new is None:
                return [
                    f"the push moves {JOURNAL_REF} to {new_oid[:12]}, which is no gitlocks "
                    "journal commit: only git alock writes it"
                ]
            if (
                journal_now is not None
                and old is not None
                and not _descends(new, journal_now, old.tree, cwd)
            ):
                return [
                    f"the push moves {JOURNAL_REF} from {journal_now[:12]} to "
                    f"{new_oid[:12]}, which does not descend from it: that would rewind "
                    "or replace the lock table (git alock sync, then write again)"
                ]
    if new is None or new.table is None:
        return problems  # no table here: the lock refs are the table, as for clients
    after = dict(refs_now)
    for lock_id, (_, value) in locks.items():
        if is_zero(value):
            after.pop(lock_id, None)
        else:
            after[lock_id] = value
    before_table: Mapping[str, str] = (old.table or {}) if old is not None else {}
    if old is not None and old.table is None:
        before_table = refs_now  # the lock refs were the table until now
    for lock_id in sorted(locks):
        want, have = new.table.get(lock_id), after.get(lock_id)
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
    for lock_id in sorted(before_table.keys() | new.table.keys()):
        if lock_id in locks or before_table.get(lock_id) == new.table.get(lock_id):
            continue
        if after.get(lock_id) != new.table.get(lock_id):
            problems.append(
                f"the push changes {LOCK_PREFIX}{lock_id} in the lock table but leaves its "
                "lock ref as it was"
            )
    return problems


def guard_or_error(lines: Sequence[str], cwd: str | None = None) -> list[str]:
    """``guard``, where a failure to read the table is a refusal too: a table that cannot
    be read cannot be shown to stay whole."""
    try:
        return guard(lines, cwd)
    except (StoreError, ValueError) as exc:
        return [f"the lock table could not be read ({exc})"]
