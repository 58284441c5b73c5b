"""Remote mode against a loopback git daemon: what a claim costs, and claims per second.

Run: python bench/remote_bench.py [--runs N]

Prints medians of:
- a plain ``git push`` of one new ref to the daemon (the yardstick, measured in this run),
- an uncontended remote acquire through the library (``locks.acquire``), and its ratio to
  the push (the budget is at most 2x),
- the same acquire when another clone wrote since this clone's last sync (stale view),
- ``git alock acquire`` as a process (adds Python start-up and imports),
and the claims per second of 8 claimers, each on its own clone, racing disjoint claims.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import git

from gitlocks.core.scope import ScopeEntry
from gitlocks.identity import resolve_identity
from gitlocks.service.context import Context
from gitlocks.service.locks import acquire
from gitlocks.store.remote import RemoteStore


def hermetic(home: Path) -> None:
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Bench\n\temail = bench@example.invalid\n[init]\n\tdefaultBranch = main\n"
    )
    os.environ.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1")
    for name in ("AGENT_ID", "AGENT_PARENT_ID", "GIT_DIR", "GIT_WORK_TREE"):
        os.environ.pop(name, None)


def start_daemon(base: Path) -> tuple[subprocess.Popen[bytes], int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    proc = subprocess.Popen(
        ["git", "daemon", "--enable=receive-pack", f"--base-path={base}", "--export-all",
         "--listen=127.0.0.1", f"--port={port}", "--reuseaddr", str(base)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    raise SystemExit("git daemon did not answer")


def clone(url: str, path: Path) -> Path:
    git(path.parent, "clone", "-q", url, path.name)
    git(path, "config", "alock.remote", "origin")
    return path


def claim(path: Path, holder: str, pattern: str) -> float:
    os.chdir(path)
    ctx = Context(store=RemoteStore.discover(path), identity=resolve_identity(holder))
    started = time.perf_counter()
    result = acquire(ctx, [ScopeEntry(pattern)])
    elapsed = time.perf_counter() - started
    assert result.status == "acquired", result
    return elapsed


def median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def racer(path: str, k: int, claims: int, barrier: mp.synchronize.Barrier) -> None:
    os.chdir(path)
    ctx = Context(store=RemoteStore.discover(path), identity=resolve_identity(f"racer-{k}"))
    barrier.wait()
    for n in range(claims):
        assert acquire(ctx, [ScopeEntry(f"race/{k}/{n}/**")]).status == "acquired"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--claims", type=int, default=5, help="claims per racer")
    args = parser.parse_args()
    runs, claims = args.runs, args.claims
    tmp = Path(tempfile.mkdtemp(prefix="remote-bench-"))
    hermetic(tmp / "home")
    base = tmp / "served"
    base.mkdir()
    git(base, "init", "-q", "--bare", "locks.git")
    daemon, port = start_daemon(base)
    url = f"git://127.0.0.1:{port}/locks.git"
    try:
        a = clone(url, tmp / "a")
        b = clone(url, tmp / "b")
        git(a, "commit", "-q", "--allow-empty", "-m", "seed")
        head = git(a, "rev-parse", "HEAD")
        claim(a, "warm", "warm/**")  # first contact fetches; not what we measure

        pushes, acquires, stale, cli = [], [], [], []
        for i in range(runs):
            started = time.perf_counter()
            git(a, "push", "-q", "origin", f"{head}:refs/bench/{i}")
            pushes.append(time.perf_counter() - started)
            acquires.append(claim(a, f"agent-{i}", f"fresh/{i}/**"))
            claim(b, f"other-{i}", f"other/{i}/**")  # now a's view is one write behind
            stale.append(claim(a, f"stale-{i}", f"stale/{i}/**"))
        bindir = os.path.dirname(sys.executable)
        env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"])
        for i in range(min(runs, 7)):
            started = time.perf_counter()
            subprocess.run(
                ["git", "alock", "acquire", f"cli/{i}/**", "--as", f"cli-{i}"],
                cwd=a, env=env, check=True, capture_output=True,
            )  # fmt: skip
            cli.append(time.perf_counter() - started)

        push_ms = median_ms(pushes)
        print(f"git push of one new ref (daemon)    median {push_ms:7.1f} ms  ({runs} runs)")
        for label, values in (
            ("remote acquire, current view", acquires),
            ("remote acquire, stale view", stale),
            ("git alock acquire (process)", cli),
        ):
            ms = median_ms(values)
            print(f"{label:<36}median {ms:7.1f} ms  = {ms / push_ms:4.2f}x the push")

        racers = [clone(url, tmp / f"r{k}") for k in range(8)]
        for k, path in enumerate(racers):
            claim(path, f"racer-{k}", f"warmup/{k}/**")
        ctx = mp.get_context("fork")
        barrier = ctx.Barrier(9)
        procs = [
            ctx.Process(target=racer, args=(str(path), k, claims, barrier))
            for k, path in enumerate(racers)
        ]
        for proc in procs:
            proc.start()
        barrier.wait()
        started = time.perf_counter()
        for proc in procs:
            proc.join(timeout=300)
        elapsed = time.perf_counter() - started
        failed = sum(1 for proc in procs if proc.exitcode != 0)
        total = 8 * claims
        print(
            f"8 racing claimers, 8 clones: {total} disjoint claims in {elapsed:.2f} s = "
            f"{total / elapsed:.1f} claims/s ({failed} racers failed)"
        )
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        daemon.wait(timeout=10)
        os.chdir("/")
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
