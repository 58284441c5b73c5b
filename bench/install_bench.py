"""A plain install beside an editable one: whether the README's set-up for the tests
(``pip install -e '.[test]'``) leaves a product as fast as ``pip install .``, manual page
included. A plain script: prints figures.

Two virtual environments are made from this checkout, one with ``pip install .`` and one
with ``pip install -e .``; then, round by round in turn, each runs ``python3 -c pass`` (the
floor) and, as whole processes in one repository with 10 locks of other holders,
``git alock check``, ``git alock list`` and the agent guard's check of an edit. Printed:
the medians, the medians of the editable / plain ratios paired within a round, and where
each install put the manual page.

    python bench/install_bench.py [--runs 15]
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

from benchlib import bench_environment, make_repo, seed_locks

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("plain", "editable")


def install(base: Path, kind: str) -> Path:
    """A new virtual environment in ``base/kind`` with gitlocks installed as ``kind`` says."""
    venv = base / kind
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    editable = ["-e"] if kind == "editable" else []
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", *editable, str(ROOT)],
        check=True,
        capture_output=True,
    )
    return venv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="alock-install-bench-") as tmp:
        base = Path(tmp)
        env = bench_environment(base)
        venvs = {kind: install(base, kind) for kind in KINDS}
        repo = make_repo(base, "repo")
        seed_locks(repo, 10)
        event = json.dumps(
            {
                "session_id": "bench",
                "hook_event_name": "PreToolUse",
                "tool_name": "Edit",
                "tool_input": {"file_path": str(repo / "README.md")},
                "cwd": str(repo),
            }
        ).encode()
        rows = {
            "python3 -c pass": (["{bin}/python", "-c", "pass"], b""),
            "check README.md": (["{bin}/git-alock", "check", "README.md"], b""),
            "list": (["{bin}/git-alock", "list"], b""),
            "guard (block mode, free path)": (
                ["{bin}/git-alock", "guard", "--for", "claude"],
                event,
            ),
        }
        subprocess.run(["git", "config", "alock.guardMode", "block"], cwd=repo, check=True)
        samples: dict[tuple[str, str], list[float]] = {
            (row, kind): [] for row in rows for kind in KINDS
        }
        for i in range(args.runs + 1):  # round 0 writes bytecode and warms the cache
            for row, (argv, stdin) in rows.items():
                for kind in KINDS:
                    cmd = [a.replace("{bin}", str(venvs[kind] / "bin")) for a in argv]
                    start = time.perf_counter()
                    proc = subprocess.run(cmd, cwd=repo, env=env, input=stdin, capture_output=True)
                    ms = (time.perf_counter() - start) * 1000
                    if proc.returncode not in (0, 1):
                        sys.exit(f"{' '.join(cmd)}: exit {proc.returncode}\n{proc.stderr!r}")
                    if i:
                        samples[row, kind].append(ms)
        print(f"Whole processes, {args.runs} rounds interleaved; 10 locks of others")
        print(f"{'command':<32}{'plain ms':>10}{'editable ms':>13}{'editable/plain':>16}")
        for row in rows:
            plain, editable = samples[row, "plain"], samples[row, "editable"]
            ratio = statistics.median(e / p for e, p in zip(editable, plain, strict=True))
            print(
                f"{row:<32}{statistics.median(plain):10.1f}{statistics.median(editable):13.1f}"
                f"{ratio:15.2f}x"
            )
        for kind in KINDS:
            page = venvs[kind] / "share" / "man" / "man1" / "git-alock.1"
            print(f"manual page, {kind} install: {'installed' if page.is_file() else 'MISSING'}")


if __name__ == "__main__":
    main()
