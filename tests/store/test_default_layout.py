"""The layout a lock remote gets (docs/design.md 5.10): a new one is laid out sharded by
``git alock remote NAME``, one kept in a single journal keeps it (until upgraded), and
clones that expect different layouts never both win a claim."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import git
from support.cli import alock, cli_env, finish, run_git
from support.remote import make_bare, make_clone, remote_locks
from test_shards import FORMAT, JOURNAL, check_consistent, first_with_two_keys, shard_refs

from gitlocks.core.record import utcnow
from gitlocks.core.shard import record_shards
from gitlocks.layout import DEFAULT_SHARDS, SHARD_PREFIX
from gitlocks.store import journal, upgrade

A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    return make_bare(tmp_path / "locks.git")


@pytest.fixture
def one_second(monkeypatch: pytest.MonkeyPatch) -> None:
    """The clock of every journal commit and layout this test writes stopped at one second:
    two layouts then carry the same times, as two made within one second do (and a loaded
    machine made them so now and then)."""
    moment = utcnow()
    monkeypatch.setattr(upgrade, "utcnow", lambda: moment)
    monkeypatch.setattr(journal, "time", SimpleNamespace(time=moment.timestamp))


def is_journal_commit(bare: Path) -> bool:
    return "Journal-Seq" in git(bare, "cat-file", "-p", JOURNAL)


def refs_under(bare: Path) -> list[str]:
    """The format ref and the shard journals, by name."""
    return [FORMAT, *(f"{SHARD_PREFIX}{k}" for k in sorted(shard_refs(bare)))]


def empty_and_join(bare: Path, tmp_path: Path) -> Path:
    """Empty the remote as a ``push --mirror`` from a fresh clone does on a plain host,
    then a clone that joins next (and takes it for a new remote, laying it out)."""
    git(tmp_path, "clone", "-q", bare.as_uri(), "fresh")
    git(tmp_path / "fresh", "push", "-q", "--mirror", "origin")
    return make_clone(bare.as_uri(), tmp_path / "b")


def test_a_new_lock_remote_is_laid_out_sharded(bare: Path, tmp_path: Path) -> None:
    a = make_clone(bare.as_uri(), tmp_path / "a", remote_mode=False)
    got = alock(a, "remote", "origin", "--json")
    assert got.code == 0, got.err
    assert got.json()["laid_out"] is True and got.json()["shards"] == DEFAULT_SHARDS
    assert git(bare, "cat-file", "-p", FORMAT) == f"shards {DEFAULT_SHARDS}\n"
    assert sorted(shard_refs(bare)) == list(range(DEFAULT_SHARDS))
    assert not is_journal_commit(bare)  # the notice: earlier versions stop writing there
    b = make_clone(bare.as_uri(), tmp_path / "b", remote_mode=False)
    joined = alock(b, "remote", "origin", "--json")
    assert joined.code == 0, joined.err
    assert joined.json()["laid_out"] is False and joined.json()["shards"] == DEFAULT_SHARDS
    # Disjoint writers move disjoint shard journals; overlapping claims still meet.
    one, other = first_with_two_keys(DEFAULT_SHARDS)
    before = shard_refs(bare)
    assert alock(a, "acquire", f"{one}/**", **A).code == 0
    assert alock(b, "acquire", f"{other}/x.py", **B).code == 0
    moved = {k for k, tip in shard_refs(bare).items() if before[k] != tip}
    assert moved == set(record_shards([f"{one}/**", f"{other}/x.py"], DEFAULT_SHARDS))
    refused = alock(b, "acquire", f"{one}/y.py", "--json", **B)
    assert refused.code == 1 and refused.json()["status"] == "refused"
    check_consistent(bare)
    shown = alock(a, "remote", "--json")
    assert shown.code == 0 and shown.json()["shards"] == DEFAULT_SHARDS


def test_shards_1_lays_a_new_remote_out_in_one_journal(bare: Path, tmp_path: Path) -> None:
    a = make_clone(bare.as_uri(), tmp_path / "a", remote_mode=False)
    got = alock(a, "remote", "origin", "--shards", "1", "--json")
    assert got.code == 0, got.err
    assert got.json()["laid_out"] is True and got.json()["shards"] == 1
    assert is_journal_commit(bare) and not shard_refs(bare)
    assert git(bare, "for-each-ref", FORMAT) == ""
    # A clone that asks for nothing joins the journal as it is, and so does --shards 1.
    b = make_clone(bare.as_uri(), tmp_path / "b")
    assert not shard_refs(bare)
    assert alock(a, "acquire", "src/**", **A).code == 0
    assert alock(b, "acquire", "src/x.py", **B).code == 1
    assert alock(b, "remote", "--shards", "1", "--json").json()["status"] == "already"
    # A count that a sharded remote cannot keep is refused before anything changes.
    c = make_bare(tmp_path / "c.git")
    d = make_clone(c.as_uri(), tmp_path / "d")
    e = make_clone(c.as_uri(), tmp_path / "e", remote_mode=False)
    refused = alock(e, "remote", "origin", "--shards", "1")
    assert refused.code == 2 and refused.err.startswith("error: "), refused
    assert "sharded already" in refused.err
    assert git(e, "config", "--get", "alock.remote", check=False) == ""
    assert alock(d, "remote", "--shards", str(DEFAULT_SHARDS), "--json").json()["status"] == (
        "already"
    )
    for bad in ("0", "257"):
        got = alock(e, "remote", "origin", "--shards", bad)
        assert got.code == 2 and got.err.startswith("error: "), got.err


def test_a_remote_kept_in_one_journal_keeps_working_and_is_not_re_laid(
    bare: Path, tmp_path: Path
) -> None:
    """A remote an earlier version wrote (its first claim made the single journal) is
    joined as it is; it is sharded only when someone asks, as before."""
    old = make_clone(bare.as_uri(), tmp_path / "old", remote_mode=False)
    git(old, "config", "alock.remote", "origin")  # a clone that never laid anything out
    assert alock(old, "acquire", "src/**", "-m", "old", **A).code == 0
    assert is_journal_commit(bare)
    journal = git(bare, "rev-parse", JOURNAL)
    b = make_clone(bare.as_uri(), tmp_path / "b", remote_mode=False)
    joined = alock(b, "remote", "origin", "--json")
    assert joined.code == 0, joined.err
    assert joined.json()["laid_out"] is False and joined.json()["shards"] == 1
    assert git(bare, "rev-parse", JOURNAL) == journal  # not re-laid, nothing written
    assert git(bare, "for-each-ref", FORMAT) == "" and not shard_refs(bare)
    assert alock(b, "acquire", "src/api/x.py", **B).code == 1
    assert alock(b, "acquire", "docs/**", **B).code == 0
    assert alock(old, "acquire", "docs/a.md", **A).code == 1
    assert is_journal_commit(bare) and not shard_refs(bare)
    # Upgraded as before, on request; every claim holds across it.
    upgraded = alock(b, "remote", "origin", "--shards", "8", "--json")
    assert upgraded.code == 0, upgraded.err
    assert upgraded.json()["upgraded"] is True and upgraded.json()["shards"] == 8
    assert sorted(shard_refs(bare)) == list(range(8))
    check_consistent(bare)
    assert alock(b, "acquire", "src/api/x.py", **B).code == 1
    assert alock(old, "acquire", "docs/a.md", **A).code == 1
    assert alock(old, "acquire", "lib/**", **A).code == 0
    assert len(remote_locks(bare)) == 3


def test_a_stale_view_of_a_new_remote_never_wins_beside_the_layout(
    bare: Path, tmp_path: Path
) -> None:
    """A clone that fetched the remote while it had no table (and would start one journal
    there) and a clone that lays it out sharded and claims: whichever comes first, the
    other decides on it."""
    # The layout first: the stale clone's first write is rejected, fetches, is refused.
    stale = make_clone(bare.as_uri(), tmp_path / "stale", remote_mode=False)
    git(stale, "config", "alock.remote", "origin")
    assert alock(stale, "sync").code == 0  # fetched: no table there
    a = make_clone(bare.as_uri(), tmp_path / "a")
    assert alock(a, "acquire", "src/**", **A).code == 0
    refused = alock(stale, "acquire", "src/x.py", "--json", **B)
    assert refused.code == 1 and refused.json()["status"] == "refused", refused
    assert shard_refs(bare) and not is_journal_commit(bare)
    check_consistent(bare)
    # The single journal first: the clone that would lay it out joins it instead.
    other = make_bare(tmp_path / "other.git")
    first = make_clone(other.as_uri(), tmp_path / "first", remote_mode=False)
    git(first, "config", "alock.remote", "origin")
    assert alock(first, "acquire", "src/**", **A).code == 0
    late = make_clone(other.as_uri(), tmp_path / "late")
    assert not shard_refs(other) and is_journal_commit(other)
    refused = alock(late, "acquire", "src/x.py", "--json", **B)
    assert refused.code == 1 and refused.json()["status"] == "refused", refused


@pytest.mark.usefixtures("one_second")
def test_a_remote_emptied_and_laid_out_again_in_the_same_count_is_restored(
    bare: Path, tmp_path: Path
) -> None:
    """As below, with the default count on both sides, both layouts made in one second:
    each shard that lost claims is put back on the new layout's shard journals, and every
    clone goes on."""
    a = make_clone(bare.as_uri(), tmp_path / "a")
    assert alock(a, "acquire", "src/**", **A).code == 0
    b = empty_and_join(bare, tmp_path)
    assert git(bare, "cat-file", "-p", FORMAT) == f"shards {DEFAULT_SHARDS}\n"
    lost = alock(a, "acquire", "lib/x", **A)
    assert lost.code == 2 and "--restore" in lost.err, lost
    restored = alock(a, "remote", "--restore")
    assert restored.code == 0, restored
    check_consistent(bare)
    assert alock(b, "acquire", "src/x.py", **B).code == 1
    assert alock(b, "acquire", "lib/**", **B).code == 0


@pytest.mark.usefixtures("one_second")
def test_a_write_on_a_remote_laid_out_again_in_the_same_second_is_told_what_was_lost(
    bare: Path, tmp_path: Path
) -> None:
    """Two layouts made in one second were the same objects (notice, shard journals), so
    a write leasing shards that held nothing found every lease standing and won: the clone
    never learned that its claims in another shard were gone, and a clone joining since
    was granted them. Each layout is its own: every write, whatever shards it leases, is
    told."""
    a = make_clone(bare.as_uri(), tmp_path / "a")
    laid = {ref: git(bare, "rev-parse", ref) for ref in (JOURNAL, *refs_under(bare))}
    one, other = first_with_two_keys(DEFAULT_SHARDS)
    assert alock(a, "acquire", f"{one}/**", **A).code == 0
    b = empty_and_join(bare, tmp_path)
    before = git(bare, "for-each-ref")
    # A holder of this clone with no claim (its write leases no shard of a's: the notice
    # tells it), a's own in a shard that held nothing, and one leasing every shard.
    for agent, pattern in (
        ("agent-c", f"{other}/x.py"),
        ("agent-a", f"{other}/x.py"),
        ("agent-a", "**/*.md"),
    ):
        lost = alock(a, "acquire", pattern, "--json", AGENT_ID=agent)
        assert lost.code == 2 and "--restore" in lost.err, lost
        assert git(bare, "for-each-ref") == before
    # No journal value repeats across layouts: every ref but the format blob is new.
    again = {ref: git(bare, "rev-parse", ref) for ref in (JOURNAL, *refs_under(bare))}
    assert again.keys() == laid.keys()
    assert not {ref for ref in laid if laid[ref] == again[ref] and ref != FORMAT}
    # Put back, a's claim holds against b, which never saw it, and a writes again.
    assert alock(a, "remote", "--restore").code == 0
    assert alock(b, "acquire", f"{one}/x.py", **B).code == 1
    assert alock(a, "acquire", f"{other}/x.py", **A).code == 0
    check_consistent(bare)


@pytest.mark.usefixtures("one_second")
def test_a_journal_put_back_and_sharded_again_in_the_same_second_is_told_what_was_lost(
    bare: Path, tmp_path: Path
) -> None:
    """The upgrade's twin of the above: a single journal sharded, a claim made in one
    shard, the journal put back by a push --mirror of a copy taken before, and sharded
    again within the second. The second upgrade split the same table on the same journal:
    without a layout of its own it was the first one's objects, and a write in another
    shard won."""
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    assert alock(a, "acquire", "docs/**", **A).code == 0
    git(tmp_path, "clone", "-q", "--mirror", bare.as_uri(), "copy")
    assert alock(a, "remote", "--shards", "8").code == 0
    one, other = first_with_two_keys(8)
    assert alock(a, "acquire", f"{one}/**", **A).code == 0
    git(tmp_path / "copy", "push", "-q", "--mirror", bare.as_uri())
    assert is_journal_commit(bare) and not shard_refs(bare)
    c = make_clone(bare.as_uri(), tmp_path / "c")
    assert alock(c, "remote", "--shards", "8").code == 0
    lost = alock(a, "acquire", f"{other}/x.py", **A)
    assert lost.code == 2 and "--restore" in lost.err, lost
    assert alock(a, "remote", "--restore").code == 0
    assert alock(c, "acquire", f"{one}/x.py", **B).code == 1
    assert alock(c, "acquire", "docs/a.md", **B).code == 1
    check_consistent(bare)


def test_a_remote_emptied_and_laid_out_again_is_not_restored_onto_other_shards(
    bare: Path, tmp_path: Path
) -> None:
    """A push --mirror from a fresh clone empties a plain host; a clone joining next takes
    it for a new remote and lays it out in 64 shards. A view of 8 shards is not put back
    onto those (its claims would sit in the wrong shards): the restore stops, changing
    nothing."""
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=8)
    assert alock(a, "acquire", "src/**", **A).code == 0
    b = empty_and_join(bare, tmp_path)
    assert git(bare, "cat-file", "-p", FORMAT) == f"shards {DEFAULT_SHARDS}\n"
    lost = alock(a, "acquire", "lib/x", **A)
    assert lost.code == 2 and "--restore" in lost.err, lost
    before = git(bare, "for-each-ref")
    refused = alock(a, "remote", "--restore")
    assert refused.code == 2 and "only onto the same shards" in refused.err, refused
    assert git(bare, "for-each-ref") == before
    assert alock(b, "acquire", "lib/**", **B).code == 0


@pytest.mark.parametrize("shards", [None, 1], ids=["sharded", "one-journal"])
def test_the_hosted_guard_lets_a_new_remote_be_laid_out_and_guards_it(
    tmp_path: Path, shards: int | None
) -> None:
    bare = make_bare(tmp_path / "hosted.git")
    assert alock(tmp_path, "install-remote-hook", str(bare)).code == 0
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=shards)
    b = make_clone(bare.as_uri(), tmp_path / "b")
    assert bool(shard_refs(bare)) is (shards is None)
    assert alock(a, "acquire", "src/api/**", **A).code == 0
    assert alock(b, "acquire", "docs/**", **B).code == 0
    assert alock(b, "acquire", "src/api/x.py", **B).code == 1
    # Work pushed inside another's claim is refused on the table the layout keeps.
    (b / "src" / "api").mkdir(parents=True)
    (b / "src" / "api" / "x.py").write_text("b\n")
    git(b, "add", "-A")
    git(b, "commit", "-q", "-m", "b edits api", "--trailer", "Agent-Id: agent-b")
    refused = run_git(b, "push", "-q", "origin", "HEAD:main")
    assert refused.code != 0
    assert "alock: HELD src/api/x.py" in refused.err, refused.err
    if shards is None:
        check_consistent(bare)


_AT = r"""
import os, subprocess, sys, time
time.sleep(max(0.0, float(sys.argv[1]) - time.time()))
for args in sys.argv[2:-1]:
    code = subprocess.call(["git", "alock", *args.split(" ")], stdout=subprocess.DEVNULL)
    if code:
        sys.exit(code)
os.execvp("git", ["git", "alock", *sys.argv[-1].split(" ")])
"""


@pytest.mark.slow
def test_clones_expecting_each_layout_at_one_instant_never_double_grant(
    tmp_path: Path,
) -> None:
    """On a new remote, at one instant: one clone lays it out sharded and claims; another,
    which saw it empty (as a clone of an earlier version would), starts its single journal
    with the same claim; a third asks for the single journal and claims. One layout
    stands, and exactly one of the three claims wins."""
    for round_no in range(4):
        bare = make_bare(tmp_path / f"r{round_no}.git")
        sharded = make_clone(bare.as_uri(), tmp_path / f"s{round_no}", remote_mode=False)
        stale = make_clone(bare.as_uri(), tmp_path / f"t{round_no}", remote_mode=False)
        git(stale, "config", "alock.remote", "origin")
        assert alock(stale, "sync").code == 0
        single = make_clone(bare.as_uri(), tmp_path / f"u{round_no}", remote_mode=False)
        start = time.time() + 0.5
        plans = [
            (sharded, ["remote origin", "acquire src/** --json"]),
            (stale, ["acquire src/x.py --json"]),
            (single, ["remote origin --shards 1", "acquire src/** --json"]),
        ]
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _AT, repr(start), *steps],
                cwd=clone,
                env=cli_env({"AGENT_ID": f"d{i}"}),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i, (clone, steps) in enumerate(plans)
        ]
        results = [finish(proc, timeout=180) for proc in procs]
        statuses = []
        for got in results:
            assert got.code in (0, 1, 2), got
            if got.code == 2:
                # Only --shards 1 on a remote laid out sharded meanwhile stops (exit 2).
                assert "sharded already" in got.err, got
                statuses.append("stopped")
            else:
                statuses.append(str(got.json()["status"]))
        assert statuses.count("acquired") == 1, statuses
        assert len(remote_locks(bare)) == 1
        if shard_refs(bare):
            check_consistent(bare)
            assert not is_journal_commit(bare)
        else:
            assert is_journal_commit(bare)
