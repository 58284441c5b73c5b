"""Remote mode at team scale: real clones on loopback first, then a model of 1,000 agents on
100 machines built on what they measured. A plain script: prints figures and assumptions.

Part 1, real. One bare lock remote served by ``git daemon`` on 127.0.0.1; N clones of it
in remote mode (N = each of ``--clones``). Each clone runs one writer process that calls
gitlocks' own service layer (no command-line start-up in the figures) in a bounded loop:
claim its own file (``own<i>/f<k>.py``, scopes no other clone can overlap), release it,
``--writes`` times. Figures per N: claim latency p50/p95, rejected pushes per write (the
pushes every writer sent, counted by the store, minus those that landed, over the writes),
and the service time of an uncontended write. Then ``--duels`` rounds in which every clone
claims ``duel/**`` at one instant (a barrier across processes): at most one may be granted,
and the journal on the remote is replayed to count double grants. ``--delay`` makes the
remote's pre-receive hook sleep that long on every push that reaches it: a stand-in for a
distant host. Part 1 runs once per count in ``--real-shards``: the first clone lays the new
remote out with ``git alock remote origin --shards N`` (0: ``--shards 1``, the single
journal; a count: that many shard journals, the real sharded protocol of docs/design.md
section 5.10, where duels are replayed from the shard journals), the others join it with
``git alock remote origin``.

Part 2, modelled. A discrete-event simulation of ``--agents`` agents on ``--machines``
machines (one clone each; a clone's writers take turns on its mutex) against a remote
whose pushes take ``--push-ms``. Each agent writes as the guarded session of
bench/session_push_bench.py does (``--session-pushes`` an hour, Poisson), and a write is
optimistic as remote mode's is: it decides locally on its view (the measured local service
time) and pushes, its ``ls-remote`` of the lock refs running beside the push (with
``--look-first``, before it, as gitlocks did until the listing moved beside the push); it
wins unless another write landed on one of the refs it leases in between; a loser fetches,
backs off as ``gitlocks.store.remote`` does and tries again, up to ``alock.remoteTimeout``.
The single journal leases one ref for
every write; the sharded journal of docs/design.md section 5.10 leases only the shards a
scope can touch (a scope with a wildcard at the top leases them all). The model reports
pushes per minute (per session, total), claim latency p50/p95 and rejected pushes per write
for both.

Usage: python bench/team_sim.py [--clones 2,4,8] [--real-shards 0,64] [--writes 10]
       [--duels 10] [--delay 0] [--look-first]
       [--agents 1000] [--machines 100] [--push-ms 300] [--shards 64] [--top-wildcard 0.02]
       [--session-pushes 24] [--local-ms MS] [--skip-real]
"""

from __future__ import annotations

import argparse
import heapq
import json
import multiprocessing as mp
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from benchlib import GitDaemon, git

JOURNAL = "refs/agent-locks-meta/journal"
GONE = {"released", "expired", "broken", "auto_released"}


# --- part 1: real clones on loopback ---------------------------------------------------------


def _service(clone: Path, holder: str) -> tuple[Any, Callable[..., Any], Callable[..., Any]]:
    os.chdir(clone)
    from gitlocks.core.scope import ScopeEntry
    from gitlocks.identity import resolve_identity
    from gitlocks.service.context import Context
    from gitlocks.service.locks import acquire, release
    from gitlocks.store.remote import RemoteStore

    ctx = Context(store=RemoteStore.discover(clone), identity=resolve_identity(holder))

    def claim(pattern: str) -> str:
        return str(acquire(ctx, [ScopeEntry(pattern)], ttl=600).status)

    def give_back(pattern: str) -> None:
        release(ctx, [ScopeEntry(pattern)])

    return ctx, claim, give_back


def writer(clone: str, index: int, writes: int, start: Any, out: Any) -> None:
    """One clone's loop of disjoint writes; puts (latencies, pushes, writes, gave up) on
    ``out``. A write that lost every race for alock.remoteTimeout is counted, not fatal."""
    from gitlocks.errors import RemoteError

    ctx, claim, give_back = _service(Path(clone), f"writer-{index}")
    start.wait()
    latencies = []
    landed = gave_up = 0
    for k in range(writes):
        pattern = f"own{index}/f{k}.py"
        began = time.perf_counter()
        try:
            status = claim(pattern)
        except RemoteError:
            gave_up += 1
            continue
        latencies.append(time.perf_counter() - began)
        if status != "acquired":
            raise SystemExit(f"writer {index}: {pattern} {status}")
        landed += 1
        try:
            give_back(pattern)
            landed += 1
        except RemoteError:
            gave_up += 1
    out.put((latencies, ctx.store.pushes, landed, gave_up))


def dueller(clone: str, index: int, rounds: int, start: Any, out: Any) -> None:
    """Claims duel/** at the same instant as every other clone, round after round."""
    from gitlocks.errors import RemoteError

    _, claim, give_back = _service(Path(clone), f"dueller-{index}")
    won = []
    for _ in range(rounds):
        start.wait()
        try:
            status = claim("duel/**")
        except RemoteError:
            status = "gave up"
        won.append(status == "acquired")
        start.wait()  # everyone has answered: the winner releases
        if status == "acquired":
            give_back("duel/**")
    out.put(won)


def double_grants(bare: Path, sharded: bool) -> int:
    """Replay the remote's journal (a sharded one's shard journals: duel/** sits in one):
    a grant of duel/** while it is held is a double grant."""
    where = ["--glob=refs/agent-locks-meta/shards/*"] if sharded else [JOURNAL]
    log = git(bare, "log", "--reverse", "--format=%B%x00", *where)
    held: dict[str, str] = {}
    doubles = 0
    for body in log.split("\x00"):
        for line in body.splitlines():
            if not line.startswith("{"):
                continue
            event = json.loads(line)
            if event.get("paths") != ["duel/**"]:
                continue
            if event["event"] == "granted":
                doubles += bool(held)
                held[event["id"]] = event["holder"]
            elif event["event"] in GONE:
                held.pop(event["id"], None)
    return doubles


class Real(NamedTuple):
    shards: int
    clones: int
    p50: float
    p95: float
    rejected_per_write: float
    gave_up: int
    duel_rounds: int
    duel_wins: int
    doubles: int


def run_real(base: Path, clones: int, writes: int, duels: int, delay: float, shards: int) -> Real:
    """``shards``: 0 lays the new remote out as the single journal; else in that many shard
    journals (the real protocol, ``git alock remote origin --shards``)."""
    base = base / f"s{shards}"
    base.mkdir(exist_ok=True)
    served = base / f"served-{clones}"
    served.mkdir()
    bare = served / "locks.git"
    git(served, "init", "-q", "--bare", bare.name)
    seed = base / f"seed-{clones}"
    git(base, "init", "-q", "-b", "main", seed.name)
    (seed / "README.md").write_text("shared\n")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "initial")
    git(seed, "push", "-q", bare.as_uri(), "main")
    with GitDaemon(served) as daemon:
        paths = []
        for i in range(clones):
            path = base / f"n{clones}-c{i}"
            git(base, "clone", "-q", daemon.url("locks.git"), path.name)
            git(path, "config", "alock.remoteTimeout", "5m")
            # The first clone lays the new remote out; the others join it as it is.
            layout = [] if i else ["--shards", str(shards or 1)]
            switched = subprocess.run([sys.executable, "-m", "gitlocks", "remote", "origin",
                                       *layout], cwd=path, capture_output=True,
                                      text=True)  # fmt: skip
            if switched.returncode != 0:
                raise SystemExit(f"git alock remote origin: {switched.stderr}")
            paths.append(str(path))
        if delay:
            hook = bare / "hooks" / "pre-receive"
            hook.write_text(f"#!/bin/sh\ncat >/dev/null\nsleep {delay}\n")
            hook.chmod(0o755)
        spawn = mp.get_context("fork")
        out: Any = spawn.Queue()
        start = spawn.Barrier(clones)
        procs = [
            spawn.Process(target=writer, args=(p, i, writes, start, out))
            for i, p in enumerate(paths)
        ]
        for proc in procs:
            proc.start()
        results = [out.get(timeout=1800) for _ in procs]
        for proc in procs:
            proc.join()
        latencies = sorted(x for r in results for x in r[0])
        pushes = sum(r[1] for r in results)
        done = sum(r[2] for r in results)
        gave_up = sum(r[3] for r in results)
        start = spawn.Barrier(clones)
        procs = [
            spawn.Process(target=dueller, args=(p, i, duels, start, out))
            for i, p in enumerate(paths)
        ]
        for proc in procs:
            proc.start()
        wins = [out.get(timeout=1800) for _ in procs]
        for proc in procs:
            proc.join()
    per_round = [sum(w[r] for w in wins) for r in range(duels)]
    return Real(
        shards,
        clones,
        statistics.median(latencies),
        latencies[max(0, round(0.95 * len(latencies)) - 1)],
        (pushes - done) / max(1, done),
        gave_up,
        duels,
        sum(1 for n in per_round if n == 1),
        sum(1 for n in per_round if n > 1) + double_grants(bare, bool(shards)),
    )


# --- part 2: the model -------------------------------------------------------------------------


class Model(NamedTuple):
    journal: str
    pushes_per_min: float
    pushes_per_session_min: float
    p50: float
    p95: float
    rejected_per_write: float
    gave_up: int


def simulate(
    *,
    agents: int,
    machines: int,
    shards: int,
    session_pushes: float,
    push_s: float,
    look_s: float,
    local_s: float,
    top_wildcard: float,
    timeout: float,
    hours: float,
    seed: int,
) -> Model:
    """One simulated run: every write's attempts against versioned refs (one per shard)."""
    rng = random.Random(seed)
    rate = session_pushes / 3600.0  # writes per agent per second
    horizon = hours * 3600.0
    events: list[tuple[float, int, str, int, Any]] = []
    serial = 0

    def at(when: float, kind: str, agent: int, data: Any = None) -> None:
        nonlocal serial
        serial += 1
        heapq.heappush(events, (when, serial, kind, agent, data))

    version = [0] * shards
    waiting: list[deque[tuple[float, list[int]]]] = [deque() for _ in range(machines)]
    busy = [False] * machines
    # Each agent works in its own top-level directory: its scopes fall in one shard,
    # except a share of wildcard-at-the-top scopes that lease every shard.
    home = [rng.randrange(shards) for _ in range(agents)]
    for agent in range(agents):
        at(rng.expovariate(rate), "write", agent)
    latencies: list[float] = []
    pushes = rejected = writes = gave_up = 0

    def done(machine: int, now: float) -> None:
        """The clone's mutex passes to the next writer of that machine."""
        if waiting[machine]:
            asked, leases = waiting[machine].popleft()
            at(now, "attempt", machine, (asked, leases, 0, now))
        else:
            busy[machine] = False

    while events:
        now, _, kind, who, data = heapq.heappop(events)
        if kind == "write":
            if now > horizon:
                continue
            at(now + rng.expovariate(rate), "write", who)
            leases = list(range(shards)) if rng.random() < top_wildcard else [home[who]]
            machine = who % machines
            if busy[machine]:
                waiting[machine].append((now, leases))
            else:
                busy[machine] = True
                at(now, "attempt", machine, (now, leases, 0, now))
        elif kind == "attempt":
            asked, leases, attempt, began = data
            seen = [version[s] for s in leases]  # the view it decides on
            at(
                now + look_s + local_s + push_s,
                "commit",
                who,
                (asked, leases, attempt, seen, began),
            )
        elif kind == "commit":
            asked, leases, attempt, seen, began = data
            pushes += 1
            if all(version[s] == v for s, v in zip(leases, seen, strict=True)):
                for s in leases:
                    version[s] += 1
                writes += 1
                latencies.append(now - asked)
                done(who, now)
                continue
            rejected += 1
            if now - began > timeout:
                gave_up += 1
                done(who, now)
                continue
            backoff = rng.random() * min(0.2, 0.01 * 2**attempt)
            # A loser fetches (about a push's time) and decides again.
            at(now + push_s + backoff, "attempt", who, (asked, leases, attempt + 1, began))
    latencies.sort()
    minutes = horizon / 60.0
    return Model(
        "single journal" if shards == 1 else f"sharded ({shards} shards)",
        pushes / minutes,
        pushes / minutes / agents,
        statistics.median(latencies) if latencies else float("nan"),
        latencies[max(0, round(0.95 * len(latencies)) - 1)] if latencies else float("nan"),
        rejected / max(1, writes),
        gave_up,
    )


# --- the report ----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clones", default="2,4,8")
    parser.add_argument("--writes", type=int, default=10, help="claims per clone (each + release)")
    parser.add_argument("--duels", type=int, default=10)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds per push (real part)")
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--machines", type=int, default=100)
    parser.add_argument("--push-ms", type=float, default=300.0)
    parser.add_argument("--shards", type=int, default=64)
    parser.add_argument("--top-wildcard", type=float, default=0.02)
    parser.add_argument("--session-pushes", type=float, default=24.0)
    parser.add_argument("--local-ms", type=float, help="local work per attempt (else measured)")
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--skip-real", action="store_true")
    parser.add_argument(
        "--look-first", action="store_true", help="model an ls-remote before each push"
    )
    parser.add_argument(
        "--real-shards", default="0,64", help="shard counts of the real part (0: one journal)"
    )
    args = parser.parse_args()
    counts = [int(n) for n in args.clones.split(",") if n]

    print("Part 1, real: clones on loopback (git daemon on 127.0.0.1); each clone claims its")
    print("  own top-level directory; journal: one, or sharded (git alock remote origin --shards)")
    print(f"  per-push delay {args.delay:g}s; {args.writes} claims per clone, each released")
    real: list[Real] = []
    if not args.skip_real:
        with tempfile.TemporaryDirectory(prefix="alock-team-") as tmp:
            here = os.getcwd()
            try:
                for shards in (int(s) for s in args.real_shards.split(",") if s):
                    for n in counts:
                        got = run_real(Path(tmp), n, args.writes, args.duels, args.delay, shards)
                        real.append(got)
            finally:
                os.chdir(here)
    print("  journal    | clones | claim p50 | claim p95 | rejected pushes/write | gave up "
          "| duels won alone | doubles")  # fmt: skip
    for r in real:
        duels = f"{r.duel_wins:>7d} of {r.duel_rounds:<5d}"
        journal = f"{r.shards} shards" if r.shards else "single"
        print(f"  {journal:<10} | {r.clones:6d} | {r.p50:8.2f}s | {r.p95:8.2f}s "
              f"| {r.rejected_per_write:21.2f} | {r.gave_up:7d} | {duels} "
              f"| {r.doubles}")  # fmt: skip
    # The local share of a write's time: the least contended p50, less the per-push delay
    # and the loopback's own git round trips (a look and a push, about a tenth each).
    local_s = max(0.02, (real[0].p50 - args.delay) * 0.8) if real else 0.25
    if args.local_ms is not None:
        local_s = args.local_ms / 1000.0
    push_s = args.push_ms / 1000.0
    look_s = push_s / 2 if args.look_first else 0.0  # else it runs beside the push
    print()
    print("Part 2, modelled: assumptions")
    print(f"  {args.agents} agents on {args.machines} machines (one clone each; a clone's "
          f"writers take turns), {args.hours:g} h simulated")  # fmt: skip
    print(f"  each agent writes {args.session_pushes:g} times an hour (Poisson): the guarded "
          "session of bench/session_push_bench.py")  # fmt: skip
    print(f"  a push takes {push_s * 1000:.0f} ms, an ls-remote {look_s * 1000:.0f} ms, a "
          f"loser's fetch {push_s * 1000:.0f} ms; local work per attempt {local_s * 1000:.0f} "
          "ms (measured above: uncontended claim p50 less loopback git)")  # fmt: skip
    print("  a push wins unless a ref it leases moved between its look and its landing; "
          "backoff and timeout as gitlocks' (0.01*2^n s, cap 0.2 s, jittered; 30 s)")  # fmt: skip
    print(f"  sharded: {args.shards} shards, each agent's scopes in one (its own top-level "
          f"directory), {args.top_wildcard:.0%} of writes with a wildcard at the top "
          "(they lease every shard)")  # fmt: skip
    print("  journal        | pushes/min total | per session | claim p50 | claim p95 "
          "| rejected/write | gave up")  # fmt: skip
    for shards in (1, args.shards):
        m = simulate(
            agents=args.agents, machines=args.machines, shards=shards,
            session_pushes=args.session_pushes, push_s=push_s, look_s=look_s,
            local_s=local_s, top_wildcard=args.top_wildcard if shards > 1 else 0.0,
            timeout=30.0, hours=args.hours, seed=1,
        )  # fmt: skip
        print(f"  {m.journal:<14} | {m.pushes_per_min:16.0f} | {m.pushes_per_session_min:11.2f} "
              f"| {m.p50:8.2f}s | {m.p95:8.2f}s | {m.rejected_per_write:14.2f} "
              f"| {m.gave_up}")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
