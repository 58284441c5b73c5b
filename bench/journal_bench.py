"""Journal and liveness benchmark: prints its figures.

1. Write cost as the journal grows: in-process acquire+release pairs (two journal
   commits each) over a long run with ``alock.journalKeep`` at its default (1000), so
   the run crosses several compactions. Median, 99th percentile and the slowest write
   (a compaction) per block of writes: the median must not grow with the history.
2. ``log`` cost on a chain at its longest (just before a compaction): the newest 20
   events, every event, and the whole ``git alock log -n 20`` process.
3. Size on disk of the journal: commits reachable from the journal ref, and the
   repository's object store before and after ``git gc --prune=now``.
4. Liveness: in-process acquire+release with 10 and 10,000 live locks whose holders'
   session processes run on this host (so liveness is judged), goal within 2x.

Run: python bench/journal_bench.py [--quick]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import git, make_repo

from gitlocks.core import journal as core_journal
from gitlocks.core.change import Change
from gitlocks.core.record import LockRecord, expiry_from, format_time, new_lock_id, utcnow
from gitlocks.core.scope import ScopeEntry
from gitlocks.identity import process_start_time, resolve_identity
from gitlocks.service import journal
from gitlocks.service.context import Context
from gitlocks.service.locks import acquire, release
from gitlocks.store.local import Store

QUICK = "--quick" in sys.argv
COUNTS = (10, 10_000)


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def ms(samples: list[int]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"median {statistics.median(ordered) / 1e6:6.3f} ms  p99 {p99 / 1e6:6.3f} ms  "
        f"max {ordered[-1] / 1e6:6.1f} ms"
    )


def writes(base: Path) -> Path:
    repo = make_repo(base, "journal")
    store = Store.discover(repo)
    ctx = Context(store=store, identity=resolve_identity("bench-agent"))
    entries = [ScopeEntry("src/**")]
    pairs = 1500 if QUICK else 5000
    block = 500
    samples: list[int] = []
    print(f"write cost, {pairs} acquire+release pairs ({2 * pairs} journal commits):")
    for i in range(pairs):
        started = time.perf_counter_ns()
        acquire(ctx, entries)
        samples.append(time.perf_counter_ns() - started)
        started = time.perf_counter_ns()
        release(ctx, entries)
        samples.append(time.perf_counter_ns() - started)
        if (i + 1) % block == 0:
            print(f"  commits {2 * (i + 1 - block):>6}-{2 * (i + 1):<6} one write: {ms(samples)}")
            samples = []
    chain = sum(1 for _ in store.journal())
    print(f"  chain length at the end: {chain} commits (journalKeep 1000: at most 2000)")
    return repo


def log_cost(repo: Path) -> None:
    store = Store.discover(repo)
    ctx = Context(store=store, identity=resolve_identity("bench-agent"))
    # Bring the chain to its longest: just before the next compaction.
    tip = store.repo[store.version()]
    seq = core_journal.parse_seq(tip.message)
    entries = [ScopeEntry("src/**")]
    while seq < 2 * core_journal.DEFAULT_KEEP_EVENTS - 2:
        acquire(ctx, entries)
        release(ctx, entries)
        seq += 2
    chain = sum(1 for _ in store.journal())
    runs = 20 if QUICK else 50
    for label, limit in (("newest 20 events", 20), ("every event", None)):
        samples = []
        for _ in range(runs):
            started = time.perf_counter_ns()
            found = journal.events(store, limit=limit)
            samples.append(time.perf_counter_ns() - started)
        print(f"log, {label:<16} of {chain} commits ({len(found)} events): {ms(samples)}")
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    samples = []
    for _ in range(10 if QUICK else 20):
        started = time.perf_counter_ns()
        subprocess.run(
            ["git", "alock", "log", "-n", "20"], cwd=repo, env=env, check=True, capture_output=True
        )
        samples.append(time.perf_counter_ns() - started)
    print(f"git alock log -n 20 (whole process): {ms(samples)}")


def size(repo: Path) -> None:
    objects = repo / ".git" / "objects"
    reachable = git(repo, "rev-list", "--objects", "--count", "refs/agent-locks-meta/journal")
    print(f"journal commits reachable: {reachable.strip()}")
    print(f"object store before gc: {du(objects) / 1024:8.0f} KiB (loose, old chains included)")
    git(repo, "-c", "gc.reflogExpire=now", "gc", "-q", "--prune=now")
    print(f"object store after gc:  {du(objects) / 1024:8.0f} KiB")


def fill(store: Store, count: int, pid: int, start: str) -> None:
    """``count`` live locks of other holders whose session is a running process here."""
    now = utcnow()
    stamp = format_time(now)
    host = os.uname().nodename
    records = [
        LockRecord(
            id=new_lock_id() + f"{i:05d}",
            holder=f"other{i % 50}",
            paths=(f"src/mod{i}/**",),
            created_at=stamp,
            renewed_at=stamp,
            expires_at=expiry_from(now, 86400),
            host=host,
            pid=pid,
            pid_start=start,
        )
        for i in range(count)
    ]
    store.transact(lambda table: (Change(put=records, events=[{"event": "bench"}]), None))


def liveness(base: Path) -> None:
    pid = os.getppid()
    start = process_start_time(pid) or ""
    figures = {}
    for count in COUNTS:
        repo = make_repo(base, f"live{count}")
        store = Store.discover(repo)
        fill(store, count, pid, start)
        ctx = Context(store=store, identity=resolve_identity("bench-agent"))
        crossing = [ScopeEntry("src/mod5/new/**")]  # meets one live lock: judged, refused
        free = [ScopeEntry("lib/new/**")]
        samples, refused = [], []
        for _ in range(60 if QUICK else 300):
            started = time.perf_counter_ns()
            got = acquire(ctx, free)
            release(ctx, free)
            samples.append(time.perf_counter_ns() - started)
            assert got.status == "acquired"
            started = time.perf_counter_ns()
            assert acquire(ctx, crossing).status == "refused"
            refused.append(time.perf_counter_ns() - started)
        figures[count] = statistics.median(samples) / 1e6
        print(
            f"liveness judged, {count:>6} live locks: acquire+release median "
            f"{figures[count]:.3f} ms; refused claim (one judged) median "
            f"{statistics.median(refused) / 1e6:.3f} ms"
        )
    print(f"ratio 10,000 / 10 live locks: {figures[10_000] / figures[10]:.2f}x")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        repo = writes(base)
        log_cost(repo)
        size(repo)
        liveness(base)


if __name__ == "__main__":
    main()
