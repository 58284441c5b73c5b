"""Whole-process latency of git alock against the size of the lock table. A plain script:
prints figures.

For each size (default 10, 1,000 and 10,000 live locks held by others, seeded in a fresh
repository), each command runs as a process, as an agent runs it: the floor
``python -c pass`` (starting Python at all), acquire of a new pattern, check, release of
that pattern, list --json, status, version, whoami, and ``git commit`` of one changed file with the
bundled hooks installed (and with --no-verify, git's own share). Medians over runs
interleaved across commands and sizes, so drift hits all alike; the ratio of the largest size
to the smallest is the median of the ratios paired within each run.

Usage: python bench/scale_bench.py [--runs N] [--sizes 10,1000,10000] [--repack]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from benchlib import bench_environment, git, interleaved, make_repo, seed_locks


class Row(NamedTuple):
    label: str
    argv: list[str]  # "{i}" becomes the run number; "ALOCK" the console script
    codes: tuple[int, ...] = (0,)
    expect: str = ""  # what stdout must start with
    stage: bool = False  # stage a one-file change first, untimed


ROWS = [
    Row("floor: python -c pass", [sys.executable, "-c", "pass"]),
    Row("acquire new{i}/**", ["ALOCK", "acquire", "new{i}/**", "-m", "bench"], expect="ACQUIRED"),
    Row("check (1 held, 1 free path)", ["ALOCK", "check", "area5/app.py", "free/app.py"], (0, 1)),
    Row("release new{i}/**", ["ALOCK", "release", "new{i}/**"], expect="RELEASED"),
    Row("list --json", ["ALOCK", "list", "--json"]),
    Row("status", ["ALOCK", "status"]),
    Row("version", ["ALOCK", "version"]),
    Row("whoami", ["ALOCK", "whoami"]),
    Row("git commit, hooks installed", ["git", "commit", "-q", "-m", "b{i}"], stage=True),
    Row("git commit --no-verify", ["git", "commit", "-q", "-n", "-m", "b{i}"], stage=True),
]


def compile_bytecode() -> None:
    """An installed package has its bytecode compiled by pip; an editable checkout run with
    PYTHONDONTWRITEBYTECODE=1 would recompile every module on every run instead."""
    spec = importlib.util.find_spec("gitlocks")  # finds the package without importing it
    assert spec is not None and spec.submodule_search_locations, "gitlocks is not installed"
    package = next(iter(spec.submodule_search_locations))
    cmd = [sys.executable, "-m", "compileall", "-q", package]
    subprocess.run(cmd, check=True, capture_output=True)


def timed(row: Row, i: int, repo: Path, env: dict[str, str], alock: str) -> float:
    """One run of ``row`` in ``repo``: wall milliseconds of the process alone."""
    if row.stage:
        (repo / "work.txt").write_text(f"{row.label} {i}\n")
        git(repo, "add", "work.txt")
    argv = [alock if a == "ALOCK" else a.replace("{i}", str(i)) for a in row.argv]
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in row.codes or not proc.stdout.startswith(row.expect):
        raise SystemExit(
            f"{shlex.join(argv)} in {repo.name}: exit {proc.returncode}\n"
            f"{proc.stdout[:500]}{proc.stderr[:2000]}"
        )
    return elapsed * 1000


def reproduce(args: argparse.Namespace) -> str:
    env = [f"{k}={shlex.quote(os.environ[k])}" for k in ("PYTHONPATH", "TMPDIR") if k in os.environ]
    argv = [sys.executable, sys.argv[0], "--runs", str(args.runs), "--sizes", args.sizes]
    argv += ["--repack"] if args.repack else []
    return " ".join([f"cd {shlex.quote(os.getcwd())} &&", *env, shlex.join(argv)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--sizes", default="10,1000,10000", help="live lock counts, by commas")
    parser.add_argument(
        "--repack", action="store_true", help="also pack the seeded objects (git repack -ad)"
    )
    args = parser.parse_args()
    sizes = sorted({int(s) for s in args.sizes.split(",")})
    command = reproduce(args)
    alock = str(Path(sys.executable).parent / "git-alock")
    compile_bytecode()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        env = bench_environment(base)
        repos, seeding = {}, {}
        for size in sizes:
            repo = make_repo(base, f"locks{size}")
            git(repo, "config", "gc.auto", "0")  # no background gc between timed commits
            start = time.perf_counter()
            seed_locks(repo, size)  # refs packed, the lock blobs left loose
            seeding[size] = time.perf_counter() - start
            if args.repack:  # as git's auto gc eventually would (over 6,700 loose objects)
                git(repo, "repack", "-adq")
            hooks = [alock, "install-hooks"]
            subprocess.run(hooks, cwd=repo, env=env, check=True, capture_output=True)
            repos[size] = repo
        started = time.perf_counter()
        labels = [row.label for row in ROWS]
        samples = interleaved(
            args.runs, sizes, labels, lambda r, i, n: timed(ROWS[r], i, repos[n], env, alock)
        )
        wall = time.perf_counter() - started
        versions = f"Python {sys.version.split()[0]}, {git(base, '--version')}"
    med = {key: statistics.median(values) for key, values in samples.items()}
    low, high = sizes[0], sizes[-1]
    floor = med[ROWS[0].label, low]
    print(f"Whole processes, median ms over {args.runs} interleaved runs; AGENT_ID=bench-main;")
    objects = "packed" if args.repack else "loose"
    print(f"live locks by agent-0..6 on area<i>/**, refs packed, blobs {objects}; {alock}")
    print("seeding: " + ", ".join(f"{n:,} locks {s:.1f} s" for n, s in seeding.items()))
    head = f"{'command':<42}" + "".join(f"{f'{n:,} locks':>13}" for n in sizes)
    print(head + f"{f'{high:,}/{low:,}':>13}{f'{low:,}/floor':>11}")
    for row in ROWS:
        figures = "".join(f"{med[row.label, n]:13.1f}" for n in sizes)
        # Paired within a run, as the runs interleave sizes: a busy moment of the machine
        # hits both sides of each ratio alike (a ratio of medians would mix moments).
        pairs = zip(samples[row.label, high], samples[row.label, low], strict=True)
        ratios = f"{statistics.median(a / b for a, b in pairs):12.2f}x"
        print(f"{row.label:<42}{figures}{ratios}{med[row.label, low] / floor:10.2f}x")
    print(f"(timed loop {wall:.0f} s; {versions})")
    print(f"reproduce: {command}")


if __name__ == "__main__":
    main()
