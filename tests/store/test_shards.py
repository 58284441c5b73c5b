"""A sharded lock remote (docs/design.md, section 5.10): the table kept in shard journals,
writes that lease only the shards they touch, the upgrade from one journal, and the
interleavings of section 5.7 played per shard."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pygit2
import pytest
from conftest import git
from support.cli import alock, cli_env, finish, run_git
from support.daemon import Daemon
from support.procs import git_at_work
from support.records import write_blob
from support.remote import daemon, make_bare, make_clone, remote_locks

from gitlocks.core.shard import record_shards

__all__ = ["daemon"]  # the fixture, imported so pytest finds it

A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}
SHARDS = 8
FORMAT = "refs/agent-locks-meta/format"
JOURNAL = "refs/agent-locks-meta/journal"


def shard_refs(bare: Path) -> dict[int, str]:
    repo = pygit2.Repository(str(bare))
    prefix = "refs/agent-locks-meta/shards/"
    return {
        int(name[len(prefix) :]): str(repo.references[name].target)
        for name in repo.references
        if name.startswith(prefix)
    }


def shard_tables(bare: Path) -> dict[int, dict[str, str]]:
    """Shard -> its table (lock id -> blob id), read with plain git."""
    found: dict[int, dict[str, str]] = {}
    for k, tip in shard_refs(bare).items():
        listing = git(bare, "ls-tree", "-r", f"{tip}^{{tree}}", "locks")
        found[k] = {
            line.split("\t")[1].rsplit("/", 1)[1]: line.split()[2]
            for line in listing.splitlines()
            if line
        }
    return found


def check_consistent(bare: Path) -> None:
    """The union of the shard tables equals the lock refs, and each record is held in
    exactly the shards of its claim."""
    tables = shard_tables(bare)
    union = {i: v for table in tables.values() for i, v in table.items()}
    repo = pygit2.Repository(str(bare))
    refs = {
        name[len("refs/agent-locks/") :]: str(repo.references[name].target)
        for name in repo.references
        if name.startswith("refs/agent-locks/")
    }
    assert union == refs
    for lock_id, record in remote_locks(bare).items():
        held = {k for k, table in tables.items() if lock_id in table}
        assert held == set(record_shards(record.paths, len(tables))), record.paths


def settled(bare: Path) -> None:
    """``check_consistent`` once the remote is done: a receive-pack whose client was killed
    may still be applying the push (all of it or none), renaming refs one by one, or not
    have begun (then the refs are consistent, and about to change)."""
    for _ in range(250):  # each git ends by itself: bounded
        if not git_at_work(b"receive-pack", bare):
            break
        time.sleep(0.02)
    for _ in range(50):
        try:
            check_consistent(bare)
            return
        except AssertionError:
            time.sleep(0.2)
    check_consistent(bare)


def first_with_two_keys(count: int) -> tuple[str, str]:
    """Two top-level directories that fall in different shards."""
    names = [f"dir{i}" for i in range(64)]
    first = names[0]
    [k0] = record_shards([f"{first}/**"], count)
    other = next(n for n in names if record_shards([f"{n}/**"], count) != {k0})
    return first, other


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    return make_bare(tmp_path / "locks.git")


@pytest.fixture
def two(bare: Path, tmp_path: Path) -> tuple[Path, Path]:
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    b = make_clone(bare.as_uri(), tmp_path / "b")
    got = alock(a, "remote", "--shards", str(SHARDS), "--json")
    assert got.code == 0, got.err
    assert got.json()["status"] == "sharded"
    return a, b


def test_sharding_an_empty_remote_and_claiming_across_shards(
    two: tuple[Path, Path], bare: Path
) -> None:
    a, b = two
    assert git(bare, "cat-file", "-p", FORMAT) == f"shards {SHARDS}\n"
    assert sorted(shard_refs(bare)) == list(range(SHARDS))
    notice = git(bare, "cat-file", "-p", JOURNAL)
    assert "this lock table is sharded: upgrade gitlocks" in notice
    assert "Journal-Seq" not in notice  # no journal commit: earlier versions stop there
    one, other = first_with_two_keys(SHARDS)
    before = shard_refs(bare)
    assert alock(a, "acquire", f"{one}/**", **A).code == 0
    moved = {k for k, tip in shard_refs(bare).items() if before[k] != tip}
    assert moved == set(record_shards([f"{one}/**"], SHARDS))  # one shard leased, no more
    assert alock(b, "acquire", f"{other}/x.py", **B).code == 0
    refused = alock(b, "acquire", f"{one}/deep/file.py", "--json", **B)
    assert refused.code == 1 and refused.json()["status"] == "refused", refused
    # Every clone reads the union: both claims, on either side.
    for clone in (a, b):
        assert alock(clone, "sync").code == 0
        listed = sorted(r["paths"][0] for r in alock(clone, "list", "--json").json())
        assert listed == sorted([f"{one}/**", f"{other}/x.py"])
    check_consistent(bare)
    assert alock(a, "release", f"{one}/**", **A).code == 0
    assert alock(b, "acquire", f"{one}/deep/file.py", **B).code == 0
    check_consistent(bare)


def test_a_top_level_wildcard_meets_prefixed_claims_in_every_shard(
    two: tuple[Path, Path], bare: Path
) -> None:
    a, b = two
    _, other = first_with_two_keys(SHARDS)
    assert alock(a, "acquire", f"{other}/x.md", **A).code == 0
    refused = alock(b, "acquire", "*.md", "**/x.md", "--json", **B)
    assert refused.code == 1 and refused.json()["status"] == "refused"
    assert alock(b, "acquire", "*.py", **B).code == 0  # every shard, overlapping nothing
    assert set(shard_tables(bare)) == set(range(SHARDS))
    assert all(len(t) >= 1 for t in shard_tables(bare).values())  # held in every shard
    refused = alock(a, "acquire", "y.py", "--json", **A)
    assert refused.code == 1 and refused.json()["status"] == "refused"
    check_consistent(bare)
    assert alock(b, "release", "--all", **B).code == 0
    assert all(
        set(t) <= set(remote_locks(bare)) for t in shard_tables(bare).values()
    )  # released from every shard at once
    check_consistent(bare)


def test_a_remote_written_by_the_previous_version_keeps_working_then_is_upgraded(
    bare: Path, tmp_path: Path
) -> None:
    # The previous version laid nothing out: its first claim made the single journal.
    a = make_clone(bare.as_uri(), tmp_path / "a", remote_mode=False)
    git(a, "config", "alock.remote", "origin")
    assert alock(a, "acquire", "src/**", "-m", "old", **A).code == 0
    b = make_clone(bare.as_uri(), tmp_path / "b")  # joins the journal as it is
    assert alock(b, "acquire", "docs/**", **B).code == 0
    assert not shard_refs(bare)  # one journal until someone upgrades
    journal = git(bare, "rev-parse", JOURNAL).strip()
    got = alock(a, "remote", "--shards", "4", "--json")
    assert got.code == 0, got.err
    assert got.json() == {"status": "sharded", "remote": "origin", "shards": 4, "locks": 2}
    check_consistent(bare)
    for tip in shard_refs(bare).values():  # each shard's history goes on from the journal
        assert git(bare, "rev-parse", f"{tip}^").strip() == journal
    again = alock(a, "remote", "--shards", "4", "--json")
    assert again.code == 0 and again.json()["status"] == "already"
    other = alock(a, "remote", "--shards", "8")
    assert other.code == 2 and other.err.startswith("error: "), other.err
    for bad in ("0", "257", "many"):
        got = alock(a, "remote", "--shards", bad)
        assert got.code == 2 and got.err.startswith("error: "), got.err
    # b fetched before the upgrade: its next write reads the shards, no lost view.
    assert alock(b, "acquire", "src/x.py", **B).code == 1
    assert alock(b, "acquire", "lib/**", **B).code == 0
    assert alock(a, "release", "src/**", **A).code == 0
    assert alock(b, "acquire", "src/x.py", **B).code == 0
    check_consistent(bare)
    assert len(remote_locks(bare)) == 3
    # The log reads on from the single journal through the shards, each event once.
    assert alock(a, "sync").code == 0
    logged = [(e["event"], e.get("paths")) for e in alock(a, "log", "--json").json()]
    assert logged == [
        ("granted", ["src/x.py"]),
        ("released", ["src/**"]),
        ("granted", ["lib/**"]),
        ("sharded", []),
        ("granted", ["docs/**"]),
        ("granted", ["src/**"]),
    ], logged


def test_a_client_that_reads_the_journal_ref_refuses_to_write_after_the_upgrade(
    two: tuple[Path, Path], bare: Path, tmp_path: Path
) -> None:
    """The previous version takes the journal ref alone for the table: after the upgrade it
    holds the notice, no journal commit, and every write stops there (section 5.5). Played
    here by a clone that sees no format ref: the remote's meta namespace without it."""
    a, _ = two
    assert alock(a, "acquire", "src/**", **A).code == 0
    old = make_bare(tmp_path / "old.git")
    for ref in (JOURNAL, "refs/agent-locks/*"):
        git(bare, "push", "-q", "--force", old.as_uri(), f"{ref}:{ref}")
    c = make_clone(old.as_uri(), tmp_path / "c", remote_mode=False)
    git(c, "config", "alock.remote", "origin")
    got = alock(c, "acquire", "lib/**", **B)
    assert got.code == 2, got
    assert "not a gitlocks journal commit" in got.err
    assert git(old, "rev-parse", JOURNAL) == git(bare, "rev-parse", JOURNAL)  # not written


def test_a_lost_shard_journal_is_noticed(two: tuple[Path, Path], bare: Path) -> None:
    a, b = two
    assert alock(a, "acquire", "src/**", **A).code == 0
    assert alock(b, "sync").code == 0
    [k] = record_shards(["src/**"], SHARDS)
    git(bare, "update-ref", "-d", f"refs/agent-locks-meta/shards/{k}")
    got = alock(b, "acquire", "src/x.py", **B)
    assert got.code == 2 and f"refs/agent-locks-meta/shards/{k}" in got.err, got
    assert "has vanished" in got.err
    # Put back from b's view, per shard: the lost claim stands again, nothing else moved.
    before = shard_refs(bare)
    restored = alock(b, "remote", "--restore", "--json")
    assert restored.code == 0, restored.err
    assert restored.json()["status"] == "restored"
    after = shard_refs(bare)
    assert {n for n in after if after[n] != before.get(n)} == {k}
    check_consistent(bare)
    assert alock(b, "acquire", "src/x.py", **B).code == 1
    again = alock(b, "remote", "--restore", "--json")
    assert again.code == 0 and again.json()["status"] == "nothing"
    # Rewound by plain git: noticed, and put back on top of the rewinding commit.
    assert alock(a, "acquire", "src/more/**", **A).code == 0
    assert alock(b, "sync").code == 0
    tip = after[k]
    git(bare, "update-ref", f"refs/agent-locks-meta/shards/{k}", f"{tip}~1")
    got = alock(b, "acquire", "src/y.py", **B)
    assert got.code == 2 and "went back" in got.err, got
    assert alock(b, "remote", "--restore").code == 0
    check_consistent(bare)
    assert len(remote_locks(bare)) == 2


# --- same-instant duels ------------------------------------------------------------------

_AT = r"""
import os, sys, time
time.sleep(max(0.0, float(sys.argv[1]) - time.time()))
os.execvp("git", ["git", "alock", *sys.argv[2:]])
"""


def _duel(clones: list[Path], scopes: list[str]) -> list[str]:
    """Every clone claims its scope at one instant; their statuses."""
    start = time.time() + 0.5
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _AT, repr(start), "acquire", scope, "--json"],
            cwd=clone,
            env=cli_env({"AGENT_ID": f"d{i}"}),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, (clone, scope) in enumerate(zip(clones, scopes, strict=True))
    ]
    results = [finish(proc, timeout=180) for proc in procs]
    for i, got in enumerate(results):
        assert got.code in (0, 1), f"d{i} could not run: {got}"
    return [str(got.json()["status"]) for got in results]


def _release_all(clones: list[Path]) -> None:
    for i, clone in enumerate(clones):
        assert alock(clone, "release", "--all", AGENT_ID=f"d{i}").code in (0, 1)


@pytest.mark.slow
def test_same_instant_duels_within_one_shard_and_across_shards(
    daemon: Daemon, tmp_path: Path
) -> None:
    bare = make_bare(daemon.base / "locks.git")
    config = {"alock.remoteTimeout": "5m"}
    clones = [
        make_clone(daemon.url("locks.git"), tmp_path / f"d{i}", config=config, shards=1)
        for i in range(4)
    ]
    assert alock(clones[0], "remote", "--shards", str(SHARDS)).code == 0
    one, other = first_with_two_keys(SHARDS)
    for round_no in range(4):
        # Within one shard: four overlapping claims, one wins.
        statuses = _duel(clones, [f"{one}/r{round_no}/**"] * 4)
        assert sorted(statuses) == ["acquired"] + ["refused"] * 3, statuses
        # A top-level wildcard against prefixed claims in two shards: no double grant.
        _release_all(clones)
        scopes = [f"**/r{round_no}.md", f"{one}/r{round_no}.md", f"{other}/r{round_no}.md"]
        statuses = _duel(clones[:3], scopes)
        won = [s for s, st in zip(scopes, statuses, strict=True) if st == "acquired"]
        assert won in ([scopes[0]], scopes[1:]), statuses
        # Across shards: disjoint claims all win (once **/r<n>.md, which crosses both, is gone).
        _release_all(clones)
        statuses = _duel(clones[:2], [f"{one}/s{round_no}", f"{other}/s{round_no}"])
        assert statuses == ["acquired", "acquired"]
        check_consistent(bare)
        _release_all(clones)
    check_consistent(bare)
    assert remote_locks(bare) == {}


# --- a claimer killed mid-push -------------------------------------------------------------


@pytest.mark.slow
def test_a_claimer_killed_mid_push_leaves_the_tables_equal_to_the_refs(
    daemon: Daemon, tmp_path: Path
) -> None:
    bare = make_bare(daemon.base / "locks.git")
    url = daemon.url("locks.git")
    a = make_clone(url, tmp_path / "a", shards=1)
    b = make_clone(url, tmp_path / "b")
    assert alock(a, "remote", "--shards", str(SHARDS)).code == 0
    kills = 0
    for round_no in range(6):
        proc = subprocess.Popen(
            ["git", "alock", "acquire", f"k{round_no}/**", f"**/k{round_no}.txt"],
            cwd=a,
            env=cli_env(A),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # git, gitlocks and its push: killed together
        )
        # Somewhere during its fetch, decision or push: sooner each round.
        time.sleep(0.05 * (6 - round_no))
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            kills += 1
        finish(proc)
        settled(bare)
        # The other clone sees the remote as it is, and nothing is half-granted.
        assert alock(b, "sync").code == 0
        listed = alock(b, "list", "--json")
        assert listed.code == 0, listed
        mine = [r for r in listed.json() if r["paths"][0] == f"k{round_no}/**"]
        assert bool(mine) == any(f"k{round_no}/**" in r.paths for r in remote_locks(bare).values())
        assert alock(a, "sync").code == 0
        again = alock(a, "acquire", f"k{round_no}/**", "**/k{round_no}.txt", "--json", **A)
        assert again.code == 0, again
        # A claim that landed is this holder's (a killed process's claim may be taken
        # over as anew); one that did not is granted now.
        assert again.json()["status"] in (("already_yours", "acquired") if mine else ("acquired",))
    check_consistent(bare)
    held = {p for r in remote_locks(bare).values() for p in r.paths if r.holder == "agent-a"}
    assert {f"k{n}/**" for n in range(6)} <= held
    assert kills, "no claimer was killed mid-write"


# --- the hosted pre-receive guard ----------------------------------------------------------


@pytest.fixture
def guarded(bare: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A guarded remote where agent-a held src/api/** before it was sharded, with the
    guard installed: the upgrade itself passes it."""
    assert alock(tmp_path, "install-remote-hook", str(bare)).code == 0
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    b = make_clone(bare.as_uri(), tmp_path / "b")
    assert alock(a, "acquire", "src/api/**", **A).code == 0
    got = alock(a, "remote", "--shards", str(SHARDS))
    assert got.code == 0, got.err
    assert git(bare, "cat-file", "-p", FORMAT) == f"shards {SHARDS}\n"
    assert alock(b, "acquire", "*.md", **B).code == 0  # held in every shard
    return a, b


def test_the_hosted_guard_checks_pushed_work_against_the_union_of_the_shards(
    guarded: tuple[Path, Path], bare: Path, tmp_path: Path
) -> None:
    # Deleted where no hook runs: the shard tables still hold the claim.
    [lock] = [i for i, r in remote_locks(bare).items() if r.paths == ("src/api/**",)]
    git(bare, "update-ref", "-d", f"refs/agent-locks/{lock}")
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", bare.as_uri(), "other")
    for rel in ("src/api/auth.py", "README.md"):
        (other / rel).parent.mkdir(parents=True, exist_ok=True)
        (other / rel).write_text("c\n")
        git(other, "add", "-A")
        git(other, "commit", "-q", "-m", f"c edits {rel}", "--trailer", "Agent-Id: agent-c")
        refused = run_git(other, "push", "-q", "origin", "HEAD:main")
        assert refused.code != 0
        assert f"HELD {rel} in " in refused.err, refused.err
        git(other, "reset", "-q", "--hard", "HEAD~1")


def test_the_hosted_guard_passes_sharded_writes_and_guards_each_shard(
    guarded: tuple[Path, Path], bare: Path
) -> None:
    a, b = guarded
    assert alock(a, "acquire", "lib/**", **A).code == 0
    assert alock(b, "release", "*.md", **B).code == 0
    assert alock(a, "release", "src/api/**", **A).code == 0
    assert alock(b, "acquire", "src/api/x.py", **B).code == 0
    check_consistent(bare)
    [k] = record_shards(["lib/**"], SHARDS)
    shard = f"refs/agent-locks-meta/shards/{k}"
    tip = git(bare, "rev-parse", shard).strip()
    [lib] = [i for i, r in remote_locks(bare).items() if r.paths == ("lib/**",)]
    blob = git(bare, "rev-parse", f"refs/agent-locks/{lib}").strip()
    attempts = {
        "deletes": [f":{shard}"],
        "does not descend": [f"{tip}~1:{shard}"],
        "no gitlocks journal commit": ["refs/heads/main:" + shard],
        "still holds": [f":refs/agent-locks/{lib}"],
        "does not hold": [f"{blob}:refs/agent-locks/planted-1"],
        "fixed": [f":{FORMAT}"],
        "notice": [f"{tip}:{JOURNAL}"],
    }
    for said, specs in attempts.items():
        refused = run_git(a, "push", "--force", "origin", *specs)
        assert refused.code != 0, said
        assert said in refused.err, (said, refused.err)
    assert git(bare, "rev-parse", shard).strip() == tip
    check_consistent(bare)


def test_the_hosted_guard_refuses_a_sharding_that_is_not_the_upgrade(
    bare: Path, tmp_path: Path
) -> None:
    assert alock(tmp_path, "install-remote-hook", str(bare)).code == 0
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    assert alock(a, "acquire", "src/**", **A).code == 0
    blob = str(pygit2.Repository(str(a)).create_blob(b"shards 4\n"))
    refused = run_git(a, "push", "origin", f"{blob}:{FORMAT}")
    assert refused.code != 0
    assert "is not the upgrade" in refused.err, refused.err
    assert alock(a, "acquire", "lib/**", **A).code == 0  # still one journal, still guarded
    assert not shard_refs(bare)


def test_the_next_write_deletes_a_lock_ref_pushed_by_hand(
    two: tuple[Path, Path], bare: Path
) -> None:
    a, b = two
    assert alock(a, "acquire", "src/**", **A).code == 0
    record = next(iter(remote_locks(bare).values())).to_dict()
    record.update(id="mallory-1", holder="mallory", paths=["**"], exact=[])
    blob = write_blob(bare, record)
    git(bare, "update-ref", "refs/agent-locks/mallory-1", blob)
    # b's view is older than the remote's shards: a ref it cannot place is left alone.
    assert alock(b, "acquire", "lib/**", **B).code == 0  # decided on the shards: no claim
    assert "mallory-1" in remote_locks(bare)
    # With every shard where the clone read it, the ref is known to be hand-made.
    assert alock(b, "sync").code == 0
    assert alock(b, "acquire", "docs/**", **B).code == 0
    assert "mallory-1" not in remote_locks(bare), "the write cleaned it up"
    check_consistent(bare)


def test_switching_to_a_sharded_remote_pushes_local_locks_into_their_shards(
    two: tuple[Path, Path], bare: Path, tmp_path: Path
) -> None:
    a, _ = two
    assert alock(a, "acquire", "src/**", **A).code == 0
    c = make_clone(bare.as_uri(), tmp_path / "c", remote_mode=False)
    assert alock(c, "acquire", "docs/**", **B).code == 0  # local mode: never pushed
    assert alock(c, "acquire", "src/x.py", AGENT_ID="agent-c").code == 0
    refused = alock(c, "remote", "origin", "--json")
    assert refused.code == 1 and refused.json()["status"] == "refused"
    assert alock(c, "release", "src/x.py", AGENT_ID="agent-c").code == 0
    switched = alock(c, "remote", "origin", "--json")
    assert switched.code == 0, switched.err
    assert [r["paths"] for r in switched.json()["pushed"]] == [["docs/**"]]
    check_consistent(bare)
    listed = sorted(r["paths"][0] for r in alock(c, "list", "--json").json())
    assert listed == ["docs/**", "src/**"]
    assert alock(c, "release", "docs/**", **B).code == 0
    check_consistent(bare)


@pytest.mark.parametrize("sharded", [True, False])
def test_writes_in_different_shards_never_reject_each_other(
    sharded: bool, bare: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """a decides on a table older than b's write: on shards b did not touch its push wins at
    once; on one journal its lease fails, and it fetches and pushes again."""
    from gitlocks.core.scope import ScopeEntry
    from gitlocks.identity import resolve_identity
    from gitlocks.service.context import Context
    from gitlocks.service.locks import acquire
    from gitlocks.store.remote import RemoteStore

    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    b = make_clone(bare.as_uri(), tmp_path / "b")
    if sharded:
        assert alock(a, "remote", "--shards", str(SHARDS)).code == 0
    assert alock(a, "acquire", "warm/**", **A).code == 0  # a table to decide on, either way
    one, other = first_with_two_keys(SHARDS)
    monkeypatch.chdir(a)
    store = RemoteStore(pygit2.Repository(str(a)))
    ctx = Context(store=store, identity=resolve_identity("agent-a"))
    store.sync()
    assert alock(b, "acquire", f"{other}/**", **B).code == 0
    got = acquire(ctx, [ScopeEntry(f"{one}/**")], ttl=600)
    assert got.status == "acquired"
    assert store.pushes == (1 if sharded else 2)
    shown = alock(a, "remote", "--json").json()
    assert shown["shards"] == (SHARDS if sharded else None)


# --- a push whose answer never came back -------------------------------------------------


def _kill_receive_pack(bare: Path, state: str) -> None:
    """The remote's receive-pack dies (SIGKILL) when its ref transaction reaches ``state``:
    "committed" after the refs moved, "prepared" before."""
    hook = bare / "hooks" / "reference-transaction"
    hook.write_text(f'#!/bin/sh\nif [ "$1" = {state} ]; then kill -9 "$PPID"; fi\n')
    hook.chmod(0o755)


def _unhook(bare: Path) -> None:
    (bare / "hooks" / "reference-transaction").unlink()
    for stale in (bare / "refs").rglob("*.lock"):
        stale.unlink()


def test_an_unanswered_sharded_push_is_settled_by_a_fetch(
    two: tuple[Path, Path], bare: Path
) -> None:
    a, b = two
    _kill_receive_pack(bare, "committed")
    got = alock(a, "acquire", "src/**", **A)
    assert got.code == 0 and got.word.startswith("ACQUIRED"), got
    _unhook(bare)
    check_consistent(bare)
    assert alock(a, "list", "--json").json()[0]["paths"] == ["src/**"]  # the view followed
    assert alock(b, "acquire", "src/x.py", **B).code == 1
    _kill_receive_pack(bare, "prepared")
    before = shard_refs(bare)
    got = alock(b, "acquire", "lib/**", **B)
    assert got.code == 2 and "did not land" in got.err, got
    _unhook(bare)
    assert shard_refs(bare) == before
    assert alock(b, "acquire", "lib/**", **B).code == 0
    check_consistent(bare)


def test_a_shard_journal_moved_onto_a_branch_is_never_written_over(
    two: tuple[Path, Path], bare: Path
) -> None:
    a, b = two
    one, other = first_with_two_keys(SHARDS)
    assert alock(a, "acquire", f"{other}/**", **A).code == 0
    [k] = record_shards([f"{one}/**"], SHARDS)
    shard = f"refs/agent-locks-meta/shards/{k}"
    git(bare, "symbolic-ref", shard, "refs/heads/main")
    main = git(bare, "rev-parse", "refs/heads/main")
    got = alock(b, "acquire", f"{one}/**", **B)
    assert got.code == 2 and shard in got.err and "not a gitlocks journal commit" in got.err
    assert git(bare, "rev-parse", "refs/heads/main") == main  # the branch never moved
    assert alock(b, "acquire", f"{other}/x.py", **B).code == 1  # other shards go on
    assert alock(a, "release", f"{other}/**", **A).code == 0
    assert git(bare, "rev-parse", "refs/heads/main") == main
