"""Claims that wait their turn (docs/design.md, section 4.7), locally and in remote mode.

Each waiter is a real ``git alock acquire --wait`` process; its place in the queue is read
from the store's refs (the repository's own, or the bare remote's), and what happened from
the journal. No test asserts how long anything took: bounded loops wait generously.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from support.cli import Result, alock
from support.remote import make_bare, make_clone

from gitlocks.core.queue import cycle_through, is_waiter_id

JOURNAL = "refs/agent-locks-meta/journal"
SHARDS = "refs/agent-locks-meta/shards/"
ALOCK = os.path.join(os.path.dirname(sys.executable), "git-alock")


@dataclass
class Place:
    """Where agents work (two checkouts) and where the store's refs are."""

    a: Path
    b: Path
    store: Path
    remote: bool
    sharded: bool = False


@pytest.fixture(
    params=[
        "local",
        pytest.param("remote", marks=pytest.mark.slow),
        pytest.param("sharded", marks=pytest.mark.slow),
    ]
)
def place(request: pytest.FixtureRequest, repo: Path, worktree: Path, tmp_path: Path) -> Place:
    """Two checkouts of one store: a repository and its worktree, or two clones of a lock
    remote (a single journal, or sharded: waiters are held in the shards of their scope)."""
    if request.param == "local":
        return Place(repo, worktree, repo, False)
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=4 if request.param == "sharded" else 1)
    b = make_clone(bare.as_uri(), tmp_path / "b")
    return Place(a, b, bare, True, request.param == "sharded")


def cli_env(agent: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["AGENT_ID"] = agent
    return env


class Waiter:
    """``git alock acquire PATTERN... --wait=D --json`` as its own process."""

    def __init__(self, cwd: Path, agent: str, *patterns: str, wait: str = "1m") -> None:
        self.agent = agent
        self.proc = subprocess.Popen(
            # The installed script itself: the process in the queue (``git alock`` would
            # run it as git's child, and a signal to git is git's business).
            [ALOCK, "acquire", *patterns, f"--wait={wait}", "--json"],
            cwd=cwd,
            env=cli_env(agent),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # a terminal of its own, for Ctrl-C
        )

    def result(self, timeout: float = 120) -> Result:
        out, err = self.proc.communicate(timeout=timeout)
        return Result(self.proc.returncode, out, err)

    def running(self) -> bool:
        return self.proc.poll() is None

    def interrupt(self) -> None:
        """Ctrl-C, as a terminal sends it: SIGINT to the whole foreground group."""
        os.killpg(self.proc.pid, signal.SIGINT)


@pytest.fixture
def started() -> Iterator[list[Waiter]]:
    """Waiters a test starts, killed if still running at its end."""
    found: list[Waiter] = []
    yield found
    for waiter in found:
        if waiter.running():
            waiter.proc.kill()
        waiter.proc.communicate()


def until(condition: Callable[[], bool], what: str, timeout: float = 90) -> None:
    ends = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < ends, f"never happened: {what}"
        time.sleep(0.05)


def queued(store: Path) -> list[dict[str, Any]]:
    """The waiter records the store holds, in queue order."""
    out = git(store, "for-each-ref", "--format=%(refname) %(objectname)", "refs/agent-locks/")
    found = []
    for line in out.splitlines():
        name, oid = line.split()
        if is_waiter_id(name.rsplit("/", 1)[1]):
            found.append(json.loads(git(store, "cat-file", "blob", oid)))
    return sorted(found, key=lambda r: (r["queue"], r["id"]))


def holders_queued(store: Path) -> list[str]:
    return [r["holder"] for r in queued(store)]


def events(place: Place) -> list[dict[str, Any]]:
    """Every journal event, oldest first: of the store's journal, or of each shard journal
    of a sharded remote (the events of one scope are all in its shard, in order)."""
    refs = [JOURNAL]
    if place.sharded:
        listed = git(place.store, "for-each-ref", "--format=%(refname)", SHARDS)
        refs = listed.split()
    if not git(place.store, "rev-parse", "--verify", "-q", refs[0], check=False).strip():
        return []
    found: list[dict[str, Any]] = []
    seen: set[str] = set()
    for ref in refs:
        out = git(place.store, "log", "--format=%x1e%B", ref)
        for message in reversed(out.split("\x1e")[1:]):
            for line in message.splitlines():
                if line.startswith("{") and line not in seen:  # a write in several shards
                    seen.add(line)
                    found.append(json.loads(line))
    found = [e for e in found if e["event"] != "sharded"]  # the upgrade's, not a claim's
    return sorted(found, key=lambda e: str(e.get("at", "")))  # stable: each shard's order


def grants(place: Place, pattern: str) -> list[str]:
    """Who was granted ``pattern``, in order."""
    return [e["holder"] for e in events(place) if e["event"] == "granted" and pattern in e["paths"]]


def claim(cwd: Path, agent: str, *args: str) -> Result:
    got = alock(cwd, "acquire", *args, AGENT_ID=agent)
    return got


def join(place: Place, started: list[Waiter], cwd: Path, agent: str, *patterns: str,
         wait: str = "1m") -> Waiter:  # fmt: skip
    """Start a waiter and see it in the queue."""
    before = len(queued(place.store))
    waiter = Waiter(cwd, agent, *patterns, wait=wait)
    started.append(waiter)
    until(lambda: len(queued(place.store)) > before or not waiter.running(), f"{agent} queued")
    assert waiter.running(), waiter.result()
    return waiter


# --- the queue ------------------------------------------------------------------------------


def test_a_waiter_is_granted_once_the_lock_is_released(place: Place, started: list[Waiter]) -> None:
    assert claim(place.a, "alice", "src/app.py").code == 0
    bob = join(place, started, place.b, "bob", "src/app.py")
    assert holders_queued(place.store) == ["bob"]
    said = bob.proc.stderr
    assert said is not None
    assert said.readline().startswith("WAITING src/app.py as bob, place 1")
    assert alock(place.a, "release", "src/app.py", AGENT_ID="alice").code == 0
    got = bob.result()
    assert got.code == 0, got
    doc = got.json()
    assert doc["status"] == "acquired"
    assert doc["lock"]["holder"] == "bob"
    assert doc["waiter"]["id"].startswith("wait-")
    assert doc["waited_seconds"] >= 0
    assert queued(place.store) == []
    # The release, then the grant that names the waiter it ended: nothing between them.
    kinds = [(e["event"], e["holder"]) for e in events(place)]
    assert kinds[-2:] == [("released", "alice"), ("granted", "bob")]
    assert events(place)[-1]["waited_as"] == doc["waiter"]["id"]


def test_a_wait_that_runs_out_is_a_refusal_and_leaves_the_queue(place: Place) -> None:
    assert claim(place.a, "alice", "src/**", "-m", "refactor").code == 0
    got = claim(place.b, "bob", "src/app.py", "--wait", "2s")
    assert got.code == 1, got
    assert got.word == "REFUSED"
    assert "HELD src/** by alice" in got.out
    assert "note: waited" in got.out
    assert got.err.startswith("WAITING src/app.py as bob")
    assert queued(place.store) == []
    left = [e for e in events(place) if e["event"] == "left_queue"]
    assert [(e["holder"], e["why"]) for e in left] == [("bob", "timeout")]


def test_a_free_scope_is_granted_at_once_without_queueing(place: Place) -> None:
    got = claim(place.b, "bob", "src/app.py", "--wait")
    assert got.word.startswith("ACQUIRED"), got
    # (a remote laid out by ``git alock remote`` begins its journal with "created")
    assert [e["event"] for e in events(place) if e["event"] != "created"] == ["granted"]


def test_three_waiters_are_served_in_order_and_nobody_jumps_the_queue(
    place: Place, started: list[Waiter]
) -> None:
    assert claim(place.a, "alice", "src/**").code == 0
    order = ["w1", "w2", "w3"]
    where = [place.b, place.a, place.b]
    waiters = [
        join(place, started, cwd, w, "src/app.py") for cwd, w in zip(where, order, strict=True)
    ]
    assert holders_queued(place.store) == order
    assert [r["queue"] for r in queued(place.store)] == [1, 2, 3]
    # A claim that does not wait stands behind every waiter, even over a free part of
    # their scope once the lock is gone.
    jumper = claim(place.a, "eve", "src/app.py")
    assert jumper.code == 1 and jumper.word == "REFUSED"
    assert "WAITING src/app.py by w1" in jumper.out
    listed = alock(place.a, "list", AGENT_ID="eve")
    assert "WAITING (first come" in listed.out and "w3" in listed.out
    status = alock(place.a, "status", "--json", AGENT_ID="eve").json()
    assert [w["holder"] for w in status["waiters"]] == order
    assert alock(place.a, "release", "--all", AGENT_ID="alice").code == 0
    for i, waiter in enumerate(waiters):
        got = waiter.result()
        assert got.code == 0 and got.json()["status"] == "acquired", got
        assert all(w.running() for w in waiters[i + 1 :])
        late = claim(place.a, "eve", "src/app.py")
        assert late.code == 1
        release = alock(place.a, "release", "--all", AGENT_ID=waiter.agent)
        assert release.code == 0, release
    assert grants(place, "src/app.py") == order
    assert claim(place.a, "eve", "src/app.py").code == 0


def test_a_waiter_killed_leaves_the_queue(place: Place, started: list[Waiter]) -> None:
    assert claim(place.a, "alice", "src/app.py").code == 0
    doomed = join(place, started, place.b, "doomed", "src/app.py")
    next_one = join(place, started, place.a, "next", "src/app.py")
    assert holders_queued(place.store) == ["doomed", "next"]
    [pid] = [r["pid"] for r in queued(place.store) if r["holder"] == "doomed"]
    assert pid == doomed.proc.pid  # the process in the queue is the one waiting
    os.kill(pid, signal.SIGKILL)
    doomed.proc.wait()
    assert alock(place.a, "release", "src/app.py", AGENT_ID="alice").code == 0
    got = next_one.result()
    assert got.code == 0 and got.json()["status"] == "acquired", got
    assert queued(place.store) == []
    left = [(e["holder"], e["why"]) for e in events(place) if e["event"] == "left_queue"]
    assert left == [("doomed", "dead")]


def test_ctrl_c_leaves_no_trace_of_the_waiter(place: Place, started: list[Waiter]) -> None:
    assert claim(place.a, "alice", "src/app.py").code == 0
    bob = join(place, started, place.b, "bob", "src/app.py")
    bob.interrupt()
    got = bob.result()
    assert got.code == 130, got
    assert got.out == ""
    assert queued(place.store) == [], got.err
    assert [e["event"] for e in events(place)][-2:] == ["waiting", "left_queue"]
    assert events(place)[-1]["why"] == "stopped"


HELD_HOOK = """#!/bin/sh
# bob's first write of lock refs once armed (not a fetch's, of the remote's copy): it
# says so, then waits for the word to go on.
refs=$(cat)
[ "$1" = prepared ] && [ "$AGENT_ID" = bob ] && [ -e '{marks}/armed' ] || exit 0
case "$refs" in *" refs/agent-locks/"*) ;; *) exit 0 ;; esac
[ -e '{marks}/held' ] && exit 0
touch '{marks}/held'
n=0
while [ ! -e '{marks}/go' ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n + 1)); done
"""


def test_ctrl_c_while_the_waiters_git_writes_leaves_no_trace(
    place: Place, started: list[Waiter], tmp_path: Path
) -> None:
    """Ctrl-C reaches the whole group while the waiter's git is in the middle of a ref
    write (held there by a reference-transaction hook): the write that joins the queue
    (locally), or the one that mirrors what a fetch brought (remote mode). That git must
    not die of it: it finishes, then the waiter leaves the queue and exits 130."""
    marks = tmp_path / "marks"
    marks.mkdir()
    hooks = Path(git(place.b, "rev-parse", "--path-format=absolute", "--git-path", "hooks").strip())
    hooks.mkdir(exist_ok=True)
    (hooks / "reference-transaction").write_text(HELD_HOOK.format(marks=marks))
    (hooks / "reference-transaction").chmod(0o755)
    assert claim(place.a, "alice", "src/app.py").code == 0
    if place.remote:
        bob = join(place, started, place.b, "bob", "src/app.py")
        until(lambda: "/wait-" in git(place.b, "for-each-ref", "refs/agent-locks/"), "bob mirrored")
        (marks / "armed").touch()
        assert claim(place.a, "alice", "README.md").code == 0  # bob's next fetch brings it
    else:
        (marks / "armed").touch()
        bob = Waiter(place.b, "bob", "src/app.py")
        started.append(bob)
    until(lambda: (marks / "held").exists() or not bob.running(), "bob's write held")
    assert bob.running(), bob.result()
    bob.interrupt()
    (marks / "go").touch()
    got = bob.result()
    assert got.code == 130, got
    assert queued(place.store) == [], got.err
    bobs = [e for e in events(place) if e["holder"] == "bob"]
    assert [e["event"] for e in bobs][-2:] == ["waiting", "left_queue"]
    assert bobs[-1]["why"] == "stopped"


def test_a_waiter_that_cannot_leave_the_queue_says_so(
    repo: Path, worktree: Path, started: list[Waiter]
) -> None:
    """Where the store cannot be written when Ctrl-C stops a wait (a ``packed-refs.lock``
    that stays: a git command updating refs, or one that died), the waiter stays in the
    queue, and one line says so: never silently."""
    place = Place(repo, worktree, repo, False)
    assert claim(repo, "alice", "src/app.py").code == 0
    bob = join(place, started, worktree, "bob", "src/app.py")
    (repo / ".git" / "packed-refs.lock").touch()
    bob.interrupt()
    got = bob.result()
    assert got.code == 130, got
    [waiter] = queued(repo)
    notes = [line for line in got.err.splitlines() if line.startswith("note:")]
    assert len(notes) == 1, got.err
    assert notes[0].startswith(f"note: the waiter {waiter['id']} could not leave the queue (")
    assert "packed-refs.lock exists" in notes[0] and waiter["expires_at"] in notes[0]


# --- deadlocks ------------------------------------------------------------------------------


def test_two_agents_waiting_on_each_other_are_told(place: Place, started: list[Waiter]) -> None:
    assert claim(place.a, "alice", "src/a.py").code == 0
    assert claim(place.b, "bob", "src/b.py").code == 0
    alice = join(place, started, place.a, "alice", "src/b.py")
    told = claim(place.b, "bob", "src/a.py", "--wait", "--json")
    assert told.code == 1, told
    doc = told.json()
    assert doc["status"] == "deadlock"
    assert [w["holder"] for w in doc["cycle"]] == ["bob", "alice"]
    human = claim(place.b, "bob", "src/a.py", "--wait")
    assert human.word.startswith("DEADLOCK"), human
    assert "alice waits for src/b.py, held up by bob" in human.out
    assert holders_queued(place.store) == ["alice"]  # the told one never queued
    assert alock(place.b, "release", "src/b.py", AGENT_ID="bob").code == 0
    assert alice.result().json()["status"] == "acquired"


def test_three_agents_in_a_cycle_are_told(place: Place, started: list[Waiter]) -> None:
    for agent, cwd, path in [("x", place.a, "p"), ("y", place.b, "q"), ("z", place.a, "r")]:
        assert claim(cwd, agent, path).code == 0
    x = join(place, started, place.a, "x", "q")
    y = join(place, started, place.b, "y", "r")
    told = claim(place.a, "z", "p", "--wait", "--json")
    assert told.code == 1 and told.json()["status"] == "deadlock", told
    assert [w["holder"] for w in told.json()["cycle"]] == ["z", "x", "y"]
    assert x.running() and y.running()
    assert alock(place.a, "release", "r", AGENT_ID="z").code == 0
    assert y.result().json()["status"] == "acquired"
    assert alock(place.b, "release", "q", AGENT_ID="y").code == 0
    assert x.result().json()["status"] == "acquired"


def test_the_queue_itself_can_close_a_cycle(place: Place, started: list[Waiter]) -> None:
    """bob waits for p only behind alice's earlier waiter (x, who holds p, waits for
    nothing), and alice waits for r, which bob holds: a cycle through the queue."""
    assert claim(place.a, "x", "p").code == 0
    assert claim(place.b, "bob", "r").code == 0
    alice = join(place, started, place.a, "alice", "p", "r")
    told = claim(place.b, "bob", "p", "--wait", "--json")
    assert told.code == 1 and told.json()["status"] == "deadlock", told
    assert [w["holder"] for w in told.json()["cycle"]] == ["bob", "alice"]
    assert alice.running()
    # Without bob's claim in alice's way, nobody is told: bob waits behind alice.
    assert alock(place.b, "release", "r", AGENT_ID="bob").code == 0
    bob = join(place, started, place.b, "bob", "p")
    assert holders_queued(place.store) == ["alice", "bob"]
    assert alock(place.a, "release", "p", AGENT_ID="x").code == 0
    assert alice.result().json()["status"] == "acquired"
    assert bob.running()


# --- input ----------------------------------------------------------------------------------


@pytest.mark.parametrize("typed", ["--wait=5x", "--wait=0", "--wait=-1m", "--wait=400d"])
def test_a_bad_wait_is_an_error(repo: Path, typed: str) -> None:
    got = alock(repo, "acquire", "src/app.py", typed, AGENT_ID="bob")
    assert got.code == 2, got
    assert got.err.startswith("error: invalid --wait"), got.err
    assert "Traceback" not in got.err
    assert git(repo, "for-each-ref", "refs/agent-locks-meta/") == ""


def test_a_pattern_after_wait_is_read_as_its_duration_and_said_so(repo: Path) -> None:
    got = alock(repo, "acquire", "--wait", "src/app.py", AGENT_ID="bob")
    assert got.code == 2, got
    assert "hint: --wait took src/app.py as its duration; put it after the patterns" in got.err
    got = alock(repo, "acquire", "--wait", "src/app.py", "README.md", AGENT_ID="bob")
    assert got.code == 2, got
    assert got.err.startswith("error: invalid --wait 'src/app.py'"), got.err
    assert "put it last, or write --wait=D" in got.err


def test_a_bad_wait_default_is_an_error(repo: Path) -> None:
    git(repo, "config", "alock.waitDefault", "soon")
    got = alock(repo, "acquire", "src/app.py", "--wait", AGENT_ID="bob")
    assert got.code == 2 and "alock.waitDefault" in got.err, got


def test_cycle_through_finds_the_youngest_member_only() -> None:
    edges = {"w1": {"w2"}, "w2": {"w3"}, "w3": {"w1"}, "w4": {"w1"}}
    assert cycle_through("w3", edges) == ["w3", "w1", "w2"]
    assert cycle_through("w1", edges) is None  # w3 is younger: that one is told
    assert cycle_through("w4", edges) is None  # waits on a cycle, is in none


# --- races ----------------------------------------------------------------------------------

# Rounds of the race below; ALOCK_WAIT_ROUNDS=50 (say) for a stress run.
WAIT_ROUNDS = int(os.environ.get("ALOCK_WAIT_ROUNDS", "3"))
# Sleeps until a shared start time, then becomes ``git alock``: a barrier across processes.
_AT = r"""
import os, sys, time
time.sleep(max(0.0, float(sys.argv[1]) - time.time()))
os.execvp("git", ["git", "alock", *sys.argv[2:]])
"""


def at_once(at: float, racers: list[tuple[Path, str, list[str]]]) -> list[Waiter]:
    """Each ``(cwd, agent, args)`` as ``git alock ARGS``, all started at the time ``at``."""
    found = []
    for cwd, agent, args in racers:
        racer = Waiter.__new__(Waiter)
        racer.agent = agent
        racer.proc = subprocess.Popen(
            [sys.executable, "-c", _AT, repr(at), *args],
            cwd=cwd,
            env=cli_env(agent),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        found.append(racer)
    return found


@pytest.mark.slow
def test_a_release_a_new_claim_and_two_waiters_never_grant_twice(place: Place) -> None:
    """At one instant the holder releases, three claims that do not wait ask, and a third
    waiter joins, while two waiters wait: the first waiter alone is granted, the claims
    are refused, and the waiters are served in the order they joined."""
    for round_no in range(WAIT_ROUNDS):
        holder = f"h{round_no}"
        assert claim(place.a, holder, "race/**").code == 0
        started: list[Waiter] = []
        try:
            first = join(place, started, place.a, f"first{round_no}", "race/x")
            second = join(place, started, place.b, f"second{round_no}", "race/**")
            at = time.time() + 0.5
            racers = [
                (place.a, holder, ["release", "race/**"]),
                (place.a, f"third{round_no}", ["acquire", "race/y", "--wait=2m", "--json"]),
            ]
            racers += [  # claims that do not wait, from both checkouts, on parts and all
                (cwd, f"new{round_no}-{i}", ["acquire", scope, "--json"])
                for i, (cwd, scope) in enumerate(
                    [(place.b, "race/x"), (place.a, "race/**"), (place.b, "race/z")]
                )
            ]
            released, third, *new = at_once(at, racers)
            started.append(third)
            assert released.result().code == 0
            for claimant in new:
                got = claimant.result()
                assert got.code == 1, f"round {round_no}: {claimant.agent} jumped the queue: {got}"
            got = first.result()
            assert got.json()["status"] == "acquired", got
            assert second.running() and third.running()
            assert alock(place.a, "release", "--all", AGENT_ID=f"first{round_no}").code == 0
            assert second.result().json()["status"] == "acquired"
            assert third.running()
            assert alock(place.b, "release", "--all", AGENT_ID=f"second{round_no}").code == 0
            assert third.result().json()["status"] == "acquired"
            assert alock(place.a, "release", "--all", AGENT_ID=f"third{round_no}").code == 0
        finally:
            for waiter in started:
                if waiter.running():
                    waiter.proc.kill()
                waiter.proc.communicate()
    # Replay the journal: never two live grants crossing race/** at once.
    live: set[str] = set()
    seen = events(place)
    for event in seen:
        if not any(p.startswith("race/") for p in event.get("paths", [])):
            continue
        if is_waiter_id(str(event.get("id", ""))):
            continue
        if event["event"] == "granted":
            assert not live, f"granted {event} while {live} held: {seen}"
            live.add(event["id"])
        elif event["event"] in ("released", "expired", "broken", "auto_released"):
            live.discard(event["id"])
    assert not live


@pytest.mark.slow
def test_a_lock_remote_that_does_not_answer_for_a_while_ends_no_wait(
    tmp_path: Path, started: list[Waiter]
) -> None:
    """A wait in remote mode outlives a lock remote gone for a moment (a network blip, a
    server restarting): said once on stderr, asked again, and granted once it is back."""
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a")
    b = make_clone(bare.as_uri(), tmp_path / "b")
    assert claim(a, "alice", "src/**").code == 0
    bob = Waiter(b, "bob", "src/app.py")
    started.append(bob)
    until(lambda: holders_queued(bare) == ["bob"], "bob joins the queue")
    away = tmp_path / "away.git"
    bare.rename(away)
    noted: list[str] = []
    assert bob.proc.stderr is not None

    def said() -> bool:
        line = bob.proc.stderr.readline() if bob.running() else ""  # type: ignore[union-attr]
        noted.append(line)
        return "lock remote did not answer" in line or not bob.running()

    until(said, "the waiter says the lock remote did not answer")
    assert bob.running(), noted
    away.rename(bare)
    assert alock(a, "release", "src/**", AGENT_ID="alice").code == 0
    got = bob.result()
    assert got.code == 0, (got, noted)
    assert got.json()["status"] == "acquired"
    assert holders_queued(bare) == []
