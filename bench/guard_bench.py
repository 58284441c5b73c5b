"""The agent guard's whole-process cost, next to the pre-commit hook's.

Claude Code runs ``git alock guard --for claude`` before every edit, so it must cost no
more than the pre-commit hook. Measured as processes, with 10 and 1,000 live locks (seeded
by ``support.records.seed_locks``), medians over interleaved runs:

- the floors ``python -c pass`` (the budget: the guard at most 4x it) and
  ``python -c "import pygit2"``;
- the pre-commit hook on a commit of 10 staged paths (as git runs it);
- the guard on an edit inside another agent's claim (denied: the fast path);
- the guard on an edit of a file the session already holds (allowed: the fast path);
- the guard on the first edit of a free file (claimed: the store, and pygit2, load);
- the same denial for Gemini CLI (``--for gemini``: its BeforeTool event), the same core.

Usage: python bench/guard_bench.py [--runs N] [--sizes 10,1000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import git, make_repo, seed_locks
from scale_bench import compile_bytecode


def run(cmd: list[str], cwd: Path, env: dict[str, str], stdin: str = "") -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, input=stdin.encode(), capture_output=True)
    elapsed = (time.perf_counter() - start) * 1000
    if proc.returncode != 0:
        raise SystemExit(f"{cmd} failed ({proc.returncode}): {proc.stderr.decode()[:500]}")
    return elapsed


def edit(repo: Path, path: str, session: str) -> str:
    return json.dumps(
        {
            "session_id": session,
            "cwd": str(repo),
            "hook_event_name": "PreToolUse",
            "tool_name": "Edit",
            "tool_input": {"file_path": str(repo / path), "old_string": "a", "new_string": "b"},
        }
    )


def gemini_edit(repo: Path, path: str, session: str) -> str:
    return json.dumps(
        {
            "session_id": session,
            "cwd": str(repo),
            "hook_event_name": "BeforeTool",
            "tool_name": "replace",
            "tool_input": {"file_path": str(repo / path), "old_string": "a", "new_string": "b"},
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--sizes", default="10,1000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    alock = str(Path(sys.executable).parent / "git-alock")
    compile_bytecode()  # as an installed package has it: no module compiled per run
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        os.environ.update(HOME=tmp, GIT_CONFIG_NOSYSTEM="1")
        os.environ.pop("AGENT_ID", None)
        git(base, "config", "--global", "user.name", "bench")
        git(base, "config", "--global", "user.email", "bench@example.invalid")
        env = dict(os.environ)
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        rows: dict[tuple[str, int], list[float]] = {}
        repos = {}
        for size in sizes:
            repo = make_repo(base, f"r{size}")
            seed_locks(repo, size)
            subprocess.run([alock, "install-hooks"], cwd=repo, env=env, check=True,
                           capture_output=True)  # fmt: skip
            for i in range(10):
                (repo / f"free{i}.txt").write_text("x\n")
            git(repo, "add", "-A")
            # The session's own file, claimed once, untimed.
            run([alock, "guard", "--for", "claude"], repo, env, edit(repo, "mine.py", "bench"))
            repos[size] = repo
        hook = str(Path(sys.executable).parent / "git-alock")
        cases = {
            "floor: python -c pass": lambda r, i: run([sys.executable, "-c", "pass"], r, env),
            "floor: python -c 'import pygit2'": lambda r, i: run(
                [sys.executable, "-c", "import pygit2"], r, env
            ),
            "pre-commit hook, 10 staged paths": lambda r, i: run(
                [hook, "hook", "pre-commit"], r, env
            ),
            "guard: edit inside another's claim (denied)": lambda r, i: run(
                [alock, "guard", "--for", "claude"], r, env, edit(r, "area0/x.py", "bench")
            ),
            "guard: edit of the session's own file": lambda r, i: run(
                [alock, "guard", "--for", "claude"], r, env, edit(r, "mine.py", "bench")
            ),
            "guard (gemini): edit inside another's claim": lambda r, i: run(
                [alock, "guard", "--for", "gemini"], r, env, gemini_edit(r, "area0/x.py", "bench")
            ),
            "guard: first edit of a free file (claims)": lambda r, i: run(
                [alock, "guard", "--for", "claude"], r, env, edit(r, f"new{i}.py", "bench")
            ),
        }
        for i in range(args.runs):
            for label, case in cases.items():
                for size in sizes:
                    rows.setdefault((label, size), []).append(case(repos[size], i))
        head = "".join(f"{f'{s:,} locks':>14}" for s in sizes)
        print(f"whole processes, median ms of {args.runs} interleaved runs")
        print(f"{'':46}{head}")
        hook_ms = {
            s: statistics.median(rows[("pre-commit hook, 10 staged paths", s)]) for s in sizes
        }
        for label in cases:
            cells = "".join(f"{statistics.median(rows[(label, s)]):14.1f}" for s in sizes)
            print(f"{label:46}{cells}")
        for size in sizes:
            floor = statistics.median(rows[("floor: python -c pass", size)])
            for label in cases:
                if label.startswith("guard"):
                    median = statistics.median(rows[(label, size)])
                    ratio = median / hook_ms[size]
                    print(
                        f"  {size:,} locks, {label}: {ratio:.2f}x the pre-commit hook, "
                        f"{median / floor:.2f}x python -c pass (budget: 4x)"
                    )
        print(f"reproduce: python bench/guard_bench.py --runs {args.runs} --sizes {args.sizes}")


if __name__ == "__main__":
    main()
