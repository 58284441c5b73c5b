"""Atomicity under real concurrency, and crash safety under SIGKILL."""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import signal
import subprocess
import sys
import time
from itertools import combinations
from pathlib import Path

import pytest
from conftest import git

from gitlocks import patterns_overlap
from gitlocks.layout import LOCK_PREFIX
from gitlocks.store.local import Store

SCOPES = [
    "src/**",
    "src/api/**",
    "src/api/auth.py",
    "src/*.py",
    "src/a*",
    "src/web/**",
    "docs/**",
    "docs/guide.md",
    "**/*.md",
    "tools/build.sh",
    "tests/unit/**",
    "tests/*/test_api.py",
]


def _claimer(
    worktree: str,
    holder: str,
    pattern: str,
    barrier: mp.synchronize.Barrier,
    results: mp.queues.Queue[tuple[str, str, str]],
) -> None:
    from gitlocks.core.scope import ScopeEntry
    from gitlocks.identity import resolve_identity
    from gitlocks.service.context import Context
    from gitlocks.service.locks import acquire

    os.chdir(worktree)
    ctx = Context(store=Store.discover(), identity=resolve_identity(holder))
    barrier.wait()
    result = acquire(ctx, [ScopeEntry(pattern)], reason="race")
    results.put((holder, pattern, result.status))


@pytest.mark.slow
def test_sixteen_claimers_two_worktrees_never_double_grant(repo: Path, worktree: Path) -> None:
    ctx = mp.get_context("fork")
    rng = random.Random(1234)
    for round_no in range(10):
        barrier = ctx.Barrier(16)
        results: mp.queues.Queue[tuple[str, str, str]] = ctx.Queue()
        procs = []
        for i in range(16):
            where = repo if i % 2 == 0 else worktree
            args = (str(where), f"r{round_no}w{i}", rng.choice(SCOPES), barrier, results)
            procs.append(ctx.Process(target=_claimer, args=args))
        for proc in procs:
            proc.start()
        outcomes = [results.get(timeout=60) for _ in procs]
        for proc in procs:
            proc.join(timeout=60)
            assert proc.exitcode == 0
        winners = {(h, p) for h, p, status in outcomes if status == "acquired"}
        assert winners, outcomes
        for (_, p1), (_, p2) in combinations(winners, 2):
            assert not patterns_overlap(p1, p2), (round_no, p1, p2)
        store = Store.discover(repo)
        table = store.read_table()
        assert not table.problems
        assert {(r.holder, r.paths[0]) for r in table} == winners
        # Every refusal was right to refuse: its scope crosses some winner's.
        for _, pattern, status in outcomes:
            if status == "refused":
                assert any(patterns_overlap(pattern, p) for _, p in winners)
        for ref in git(repo, "for-each-ref", "--format=%(refname)", LOCK_PREFIX).split():
            git(repo, "update-ref", "-d", ref)


CHURN_SCOPES = ["src/**", "src/api/auth.py", "docs/**"]
_CHURN = """
import os, sys
from gitlocks.identity import resolve_identity
from gitlocks.service.context import Context
from gitlocks.service.locks import acquire, release
from gitlocks.core.scope import ScopeEntry
from gitlocks.store.local import Store
os.chdir(sys.argv[1])
ctx = Context(store=Store.discover(), identity=resolve_identity(sys.argv[2]))
entries = [ScopeEntry(p) for p in sys.argv[3:]]
print("ready", flush=True)
while True:
    acquire(ctx, entries, reason="churn", ttl=3600)
    release(ctx, entries)
"""


@pytest.mark.slow
def test_sigkill_never_corrupts_or_wedges(repo: Path) -> None:
    rng = random.Random(99)
    for _ in range(12):
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _CHURN, str(repo), f"k{i}", CHURN_SCOPES[i]],
                stdout=subprocess.PIPE,
            )
            for i in range(3)
        ]
        for proc in procs:
            assert proc.stdout is not None
            proc.stdout.readline()
        time.sleep(rng.uniform(0.0, 0.15))
        for proc in procs:
            proc.send_signal(signal.SIGKILL)
        for proc in procs:
            proc.wait()
    # Whatever the kills left behind (a killed churner's complete lock may remain, and
    # so may a stale ref .lock file), a new claim succeeds.
    got = subprocess.run(
        [sys.executable, "-m", "gitlocks", "acquire", "survivor/**", "--as", "survivor"],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    assert got.returncode == 0, got.stderr
    table = Store.discover(repo).read_table()
    assert not table.problems
    for record in table:
        assert record.paths and record.holder and record.reason in ("churn", "")
        assert record.paths[0] in [*CHURN_SCOPES, "survivor/**"]
    fsck = subprocess.run(["git", "fsck", "--strict"], cwd=repo, capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
