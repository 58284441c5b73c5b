"""Benchmark of the bundled pre-commit hook. A plain script: prints figures.

1. A commit of 10 staged paths with 50 live locks: each installed commit hook (pre-commit,
   commit-msg, post-commit), run as git runs it, against the floor ``python -c pass`` of the
   same interpreter (budget: at most 4x). Medians over interleaved runs in the same
   environment.
2. 10,000 staged paths against 1,000 live locks: the check itself, in process (goal:
   under 1 s), and the whole hook as a process for scale.

Usage: python bench/hook_bench.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import git, make_repo

from gitlocks.core.record import utcnow
from gitlocks.core.scope import ScopeEntry
from gitlocks.git import changes as hook_paths
from gitlocks.git import table as fast_table
from gitlocks.hooks import check as hooks
from gitlocks.hooks import install as hook_install
from gitlocks.identity import resolve_identity
from gitlocks.service import locks
from gitlocks.service.context import Context
from gitlocks.store.local import Store


def claim(repo: Path, count: int, agents: int) -> None:
    """``count`` live locks on ``area<i>/**``, spread over ``agents`` holders."""
    store = Store.discover(repo)
    for i in range(count):
        ident = resolve_identity(as_id=f"agent-{i % agents}", env={})
        ctx = Context(store=store, identity=ident)
        result = locks.acquire(ctx, [ScopeEntry(f"area{i}/**")], reason="bench", ttl=3600)
        assert result.status == "acquired", result


def stage(repo: Path, paths: list[str]) -> None:
    for rel in paths:
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel + "\n")
    git(repo, "add", "-A")


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd} failed: {proc.stderr.decode()}")
    return elapsed


def hook_env(repo: Path) -> dict[str, str]:
    """What git hands a pre-commit hook, as far as the hook's work is concerned."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["GIT_INDEX_FILE"] = str(repo / ".git" / "index")
    env["AGENT_ID"] = "committer"
    return env


def compile_bytecode() -> None:
    """An installed package has its bytecode compiled by pip; an editable checkout run with
    PYTHONDONTWRITEBYTECODE=1 would recompile every module on every run instead."""
    import gitlocks

    package = os.path.dirname(gitlocks.__file__)
    cmd = [sys.executable, "-m", "compileall", "-q", package]
    subprocess.run(cmd, check=True, capture_output=True)


def small_commit(root: Path, runs: int) -> None:
    repo = make_repo(root, "small")
    compile_bytecode()
    claim(repo, 50, 10)
    stage(repo, [f"area{i}/file.txt" for i in range(5)] + [f"free{i}/f.txt" for i in range(5)])
    commit_hooks = ["pre-commit", "commit-msg", "post-commit"]
    hook_install.install(hook_install.hooks_dir(str(repo)), commit_hooks, sys.executable)
    env = hook_env(repo)
    message = repo / ".git" / "COMMIT_EDITMSG"
    message.write_text("bench: a commit\n")
    hooks_dir = repo / ".git" / "hooks"
    cases = {
        "floor  python -c pass": [sys.executable, "-c", "pass"],
        "hook   pre-commit": [str(hooks_dir / "pre-commit")],
        "hook   commit-msg": [str(hooks_dir / "commit-msg"), str(message)],
        "hook   post-commit": [str(hooks_dir / "post-commit")],
    }
    for cmd in cases.values():  # warm the page cache and the bytecode
        timed(cmd, repo, env)
    times: dict[str, list[float]] = {label: [] for label in cases}
    for _ in range(runs):  # interleaved, so drift hits all alike
        for label, cmd in cases.items():
            times[label].append(timed(cmd, repo, env))
            message.write_text("bench: a commit\n")  # commit-msg adds a trailer once
    medians = {label: statistics.median(t) * 1000 for label, t in times.items()}
    floor_ms = medians["floor  python -c pass"]
    print("1. 10 staged paths, 50 live locks (5 paths held by others)")
    for label, ms in medians.items():
        print(f"   {label:28} median {ms:7.1f} ms over {runs} runs, {ms / floor_ms:.2f}x")
    print("   budget: each hook at most 4x python -c pass")


def big_commit(root: Path, runs: int) -> None:
    repo = make_repo(root, "big")
    start = time.perf_counter()
    claim(repo, 1000, 100)
    paths = [f"area{i % 1500}/dir{i % 7}/file{i}.txt" for i in range(10_000)]
    stage(repo, paths)
    setup = time.perf_counter() - start
    env = hook_env(repo)
    old = os.getcwd()
    os.chdir(repo)
    os.environ["GIT_INDEX_FILE"] = env["GIT_INDEX_FILE"]
    try:
        identity = resolve_identity(as_id="committer")
        common = hook_paths.git_output(["rev-parse", "--git-common-dir"]).decode().strip()
        read_times, check_times = [], []
        held = 0
        for _ in range(max(3, runs // 3)):
            t0 = time.perf_counter()
            staged = hook_paths.staged_paths()
            t1 = time.perf_counter()
            table = fast_table.read_lock_table(common, None, False)
            found = hooks.find_held(table, identity, utcnow(), staged)
            t2 = time.perf_counter()
            read_times.append(t1 - t0)
            check_times.append(t2 - t1)
            held = len(found)
    finally:
        os.environ.pop("GIT_INDEX_FILE", None)
        os.chdir(old)
    hook = [str(repo / ".git" / "hooks" / "pre-commit")]
    hook_install.install(hook_install.hooks_dir(str(repo)), ["pre-commit"], sys.executable)
    whole = statistics.median(timed(hook, repo, env) for _ in range(3))
    print(f"2. 10,000 staged paths, 1,000 live locks ({held} paths held; setup {setup:.0f} s)")
    print(f"   read staged paths (git diff)       median {statistics.median(read_times):7.3f} s")
    print(f"   check (locks read + all paths)     median {statistics.median(check_times):7.3f} s")
    print("   goal for the check: < 1 s")
    print(f"   whole hook as a process            median {whole:7.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HOME"] = tmp
        os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
        for key in ("AGENT_ID", "AGENT_PARENT_ID"):
            os.environ.pop(key, None)
        git(Path(tmp), "config", "--global", "user.name", "bench")
        git(Path(tmp), "config", "--global", "user.email", "bench@example.invalid")
        small_commit(Path(tmp), args.runs)
        big_commit(Path(tmp), args.runs)


if __name__ == "__main__":
    main()
