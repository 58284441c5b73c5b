"""The journal commit's tree is exactly the table after the write, in a large table too,
where a write hashes again only the subtrees its table differs from the parent's in
(``Journal.tree`` and the shards it keeps in the cache): whatever moved the refs or the journal, by
gitlocks or by hand, in between."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from support.cli import alock
from support.records import edit_cache, plant, seed_locks, write_blob

from gitlocks.core.journal import shard_of
from gitlocks.core.record import is_lock_id
from gitlocks.layout import CACHE_FILE, JOURNAL_REF
from gitlocks.store import journal as store_journal
from gitlocks.store.local import Store

A = {"AGENT_ID": "agent-a"}
LARGE = store_journal.TREE_CACHE_AFTER + 20  # past the size the shards are kept from


def rev(repo: Path, spec: str) -> str:
    return git(repo, "rev-parse", spec).strip()


def tree_table(repo: Path, commit: str = JOURNAL_REF) -> dict[str, str]:
    """lock id -> blob of the tree of journal commit ``commit``, as git lists it."""
    found: dict[str, str] = {}
    for line in git(repo, "ls-tree", "-r", commit).splitlines():
        meta, path = line.split("\t")
        if path == "format":
            continue
        top, shard, lock_id = path.split("/")
        assert top == "locks" and shard == shard_of(lock_id), path
        found[lock_id] = meta.split()[2]
    return found


def ref_table(repo: Path) -> dict[str, str]:
    """lock id -> blob of every lock ref with a lock id's name, as git lists them."""
    out = git(repo, "for-each-ref", "--format=%(objectname) %(refname)", "refs/agent-locks/")
    found = {}
    for line in out.splitlines():
        oid, name = line.split(" ")
        lock_id = name.removeprefix("refs/agent-locks/")
        if is_lock_id(lock_id):
            found[lock_id] = oid
    return found


def full_tree(repo: Path) -> str:
    """The tree id of the refs' table hashed whole, from nothing kept."""
    store = Store.discover(repo)
    return store.journal_store.tree(None, ref_table(repo))


def assert_tree_is_the_table(repo: Path) -> None:
    assert tree_table(repo) == ref_table(repo)
    assert rev(repo, f"{JOURNAL_REF}^{{tree}}") == full_tree(repo)


@pytest.fixture
def large(repo: Path) -> Path:
    """A repository holding more locks than the shards are kept from, and one write
    since (which kept them)."""
    seed_locks(repo, LARGE)
    assert alock(repo, "acquire", "first/**", **A).code == 0
    assert (repo / ".git" / CACHE_FILE).exists()
    assert_tree_is_the_table(repo)
    return repo


def test_writes_keep_the_tree_the_table(large: Path) -> None:
    seeded = rev(large, f"{JOURNAL_REF}~1^{{tree}}")
    assert alock(large, "acquire", "second/**", **A).code == 0
    assert_tree_is_the_table(large)
    assert alock(large, "release", "first/**", **A).code == 0
    assert_tree_is_the_table(large)
    assert alock(large, "release", "second/**", **A).code == 0
    assert_tree_is_the_table(large)
    # Back to the seeded table: its very tree.
    assert rev(large, f"{JOURNAL_REF}^{{tree}}") == seeded


def test_lock_refs_moved_by_hand_between_writes(large: Path) -> None:
    table = ref_table(large)
    victims = sorted(table)[:3]
    # One pointed at another blob (no record at all), one deleted, one added under a lock
    # id's name, one under a name no lock has: only the lock-named ones are the table.
    plant(large, victims[0], b"not a record")
    git(large, "update-ref", "-d", f"refs/agent-locks/{victims[1]}")
    plant(large, "planted-by-hand", {"id": "planted-by-hand"})
    plant(large, "_no-lock-id", b"x")
    blob = write_blob(large, b"another")
    git(large, "update-ref", f"refs/agent-locks/{victims[2]}", blob)
    assert alock(large, "acquire", "after/**", **A).code == 0
    assert_tree_is_the_table(large)
    got = tree_table(large)
    assert got[victims[0]] == ref_table(large)[victims[0]] and victims[1] not in got
    assert "planted-by-hand" in got and got[victims[2]] == blob
    # And moved back by hand: the next write follows again.
    git(large, "update-ref", f"refs/agent-locks/{victims[2]}", table[victims[2]])
    git(large, "update-ref", "-d", "refs/agent-locks/planted-by-hand")
    assert alock(large, "release", "after/**", **A).code == 0
    assert_tree_is_the_table(large)


def test_a_journal_moved_by_hand(large: Path) -> None:
    older = rev(large, f"{JOURNAL_REF}~1")
    assert alock(large, "acquire", "two/**", **A).code == 0
    # Back to a commit whose table lacks first/** and two/**, whose refs still exist.
    git(large, "update-ref", JOURNAL_REF, older)
    assert alock(large, "acquire", "three/**", **A).code == 0
    assert_tree_is_the_table(large)
    # Onto a project commit: a fresh chain, its tree the table still.
    git(large, "update-ref", JOURNAL_REF, "HEAD")
    assert alock(large, "acquire", "four/**", **A).code == 0
    assert_tree_is_the_table(large)
    assert git(large, "rev-list", "--count", JOURNAL_REF).strip() == "1"


def test_a_write_that_never_moved_its_refs(large: Path) -> None:
    """A writer killed after writing its trees and keeping their shards, before any ref
    moved: what it kept describes a tree no ref names, and the next write is right."""
    store = Store.discover(large)
    refs = ref_table(large)
    refs.pop(sorted(refs)[0])
    refs["never-landed"] = write_blob(large, b"never")
    store.journal_store.write(store.version(), [{"event": "test"}], refs)
    assert alock(large, "acquire", "next/**", **A).code == 0
    assert_tree_is_the_table(large)
    assert "never-landed" not in tree_table(large)


def test_kept_shards_unreadable_or_of_another_tree(large: Path) -> None:
    path = large / ".git" / CACHE_FILE
    kept = path.read_bytes()
    assert alock(large, "acquire", "b/**", **A).code == 0
    path.write_bytes(kept)  # well formed, of the parent's parent's tree
    assert alock(large, "acquire", "c/**", **A).code == 0
    assert_tree_is_the_table(large)
    for junk in (b"", b"garbage", kept[: len(kept) // 2]):
        path.write_bytes(junk)
        assert alock(large, "acquire", "d/**", **A).code == 0
        assert_tree_is_the_table(large)
        assert alock(large, "release", "d/**", **A).code == 0
        assert_tree_is_the_table(large)


def test_kept_subtree_ids_that_are_not_the_parents(large: Path) -> None:
    """Kept shards whose subtree ids do not make the parent's ``locks`` tree, though filed
    under its id: not believed, the tree is hashed whole."""

    def swapped(document: dict[str, Any]) -> dict[str, Any]:
        subtrees = document["subtrees"]
        first, second = sorted(subtrees)[:2]
        subtrees[first] = subtrees[second]
        return document

    edit_cache(large / ".git", swapped, section=1)  # its check sum right
    assert alock(large, "acquire", "elsewhere/**", **A).code == 0
    assert_tree_is_the_table(large)


def test_compaction_of_a_large_table(large: Path) -> None:
    git(large, "config", "alock.journalKeep", "2")
    for i in range(6):
        assert alock(large, "acquire", f"k{i}/**", **A).code == 0
        assert_tree_is_the_table(large)
    chain = list(Store.discover(large).journal())
    assert chain[-1].events[0]["event"] == "compacted"
    for entry in chain:
        subprocess.run(["git", "cat-file", "-e", entry.commit], cwd=large, check=True)


def test_a_table_read_from_a_commit_with_kept_shards_is_its_tree(large: Path) -> None:
    """Reading the table a journal commit carries takes the members of each subtree the
    kept shards name by the same id, and reads the others: alike for the tree the shards
    were kept of, for one that differs in a few shards, and for one of a table moved by
    hand, as git lists each tree."""
    kept = large / ".git" / CACHE_FILE
    first = rev(large, JOURNAL_REF)
    old_shards = kept.read_bytes()
    assert Store.discover(large).journal_store.table(first) == tree_table(large, first)
    victim = next(iter(ref_table(large)))
    git(large, "update-ref", f"refs/agent-locks/{victim}", write_blob(large, "by hand"))
    assert alock(large, "acquire", "third/**", **A).code == 0
    assert alock(large, "release", "first/**", **A).code == 0
    second = rev(large, JOURNAL_REF)
    for shards in (kept.read_bytes(), old_shards, b"junk"):  # of this tree, an older, none
        kept.write_bytes(shards)
        for commit in (first, second):
            table = Store.discover(large).journal_store.table(commit)
            assert table == tree_table(large, commit), commit


def test_kept_shards_garbled_in_place_are_not_believed(large: Path) -> None:
    """A kept file damaged where it lists a member (one blob id for another, of the same
    length: it still loads, and its subtree ids still make the tree): the table read from
    the commit is still the tree's, and the next write's tree is the table's."""
    kept = large / ".git" / CACHE_FILE
    commit = rev(large, JOURNAL_REF)
    table = tree_table(large, commit)
    victim, other = sorted(table)[:2]
    head, verdicts, shards = kept.read_bytes().split(b"\n")
    assert shards.count(table[victim].encode()) == 1
    shards = shards.replace(table[victim].encode(), table[other].encode())
    kept.write_bytes(b"\n".join([head, verdicts, shards]))
    assert Store.discover(large).journal_store.table(commit) == table
    assert alock(large, "acquire", "after/**", **A).code == 0
    assert_tree_is_the_table(large)


def test_a_pipe_in_the_kept_shards_place_never_hangs_a_write(large: Path) -> None:
    """The kept shards are read as the other kept files are, only from a regular file: a
    named pipe in their place costs a whole hashing, never a hung claim. (The timeout only
    stops a hung command.)"""
    path = large / ".git" / CACHE_FILE
    path.unlink()
    os.mkfifo(path)
    env = {**os.environ, "AGENT_ID": "agent-a"}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env["PATH"]
    done = subprocess.run(
        ["git", "alock", "acquire", "piped/**"],
        cwd=large, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith("ACQUIRED"), done
    assert rev(large, f"{JOURNAL_REF}^{{tree}}") == full_tree(large)
