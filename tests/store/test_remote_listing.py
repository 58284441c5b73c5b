"""A remote write lists the lock refs beside its push, not before it (docs/design.md,
section 5.2): what the listing shows decides nothing, and a lock ref it finds out of step
is put right by a follow-up push in the same command. Real bare remotes over file://,
whose upload-pack and receive-pack are wrapped by scripts that act on the remote while a
claim runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import git
from support.cli import alock
from support.records import write_blob
from support.remote import make_bare, make_clone, remote_events, remote_locks

from gitlocks.core.shard import record_shards

A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}
SHARDS = 8


def hand_made(bare: Path, paths: list[str]) -> str:
    """A lock record of mallory's written on the remote (no journal names it): its blob."""
    source = bare
    if not remote_locks(bare):  # a real record to copy: one claimed on another remote
        source = make_bare(bare.parent / "seed-locks.git")
        seed = make_clone(source.as_uri(), bare.parent / "seed-clone")
        assert alock(seed, "acquire", "seed/**", **A).code == 0
    record = next(iter(remote_locks(source).values())).to_dict()
    record.update(id="mallory-1", holder="mallory", paths=paths, exact=[])
    return write_blob(bare, json.dumps(record))


def wrap(clone: Path, bare: Path, blob: str, *, wait_for_push: bool = False) -> Path:
    """The next upload-pack ``clone`` runs (its first ls-remote or fetch) plants
    ``refs/agent-locks/mallory-1`` at ``blob`` on ``bare`` first, as a hand push would;
    with ``wait_for_push`` it then waits (20 s at most) until a push to ``bare`` has begun.
    Returns the folder where the scripts leave their marks."""
    marks = clone.parent / f"{clone.name}-marks"
    marks.mkdir()
    (marks / "armed").touch()
    wait = (
        f"n=0; while [ ! -f '{marks}/pushing' ] && [ $n -lt 400 ]; do sleep 0.05; "
        f"n=$((n+1)); done; [ -f '{marks}/pushing' ] || touch '{marks}/waited-out'"
        if wait_for_push
        else ":"
    )
    upload = marks / "upload-pack"
    upload.write_text(
        "#!/bin/sh\n"
        f"if [ -f '{marks}/armed' ]; then\n"
        f"  rm -f '{marks}/armed'\n"
        f"  git --git-dir='{bare}' update-ref refs/agent-locks/mallory-1 {blob}\n"
        f"  touch '{marks}/planted'\n"
        f"  {wait}\n"
        "fi\n"
        'exec git upload-pack "$@"\n'
    )
    receive = marks / "receive-pack"
    receive.write_text(f"#!/bin/sh\ntouch '{marks}/pushing'\nexec git receive-pack \"$@\"\n")
    for script in (upload, receive):
        script.chmod(0o755)
    git(clone, "config", "remote.origin.uploadpack", str(upload))
    git(clone, "config", "remote.origin.receivepack", str(receive))
    return marks


def test_a_claim_pushes_while_its_listing_is_still_open(tmp_path: Path) -> None:
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a")
    assert alock(a, "acquire", "src/**", **A).code == 0
    marks = wrap(a, bare, hand_made(bare, ["**"]), wait_for_push=True)
    got = alock(a, "acquire", "docs/**", **A)
    assert got.code == 0, (got.out, got.err)
    assert (marks / "planted").exists(), "the claim listed the lock refs"
    assert not (marks / "waited-out").exists(), "the push began before the listing answered"


def test_a_lock_ref_pushed_by_hand_while_a_claim_runs_is_deleted_in_that_command(
    tmp_path: Path,
) -> None:
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    assert alock(a, "acquire", "src/**", **A).code == 0
    marks = wrap(a, bare, hand_made(bare, ["**"]))
    got = alock(a, "acquire", "docs/**", **A)
    assert got.code == 0, (got.out, got.err)
    assert (marks / "planted").exists()
    assert "mallory-1" not in remote_locks(bare), "the follow-up push deleted it"
    assert sorted(r.paths[0] for r in remote_locks(bare).values()) == ["docs/**", "src/**"]
    last = remote_events(bare)[-1]
    assert (last["event"], last["id"]) == ("repaired", "mallory-1")
    listed = alock(a, "list", "--json")
    assert sorted(r["paths"][0] for r in listed.json()) == ["docs/**", "src/**"]


def test_a_remote_without_a_table_is_decided_on_its_lock_refs_listed_first(
    tmp_path: Path,
) -> None:
    bare = make_bare(tmp_path / "locks.git")
    b = make_clone(bare.as_uri(), tmp_path / "b", shards=0)  # no journal there: no table
    marks = wrap(b, bare, hand_made(bare, ["src/**"]))
    got = alock(b, "acquire", "src/app.py", **B)
    assert (marks / "planted").exists()
    assert got.code == 1 and "mallory" in got.out, (got.out, got.err)
    assert "refs/agent-locks-meta/journal" not in git(bare, "for-each-ref")


def test_a_refused_lease_asks_the_remote_and_the_write_puts_the_ref_right(
    tmp_path: Path,
) -> None:
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    assert alock(a, "acquire", "src/**", "-m", "mine", **A).code == 0
    [(lock_id, record)] = remote_locks(bare).items()
    moved = record.to_dict()
    moved.update(message="moved by hand")
    journal = git(bare, "rev-parse", "refs/agent-locks-meta/journal").strip()
    git(bare, "update-ref", f"refs/agent-locks/{lock_id}", write_blob(bare, json.dumps(moved)))
    got = alock(a, "release", "src/**", **A)  # its lease on the blob it wrote fails
    assert got.code == 0, (got.out, got.err)
    assert remote_locks(bare) == {}
    assert git(bare, "rev-parse", "refs/agent-locks-meta/journal").strip() != journal


def test_a_sharded_remote_deletes_a_ref_pushed_by_hand_during_a_claim(tmp_path: Path) -> None:
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    assert alock(a, "remote", "--shards", str(SHARDS)).code == 0
    assert alock(a, "acquire", "src/**", **A).code == 0
    marks = wrap(a, bare, hand_made(bare, ["**"]))
    got = alock(a, "acquire", "docs/**", **A)
    assert got.code == 0, (got.out, got.err)
    assert (marks / "planted").exists()
    assert "mallory-1" not in remote_locks(bare), "the follow-up push deleted it"
    held = {r.paths[0]: record_shards(r.paths, SHARDS) for r in remote_locks(bare).values()}
    assert sorted(held) == ["docs/**", "src/**"]
    shards = git(bare, "for-each-ref", "--format=%(refname)", "refs/agent-locks-meta/shards/")
    assert shards.split(), "still sharded"


def test_a_torn_listing_never_deletes_the_lock_ref_of_a_write_in_another_shard(
    tmp_path: Path,
) -> None:
    """A listing reads the shard refs before the lock refs, so it can show another clone's
    new lock ref beside its shard's old tip, as if pushed by hand. The follow-up push that
    deletes refs pushed by hand leases every shard as listed: here it fails, and the other
    clone's lock ref stays. The torn listing is served from a copy of the remote brought up
    to date on each call but for that one shard, left at its tip before the other write."""
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    b = make_clone(bare.as_uri(), tmp_path / "b")
    assert alock(a, "remote", "--shards", str(SHARDS)).code == 0
    assert alock(a, "acquire", "src/**", **A).code == 0
    assert alock(b, "sync").code == 0
    [k] = record_shards(("lib/**",), SHARDS)
    assert k not in record_shards(("docs/**",), SHARDS)
    shard = f"refs/agent-locks-meta/shards/{k}"
    before = git(bare, "rev-parse", shard).strip()
    got = alock(b, "acquire", "lib/**", "--json", **B)
    assert got.code == 0, got.err
    lock_id = got.json()["lock"]["id"]
    torn = tmp_path / "torn.git"
    git(tmp_path, "init", "-q", "--bare", str(torn))
    upload = tmp_path / "torn-upload-pack"
    upload.write_text(
        "#!/bin/sh\n"
        f"git --git-dir='{torn}' fetch -q --prune '{bare}' '+refs/*:refs/*' || exit 1\n"
        f"git --git-dir='{torn}' update-ref {shard} {before} || exit 1\n"
        f"exec git upload-pack '{torn}'\n"
    )
    upload.chmod(0o755)
    git(a, "config", "remote.origin.uploadpack", str(upload))
    got = alock(a, "acquire", "docs/**", **A)
    assert got.code == 0, (got.out, got.err)
    assert lock_id in remote_locks(bare), "the lock ref of b's claim was deleted as hand-made"
    held = sorted(r.paths[0] for r in remote_locks(bare).values())
    assert held == ["docs/**", "lib/**", "src/**"]


@pytest.mark.parametrize("shards", [0, SHARDS])
@pytest.mark.parametrize("number", ["\u00b2", "\u0661", "01"])
def test_a_shard_ref_whose_name_is_no_plain_number_is_not_a_shard(
    tmp_path: Path, shards: int, number: str
) -> None:
    """A ref pushed by hand under the shard journals whose name ``str.isdigit`` takes but
    that is no shard number as gitlocks writes one ("²", which ``int()`` refuses; an
    Arabic-Indic one; "01") is passed over by the listing beside a write, on a remote with
    one journal or a sharded one: each claim
    lands and says so (a "²" stopped every write with a traceback after its push had
    landed)."""
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    if shards:
        assert alock(a, "remote", "--shards", str(shards)).code == 0
    assert alock(a, "acquire", "src/**", **A).code == 0
    main = git(bare, "rev-parse", "refs/heads/main").strip()
    git(bare, "update-ref", f"refs/agent-locks-meta/shards/{number}", main)
    for verb, path in [("acquire", "docs/**"), ("release", "src/**"), ("acquire", "lib/**")]:
        got = alock(a, verb, path, **A)
        assert got.code == 0 and "Traceback" not in got.err, (verb, path, got.err)
    assert {r.paths[0] for r in remote_locks(bare).values()} == {"docs/**", "lib/**"}
