"""Lock store benchmark: prints its figures.

1. In-process acquire+release, median, with 10, 1,000 and 10,000 live locks held by
   others (goal: under 2 ms at 10; at 10,000 no more than 2x the 10-lock figure).
2. Whole-process ``git alock acquire`` and ``git alock check`` against the floor
   ``python -c "import pygit2, typer"`` in the same environment (goal: at most 1.3x).

Run: python bench/store_bench.py [--quick]

Each write creates two objects and moves two refs, so the file system's metadata cost is
most of the in-process figure: run it with TMPDIR on tmpfs (TMPDIR=/dev/shm) as well as on
the disk to tell gitlocks' own cost from the disk's.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import make_repo

from gitlocks.core.change import Change
from gitlocks.core.record import LockRecord, expiry_from, format_time, new_lock_id, utcnow
from gitlocks.core.scope import ScopeEntry
from gitlocks.identity import resolve_identity
from gitlocks.service.context import Context
from gitlocks.service.locks import acquire, release
from gitlocks.store.local import Store

QUICK = "--quick" in sys.argv


def realistic_pattern(rng: random.Random, i: int) -> str:
    kind = rng.random()
    if kind < 0.5:
        return f"src/mod{i}/**"
    if kind < 0.8:
        return f"packages/pkg{i}/src/*.ts"
    if kind < 0.99:
        return f"docs/page{i}.md"
    return f"tools/t{i}/**/*.sh"


def fill(store: Store, count: int) -> None:
    """Create ``count`` live locks of other holders in one write."""
    rng = random.Random(count)
    now = utcnow()
    stamp = format_time(now)
    records = [
        LockRecord(
            id=new_lock_id() + f"{i:05d}",
            holder=f"other{i % 50}",
            paths=(realistic_pattern(rng, i),),
            created_at=stamp,
            renewed_at=stamp,
            expires_at=expiry_from(now, 86400),
            host="bench",
        )
        for i in range(count)
    ]
    store.transact(lambda table: (Change(put=records, events=[{"event": "bench"}]), None))


def in_process(base: Path) -> dict[int, float]:
    figures = {}
    for count in (10, 1_000, 10_000):
        repo = make_repo(base, f"live{count}")
        os.chdir(repo)
        store = Store.discover(repo)
        fill(store, count)
        ctx = Context(store=store, identity=resolve_identity("bench-agent"))
        entries = [ScopeEntry("src/mod5/new/**")]
        samples = []
        runs = 60 if QUICK else 300
        for _ in range(runs):
            started = time.perf_counter_ns()
            got = acquire(ctx, entries, reason="bench")
            release(ctx, entries)
            samples.append(time.perf_counter_ns() - started)
            assert got.status == "acquired", got
        figures[count] = statistics.median(samples) / 1e6
    return figures


def timed(cmd: list[str], cwd: Path, runs: int, env: dict[str, str]) -> float:
    samples = []
    for i in range(runs):
        argv = [arg.replace("{i}", str(i)) for arg in cmd]
        started = time.perf_counter_ns()
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True)
        samples.append(time.perf_counter_ns() - started)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{cmd} failed: {proc.stderr.decode()}")
    return statistics.median(samples) / 1e6


def whole_process(base: Path) -> None:
    # An installed package has its bytecode compiled by pip; an editable checkout run
    # with PYTHONDONTWRITEBYTECODE=1 would recompile every module on every run instead.
    import gitlocks

    package = os.path.dirname(gitlocks.__file__)
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", package], check=True, capture_output=True
    )
    repo = make_repo(base, "procs")
    bindir = os.path.dirname(sys.executable)
    env = dict(
        os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""), AGENT_ID="bench-proc"
    )
    runs = 10 if QUICK else 30
    subprocess.run(
        ["git", "alock", "acquire", "docs/**"], cwd=repo, env=env, check=True, capture_output=True
    )
    floor = timed([sys.executable, "-c", "import pygit2, typer"], repo, runs, env)
    acq = timed(["git", "alock", "acquire", "src/m{i}/**", "-m", "bench"], repo, runs, env)
    check = timed(["git", "alock", "check", "src/app.py", "docs/x.md"], repo, runs, env)
    print(f"floor python -c 'import pygit2, typer'   median {floor:7.1f} ms")
    print(
        f"git alock acquire (new claim)            median {acq:7.1f} ms  ratio {acq / floor:.2f}x"
    )
    print(
        f"git alock check (2 paths)                median {check:7.1f} ms  "
        f"ratio {check / floor:.2f}x"
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        figures = in_process(base)
        for count, ms in figures.items():
            print(f"in-process acquire+release, {count:>6} live locks: median {ms:.3f} ms")
        print(f"ratio 10,000 / 10 live locks: {figures[10_000] / figures[10]:.2f}x")
        whole_process(base)


if __name__ == "__main__":
    main()
