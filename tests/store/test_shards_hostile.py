"""A sharded remote changed by plain git or a hostile pusher (docs/design.md, section 5.10):
reads go on, writes refuse clearly or stay safe, and no claim is granted twice."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git
from support.cli import alock
from support.records import write_blob
from support.remote import make_bare, make_clone, remote_locks

from gitlocks.core.shard import record_shards

A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}
SHARDS = 8
JOURNAL = "refs/agent-locks-meta/journal"


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    return make_bare(tmp_path / "locks.git")


def test_a_journal_ref_moved_back_after_the_upgrade_stops_every_write(
    bare: Path, tmp_path: Path
) -> None:
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    b = make_clone(bare.as_uri(), tmp_path / "b")
    assert alock(a, "acquire", "lib/**", **A).code == 0
    single = git(bare, "rev-parse", JOURNAL).strip()
    assert alock(a, "remote", "--shards", str(SHARDS)).code == 0
    notice = git(bare, "rev-parse", JOURNAL).strip()
    assert alock(a, "acquire", "src/**", **A).code == 0
    # Moved back by hand: an earlier gitlocks would decide on that journal (lib/** only)
    # and grant src/x beside the shards, so this version must not grant there either.
    git(bare, "update-ref", JOURNAL, single)
    for clone in (a, b):
        refused = alock(clone, "acquire", "docs/y", **B)
        assert refused.code == 2, refused
        assert refused.err.startswith("error: ") and JOURNAL in refused.err, refused.err
        assert "Traceback" not in refused.err
        assert alock(clone, "list").code == 0  # reads go on
    git(bare, "update-ref", "-d", JOURNAL)  # gone: an earlier gitlocks starts its own
    refused = alock(b, "acquire", "docs/y", **B)
    assert refused.code == 2 and "is gone" in refused.err, refused.err
    git(bare, "update-ref", JOURNAL, notice)  # put right: writes go on at once
    assert alock(b, "acquire", "docs/y", **B).code == 0
    assert alock(a, "acquire", "src/x", **A).code == 0  # a's own claim covers it
    assert alock(b, "acquire", "src/x", "--json", **B).json()["status"] == "refused"


def test_a_shard_ref_moved_onto_a_blob_loses_no_claim(bare: Path, tmp_path: Path) -> None:
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    assert alock(a, "remote", "--shards", str(SHARDS)).code == 0
    held, other = _two_shards()
    assert alock(a, "acquire", f"{held}/**", **A).code == 0
    [lock] = remote_locks(bare)
    assert alock(a, "acquire", f"{other}/x", **A).code == 0
    [k] = record_shards([f"{held}/**"], SHARDS)
    shard = f"refs/agent-locks-meta/shards/{k}"
    tip = git(bare, "rev-parse", shard).strip()
    blob = write_blob(bare, "not a journal\n")
    git(bare, "update-ref", shard, blob)
    # The clone that saw the claim stops, naming the shard, and its view keeps the claim.
    lost = alock(a, "sync")
    assert lost.code == 2 and shard in lost.err, lost
    seen = alock(a, "check", f"{held}/q", "--json", **B)
    assert seen.json()[0]["status"] == "held", seen
    refused = alock(a, "acquire", f"{other}/y", **B)
    assert refused.code == 2 and shard in refused.err, refused
    restore = alock(a, "remote", "--restore")
    assert restore.code == 2 and shard in restore.err, restore  # never written over
    assert git(bare, "rev-parse", shard).strip() == blob
    # A clone that never saw it writes in other shards, and never takes the claim's lock
    # ref, which no table it can read holds, for one pushed by hand.
    fresh = make_clone(bare.as_uri(), tmp_path / "fresh")
    assert alock(fresh, "acquire", f"{other}/y", **B).code == 0
    assert lock in remote_locks(bare)
    refused = alock(fresh, "acquire", f"{held}/q", **B)
    assert refused.code == 2 and shard in refused.err, refused
    assert "Traceback" not in refused.err
    git(bare, "update-ref", shard, tip)
    assert alock(a, "sync").code == 0  # put right: nothing was lost
    assert alock(fresh, "sync").code == 0
    refused = alock(fresh, "acquire", f"{held}/q", "--json", **B)
    assert refused.json()["status"] == "refused", refused


def test_a_deleted_shard_is_never_created_afresh_beside_its_claims(
    bare: Path, tmp_path: Path
) -> None:
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    assert alock(a, "remote", "--shards", str(SHARDS)).code == 0
    held, other = _two_shards()
    assert alock(a, "acquire", f"{held}/**", **A).code == 0
    [lock] = remote_locks(bare)
    [k] = record_shards([f"{held}/**"], SHARDS)
    shard = f"refs/agent-locks-meta/shards/{k}"
    git(bare, "update-ref", "-d", shard)
    # A clone that never saw the claim: the shard it would start afresh held it.
    fresh = make_clone(bare.as_uri(), tmp_path / "fresh")
    refused = alock(fresh, "acquire", f"{held}/q", **B)
    assert refused.code == 2 and shard in refused.err, refused
    assert alock(fresh, "acquire", f"{other}/y", **B).code == 0  # other shards go on
    assert lock in remote_locks(bare)  # never taken for a lock ref pushed by hand
    assert alock(a, "remote", "--restore").code == 0  # the clone that saw it puts it back
    assert alock(fresh, "sync").code == 0
    refused = alock(fresh, "acquire", f"{held}/q", "--json", **B)
    assert refused.json()["status"] == "refused", refused


def test_a_shard_moved_back_tells_its_holder_on_a_write_in_any_shard(
    bare: Path, tmp_path: Path
) -> None:
    """A push --mirror of a copy taken before a claim moves back its shard alone: the notice
    and every other shard stay as the holder read them. A write of that holder elsewhere
    leased only the shards it touched, won, and never told it; a clone that never saw the
    claim was then granted it. It leases the shards of its holder's other claims too, as
    they stand, so it fails, fetches and is told, and nothing is written."""
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=SHARDS)
    held, other = _two_shards()
    assert alock(a, "acquire", f"{other}/y", **A).code == 0
    git(tmp_path, "clone", "-q", "--mirror", bare.as_uri(), "copy")
    assert alock(a, "acquire", f"{held}/**", **A).code == 0
    git(tmp_path / "copy", "push", "-q", "--mirror", bare.as_uri())
    [k] = record_shards([f"{held}/**"], SHARDS)
    before = git(bare, "for-each-ref")
    for verb in (["acquire", f"{other}/z"], ["release", f"{other}/y"]):
        told = alock(a, *verb, **A)
        assert told.code == 2, told
        assert f"refs/agent-locks-meta/shards/{k} " in told.err and "--restore" in told.err
        assert git(bare, "for-each-ref") == before
    assert alock(a, "remote", "--restore").code == 0
    fresh = make_clone(bare.as_uri(), tmp_path / "fresh")
    assert alock(fresh, "acquire", f"{held}/q", **B).code == 1
    assert alock(a, "acquire", f"{other}/z", **A).code == 0


def _two_shards() -> tuple[str, str]:
    names = [f"dir{i}" for i in range(64)]
    [first] = record_shards([f"{names[0]}/**"], SHARDS)
    other = next(n for n in names if record_shards([f"{n}/**"], SHARDS) != {first})
    return names[0], other


def test_shard_journals_beyond_the_stated_count_stop_every_write(
    bare: Path, tmp_path: Path
) -> None:
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    assert alock(a, "remote", "--shards", "8").code == 0
    fresh = make_clone(bare.as_uri(), tmp_path / "fresh")  # it never sees the claim
    name = next(f"dir{i}" for i in range(64) if min(record_shards([f"dir{i}/**"], 8)) >= 4)
    assert alock(a, "acquire", f"{name}/**", **A).code == 0
    [lock] = remote_locks(bare)
    # The format ref edited by hand to fewer shards: the claim's shard is read by nobody.
    git(bare, "update-ref", "refs/agent-locks-meta/format", write_blob(bare, "shards 4\n"))
    for clone in (fresh, a):
        refused = alock(clone, "acquire", f"{name}/x", **B)
        assert refused.code == 2, refused
        assert "beyond the 4 shards" in refused.err or "has vanished" in refused.err, refused
    assert lock in remote_locks(bare)
    assert alock(fresh, "list").code == 0  # reads go on


def test_restoring_a_shard_puts_back_no_record_released_meanwhile(
    bare: Path, tmp_path: Path
) -> None:
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    assert alock(a, "remote", "--shards", str(SHARDS)).code == 0
    held, _ = _two_shards()
    assert alock(a, "acquire", f"{held}/**", **A).code == 0
    assert alock(a, "acquire", "*.md", **B).code == 0  # held in every shard
    [k] = record_shards([f"{held}/**"], SHARDS)
    git(bare, "update-ref", "-d", f"refs/agent-locks-meta/shards/{k}")
    # Released meanwhile from a clone that never saw the lost shard: every shard but it.
    fresh = make_clone(bare.as_uri(), tmp_path / "fresh")
    assert alock(fresh, "release", "*.md", **B).code == 0
    assert alock(a, "remote", "--restore").code == 0
    assert [r.paths for r in remote_locks(bare).values()] == [(f"{held}/**",)]
    tip = f"refs/agent-locks-meta/shards/{k}"
    assert len(git(bare, "ls-tree", "-r", tip, "locks").splitlines()) == 1
    assert alock(fresh, "sync").code == 0
    assert alock(fresh, "acquire", "README.md", **B).code == 0


@pytest.mark.parametrize("meanwhile", ["nothing", "a single journal", "an old mirror"])
def test_a_sharded_table_a_mirror_push_wiped_is_put_back(
    bare: Path, tmp_path: Path, meanwhile: str
) -> None:
    """A plain host: a push --mirror from a fresh clone deletes the format ref, the notice,
    every shard journal and every lock ref. The clone that saw the claims puts the whole
    sharded table back; a claim granted meanwhile on the single journal a clone of this
    version started there is kept beside them, in its own shards. A mirror from a clone
    that fetched the table before the upgrade puts back no claim released since."""
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    held, other = _two_shards()
    assert alock(a, "acquire", f"{held}/**", **A).code == 0
    assert alock(a, "acquire", "gone/**", **A).code == 0
    fresh = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", bare.as_uri(), "fresh")
    if meanwhile == "an old mirror":
        lock_refs = (
            "+refs/agent-locks/*:refs/agent-locks/*",
            "+refs/agent-locks-meta/*:refs/agent-locks-meta/*",
        )
        git(fresh, "fetch", "-q", "origin", *lock_refs)
    assert alock(a, "remote", "--shards", str(SHARDS)).code == 0
    assert alock(a, "release", "gone/**", **A).code == 0
    assert alock(a, "acquire", "*.md", **A).code == 0  # held in every shard
    git(fresh, "push", "-q", "--mirror", "origin")
    if meanwhile != "an old mirror":
        assert not git(bare, "for-each-ref", "refs/agent-locks", "refs/agent-locks-meta").strip()
    b = make_clone(bare.as_uri(), tmp_path / "b", shards=0)  # lays nothing out
    if meanwhile == "a single journal":
        assert alock(b, "acquire", f"{other}/**", **B).code == 0
    refused = alock(a, "acquire", f"{other}/x", **A)
    assert refused.code == 2 and "--restore" in refused.err, refused
    restored = alock(a, "remote", "--restore")
    assert restored.code == 0, restored
    assert git(bare, "cat-file", "-p", "refs/agent-locks-meta/format") == f"shards {SHARDS}\n"
    wanted = {(f"{held}/**",), ("*.md",)}
    if meanwhile == "a single journal":
        wanted.add((f"{other}/**",))
    assert {r.paths for r in remote_locks(bare).values()} == wanted
    # Every clone goes on: a claim inside the restored ones is refused, from any of them.
    late = make_clone(bare.as_uri(), tmp_path / "late")
    for clone in (a, b, late):
        got = alock(clone, "acquire", f"{held}/q", "--json", **B)
        assert got.code == 1 and got.json()["status"] == "refused", got
    assert alock(a, "acquire", "lib/x", **A).code == 0
    if meanwhile == "a single journal":
        assert alock(b, "release", f"{other}/**", **B).code == 0
        assert (f"{other}/**",) not in {r.paths for r in remote_locks(bare).values()}
