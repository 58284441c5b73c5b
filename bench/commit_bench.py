"""Benchmark: what the bundled hooks add to a whole ``git commit``.

``install-hooks`` now installs three hooks: pre-commit (the check), commit-msg (the
Agent-Id trailer) and post-commit (the heartbeat). Each row is a real ``git commit`` of one
changed file, timed as a whole process, in interleaved runs, with 1,000 live locks of
other holders in the table:

- no hooks (the floor);
- the pre-commit hook alone (what install-hooks installed before);
- all three, by an agent (``AGENT_ID``) committing outside its claims (trailer only);
- all three, committing inside its own claim (trailer, and the heartbeat's write).

Usage: python bench/commit_bench.py [--runs N] [--locks N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import git, make_repo, seed_locks
from scale_bench import compile_bytecode

from gitlocks.hooks import install as hook_install

ROWS = (
    "no hooks",
    "pre-commit only",
    "all three, outside own claim",
    "all three, inside own claim",
)


def setup(base: Path, name: str, hooks: list[str], locks: int) -> Path:
    repo = make_repo(base, name)
    seed_locks(repo, locks)
    if hooks:
        hook_install.install(repo / ".git" / "hooks", hooks, sys.executable)
    return repo


def commit_once(repo: Path, path: str, i: int, env: dict[str, str]) -> float:
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"change {i}\n")
    git(repo, "add", path)
    start = time.perf_counter()
    proc = subprocess.run(["git", "commit", "-q", "-m", f"c{i}"], cwd=repo, env=env)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"commit failed in {repo}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--locks", type=int, default=1000)
    args = parser.parse_args()
    compile_bytecode()
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["AGENT_ID"] = "bench-agent"
    for who in ("AUTHOR", "COMMITTER"):
        env[f"GIT_{who}_NAME"], env[f"GIT_{who}_EMAIL"] = "bench", "bench@example.com"
    base = Path(tempfile.mkdtemp(prefix="commit-bench-"))
    try:
        all_three = ["pre-commit", "commit-msg", "post-commit"]
        repos = {
            ROWS[0]: (setup(base, "none", [], args.locks), "free/x.txt"),
            ROWS[1]: (setup(base, "pre", ["pre-commit"], args.locks), "free/x.txt"),
            ROWS[2]: (setup(base, "outside", all_three, args.locks), "free/x.txt"),
            ROWS[3]: (setup(base, "inside", all_three, args.locks), "mine/x.txt"),
        }
        inside = repos[ROWS[3]][0]
        claim = ["git", "alock", "acquire", "mine/**", "--ttl", "1d"]
        for repo, _ in repos.values():  # a first write keeps the verdicts, as in real use
            other = {**env, "AGENT_ID": "someone-else"}
            subprocess.run([*claim[:3], "other/**"], cwd=repo, env=other, check=True)
        subprocess.run(claim, cwd=inside, env=env, check=True, capture_output=True)
        times: dict[str, list[float]] = {row: [] for row in ROWS}
        for i in range(args.runs + 2):
            for row in ROWS:
                repo, path = repos[row]
                elapsed = commit_once(repo, path, i, env)
                if i >= 2:  # the first two warm the caches
                    times[row].append(elapsed)
        floor = statistics.median(times[ROWS[0]])
        print(f"git commit of one file, {args.locks} live locks, median of {args.runs} runs:")
        for row in ROWS:
            median = statistics.median(times[row])
            print(f"  {row:<32} {median * 1000:7.1f} ms  ({median / floor:4.2f}x no hooks)")
        renewed = subprocess.run(
            ["git", "alock", "log", "-n", "3"], cwd=inside, env=env, capture_output=True
        ).stdout.decode()
        assert "renewed" in renewed, "the heartbeat did not renew the claim"
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
