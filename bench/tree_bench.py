"""Whole-process latency of git alock against the size of the working tree. A plain script:
prints figures.

For each size (default 100, 10,000 and 50,000 tracked files, in directories of 100 under
``src/``, committed), each command runs as a process, as an agent runs it: the floor
``python -c pass``; ``acquire`` of an existing file; ``acquire`` of a new file in an
existing directory (the claim before the file is written, which looks for the closest
existing path); ``acquire`` of a new top-level directory; ``check`` of a new path; and the
agent guard's check of an edit of an existing file inside the session's own claim. Each
claim is released again, untimed. Medians over runs interleaved across commands and
sizes; the ratio of the largest size to the smallest is the median of the ratios paired
within each run.

Usage: python bench/tree_bench.py [--runs N] [--sizes 100,10000,50000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from benchlib import bench_environment, git, interleaved, make_repo
from scale_bench import compile_bytecode


class Row(NamedTuple):
    label: str
    argv: list[str]  # "{i}" becomes the run number; "ALOCK" the console script
    release: str = ""  # the pattern to release after, untimed
    stdin: str = ""  # "{root}" becomes the repository


EDIT = {
    "session_id": "bench",
    "hook_event_name": "PreToolUse",
    "tool_name": "Edit",
    "cwd": "{root}",
    "tool_input": {"file_path": "{root}/src/d1/f1.py"},
}
ROWS = [
    Row("floor: python3 -c pass", [sys.executable, "-c", "pass"]),
    Row("acquire an existing file", ["ALOCK", "acquire", "src/d7/f{i}.py"], "src/d7/f{i}.py"),
    Row("acquire a new file", ["ALOCK", "acquire", "src/d3/new{i}.py"], "src/d3/new{i}.py"),
    Row("acquire a new directory", ["ALOCK", "acquire", "top{i}/**"], "top{i}/**"),
    Row("check a new path", ["ALOCK", "check", "src/d5/none{i}.py"]),
    Row(
        "guard: an edit inside its own claim",
        ["ALOCK", "guard", "--for", "claude"],
        stdin=json.dumps(EDIT),
    ),
]


def make_tree(base: Path, files: int) -> Path:
    repo = make_repo(base, f"tree{files}")
    for n in range(files):
        folder = repo / "src" / f"d{n // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{n % 100}.py").write_text(f"# {n}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "tree")
    git(repo, "config", "gc.auto", "0")
    return repo


def timed(row: Row, i: int, repo: Path, env: dict[str, str], alock: str) -> float:
    argv = [alock if a == "ALOCK" else a.replace("{i}", str(i)) for a in row.argv]
    feed = row.stdin.replace("{root}", str(repo))
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=repo, env=env, input=feed, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1) or "deny" in proc.stdout:
        raise SystemExit(f"{argv} in {repo.name}: exit {proc.returncode}\n{proc.stderr[:2000]}")
    if row.release:
        release = [alock, "release", row.release.replace("{i}", str(i))]
        subprocess.run(release, cwd=repo, env=env, check=True, capture_output=True)
    return elapsed * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--sizes", default="100,10000,50000", help="tracked files, by commas")
    args = parser.parse_args()
    sizes = sorted({int(s) for s in args.sizes.split(",")})
    alock = str(Path(sys.executable).parent / "git-alock")
    compile_bytecode()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        env = bench_environment(base)
        repos = {size: make_tree(base, size) for size in sizes}
        for repo in repos.values():  # the guard's session holds the file it edits
            claim = [alock, "acquire", "src/d1/f1.py", "--json"]
            subprocess.run(claim, cwd=repo, env=env, check=True, capture_output=True)
        labels = [row.label for row in ROWS]
        samples = interleaved(
            args.runs, sizes, labels, lambda r, i, n: timed(ROWS[r], i, repos[n], env, alock)
        )
        versions = f"Python {sys.version.split()[0]}, {git(base, '--version')}"
    low, high = sizes[0], sizes[-1]
    print(f"Whole processes, median ms over {args.runs} interleaved runs; {alock}; {versions}")
    print(f"{'command':40}" + "".join(f"{n:>10,}" for n in sizes) + f"   {high:,}/{low:,}")
    for row in ROWS:
        cells = "".join(f"{statistics.median(samples[row.label, n]):10.1f}" for n in sizes)
        pairs = zip(samples[row.label, high], samples[row.label, low], strict=True)
        ratios = [h / lo for h, lo in pairs]
        print(f"{row.label:40}{cells}   {statistics.median(ratios):.2f}x")


if __name__ == "__main__":
    main()
