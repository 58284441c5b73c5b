"""Remote mode against the size of the lock table: whole-process latency of git alock in a
clone whose lock remote holds 10, 1,000 and 10,000 live locks. A plain script: prints figures.

Each size gets its own bare lock remote, all served by one loopback ``git daemon``
(git://127.0.0.1 on a free port, pushes enabled; killed at the end). Each remote is seeded
through gitlocks' own code: ``seed_locks`` writes the locks in a local-mode repository in one
store transaction, whose journal commit carries the whole table in its tree, and then

- ``--seed push`` (default): one plain ``git push`` of those lock refs and that journal
  commit to the bare remote (glob refspecs: seconds even for 10,000 locks), or
- ``--seed switch``: ``git alock remote origin`` in that repository, which pushes its live
  local locks (journaled as ``adopted``) in one atomic push with a lease per lock: the
  documented way, but slow for large tables (the switch's remoteTimeout is raised to 30m).

Two more clones are switched to remote mode with ``git alock remote origin``: the measured
one, and a writer. In the measured clone each command runs as a process, as an agent runs
it: the floor ``python -c "import pygit2, typer"``; ``git alock sync`` with nothing new on
the remote, and again after the writer made two changes (a claim and its release, untimed);
``acquire`` of a new pattern, decided on the remote (released again, untimed);
``check PATH --fresh`` (fetch, then read); and, for the bar a claim is held to, one plain
``git push`` of one new ref to the same remote (a commit it has: no objects to send).
Medians over runs interleaved across commands and sizes, so drift hits all alike.

Usage: python bench/remote_scale_bench.py [--runs N] [--sizes 10,1000,10000]
       [--seed push|switch] [--pack-refs]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from benchlib import GitDaemon, bench_environment, git, interleaved, make_repo, seed_locks
from scale_bench import compile_bytecode


class Row(NamedTuple):
    label: str
    argv: list[str]  # "{i}" becomes the run number; "ALOCK" the console script
    codes: tuple[int, ...] = (0,)
    expect: str = ""  # what stdout must start with
    before: tuple[list[str], ...] = ()  # run untimed in the writer clone first
    after: tuple[list[str], ...] = ()  # run untimed in the measured clone afterwards


WRITER = "bench-writer"
ROWS = [
    Row("floor: python -c 'import pygit2, typer'", [sys.executable, "-c", "import pygit2, typer"]),
    Row("sync (remote unchanged)", ["ALOCK", "sync"], expect="SYNCED"),
    Row(
        "sync (2 writes elsewhere since)",
        ["ALOCK", "sync"],
        expect="SYNCED",
        before=(
            ["ALOCK", "acquire", "other{i}/**", "--as", WRITER, "-m", "bench"],
            ["ALOCK", "release", "other{i}/**", "--as", WRITER],
        ),
    ),
    Row(
        "acquire new{i}/** (decided on remote)",
        ["ALOCK", "acquire", "new{i}/**", "-m", "bench"],
        expect="ACQUIRED",
        after=(["ALOCK", "release", "new{i}/**"],),
    ),
    Row("check area0/app.py --fresh", ["ALOCK", "check", "area0/app.py", "--fresh"], (1,), "HELD"),
    Row(
        "git push of one new ref (the bar)",
        ["git", "push", "-q", "origin", "HEAD:refs/bench/p{i}"],
        after=(["git", "push", "-q", "origin", ":refs/bench/p{i}"],),
    ),
]
CLAIM, PUSH = ROWS[3].label, ROWS[-1].label


def run(argv: list[str], cwd: Path, env: dict[str, str], alock: str, i: int = 0) -> float:
    """Run ``argv`` in ``cwd``; fail loudly; return wall milliseconds of the process alone."""
    argv = [alock if a == "ALOCK" else a.replace("{i}", str(i)) for a in argv]
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(
            f"{shlex.join(argv)} in {cwd.name}: exit {proc.returncode}\n"
            f"{proc.stdout[:500]}{proc.stderr[:2000]}"
        )
    return elapsed * 1000


def timed(row: Row, i: int, clones: tuple[Path, Path], env: dict[str, str], alock: str) -> float:
    """One run of ``row`` in the measured clone, with its untimed set-up and clean-up."""
    measured, writer = clones
    for argv in row.before:
        run(argv, writer, env, alock, i)
    argv = [alock if a == "ALOCK" else a.replace("{i}", str(i)) for a in row.argv]
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=measured, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in row.codes or not proc.stdout.startswith(row.expect):
        raise SystemExit(
            f"{shlex.join(argv)} in {measured.name}: exit {proc.returncode}\n"
            f"{proc.stdout[:500]}{proc.stderr[:2000]}"
        )
    for argv in row.after:
        run(argv, measured, env, alock, i)
    return elapsed * 1000


def switch(clone: Path, env: dict[str, str], alock: str, size: int) -> None:
    """``git alock remote origin`` in ``clone``, which must then see ``size`` locks there."""
    proc = subprocess.run([alock, "remote", "origin"], cwd=clone, env=env, capture_output=True)
    out = proc.stdout.decode()
    if proc.returncode != 0 or f"\n{size} lock(s) on the remote" not in out:
        raise SystemExit(f"git alock remote origin in {clone}: exit {proc.returncode}\n{out}")


def setup(
    base: Path, daemon: GitDaemon, size: int, args: argparse.Namespace, env: dict[str, str]
) -> tuple[tuple[Path, Path], dict[str, float]]:
    """A seeded lock remote of ``size`` locks, and its measured and writer clones."""
    alock = args.alock
    bare = daemon.base / f"locks{size}.git"
    git(daemon.base, "init", "-q", "--bare", bare.name)
    url = daemon.url(bare.name)
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    seeder = make_repo(base, f"seeder{size}")
    git(seeder, "remote", "add", "origin", url)
    git(seeder, "push", "-q", "origin", "HEAD:refs/heads/main")
    seed_locks(seeder, size)
    seconds["seed_locks"] = time.perf_counter() - start
    start = time.perf_counter()
    if args.seed == "push":
        specs = ["+refs/agent-locks/*:refs/agent-locks/*"]
        specs += ["+refs/agent-locks-meta/journal:refs/agent-locks-meta/journal"]
        git(seeder, "push", "-q", str(bare), *specs)
        seconds["push"] = time.perf_counter() - start
    else:
        git(seeder, "config", "alock.remoteTimeout", "30m")
        switch(seeder, env, alock, size)
        seconds["switch seeder"] = time.perf_counter() - start
    clones = []
    for name in ("measured", "writer"):
        start = time.perf_counter()
        git(base, "clone", "-q", url, f"{name}{size}")
        switch(base / f"{name}{size}", env, alock, size)
        seconds[f"clone+switch {name}"] = time.perf_counter() - start
        clones.append(base / f"{name}{size}")
    if args.pack_refs:  # as a remote's and a clone's gc would eventually
        for repo in (bare, *clones):
            git(repo, "pack-refs", "--all")
    return (clones[0], clones[1]), seconds


def reproduce(args: argparse.Namespace) -> str:
    env = [f"{k}={shlex.quote(os.environ[k])}" for k in ("PYTHONPATH", "TMPDIR") if k in os.environ]
    argv = [sys.executable, sys.argv[0], "--runs", str(args.runs), "--sizes", args.sizes]
    argv += ["--seed", args.seed] + (["--pack-refs"] if args.pack_refs else [])
    return " ".join([f"cd {shlex.quote(os.getcwd())} &&", *env, shlex.join(argv)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="10,1000,10000", help="live lock counts, by commas")
    parser.add_argument(
        "--seed", choices=("push", "switch"), default="push", help="how the remote is seeded"
    )
    parser.add_argument(
        "--pack-refs", action="store_true", help="git pack-refs --all the remote and clones"
    )
    args = parser.parse_args()
    sizes = sorted({int(s) for s in args.sizes.split(",")})
    if sizes[0] < 1:
        parser.error("every size must be at least 1 (check reads area0/app.py)")
    command = reproduce(args)
    args.alock = alock = str(Path(sys.executable).parent / "git-alock")
    compile_bytecode()
    total = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        env = bench_environment(base)
        served = base / "served"
        served.mkdir()
        with GitDaemon(served) as daemon:
            clones, setups = {}, {}
            for size in sizes:
                clones[size], setups[size] = setup(base, daemon, size, args, env)
            started = time.perf_counter()
            labels = [row.label for row in ROWS]
            samples = interleaved(
                args.runs, sizes, labels, lambda r, i, n: timed(ROWS[r], i, clones[n], env, alock)
            )
            wall = time.perf_counter() - started
        versions = f"Python {sys.version.split()[0]}, {git(base, '--version')}"
    med = {key: statistics.median(values) for key, values in samples.items()}
    low, high = sizes[0], sizes[-1]
    floor = med[ROWS[0].label, low]
    refs = "packed (--pack-refs)" if args.pack_refs else "loose (as gitlocks and git leave them)"
    print(f"Whole processes, median ms over {args.runs} interleaved runs, in a remote-mode clone")
    print(f"(AGENT_ID=bench-main; {alock}); lock remote: a bare repository behind git daemon")
    print(f"on 127.0.0.1 (git://), seeded by --seed {args.seed}; live locks by agent-0..6 on")
    print(f"area<i>/**; refs {refs}")
    for size, seconds in setups.items():
        print(f"set-up {size:,} locks: " + ", ".join(f"{k} {s:.1f} s" for k, s in seconds.items()))
    head = f"{'command':<40}" + "".join(f"{f'{n:,} locks':>14}" for n in sizes)
    print(head + f"{f'{high:,}/{low:,}':>15}{f'{low:,}/floor':>14}")
    for row in ROWS:
        figures = "".join(f"{med[row.label, n]:14.1f}" for n in sizes)
        ratios = f"{med[row.label, high] / med[row.label, low]:14.2f}x"
        print(f"{row.label:<40}{figures}{ratios}{med[row.label, low] / floor:13.2f}x")
    bar = ", ".join(f"{n:,} locks {med[CLAIM, n] / med[PUSH, n]:.2f}x" for n in sizes)
    print(f"a claim beside one plain git push to the same remote (goal 1.3x): {bar}")
    overall = time.perf_counter() - total
    print(f"(timed loop {wall:.0f} s, whole run {overall:.0f} s; {versions})")
    print(f"reproduce: {command}")


if __name__ == "__main__":
    main()
