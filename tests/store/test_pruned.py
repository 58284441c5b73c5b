"""Each step of a write that ``git prune --expire=now`` can take objects from, one at a time
(docs/design.md, section 4.6): a real prune run at that very moment, or the files it would
delete deleted, then what every reader and the next write make of it."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from support.cli import alock
from support.guard import edit, guard

from gitlocks.core.table import Table
from gitlocks.errors import StoreError
from gitlocks.git import pruned
from gitlocks.git.table import read_lock_table
from gitlocks.layout import JOURNAL_REF, LOCK_PREFIX
from gitlocks.store import refs
from gitlocks.store.local import Store

A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}


def _loose(repo: Path, oid: str) -> Path:
    return repo / ".git" / "objects" / oid[:2] / oid[2:]


def _lock_ref(repo: Path) -> tuple[str, str]:
    """(ref, blob) of the one lock."""
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", LOCK_PREFIX)
    [line] = out.splitlines()
    ref, oid = line.split()
    return ref, oid


def _journal(repo: Path) -> list[str]:
    return git(repo, "rev-list", JOURNAL_REF).split()


def _fsck(repo: Path) -> None:
    got = subprocess.run(
        ["git", "fsck", "--connectivity-only", "--no-dangling"],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    assert got.returncode == 0, got.stdout + got.stderr


def _lose(repo: Path, oid: str) -> None:
    """Delete an object and every copy kept of it: lost for good."""
    _loose(repo, oid).unlink()
    for kept in (repo / ".git" / pruned.KEPT_DIR).glob(f"*/{oid}"):
        kept.unlink()


def test_objects_pruned_between_write_and_ref_update_are_written_again(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A prune that runs after the record and the journal commit are written, before the
    refs name them, deletes them (nothing reaches them yet): git then refuses to point a
    ref at a missing object, and the write is decided and written again."""
    alock(repo, "acquire", "docs/**", **A)
    write = refs.RefWriter.write
    pruned_once: list[bool] = []

    def prune_first(self: refs.RefWriter, *args: Any, **kwargs: Any) -> None:
        if not pruned_once:
            pruned_once.append(True)
            git(repo, "prune", "--expire=now")
        write(self, *args, **kwargs)

    monkeypatch.setattr(refs.RefWriter, "write", prune_first)
    got = alock(repo, "acquire", "src/**", **B)
    assert got.code == 0 and got.word.startswith("ACQUIRED"), got
    assert pruned_once
    _fsck(repo)
    listed = alock(repo, "list", "--json")
    assert listed.code == 0 and listed.err == "", listed
    assert {r["holder"] for r in listed.json()} == {"agent-a", "agent-b"}
    assert len(_journal(repo)) == 2


def test_objects_pruned_after_the_ref_update_are_written_again(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A prune that read the refs before they moved deletes the write's objects after:
    once the refs moved, the write (under the mutex) writes again what is gone."""
    keep = pruned.keep_written
    taken: list[str] = []

    def prune_then_keep(objects: Any, written: dict[str, tuple[str, bytes]]) -> None:
        for oid in written:
            _loose(repo, oid).unlink(missing_ok=True)
            taken.append(oid)
        keep(objects, written)

    monkeypatch.setattr(pruned, "keep_written", prune_then_keep)
    got = alock(repo, "acquire", "src/**", **A)
    assert got.code == 0, got
    _, blob = _lock_ref(repo)
    assert blob in taken and _journal(repo)[0] in taken
    assert all(_loose(repo, oid).exists() for oid in taken)
    _fsck(repo)


def test_objects_pruned_after_the_write_are_put_back_by_the_next(repo: Path) -> None:
    """A prune whose pass reaches the write's objects after the write looked: they were
    kept under a second name, and the next reader (the record) or write (everything the
    writes of the last seconds stored) puts them back."""
    assert alock(repo, "acquire", "src/**", **A).code == 0
    _, blob = _lock_ref(repo)
    head = _journal(repo)[0]
    tree = git(repo, "rev-parse", f"{head}^{{tree}}").strip()
    for oid in (blob, head, tree):
        _loose(repo, oid).unlink()
    listed = alock(repo, "list", "--json")  # a reader: the record it needs
    assert listed.code == 0 and listed.err == "", listed
    assert [r["holder"] for r in listed.json()] == ["agent-a"]
    assert _loose(repo, blob).exists()
    got = alock(repo, "acquire", "docs/**", **B)  # a write: everything kept of late
    assert got.code == 0, got
    assert _loose(repo, head).exists() and _loose(repo, tree).exists()
    _fsck(repo)
    assert len(_journal(repo)) == 2


def test_what_a_refused_try_left_is_kept_by_the_try_that_moves_the_refs(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A prune takes the journal commit of a write's first try before the refs move: git
    refuses it, and the write is decided again. The next try finds the first one's other
    objects there (the table marker, the trees) and uses them again, not storing them anew;
    it keeps them all the same, so a prune that read the refs before they moved and takes
    them after is put back by the next write, never a journal that lacks its table."""
    write = refs.RefWriter.write
    refused: list[str] = []

    def prune_commit_first(self: refs.RefWriter, updates: Any, *args: Any, **kw: Any) -> None:
        if not refused:
            refused.append(updates[JOURNAL_REF])
            _loose(repo, updates[JOURNAL_REF]).unlink()
        write(self, updates, *args, **kw)

    monkeypatch.setattr(refs.RefWriter, "write", prune_commit_first)
    got = alock(repo, "acquire", "src/**", **A)
    assert got.code == 0 and got.word.startswith("ACQUIRED"), got
    assert refused
    monkeypatch.undo()
    head = _journal(repo)[0]
    tree = git(repo, "rev-parse", f"{head}^{{tree}}").strip()
    listed = [line.split()[2] for line in git(repo, "ls-tree", "-r", "-t", tree).splitlines()]
    for oid in [tree, *listed]:  # every object the journal's table names, pruned after
        _loose(repo, oid).unlink(missing_ok=True)
    got = alock(repo, "acquire", "docs/**", **B)
    assert got.code == 0 and got.word.startswith("ACQUIRED"), got
    _fsck(repo)
    assert len(_journal(repo)) == 2


def test_a_prune_loop_that_takes_a_write_again_and_again_does_not_fail_it(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``git gc --prune=now`` in a loop beside a write can take its objects on every try,
    more times than a write tries again for a table that changed: each time git refuses,
    the write stores again what was taken and asks again (its decision stands: nothing
    moved under the mutex), and the claim is granted once."""
    write = refs.RefWriter.write
    refused: list[str] = []

    def prune_every_time(self: refs.RefWriter, updates: Any, *args: Any, **kw: Any) -> None:
        if len(refused) < 12:  # more than the five tries of a changing table
            refused.append(updates[JOURNAL_REF])
            for oid in updates.values():
                _loose(repo, oid).unlink(missing_ok=True)
        write(self, updates, *args, **kw)

    monkeypatch.setattr(refs.RefWriter, "write", prune_every_time)
    got = alock(repo, "acquire", "src/**", **A)
    assert got.code == 0 and got.word.startswith("ACQUIRED"), got
    assert len(refused) == 12 and len(set(refused)) == 1  # one decision, written again
    monkeypatch.undo()
    _fsck(repo)
    assert len(_journal(repo)) == 1
    assert [r["holder"] for r in alock(repo, "list", "--json").json()] == ["agent-a"]


def test_a_prune_that_never_stops_taking_a_write_fails_it_cleanly(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past its bound the write gives up: an error, exit 2, and nothing moved."""
    write = refs.RefWriter.write

    def prune_always(self: refs.RefWriter, updates: Any, *args: Any, **kw: Any) -> None:
        for oid in updates.values():
            _loose(repo, oid).unlink(missing_ok=True)
        write(self, updates, *args, **kw)

    monkeypatch.setattr(refs.RefWriter, "write", prune_always)
    got = alock(repo, "acquire", "src/**", **A)
    assert got.code == 2 and "git prune beside us" in got.err, got
    monkeypatch.undo()
    assert git(repo, "for-each-ref", LOCK_PREFIX, JOURNAL_REF) == ""
    assert alock(repo, "acquire", "src/**", **A).code == 0


def _readers(repo: Path) -> dict[str, Any]:
    """What each reader makes of the table: the store's verbs, the hooks' and guard's read."""

    def hooks() -> Table:
        return read_lock_table(str(repo / ".git"), str(repo), False)

    return {
        "list": alock(repo, "list"),
        "check": alock(repo, "check", "src/app.py", **B),
        "acquire": alock(repo, "acquire", "src/**", **B),
        "status": alock(repo, "status", **B),
        "hooks": hooks,  # read below
        "guard": guard(repo, edit(repo, "src/app.py"), AGENT_ID="agent-b"),
    }


def test_a_granted_claim_whose_record_is_lost_stops_every_reader(repo: Path) -> None:
    """A lock ref whose blob is gone for good, which the journal names with that very blob,
    is a claim that was granted: every reader says so, naming the ref, and none reads it
    as no claim (the guard lets the edit through, as on any store error, but claims
    nothing). ``break`` removes it; then the path can be claimed."""
    assert alock(repo, "acquire", "src/**", **A).code == 0
    ref, blob = _lock_ref(repo)
    _lose(repo, blob)
    found = _readers(repo)
    for verb in ("list", "check", "acquire", "status"):
        got = found[verb]
        assert got.code == 2 and ref in got.err and "missing" in got.err, (verb, got)
        assert "ACQUIRED" not in got.out and "FREE" not in got.out, (verb, got)
    lock_id = ref[len(LOCK_PREFIX) :]
    try:  # the hooks' read: what it knows of the claim (its kept verdict) holds, or it stops
        assert lock_id in found["hooks"]().summaries.ids()
    except StoreError as exc:
        assert ref in str(exc)
    assert ref in found["guard"].err and found["guard"].out == ""
    assert _lock_ref(repo) == (ref, blob)  # nothing was claimed over it
    broken = alock(repo, "break", lock_id, **B)
    assert broken.code == 0, broken
    got = alock(repo, "acquire", "src/**", **B)
    assert got.code == 0 and got.word.startswith("ACQUIRED"), got


def test_a_planted_ref_to_a_missing_object_is_still_no_claim(repo: Path) -> None:
    """A lock ref to a missing object that no journal names (written by hand) was never
    granted: a warning, as before, and the path is free."""
    assert alock(repo, "acquire", "docs/**", **A).code == 0
    planted = repo / ".git" / LOCK_PREFIX / "planted"
    planted.write_text("1" * 40 + "\n")
    listed = alock(repo, "list")
    assert listed.code == 0 and "refs/agent-locks/planted" in listed.err, listed
    got = alock(repo, "acquire", "src/**", **B)
    assert got.code == 0 and got.word.startswith("ACQUIRED"), got


@pytest.mark.parametrize("part", ["commit", "tree"])
def test_a_lost_journal_head_is_an_error_never_a_new_chain(repo: Path, part: str) -> None:
    """The journal's head commit (or its table tree) gone for good: the next write stops
    with an error naming the journal, and the journal ref stays where it was; a new chain
    would drop the history. Deleting the ref by hand (the error says how) starts one."""
    assert alock(repo, "acquire", "docs/**", **A).code == 0
    assert alock(repo, "acquire", "tools/**", **A).code == 0
    head = _journal(repo)[0]
    lost = head if part == "commit" else git(repo, "rev-parse", f"{head}^{{tree}}").strip()
    _lose(repo, lost)
    got = alock(repo, "acquire", "src/**", **B)
    assert got.code == 2 and JOURNAL_REF in got.err and head in got.err, got
    assert git(repo, "rev-parse", JOURNAL_REF).strip() == head
    git(repo, "update-ref", "-d", JOURNAL_REF)
    got = alock(repo, "acquire", "src/**", **B)
    assert got.code == 0, got
    assert len(Store.discover(repo).read_table()) == 3


def test_a_kept_journal_head_is_put_back_and_the_chain_goes_on(repo: Path) -> None:
    """The journal's head taken by a prune, kept: the next write puts it back and writes
    on top of it, whatever time has passed since (within the ten minutes kept)."""
    assert alock(repo, "acquire", "docs/**", **A).code == 0
    head = _journal(repo)[0]
    _loose(repo, head).unlink()
    got = alock(repo, "acquire", "src/**", **B)
    assert got.code == 0, got
    assert _journal(repo)[1] == head
    _fsck(repo)


def test_a_write_that_cannot_start_is_not_read_as_a_prune_beside_it(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that fails before git is asked (a ``packed-refs.lock`` left by a git that
    died, here) is not a refusal for a missing object, however many of its objects a prune
    loop beside it takes meanwhile: the write fails at once, naming the file, not after
    fifty rounds of waiting (the mutex held all along) blaming the prune."""
    assert alock(repo, "acquire", "docs/**", **A).code == 0
    (repo / ".git" / "packed-refs.lock").write_text("")
    monkeypatch.setattr(refs, "LOCKFILE_WAIT_SECONDS", 0.01)
    wait = refs.RefWriter.wait_for_lockfiles
    waits: list[int] = []

    def prune_meanwhile(self: refs.RefWriter, names: list[str]) -> None:
        waits.append(1)
        git(repo, "prune", "--expire=now")  # what a prune loop does while the write waits
        wait(self, names)

    monkeypatch.setattr(refs.RefWriter, "wait_for_lockfiles", prune_meanwhile)
    got = alock(repo, "acquire", "src/**", **B)
    assert got.code == 2 and "packed-refs.lock" in got.err and "prune" not in got.err, got
    assert len(waits) == 1, len(waits)
    monkeypatch.undo()
    (repo / ".git" / "packed-refs.lock").unlink()
    assert [r["holder"] for r in alock(repo, "list", "--json").json()] == ["agent-a"]
    _fsck(repo)


def test_a_kept_directory_named_with_another_digit_is_no_second(repo: Path) -> None:
    """A directory under ``agent-locks-written`` whose name is digits of another script
    (``²``: a digit to ``str.isdigit``, not to ``int``) is no second a write kept: every
    write and reader passes it by, as any other name, never a traceback."""
    assert alock(repo, "acquire", "docs/**", **A).code == 0
    (repo / ".git" / pruned.KEPT_DIR / "\u00b2").mkdir()
    _, blob = _lock_ref(repo)
    _loose(repo, blob).unlink()  # a reader puts it back, looking through every second
    listed = alock(repo, "list", "--json")
    assert listed.code == 0 and listed.err == "", listed
    got = alock(repo, "acquire", "src/**", **B)
    assert got.code == 0 and got.word.startswith("ACQUIRED"), got
    _fsck(repo)
