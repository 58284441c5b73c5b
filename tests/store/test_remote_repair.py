"""The follow-up push that puts the remote's lock refs right (docs/design.md, section 5.2):
a ref it cannot put right (5.5) is never reported as repaired and never costs a second push
on every write, and ``log`` tells a repair as what it is."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from conftest import git
from support.cli import alock
from support.remote import make_bare, make_clone, remote_events, remote_locks

from gitlocks.core.shard import record_shards

A = {"AGENT_ID": "agent-a"}
JOURNAL = "refs/agent-locks-meta/journal"


def count_pushes(bare: Path) -> Path:
    counter = bare.parent / "pushes"
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\necho push >> '{counter}'\ncat >/dev/null\n")
    hook.chmod(0o755)
    return counter


def lines_in(counter: Path) -> int:
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def test_a_lock_ref_at_a_commit_is_never_repaired_nor_pushed_for_on_every_write(
    tmp_path: Path,
) -> None:
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a")
    assert alock(a, "acquire", "src/**", **A).code == 0
    main = git(bare, "rev-parse", "refs/heads/main").strip()
    git(bare, "update-ref", "refs/agent-locks/mallory-1", main)  # a commit every clone has
    counter = count_pushes(bare)
    for n, path in enumerate(["docs/**", "lib/**", "web/**"]):
        got = alock(a, "acquire", path, **A)
        assert got.code == 0, (got.out, got.err)
        assert lines_in(counter) == n + 1, "one push per claim"
    assert git(bare, "rev-parse", "refs/agent-locks/mallory-1").strip() == main
    assert not [e for e in remote_events(bare) if e["event"] == "repaired"]


def test_log_tells_a_repair_as_no_holder_s_act(tmp_path: Path) -> None:
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    assert alock(a, "acquire", "src/**", **A).code == 0
    blob = git(bare, "rev-parse", "refs/agent-locks/" + next(iter(remote_locks(bare)))).strip()
    git(bare, "update-ref", "refs/agent-locks/mallory-1", blob)  # a copy, pushed by hand
    assert alock(a, "acquire", "docs/**", **A).code == 0
    assert remote_events(bare)[-1]["event"] == "repaired"
    line = alock(a, "log").out.splitlines()[0]
    assert "repaired" in line and line.endswith("[lock mallory-1]")
    assert "None" not in line and "put back as the table holds it" in line


def count_connections(clone: Path) -> Path:
    """Each upload-pack ``clone`` runs (a listing, an ls-remote, a fetch) leaves a line."""
    counter = clone.parent / f"{clone.name}-lists"
    script = clone.parent / f"{clone.name}-upload-pack"
    script.write_text(f"#!/bin/sh\necho list >> '{counter}'\nexec git upload-pack \"$@\"\n")
    script.chmod(0o755)
    git(clone, "config", "remote.origin.uploadpack", str(script))
    return counter


def test_a_sharded_write_asks_once_though_other_shards_moved_since_it_read_them(
    tmp_path: Path,
) -> None:
    """No second listing: git's push lists beside it (one upload-pack a claim). (A shard
    that holds a claim of the writer's is leased as it stands, so b's writes keep out of
    those: one of them moved is one more fetch, docs/design.md 5.10.)"""
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    b = make_clone(bare.as_uri(), tmp_path / "b")
    assert alock(a, "acquire", "seed/**", **A).code == 0
    assert alock(a, "remote", "--shards", "8").code == 0
    assert alock(a, "acquire", "z0/c.md", **A).code == 0  # a's view: the shards now
    mine = record_shards(["seed/**", "z0/c.md"], 8)
    theirs = [p for p in (f"x{n}/b.md" for n in range(40)) if not record_shards([p], 8) & mine][:3]
    for path in theirs:  # b's writes, in shards a never fetched
        assert alock(b, "acquire", path, AGENT_ID="agent-b").code == 0
    moved = set().union(*(record_shards([p], 8) for p in theirs))
    ours = [p for p in (f"z{n}/c.md" for n in range(1, 40)) if not record_shards([p], 8) & moved]
    counter = count_connections(a)
    for n, path in enumerate(ours[:3]):
        got = alock(a, "acquire", path, **A)
        assert got.code == 0, (got.out, got.err)
        assert lines_in(counter) == n + 1, "one listing per claim, and no second ls-remote"
    held = {r.paths[0] for r in remote_locks(bare).values()}
    assert {*theirs, *ours[:3]} <= held


def test_no_follow_up_is_pushed_once_another_write_came_after_ours(tmp_path: Path) -> None:
    """The listing beside a's push catches b's claim, landed just after a's: b's lock ref is
    no table a holds, but the remote's journal is b's now, so a follow-up leased on a's
    could not land. a pushes once."""
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a")
    b = make_clone(bare.as_uri(), tmp_path / "b")
    assert alock(a, "acquire", "src/**", **A).code == 0
    marks = tmp_path / "marks"
    marks.mkdir()
    (marks / "armed").touch()
    before = git(bare, "rev-parse", JOURNAL).strip()
    bindir = os.path.dirname(sys.executable)
    upload = marks / "upload-pack"
    upload.write_text(  # a's listing: once a's push landed, b claims; then it lists
        "#!/bin/sh\n"
        f"if [ -f '{marks}/armed' ]; then\n"
        f"  rm -f '{marks}/armed'\n"
        f"  n=0; while [ \"$(git --git-dir='{bare}' rev-parse {JOURNAL})\" = {before} ] "
        "&& [ $n -lt 400 ]; do sleep 0.05; n=$((n+1)); done\n"
        f"  (cd '{b}' && PATH='{bindir}':$PATH AGENT_ID=agent-b git alock acquire 'lib/**')"
        f" > '{marks}/b.out' 2>&1\n"
        "fi\n"
        'exec git upload-pack "$@"\n'
    )
    receive = marks / "receive-pack"
    receive.write_text(f"#!/bin/sh\necho push >> '{marks}/pushes'\nexec git receive-pack \"$@\"\n")
    for script in (upload, receive):
        script.chmod(0o755)
    git(a, "config", "remote.origin.uploadpack", str(upload))
    git(a, "config", "remote.origin.receivepack", str(receive))
    got = alock(a, "acquire", "docs/**", **A)
    assert got.code == 0, (got.out, got.err)
    assert "ACQUIRED lib/**" in (marks / "b.out").read_text()
    assert lines_in(marks / "pushes") == 1, "a's claim, and no follow-up that could not land"
    assert {r.paths[0] for r in remote_locks(bare).values()} == {"src/**", "docs/**", "lib/**"}


def test_a_sharded_follow_up_puts_right_a_ref_another_shard_holds(tmp_path: Path) -> None:
    """A lock ref moved by hand, whose lock a shard other than 0 holds: the follow-up of
    the next claim (elsewhere) leases that shard and puts the ref back, a repaired event
    in that shard's journal; the claim after it is one push."""
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    assert alock(a, "acquire", "seed/**", **A).code == 0
    assert alock(a, "remote", "--shards", "8").code == 0
    paths = [f"p{n}/x.md" for n in range(80)]
    victim = next(p for p in paths if 0 not in record_shards([p], 8))
    assert alock(a, "acquire", victim, **A).code == 0
    ids = {r.paths[0]: i for i, r in remote_locks(bare).items()}
    seed = git(bare, "rev-parse", "refs/agent-locks/" + ids["seed/**"]).strip()
    git(bare, "update-ref", "refs/agent-locks/" + ids[victim], seed)  # moved by hand
    (where,) = record_shards([victim], 8)
    others = [p for p in paths if p != victim and not record_shards([p], 8) & {0, where}]
    counter = count_pushes(bare)
    assert alock(a, "acquire", others[0], **A).code == 0
    assert lines_in(counter) == 2, "the claim, and the follow-up"
    assert remote_locks(bare)[ids[victim]].paths[0] == victim, "put back"
    journal = git(bare, "log", "--format=%B", f"refs/agent-locks-meta/shards/{where}")
    assert '"repaired"' in journal and ids[victim] in journal
    assert alock(a, "acquire", others[1], **A).code == 0
    assert lines_in(counter) == 3, "then one push per claim"
    told = f"repaired lock ref put back as the table holds it [lock {ids[victim]}]"
    assert alock(a, "log").out.count(told) == 1, "once, though journaled in two shards"


def test_a_sharded_follow_up_that_landed_is_mirrored_as_landed(tmp_path: Path) -> None:
    """The follow-up leases the shards it leaves as listed by pushing them unchanged, which
    git reports as up to date (``=``): that is no sign of another writer, the follow-up
    won, and the clone mirrors it (``log`` shows it; the next claim leases current tips
    and costs one push)."""
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    assert alock(a, "remote", "--shards", "8").code == 0
    assert alock(a, "acquire", "src/**", **A).code == 0
    blob = git(bare, "rev-parse", "refs/agent-locks/" + next(iter(remote_locks(bare)))).strip()
    git(bare, "update-ref", "refs/agent-locks/mallory-1", blob)  # a copy, pushed by hand
    counter = count_pushes(bare)
    assert alock(a, "acquire", "docs/**", **A).code == 0
    assert lines_in(counter) == 2, "the claim, and the follow-up"
    assert "mallory-1" not in git(bare, "for-each-ref", "refs/agent-locks/")
    assert "[lock mallory-1]" in alock(a, "log").out.splitlines()[0]
    assert alock(a, "acquire", "lib/**", **A).code == 0
    assert lines_in(counter) == 3, "the follow-up's tips were mirrored: no lost race"


def test_a_lock_ref_moved_by_hand_before_each_push_is_leased_again_until_it_stays(
    tmp_path: Path,
) -> None:
    """Someone moves the lock ref a release leases on just before each of its first two
    pushes, while the journal stands still: each is refused (stale info) by a change, not
    by a remote that cannot write, so the release lists the refs again and lands on the
    third (once it said "although nobody else changed them" after the second)."""
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    assert alock(a, "acquire", "src/**", **A).code == 0
    assert alock(a, "acquire", "docs/**", **A).code == 0
    assert alock(a, "acquire", "lib/**", **A).code == 0
    ids = {r.paths[0]: i for i, r in remote_locks(bare).items()}
    blobs = [
        git(bare, "rev-parse", f"refs/agent-locks/{ids[p]}").strip() for p in ("docs/**", "lib/**")
    ]
    marks = tmp_path / "marks"
    marks.mkdir()
    victim = f"refs/agent-locks/{ids['src/**']}"
    receive = marks / "receive-pack"
    receive.write_text(  # the first two pushes find the victim moved by hand
        "#!/bin/sh\n"
        f"n=$(cat '{marks}/pushes' 2>/dev/null | wc -l)\n"
        f"echo push >> '{marks}/pushes'\n"
        f'if [ "$n" -lt 2 ]; then\n'
        f"  git --git-dir='{bare}' update-ref {victim} $(sed -n \"$((n+1))p\" '{marks}/blobs')\n"
        "fi\n"
        'exec git receive-pack "$@"\n'
    )
    receive.chmod(0o755)
    (marks / "blobs").write_text("\n".join(blobs) + "\n")
    git(a, "config", "remote.origin.receivepack", str(receive))
    journal = git(bare, "rev-parse", JOURNAL).strip()
    got = alock(a, "release", "src/**", **A)
    assert got.code == 0, (got.out, got.err)
    assert lines_in(marks / "pushes") == 3
    assert git(bare, "rev-parse", JOURNAL).strip() != journal
    assert {r.paths[0] for r in remote_locks(bare).values()} == {"docs/**", "lib/**"}
    assert victim not in git(bare, "for-each-ref", "refs/agent-locks/")


def test_a_remote_that_cannot_update_its_refs_is_said_to_be_after_a_few_tries(
    tmp_path: Path,
) -> None:
    """A ``.lock`` file left beside the remote's journal ref refuses every push while the
    journal stands still: the claim stops with one error that says so (exit 2), after a
    bounded number of pushes, and nothing is granted."""
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    assert alock(a, "acquire", "src/**", **A).code == 0
    (bare / JOURNAL).with_name("journal.lock").write_text("")
    counter = count_pushes(bare)
    got = alock(a, "acquire", "docs/**", **A)
    assert got.code == 2, (got.out, got.err)
    assert got.err.startswith("error: the lock remote 'origin' could not update the lock refs")
    assert "while its journal stood still" in got.err and "Traceback" not in got.err
    assert 1 <= lines_in(counter) <= 8
    assert {r.paths[0] for r in remote_locks(bare).values()} == {"src/**"}


@pytest.mark.parametrize("mark", ["\u2028", "\u0085"])
def test_a_lock_ref_name_with_a_line_break_python_knows_is_one_name(
    tmp_path: Path, mark: str
) -> None:
    """git allows a ref name holding U+2028 (or U+0085), which ``str.splitlines`` breaks a
    line at; ``ls-remote`` ends its lines with a newline alone. A ref pushed by hand named
    as a lock's id, that mark, and more is no lock ref of that id: the lock's own ref,
    moved by hand, is leased as it is and its release lands (it read as the other ref's
    value, and each push was refused until the write gave up)."""
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a")
    assert alock(a, "acquire", "src/**", **A).code == 0
    assert alock(a, "acquire", "docs/**", **A).code == 0
    ids = {r.paths[0]: i for i, r in remote_locks(bare).items()}
    src, docs = (f"refs/agent-locks/{ids[p]}" for p in ("src/**", "docs/**"))
    other = git(bare, "rev-parse", docs).strip()
    (tmp_path / "stray").write_text("stray\n")
    stray = git(bare, "hash-object", "-w", str(tmp_path / "stray")).strip()
    git(bare, "update-ref", src, other)  # moved by hand
    git(bare, "update-ref", f"{src}{mark}x", stray)  # beside it, pushed by hand
    got = alock(a, "release", "src/**", **A)
    assert got.code == 0, (got.out, got.err)
    left = git(bare, "for-each-ref", "--format=%(refname) %(objectname)", "refs/agent-locks/")
    assert sorted(left.split("\n")[:-1]) == sorted([f"{docs} {other}", f"{src}{mark}x {stray}"])
    assert "src/**" not in alock(a, "list").out


def test_lock_refs_the_remote_hides_from_pushes_are_named_as_a_cause(tmp_path: Path) -> None:
    """receive.hideRefs set on the remote after the switch: a push never sees the lock
    refs it leases, so a release is refused however often it lists them again; the error
    names that setting beside a leftover .lock file, and nothing moves."""
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a")
    assert alock(a, "acquire", "src/**", **A).code == 0
    git(bare, "config", "receive.hideRefs", "refs/agent-locks/")
    journal = git(bare, "rev-parse", JOURNAL).strip()
    got = alock(a, "release", "src/**", **A)
    assert got.code == 2, (got.out, got.err)
    assert "receive.hideRefs" in got.err and "Traceback" not in got.err
    assert git(bare, "rev-parse", JOURNAL).strip() == journal
    assert {r.paths[0] for r in remote_locks(bare).values()} == {"src/**"}
