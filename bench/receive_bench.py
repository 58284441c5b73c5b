"""Benchmark of the pre-receive hook. A plain script: prints figures.

A bare repository holds 1,000 live claims (``area<i>/**``, seven holders, refs packed as a
host packs them). A clone pushes 100 new commits, each changing five files, one of them
inside a claim of the commit's own agent (its ``Agent-Id`` trailer), so the push passes and
every commit is judged in full. Measured, medians over interleaved runs:

1. the whole ``git push`` over ``file://``: with the hook installed, and with none;
2. the hook alone, run as git runs it (in the bare repository, the push's lines on stdin);
3. the hook for a push of lock refs only (every claim in remote mode is one).

Goal: the hook's whole-process cost for 100 commits against 1,000 claims under 1 s.

Usage: python bench/receive_bench.py [--runs N] [--commits N] [--locks N]
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

from benchlib import git, make_repo, seed_locks
from scale_bench import compile_bytecode

from gitlocks.hooks import install as hook_install

HOLDERS = 7


def claim_lines(bare: Path) -> str:
    """The lines of one claim in remote mode: the journal moved to a commit carrying the
    table plus one new lock, and that lock's ref created (the objects written, no ref moved)."""
    # The package's internal API, imported here only (as support.records.seed_locks does).
    from gitlocks.git.objects import Objects
    from gitlocks.store.journal import Journal

    journal = git(bare, "rev-parse", "refs/agent-locks-meta/journal").strip()
    objects = Objects(str(bare), str(bare), None)
    store = Journal(objects, lambda key: None)
    table = store.table(journal) or {}
    blob = objects.write_blob(b'{"bench": "a record"}\n')
    new = str(store.write(journal, [{"event": "acquired"}], {**table, "1a2b3c-bench": blob}))
    return (
        f"{journal} {new} refs/agent-locks-meta/journal\n"
        f"{'0' * 40} {blob} refs/agent-locks/1a2b3c-bench\n"
    )


def timed(cmd: list[str], cwd: Path, env: dict[str, str], feed: str = "") -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, input=feed, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    if "alock:" in proc.stderr:
        raise SystemExit(f"{cmd}: the hook reported something: {proc.stderr[-2000:]}")
    return elapsed


def setup(root: Path, commits: int, locks: int) -> tuple[Path, Path, str, str]:
    """The bare repository with ``locks`` claims, and a clone ``commits`` ahead of it."""
    seed = make_repo(root, "seed")
    seed_locks(seed, locks, HOLDERS)
    bare = root / "hosted.git"
    git(root, "init", "-q", "--bare", str(bare))
    git(
        seed,
        "push",
        "-q",
        str(bare),
        "HEAD:refs/heads/main",
        "refs/agent-locks/*:refs/agent-locks/*",
        "refs/agent-locks-meta/*:refs/agent-locks-meta/*",
    )
    git(bare, "symbolic-ref", "HEAD", "refs/heads/main")
    git(bare, "pack-refs", "--all")
    work = root / "work"
    git(root, "clone", "-q", str(bare), str(work))
    base = git(work, "rev-parse", "HEAD")
    for i in range(commits):
        for j in range(4):
            path = work / f"free{j}" / f"file{i}.txt"
            path.parent.mkdir(exist_ok=True)
            path.write_text(f"{i} {j}\n")
        area = work / f"area{i}" / "code.txt"
        area.parent.mkdir(exist_ok=True)
        area.write_text(f"{i}\n")
        git(work, "add", "-A")
        agent = f"agent-{i % HOLDERS}"  # seed_locks: area<i>/** is held by agent-<i % 7>
        git(work, "commit", "-q", "-m", f"change {i}", "--trailer", f"Agent-Id: {agent}")
    tip = git(work, "rev-parse", "HEAD")
    return bare, work, base, tip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--locks", type=int, default=1000)
    args = parser.parse_args()
    compile_bytecode()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["HOME"] = tmp
        os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
        for key in ("AGENT_ID", "AGENT_PARENT_ID"):
            os.environ.pop(key, None)
        git(root, "config", "--global", "user.name", "bench")
        git(root, "config", "--global", "user.email", "bench@example.invalid")
        git(root, "config", "--global", "init.defaultBranch", "main")
        start = time.perf_counter()
        bare, work, base, tip = setup(root, args.commits, args.locks)
        took = time.perf_counter() - start
        env = dict(os.environ)
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        hooks_dir = bare / "hooks"
        hook = [str(hooks_dir / "pre-receive")]
        push = ["git", "push", "-q", "origin", "main"]

        def reset() -> None:  # the bare repository back where it was: the push is new again
            git(bare, "update-ref", "refs/heads/main", base)

        def pushed(installed: bool) -> float:
            if installed:
                hook_install.install(hooks_dir, ["pre-receive"], sys.executable)
            else:
                hook_install.uninstall(hooks_dir, ["pre-receive"])
            reset()
            return timed(push, work, env)

        for installed in (True, False):  # warm the page cache and the bytecode
            pushed(installed)
        with_hook, without = [], []
        for _ in range(args.runs):  # interleaved, so drift hits both alike
            without.append(pushed(False))
            with_hook.append(pushed(True))

        # The hook alone, as git runs it: in the bare repository, GIT_DIR set, lines on
        # stdin. The commits are in the repository (the pushes above), on no ref.
        reset()
        hook_install.install(hooks_dir, ["pre-receive"], sys.executable)
        hook_env = {**env, "GIT_DIR": "."}
        line = f"{base} {tip} refs/heads/main\n"
        alone = [timed(hook, bare, hook_env, line) for _ in range(args.runs)]
        lock_line = claim_lines(bare)
        locks_only = [timed(hook, bare, hook_env, lock_line) for _ in range(args.runs)]
        floor = [timed([sys.executable, "-c", "pass"], bare, hook_env) for _ in range(args.runs)]

    def ms(values: list[float]) -> str:
        return f"median {statistics.median(values) * 1000:7.1f} ms over {len(values)} runs"

    print(
        f"push of {args.commits} commits (5 files each) against {args.locks} live claims "
        f"in the bare repository (setup {took:.0f} s)"
    )
    print(f"1. git push, hook installed          {ms(with_hook)}")
    print(f"   git push, no hook                 {ms(without)}")
    print(f"2. the hook alone (as git runs it)   {ms(alone)}")
    print("   goal: under 1 s")
    print(f"3. hook, a push of lock refs only    {ms(locks_only)}")
    print(f"   floor: python -c pass             {ms(floor)}")


if __name__ == "__main__":
    main()
