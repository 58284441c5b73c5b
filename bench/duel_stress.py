"""The remote duel, long: three clones claim one scope at the same instant, round after round.
A plain script: prints figures.

One bare lock remote, three clones of it in remote mode: two reach it over file://, one over
a loopback ``git daemon`` (git://127.0.0.1 on a free port, pushes enabled; killed at the
end). Each round starts three ``git alock acquire duel/**`` processes, one per clone, that
wait for a shared start time (a barrier across processes: each sleeps until then, then
execs ``git alock``); at most one may print ACQUIRED. The winner releases, and the next round
starts. At the end the bare remote's journal is replayed (``git log --format=%B
refs/agent-locks-meta/journal``): never two ``granted`` events for duel/** without a release
between. tests/store/test_consistency.py runs 30 rounds of the same duel.

Usage: python bench/duel_stress.py [--rounds N] [--lead SECONDS] [--remote-timeout T]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

from benchlib import GitDaemon, bench_environment, git, make_repo

PATTERN = "duel/**"
JOURNAL = "refs/agent-locks-meta/journal"
# Events after which a lock no longer exists (tests/store/test_consistency.py).
GONE = {"released", "expired", "broken", "auto_released"}
# Sleeps until a shared start time, says how late it woke, then becomes ``git alock``.
_AT = r"""
import os, sys, time
late = time.time() - float(sys.argv[1])
if late < 0:
    time.sleep(-late)
    late = time.time() - float(sys.argv[1])
sys.stderr.write(f"duel-start {late:.6f}\n")
sys.stderr.flush()
os.execvp("git", ["git", "alock", *sys.argv[2:]])
"""


class Outcome(NamedTuple):
    code: int
    out: str
    err: str
    late: float  # seconds past the start time when the process became git alock
    seconds: float  # from the start time to the process's exit


def duel_round(clones: list[Path], env: dict[str, str], lead: float) -> list[Outcome]:
    """Three claims of PATTERN, one per clone, started at one instant."""
    start = time.time() + lead
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _AT, repr(start), "acquire", PATTERN, "-m", "duel"],
            cwd=clone,
            env=dict(env, AGENT_ID=f"d{k}"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k, clone in enumerate(clones)
    ]
    ended: dict[int, float] = {}
    deadline = time.monotonic() + 600
    while len(ended) < len(procs) and time.monotonic() < deadline:
        for k, proc in enumerate(procs):  # replies are small: the pipes never fill
            if k not in ended and proc.poll() is not None:
                ended[k] = time.time() - start
        time.sleep(0.002)
    outcomes = []
    for k, proc in enumerate(procs):
        out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        first, _, rest = err.partition("\n")
        late = float(first.split()[1]) if first.startswith("duel-start ") else float("nan")
        outcomes.append(Outcome(proc.returncode, out, rest, late, ended.get(k, float("nan"))))
    return outcomes


def journal_events(bare: Path) -> list[list[dict[str, Any]]]:
    """The bare remote's journal: each commit's events, oldest commit first."""
    text = git(bare, "log", "-z", "--format=%B", JOURNAL)
    commits = []
    for body in reversed(text.split("\0")):
        events = []
        for line in body.splitlines():
            if not line.startswith("{"):
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(event, dict):
                events.append(event)
        commits.append(events)
    return commits


def replay(commits: list[list[dict[str, Any]]]) -> tuple[int, list[str], bool]:
    """Grants of PATTERN in the journal, the overlapping ones, and whether it was compacted."""
    live: str | None = None
    grants, problems, compacted = 0, [], False
    for events in commits:
        for event in events:
            if event.get("event") == "compacted":
                compacted, live = True, None  # history before the compaction is gone
            if PATTERN not in event.get("paths", []):
                continue
            if event.get("event") == "granted":
                grants += 1
                if live is not None:
                    problems.append(f"granted {event.get('id')} while {live} was still held")
                live = str(event.get("id"))
            elif event.get("event") in GONE and event.get("id") == live:
                live = None
    if live is not None:
        problems.append(f"{live} still held at the end")
    return grants, problems, compacted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument(
        "--lead", type=float, default=0.3, help="seconds from spawning to the start time"
    )
    parser.add_argument(
        "--remote-timeout", default=None, help="alock.remoteTimeout in the clones (default: 30s)"
    )
    args = parser.parse_args()
    command = shlex.join([sys.executable, sys.argv[0], *sys.argv[1:]])
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        env = bench_environment(base, agent=None)  # each racer names its own
        served = base / "served"
        served.mkdir()
        bare = served / "locks.git"
        git(served, "init", "-q", "--bare", bare.name)
        seed = make_repo(base, "seed")
        git(seed, "push", "-q", str(bare), "HEAD:refs/heads/main")
        with GitDaemon(served) as daemon:
            urls = [bare.as_uri(), bare.as_uri(), daemon.url(bare.name)]
            clones = []
            for k, url in enumerate(urls):
                clone = base / f"d{k}"
                git(base, "clone", "-q", url, clone.name)
                # Keep every round in the journal: no compaction before the replay.
                git(clone, "config", "alock.journalKeep", str(max(1000, args.rounds + 100)))
                if args.remote_timeout:
                    git(clone, "config", "alock.remoteTimeout", args.remote_timeout)
                subprocess.run(
                    ["git", "alock", "remote", "origin"], cwd=clone, env=env, check=True,
                    capture_output=True,
                )  # fmt: skip
                clones.append(clone)

            doubles = refusals = errors = no_winner = release_errors = grants = 0
            wins = [0, 0, 0]
            won, lost, lateness = [], [], []
            messages: list[str] = []
            started = time.perf_counter()
            for round_no in range(args.rounds):
                outcomes = duel_round(clones, env, args.lead)
                winners = []
                for k, got in enumerate(outcomes):
                    lateness.append(got.late)
                    if got.code == 0 and got.out.startswith("ACQUIRED"):
                        winners.append(k)
                        won.append(got.seconds)
                    elif got.code == 1 and got.out.startswith("REFUSED"):
                        refusals += 1
                        lost.append(got.seconds)
                    else:
                        errors += 1
                        text = (got.err.strip() or got.out.strip()).replace("\n", " / ")
                        messages.append(f"round {round_no} d{k}: exit {got.code}: {text[:300]}")
                grants += len(winners)
                doubles += len(winners) > 1
                no_winner += not winners
                for k in winners:
                    done = subprocess.run(
                        ["git", "alock", "release", PATTERN], cwd=clones[k],
                        env=dict(env, AGENT_ID=f"d{k}"), capture_output=True, text=True,
                    )  # fmt: skip
                    if done.returncode != 0 or not done.stdout.startswith("RELEASED"):
                        release_errors += 1
                        messages.append(
                            f"round {round_no} release by d{k}: exit {done.returncode}: "
                            f"{(done.stderr.strip() or done.stdout.strip())[:300]}"
                        )
                    else:
                        wins[k] += 1
            elapsed = time.perf_counter() - started
        journal_grants, problems, compacted = replay(journal_events(bare))
        versions = f"Python {sys.version.split()[0]}, {git(base, '--version')}"

    calls = 3 * args.rounds
    late = [x for x in lateness if x == x]  # not NaN
    print("duel: 3 clones (2 over file://, 1 over git:// to a loopback git daemon) claim")
    print(f"{PATTERN} at one instant (start {args.lead:g} s after spawning); the winner releases")
    print(f"rounds                    {args.rounds}")
    print(f"double grants             {doubles}  (rounds with more than one ACQUIRED; must be 0)")
    print(f"refusals                  {refusals} of {calls} claims")
    print(f"errors                    {errors} claims, {release_errors} releases")
    print(f"rounds without a winner   {no_winner}")
    print(f"wins by clone             d0 (file) {wins[0]}, d1 (file) {wins[1]}, d2 (git) {wins[2]}")
    counted = compacted or journal_grants == grants  # a compaction drops older events
    verdict = "OK" if not problems and counted else "FAILED"
    note = ", compacted" if compacted else ""
    print(
        f"remote journal            {journal_grants} grants of {PATTERN}, "
        f"{len(problems)} overlapping{note}: {verdict}"
    )
    if won and lost:
        print(
            f"claim latency from start  winner median {statistics.median(won) * 1000:.0f} ms, "
            f"refused median {statistics.median(lost) * 1000:.0f} ms"
        )
    if late:
        print(
            f"barrier                   {len(late)} processes became git alock a median "
            f"{statistics.median(late) * 1000:.1f} ms after the start time (max "
            f"{max(late) * 1000:.0f} ms)"
        )
    print(f"rounds per second         {args.rounds / elapsed:.2f}  ({elapsed:.0f} s)")
    for line in (messages + problems)[:20]:
        print(f"  {line}")
    print(f"({versions})")
    print(f"reproduce: cd {shlex.quote(os.getcwd())} && {command}")
    if doubles or problems or not counted:
        sys.exit(1)


if __name__ == "__main__":
    main()
