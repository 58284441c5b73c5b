"""Remote mode against real remotes: bare repositories over file:// and a loopback daemon."""

from __future__ import annotations

from datetime import timedelta
from itertools import combinations
from pathlib import Path
from typing import Any

import pygit2
import pytest
from conftest import git
from hypothesis import given
from hypothesis import strategies as st
from support.cli import Result, alock, alock_cli, finish
from support.daemon import Daemon
from support.procs import git_at_work
from support.remote import daemon, make_bare, make_clone, refs_of, remote_events, remote_locks

from gitlocks import patterns_overlap
from gitlocks.core.record import utcnow
from gitlocks.core.scope import ScopeEntry
from gitlocks.git.remote import GitRun, failure, lost_race, porcelain
from gitlocks.identity import resolve_identity
from gitlocks.service.context import Context
from gitlocks.service.locks import acquire
from gitlocks.store.remote import RemoteStore

__all__ = ["daemon"]  # the fixture, imported so pytest finds it

A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    return make_bare(tmp_path / "locks.git")


@pytest.fixture
def two(bare: Path, tmp_path: Path) -> tuple[Path, Path]:
    return make_clone(bare.as_uri(), tmp_path / "a"), make_clone(bare.as_uri(), tmp_path / "b")


def test_claim_on_one_clone_is_refused_on_another_until_released(
    two: tuple[Path, Path], bare: Path
) -> None:
    a, b = two
    got = alock(a, "acquire", "src/api/**", "-m", "auth", **A)
    assert got.code == 0, got.err
    [lock_id] = remote_locks(bare)
    refused = alock(b, "acquire", "src/api/auth.py", **B)
    assert refused.code == 1 and refused.word == "REFUSED"
    assert "HELD src/api/** by agent-a" in refused.out
    assert alock(b, "acquire", "docs/**", **B).code == 0
    assert alock(a, "release", "src/api/**", **A).code == 0
    assert lock_id not in remote_locks(bare)
    assert alock(b, "acquire", "src/api/auth.py", **B).code == 0
    holders = sorted(r.holder for r in remote_locks(bare).values())
    assert holders == ["agent-b", "agent-b"]


def test_local_view_follows_the_remote_and_says_how_old_it_is(
    two: tuple[Path, Path], bare: Path
) -> None:
    a, b = two
    assert alock(a, "acquire", "src/**", **A).code == 0
    # B has not heard from the remote since: its offline view is the last known state.
    stale = alock(b, "list", "--json")
    assert stale.json() == [] and "lock view of remote 'origin' as of" in stale.err
    assert alock(b, "check", "src/x.py", **B).code == 0
    fresh = alock(b, "list", "--json", "--fresh")
    assert [r["holder"] for r in fresh.json()] == ["agent-a"]
    assert "lock view of remote" not in fresh.err  # just fetched: no note about its age
    assert "lock view of remote" not in alock(b, "check", "src/x.py", "--fresh", **B).err
    assert "lock view of remote 'origin' as of" in alock(b, "status", **B).err
    assert alock(b, "check", "src/x.py", **B).code == 1  # offline now, from the mirror
    assert "refs/agent-locks/" in refs_of(b)
    synced = alock(b, "sync")
    assert synced.code == 0 and synced.word.startswith("SYNCED origin: 1 lock(s)")
    assert alock(a, "release", "--all", **A).code == 0
    assert alock(b, "sync").code == 0
    assert alock(b, "list", "--json").json() == []
    assert "refs/agent-locks/" not in git(b, "for-each-ref", "refs/agent-locks/")


def test_journal_events_arrive_on_the_remote_with_the_locks(bare: Path, tmp_path: Path) -> None:
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)  # the journal ref read below
    b = make_clone(bare.as_uri(), tmp_path / "b")
    got = alock(a, "acquire", "src/**", "--json", **A).json()
    alock(a, "note", "src/**", "half done", **A)
    # B never synced: break decides on the remote's table, so it finds the id there.
    assert alock(b, "break", got["lock"]["id"], **B).code == 0
    kinds = [(e["event"], e["id"]) for e in remote_events(bare)]
    lock_id = got["lock"]["id"]
    assert kinds == [("granted", lock_id), ("noted", lock_id), ("broken", lock_id)]
    assert remote_locks(bare) == {}
    # Both clones' journals are the remote's.
    tip = git(bare, "rev-parse", "refs/agent-locks-meta/journal")
    for clone in (a, b):
        alock(clone, "sync")
        assert git(clone, "rev-parse", "refs/agent-locks-meta/journal") == tip


def test_fetch_never_touches_branches_tags_or_unpushed_locks(bare: Path, tmp_path: Path) -> None:
    a = make_clone(bare.as_uri(), tmp_path / "a", remote_mode=False)
    assert alock(a, "acquire", "docs/**", **A).code == 0  # local mode: never pushed
    git(a, "tag", "v1")
    git(a, "config", "alock.remote", "origin")  # set by hand, skipping the migration
    before = refs_of(a)
    refused = alock(a, "acquire", "src/**", **A)
    assert refused.code == 2 and "never pushed to 'origin'" in refused.err
    assert "git alock remote origin" in refused.err
    other = make_clone(bare.as_uri(), tmp_path / "o")
    assert alock(other, "acquire", "src/**", **B).code == 0
    assert alock(a, "sync").code == 0
    after = refs_of(a)
    kept = [ln for ln in before.splitlines() if "agent-locks-meta" not in ln]
    assert set(kept) <= set(after.splitlines())  # branches, tags and the local lock
    assert [r["holder"] for r in alock(a, "list", "--json").json()] == ["agent-a", "agent-b"]


def test_switching_pushes_live_local_locks(bare: Path, tmp_path: Path) -> None:
    a = make_clone(bare.as_uri(), tmp_path / "a", remote_mode=False)
    mine = alock(a, "acquire", "docs/**", "--json", **A).json()["lock"]
    switched = alock(a, "remote", "origin")
    assert switched.code == 0, switched.err
    assert "pushed 1 live local lock(s) to origin" in switched.out
    assert list(remote_locks(bare)) == [mine["id"]]
    assert [e["event"] for e in remote_events(bare)] == ["adopted"]
    assert git(a, "config", "alock.remote").strip() == "origin"
    assert git(a, "rev-parse", "--verify", "-q", "refs/agent-locks-meta/local-journal")
    b = make_clone(bare.as_uri(), tmp_path / "b")
    assert alock(b, "acquire", "docs/x.md", **B).code == 1
    shown = alock(a, "remote")
    assert shown.code == 0 and shown.word.startswith("REMOTE origin")
    assert "takes atomic pushes" in shown.out


def test_switching_refuses_when_local_locks_conflict(bare: Path, tmp_path: Path) -> None:
    b = make_clone(bare.as_uri(), tmp_path / "b")
    assert alock(b, "acquire", "src/**", **B).code == 0
    a = make_clone(bare.as_uri(), tmp_path / "a", remote_mode=False)
    assert alock(a, "acquire", "src/api/**", **A).code == 0
    before = refs_of(a)
    refused = alock(a, "remote", "origin")
    assert refused.code == 1 and refused.word.startswith("REFUSED: still in local mode")
    assert "HELD src/** by agent-b on origin (crosses local src/api/** of agent-a)" in refused.out
    assert git(a, "config", "alock.remote", check=False) == ""
    assert [r.holder for r in remote_locks(bare).values()] == ["agent-b"]
    mine = {ln for ln in before.splitlines() if ln.startswith("refs/agent-locks/")}
    assert mine <= set(refs_of(a).splitlines())  # the local lock is still there


def test_switching_off_says_what_happens_to_the_mirror(two: tuple[Path, Path]) -> None:
    a, b = two
    assert alock(b, "acquire", "src/**", **B).code == 0
    alock(a, "sync")
    off = alock(a, "remote", "--off")
    assert off.code == 0 and off.word.startswith("LOCAL: left remote mode (origin)")
    assert "1 lock(s) mirrored from origin stay in the local view" in off.out
    assert alock(a, "acquire", "src/x.py", **A).code == 1  # still blocks here, locally
    assert "refs/agent-locks-remote/origin/locks/" not in refs_of(a)
    assert "refs/agent-locks-remote/origin/meta/" not in refs_of(a)
    assert "refs/agent-locks-remote/origin/detached/" in refs_of(a)  # known as the remote's
    assert git(b, "config", "alock.remote").strip() == "origin"
    forget = alock(b, "remote", "--off", "--forget")
    assert "dropped the 1 lock(s) mirrored from origin" in forget.out
    assert alock(b, "list", "--json").json() == []
    assert alock(b, "remote").word.startswith("LOCAL")


def test_expiry_allows_for_clock_skew(two: tuple[Path, Path], bare: Path) -> None:
    a, b = two
    # A lock written by a machine whose clock says it expired 10 s ago.
    ctx = Context(
        store=RemoteStore.discover(a),
        identity=resolve_identity("agent-a"),
        clock=lambda: utcnow() - timedelta(seconds=70),
    )
    assert acquire(ctx, [ScopeEntry("src/**")], ttl=60).status == "acquired"
    assert alock(b, "acquire", "src/x.py", **B).code == 1  # inside the 30 s allowance
    # The read verbs apply the same allowance as the claim.
    assert alock(b, "check", "src/x.py", **B).word.startswith("HELD src/x.py by agent-a")
    assert [r["holder"] for r in alock(b, "list", "--json").json()] == ["agent-a"]
    git(b, "config", "alock.clockSkew", "5s")
    assert alock(b, "check", "src/x.py", **B).word == "FREE src/x.py"
    got = alock(b, "acquire", "src/x.py", **B)
    assert got.code == 0, got.out
    assert [e["event"] for e in remote_events(bare)] == ["granted", "expired", "granted"]


def test_remote_without_atomic_pushes_gives_a_clear_error(tmp_path: Path) -> None:
    bare = make_bare(tmp_path / "plain.git", **{"receive.advertiseAtomic": "false"})
    a = make_clone(bare.as_uri(), tmp_path / "a", remote_mode=False)
    switched = alock(a, "remote", "origin")
    assert switched.code == 2
    assert "does not support atomic pushes" in switched.err
    assert "dedicated bare repository" in switched.err and "git alock remote --off" in switched.err
    assert git(a, "config", "alock.remote", check=False) == ""
    git(a, "config", "alock.remote", "origin")
    before = refs_of(a)
    got = alock(a, "acquire", "src/**", **A)
    assert got.code == 2 and "does not support atomic pushes" in got.err
    assert refs_of(a).replace(" ", "") != "" and before.splitlines() == [
        ln for ln in refs_of(a).splitlines() if "agent-locks-remote" not in ln
    ]


def _hook(bare: Path, body: str) -> None:
    hook = bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\n" + body + "\n")
    hook.chmod(0o755)


# --- switching off and on again -------------------------------------------------------------


def test_off_and_on_again_never_pushes_the_remotes_locks_back(
    two: tuple[Path, Path], bare: Path
) -> None:
    a, b = two
    gone = alock(b, "acquire", "src/x", "--json", **B).json()["lock"]["id"]
    kept = alock(b, "acquire", "lib/**", "--json", **B).json()["lock"]["id"]
    assert alock(a, "sync").code == 0  # both mirrored into a's local view
    assert alock(a, "remote", "--off").code == 0
    assert alock(b, "release", "src/x", **B).code == 0
    assert alock(b, "renew", "lib/**", "--ttl", "2h", **B).code == 0
    newer = remote_locks(bare)[kept]
    mine = alock(a, "acquire", "docs/**", "--json", **A).json()["lock"]["id"]  # local mode
    on = alock(a, "remote", "origin")
    assert on.code == 0, on.err
    assert "pushed 1 live local lock(s)" in on.out, on.out
    assert "2 lock(s) copied from origin earlier were replaced by its current state" in on.out
    held = remote_locks(bare)
    assert gone not in held, "a lock released on the remote came back"
    assert sorted(held) == sorted([kept, mine])
    assert held[kept] == newer, "an old copy overwrote the remote's newer value"
    listed = {r["id"]: r for r in alock(a, "list", "--json").json()}
    assert sorted(listed) == sorted([kept, mine])
    assert listed[kept]["expires_at"] == newer.expires_at
    assert "detached" not in refs_of(a)
    adopted = [e for e in remote_events(bare) if e["event"] == "adopted"]
    assert [e["id"] for e in adopted] == [mine]


def test_off_and_on_again_pushes_a_local_change_to_a_mirrored_lock(
    two: tuple[Path, Path], bare: Path
) -> None:
    a, b = two
    own = alock(a, "acquire", "src/**", "--json", **A).json()["lock"]["id"]
    theirs = alock(b, "acquire", "lib/**", "--json", **B).json()["lock"]["id"]
    assert alock(a, "sync").code == 0
    assert alock(a, "remote", "--off").code == 0
    assert alock(a, "note", "src/**", "half done", **A).code == 0  # local mode
    assert alock(b, "note", "lib/**", "theirs, newer", **B).code == 0
    assert alock(a, "break", theirs, **A).code == 0  # local mode: a's copy only
    on = alock(a, "remote", "origin")
    assert on.code == 0, on.err
    held = remote_locks(bare)
    assert [n.text for n in held[own].notes] == ["half done"]  # the remote had not moved
    assert [n.text for n in held[theirs].notes] == ["theirs, newer"]
    assert sorted(r["id"] for r in alock(a, "list", "--json").json()) == sorted([own, theirs])


def test_refused_switch_changes_nothing_locally(bare: Path, tmp_path: Path) -> None:
    b = make_clone(bare.as_uri(), tmp_path / "b")
    assert alock(b, "acquire", "src/**", **B).code == 0
    assert alock(b, "acquire", "lib/**", **B).code == 0
    a = make_clone(bare.as_uri(), tmp_path / "a", remote_mode=False)
    assert alock(a, "acquire", "src/api/**", **A).code == 0
    before = refs_of(a)
    refused = alock(a, "remote", "origin")
    assert refused.code == 1, refused.err
    assert refs_of(a) == before  # no mirror, no journal move, no staging left behind
    assert not (a / ".git" / "agent-locks-remote.json").exists()
    assert [r["holder"] for r in alock(a, "list", "--json").json()] == ["agent-a"]


def test_failed_switch_changes_nothing_locally(bare: Path, tmp_path: Path) -> None:
    b = make_clone(bare.as_uri(), tmp_path / "b", shards=1)
    assert alock(b, "acquire", "lib/**", **B).code == 0
    a = make_clone(bare.as_uri(), tmp_path / "a", remote_mode=False)
    assert alock(a, "acquire", "src/**", **A).code == 0
    # The probe passes; the push that adopts a's lock (it moves the journal) times out.
    _hook(bare, "grep -q refs/agent-locks-meta/journal && sleep 5; exit 0")
    git(a, "config", "alock.remoteTimeout", "1s")
    before = refs_of(a)
    failed = alock(a, "remote", "origin")
    assert failed.code == 2 and "timed out" in failed.err, failed
    assert refs_of(a) == before
    assert git(a, "config", "alock.remote", check=False) == ""


def test_every_local_history_stays_reachable(bare: Path, tmp_path: Path) -> None:
    a = make_clone(bare.as_uri(), tmp_path / "a", remote_mode=False)
    histories = []
    for pattern in ("docs/**", "src/**"):
        assert alock(a, "acquire", pattern, **A).code == 0
        assert alock(a, "release", pattern, **A).code == 0
        histories.append(git(a, "rev-parse", "refs/agent-locks-meta/journal").strip())
        assert alock(a, "remote", "origin").code == 0
        assert alock(a, "remote", "--off").code == 0
    assert git(a, "rev-parse", "refs/agent-locks-meta/local-journal").strip() == histories[1]
    assert git(a, "rev-parse", "refs/agent-locks-meta/local-journal-1").strip() == histories[0]
    # Switching on and off again with no local change keeps no further copy.
    assert alock(a, "remote", "origin").code == 0
    assert "local-journal-2" not in refs_of(a)


def test_switch_uses_the_claim_rule_for_families(bare: Path, tmp_path: Path) -> None:
    b = make_clone(bare.as_uri(), tmp_path / "b")
    boss, kid = {"AGENT_ID": "boss"}, {"AGENT_ID": "kid", "AGENT_PARENT_ID": "boss"}
    assert alock(b, "acquire", "src/api/**", **kid).code == 0
    assert alock(b, "acquire", "lib/**", **boss).code == 0
    a = make_clone(bare.as_uri(), tmp_path / "a", remote_mode=False)
    # A parent's claim is blocked by its child's lock, as acquire would decide.
    assert alock(a, "acquire", "src/**", **boss).code == 0
    refused = alock(a, "remote", "origin")
    assert refused.code == 1 and "HELD src/api/** by kid" in refused.out, refused
    assert alock(a, "release", "src/**", **boss).code == 0
    # A grandchild is never blocked by its ancestors, however far up.
    assert alock(a, "acquire", "lib/x/**", AGENT_ID="grandkid", AGENT_PARENT_ID="kid").code == 0
    assert alock(b, "acquire", "lib/x/y", AGENT_ID="kid", AGENT_PARENT_ID="boss").code == 0
    on = alock(a, "remote", "origin")
    assert on.code == 0 and "pushed 1 live local lock(s)" in on.out, on


# --- settings that are wrong ---------------------------------------------------------------


def test_off_recovers_from_an_invalid_remote_name(two: tuple[Path, Path]) -> None:
    a, _ = two
    git(a, "config", "alock.remote", "bad name")
    assert alock(a, "list").code == 2
    off = alock(a, "remote", "--off")
    assert off.code == 0, off.err
    assert "alock.remote was invalid" in off.out and "unset it" in off.out
    assert git(a, "config", "alock.remote", check=False) == ""
    assert alock(a, "list").code == 0


@pytest.mark.parametrize("value", ["bogus", "0", "0s", "0m"])
def test_invalid_remote_timeout_is_named(two: tuple[Path, Path], value: str) -> None:
    a, _ = two
    git(a, "config", "alock.remoteTimeout", value)
    got = alock(a, "list")
    assert got.code == 2 and "alock.remoteTimeout" in got.err, got
    assert "git config alock.remoteTimeout" in got.err


# --- remotes that refuse lock refs ---------------------------------------------------------


@pytest.mark.parametrize(
    "config",
    [
        {"receive.hideRefs": "refs/agent-locks"},
        {"receive.hideRefs": "refs/agent-locks-meta"},
    ],
)
def test_switch_refuses_a_remote_that_refuses_lock_refs(
    tmp_path: Path, config: dict[str, str]
) -> None:
    bare = make_bare(tmp_path / "picky.git", **config)
    a = make_clone(bare.as_uri(), tmp_path / "a", remote_mode=False)
    before = refs_of(a)
    got = alock(a, "remote", "origin")
    assert got.code == 2 and "refused the lock refs" in got.err, got
    assert git(a, "config", "alock.remote", check=False) == ""
    assert refs_of(a) == before


def test_switch_refuses_a_remote_whose_hook_rejects_lock_refs(bare: Path, tmp_path: Path) -> None:
    a = make_clone(bare.as_uri(), tmp_path / "a", remote_mode=False)
    _hook(bare, "if grep -q ' refs/agent-locks/'; then echo 'no lock refs' >&2; exit 1; fi")
    got = alock(a, "remote", "origin")
    assert got.code == 2 and "pre-receive hook declined" in got.err, got
    assert git(a, "config", "alock.remote", check=False) == ""
    assert "refs/agent-locks" not in git(bare, "for-each-ref")


def test_switch_refuses_a_remote_that_will_not_delete_lock_refs(bare: Path, tmp_path: Path) -> None:
    a = make_clone(bare.as_uri(), tmp_path / "a", remote_mode=False)
    zero = "0" * 40
    _hook(bare, f'while read old new ref; do [ "$new" = {zero} ] && exit 1; done; exit 0')
    got = alock(a, "remote", "origin")
    assert got.code == 2 and "refused the lock refs" in got.err, got
    assert "Probe refs are left under refs/agent-locks/probe/" in got.err
    assert git(a, "config", "alock.remote", check=False) == ""


def test_probe_leaves_nothing_behind(bare: Path, tmp_path: Path) -> None:
    make_clone(bare.as_uri(), tmp_path / "a")
    assert "probe" not in git(bare, "for-each-ref")


# --- cost ----------------------------------------------------------------------------------


def test_remote_operations_scan_only_the_lock_namespaces(
    two: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = two
    assert alock(b, "acquire", "lib/**", **B).code == 0

    def everything(*args: object, **kwargs: object) -> object:
        raise AssertionError("scanned every ref of the repository")

    references: Any = pygit2.repository.References  # type: ignore[attr-defined]
    monkeypatch.setattr(references, "iterator", everything)
    monkeypatch.setattr(references, "__iter__", everything)
    monkeypatch.setattr(pygit2.Repository, "listall_references", everything)
    assert alock(a, "acquire", "src/**", **A).code == 0
    assert alock(a, "sync").code == 0
    git(a, "pack-refs", "--all")  # packed refs are read too, and loose ones win
    assert alock(a, "acquire", "docs/**", **A).code == 0
    listed = alock(a, "list", "--json").json()
    assert sorted(r["paths"][0] for r in listed) == ["docs/**", "lib/**", "src/**"]
    assert alock(a, "release", "src/**", **A).code == 0
    assert alock(a, "acquire", "lib/x", **A).code == 1
    assert alock(a, "remote", "--off").code == 0
    assert alock(a, "remote", "origin").code == 0


def test_remote_that_rejects_lock_refs(two: tuple[Path, Path], bare: Path) -> None:
    a, _ = two
    _hook(bare, "echo 'refs outside refs/heads are not allowed' >&2; exit 1")
    before = refs_of(a)
    got = alock(a, "acquire", "src/**", **A)
    assert got.code == 2, got.out
    assert "refused the lock refs" in got.err and "pre-receive hook declined" in got.err
    assert refs_of(a) == before


def test_push_that_times_out(two: tuple[Path, Path], bare: Path) -> None:
    a, _ = two
    _hook(bare, "sleep 5")
    git(a, "config", "alock.remoteTimeout", "1s")
    before = refs_of(a)
    got = alock(a, "acquire", "src/**", **A)
    # The hook sleeps 5 s: the answer names the 1 s bound, so it did not wait the hook out.
    assert got.code == 2 and "timed out after 1s (alock.remoteTimeout)" in got.err
    assert refs_of(a) == before
    # A local remote's receive-pack (git push starts it) ends with its hook.
    assert not git_at_work(b"receive-pack", bare)
    assert not git_at_work(b"sleep 5", bare)


def _overlapping_pairs(records: list[tuple[str, tuple[str, ...]]]) -> list[object]:
    return [
        (x, y)
        for x, y in combinations(records, 2)
        if x[0] != y[0] and any(patterns_overlap(p, q) for p in x[1] for q in y[1])
    ]


# A loaded machine stretches every push and fetch: the race must be decided by the remote,
# never by a timeout, so the clones allow far more time than the race needs.
RACE_CONFIG = {"alock.remoteTimeout": "5m"}
RACE_PROCESS_TIMEOUT = 600


def _describe(what: str, got: Result) -> str:
    return f"{what}: exit {got.code}\nstdout:\n{got.out}\nstderr:\n{got.err}"


@pytest.mark.slow
def test_four_clones_two_claimers_each_race(daemon: Daemon, tmp_path: Path) -> None:
    bare = make_bare(daemon.base / "locks.git")
    url = daemon.url("locks.git")
    clones = [make_clone(url, tmp_path / f"c{i}", config=RACE_CONFIG) for i in range(4)]
    shared = ["shared/**", "shared/a/**", "shared/a/x.py", "shared/*/x.py", "shared/b/**"]
    for round_no in range(3):
        procs = []
        for k in range(8):
            clone = clones[k // 2]
            pattern = shared[(k + round_no) % len(shared)] if k % 2 == 0 else f"own/{k}/**"
            holder = f"c{k}-r{round_no}"
            env = {"AGENT_ID": holder}
            procs.append(
                (holder, pattern, clone, alock_cli(clone, "acquire", pattern, "--json", env=env))
            )
        winners = {}
        for holder, pattern, clone, proc in procs:
            got = finish(proc, timeout=RACE_PROCESS_TIMEOUT)
            what = f"round {round_no}: {holder} on {clone.name} claiming {pattern}"
            assert got.code in (0, 1), _describe(f"{what} could not run", got)
            status = got.json()["status"]
            if pattern.startswith("own/"):
                assert status == "acquired", _describe(f"{what}: a disjoint claim lost", got)
            else:
                assert status in ("acquired", "refused"), _describe(what, got)
            if status == "acquired":
                winners[got.json()["lock"]["id"]] = (holder, clone)
        held = remote_locks(bare)
        assert set(held) == set(winners), (
            f"round {round_no}: the remote's lock refs are not the winners'\n"
            f"on the remote: {sorted((r.holder, r.paths) for r in held.values())}\n"
            f"winners: {sorted(h for h, _ in winners.values())}\n"
            f"last events: {remote_events(bare)[-10:]}"
        )
        overlapping = _overlapping_pairs([(r.holder, r.paths) for r in held.values()])
        assert not overlapping, f"round {round_no}: overlapping locks on the remote: {overlapping}"
        releases = [
            (holder, alock_cli(clone, "release", "--all", env={"AGENT_ID": holder}))
            for holder, clone in winners.values()
        ]
        for holder, proc in releases:
            done = finish(proc, timeout=RACE_PROCESS_TIMEOUT)
            assert done.code == 0, _describe(f"round {round_no}: release by {holder}", done)
        left = remote_locks(bare)
        assert left == {}, (
            f"round {round_no}: locks left after every winner released: "
            f"{sorted((r.holder, r.paths) for r in left.values())}; "
            f"last events: {remote_events(bare)[-8:]}"
        )
    # Replay the remote journal: at no point did two holders hold overlapping locks.
    live: dict[str, tuple[str, tuple[str, ...]]] = {}
    for event in remote_events(bare):
        if event["event"] == "granted":
            paths: Any = event["paths"]
            entry: tuple[str, tuple[str, ...]] = (str(event["holder"]), tuple(paths))
            clash = _overlapping_pairs([entry, *live.values()])
            assert not clash, f"journal: {event} granted while {clash} were live"
            live[str(event["id"])] = entry
        elif event["event"] in ("released", "expired", "broken"):
            live.pop(str(event["id"]), None)
    assert live == {}, f"journal: never released: {live}"


def test_push_results_and_git_messages_are_read_right() -> None:
    out = (
        "To git://x/locks.git\n"
        "!\tab:refs/agent-locks/a\t[rejected] (stale info)\n"
        "!\tab:refs/agent-locks-meta/journal\t[rejected] (atomic push failed)\n"
        "Done\n"
    )
    lines = porcelain(out)
    assert [ln.ref for ln in lines] == ["refs/agent-locks/a", "refs/agent-locks-meta/journal"]
    assert lost_race(lines)
    declined = porcelain("!\tab:refs/agent-locks/a\t[remote rejected] (pre-receive hook declined)")
    assert not lost_race(declined)
    auth = failure(GitRun(128, "", "fatal: Authentication failed for 'https://h/r'\n"), "o", "push")
    assert "authentication to the lock remote 'o' was refused" in str(auth)
    assert "Authentication failed" in str(auth)
    ssh = failure(
        GitRun(128, "", "git@h: Permission denied (publickey).\nfatal: Could not read from\n"),
        "o",
        "fetch",
    )
    assert "authentication" in str(ssh)
    unreachable = GitRun(128, "", "fatal: unable to access: Could not resolve host: h\n")
    gone = failure(unreachable, "o", "x")
    assert str(gone).startswith("cannot reach the lock remote 'o' (x): fatal: unable to access")


@given(st.lists(st.sampled_from(["a", "Z9", ".", "..", "-", "_", "/", "\n", "é", " "]), max_size=6))
def test_a_remote_name_is_read_as_its_pattern(parts: list[str]) -> None:
    """Components of ``[A-Za-z0-9._-]``, the first starting with a letter or digit, no
    ``..``; a trailing newline is no name (``$`` would have taken one)."""
    import re

    from gitlocks.store.remote import _is_remote_name

    name = "".join(parts)
    expected = (
        re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9._-]+)*", name) is not None
        and ".." not in name
    )
    assert _is_remote_name(name) == expected


def test_a_remote_claim_starts_its_view_transactions_after_its_push(tmp_path: Path) -> None:
    """The local view's two update-ref transactions start once the push has landed (a
    write starts them when it knows it moves refs, never ahead): no other update-ref
    runs, one for-each-ref lists the local refs, and the view holds the claim."""
    import json

    from support.cli import alock_process

    bare = make_bare(tmp_path / "shared.git")
    clone = make_clone(bare.as_uri(), tmp_path / "clone")
    trace = tmp_path / "trace.json"
    done = alock_process(
        clone, "acquire", "src/**", env={"AGENT_ID": "a1", "GIT_TRACE2_EVENT": str(trace)}
    )
    assert done.code == 0, done
    started = [
        json.loads(line)["argv"]
        for line in trace.read_text().splitlines()
        if json.loads(line)["event"] == "start"
    ]
    names = [" ".join(argv[1:4]) for argv in started]
    updates = [i for i, argv in enumerate(started) if "update-ref" in argv]
    push = next(i for i, argv in enumerate(started) if "push" in argv)
    assert len(updates) == 2 and min(updates) > push, names
    # The local refs, listed once under the mutex, answer every question of them.
    listings = [a for a in started if "for-each-ref" in a and str(bare) not in " ".join(a)]
    assert len(listings) == 1, listings  # (the remote's own git lists its refs too)
    assert alock(clone, "list", AGENT_ID="a2").out.count("src/**") == 1


def test_a_relative_remote_path_is_the_worktrees_from_any_directory(tmp_path: Path) -> None:
    """git reads a relative remote path from the top of the worktree, wherever it runs:
    so does every command of remote mode, its push included."""
    bare = make_bare(tmp_path / "lock remote ü.git")
    a = make_clone(bare.as_uri(), tmp_path / "a", remote_mode=False)
    git(a, "config", "remote.origin.url", "../lock remote ü.git")
    assert alock(a, "remote", "origin").code == 0
    deep = a / "src" / "deep"
    deep.mkdir(parents=True)
    got = alock(deep, "acquire", "**", **{"AGENT_ID": "alice"})  # src/deep/**
    assert got.code == 0, got.err
    assert [r.paths for r in remote_locks(bare).values()] == [("src/deep/**",)]
    assert alock(deep, "sync").code == 0
    assert alock(deep, "release", "**", **{"AGENT_ID": "alice"}).code == 0
    assert remote_locks(bare) == {}


def test_a_remote_that_never_answers_ends_the_claim_at_its_bound(
    daemon: Daemon, tmp_path: Path
) -> None:
    """A remote that takes the connection and never answers ends the claim at
    alock.remoteTimeout: git is killed, nothing changes locally, and the claim is not told
    as granted."""
    import socket

    bare = make_bare(daemon.base / "locks.git")
    a = make_clone(daemon.url("locks.git"), tmp_path / "a")
    assert alock(a, "acquire", "src/**", **A).code == 0
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # connections are taken, nothing is ever said
        git(a, "config", "remote.origin.url", f"git://127.0.0.1:{silent.getsockname()[1]}/x.git")
        git(a, "config", "alock.remoteTimeout", "1s")
        before = refs_of(a)
        got = alock(a, "acquire", "docs/**", **A)
    assert got.code == 2, got
    assert "timed out after 1s (alock.remoteTimeout)" in got.err, got.err
    assert refs_of(a) == before
    assert [r.paths for r in remote_locks(bare).values()] == [("src/**",)]
