"""How soon a waiting claim is served, and how soon a deadlock is told. A plain script:
prints figures.

Each round, in a repository of its own (locally: one repository; remote: two clones of a
bare lock remote, laid out as ``git alock remote origin`` lays a new one out):

- **grant**: ``alice`` holds ``src/**``; ``bob`` runs ``git alock acquire src/a.py --wait
  1m`` and is timed from the moment ``alice``'s ``git alock release`` has exited to the
  moment ``bob``'s process exits with ``ACQUIRED``: what a waiter loses to noticing;
- **deadlock**: ``alice`` holds ``a/**`` and waits for ``b/x``; ``bob`` holds ``b/**`` and
  runs ``git alock acquire a/x --wait 1m``, timed from its start to its ``DEADLOCK``.

Printed: the median, least and most of each, in milliseconds.

    python bench/wait_bench.py [--runs 7] [--no-remote]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchlib import bench_environment, git, make_repo

WAIT = "1m"


def run(cwd: Path, env: dict[str, str], agent: str, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        ["git", "alock", *args], cwd=cwd, env=dict(env, AGENT_ID=agent), capture_output=True,
        text=True,
    )  # fmt: skip
    return proc


def start_waiting(
    cwd: Path, env: dict[str, str], agent: str, pattern: str
) -> subprocess.Popen[str]:
    """``acquire PATTERN --wait`` as ``agent``, returned once it says it is WAITING."""
    proc = subprocess.Popen(
        ["git", "alock", "acquire", pattern, "--wait", WAIT],
        cwd=cwd, env=dict(env, AGENT_ID=agent), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )  # fmt: skip
    assert proc.stderr is not None
    line = proc.stderr.readline()
    if not line.startswith("WAITING"):
        proc.kill()
        raise SystemExit(f"{agent} did not wait: {line!r}")
    return proc


def must(proc: subprocess.CompletedProcess[str], word: str) -> None:
    if not proc.stdout.startswith(word):
        raise SystemExit(f"expected {word}: {proc.args}: {proc.stdout!r} {proc.stderr!r}")


def places(base: Path, env: dict[str, str], name: str, remote: bool) -> tuple[Path, Path]:
    """Where alice and bob work: one repository, or two clones of a new lock remote."""
    if not remote:
        repo = make_repo(base, name)
        return repo, repo
    seed = make_repo(base, f"{name}-seed")
    git(base, "clone", "-q", "--bare", str(seed), f"{name}.git")
    url = (base / f"{name}.git").as_uri()
    clones = []
    for who in ("a", "b"):
        git(base, "clone", "-q", url, f"{name}-{who}")
        laid = run(base / f"{name}-{who}", env, "setup", "remote", "origin")
        if laid.returncode:
            raise SystemExit(f"git alock remote origin: {laid.stdout}{laid.stderr}")
        clones.append(base / f"{name}-{who}")
    return clones[0], clones[1]


def grant(base: Path, env: dict[str, str], i: int, remote: bool) -> float:
    alice, bob = places(base, env, f"grant{i}", remote)
    must(run(alice, env, "alice", "acquire", "src/**"), "ACQUIRED")
    waiter = start_waiting(bob, env, "bob", "src/a.py")
    must(run(alice, env, "alice", "release", "src/**"), "RELEASED")
    released = time.perf_counter()
    out, _ = waiter.communicate(timeout=120)
    served = time.perf_counter()
    if not out.startswith("ACQUIRED"):
        raise SystemExit(f"bob was not granted: {out!r}")
    return (served - released) * 1000


def deadlock(base: Path, env: dict[str, str], i: int, remote: bool) -> float:
    alice, bob = places(base, env, f"cycle{i}", remote)
    must(run(alice, env, "alice", "acquire", "a/**"), "ACQUIRED")
    must(run(bob, env, "bob", "acquire", "b/**"), "ACQUIRED")
    waiter = start_waiting(alice, env, "alice", "b/x")
    start = time.perf_counter()
    told = run(bob, env, "bob", "acquire", "a/x", "--wait", WAIT)
    elapsed = (time.perf_counter() - start) * 1000
    os.killpg(waiter.pid, signal.SIGKILL)  # git and the git-alock it started
    waiter.communicate()
    must(told, "DEADLOCK")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--no-remote", action="store_true", help="local mode only")
    args = parser.parse_args()
    modes = [False] if args.no_remote else [False, True]
    with tempfile.TemporaryDirectory(prefix="alock-wait-bench-") as tmp:
        base = Path(tmp)
        env = bench_environment(base, agent=None)
        samples: dict[str, list[float]] = {}
        for i in range(args.runs):
            for remote in modes:
                where = "remote (file://, sharded)" if remote else "local"
                samples.setdefault(f"grant after release, {where}", []).append(
                    grant(base, env, i, remote)
                )
                samples.setdefault(f"deadlock told, {where}", []).append(
                    deadlock(base, env, i, remote)
                )
    print(f"{args.runs} rounds; milliseconds")
    print(f"{'':<44}{'median':>8}{'least':>8}{'most':>8}")
    for label, values in samples.items():
        print(f"{label:<44}{statistics.median(values):8.0f}{min(values):8.0f}{max(values):8.0f}")


if __name__ == "__main__":
    main()
