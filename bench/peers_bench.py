"""git alock beside its peers and the floors, whole processes, round by round. A plain
script: prints figures.

Each round runs, in one fixed order, every command below once, each as a process as an
agent runs it, in its own fresh repository where 10 locks of other holders already sit:

- the floors: ``python3 -c pass`` (starting Python at all) and ``git rev-parse --git-dir``
  (starting git at all);
- gitlocks: ``git-alock acquire|list|release|check|status`` and the guard's check of an edit;
- claude-agent-sync (``agent-sync lock|locks|unlock``): exact-path locks in SQLite, a
  Python command line too. Skipped, with a note, when it is not installed.

git-lfs's locks need its test server (lfstest-gitserver, built from git-lfs's source with
Go); where the Go toolchain or that source is missing the comparison is skipped with a note.

Printed: per command the median milliseconds, and the medians of ratios paired within a
round (gitlocks / peer, gitlocks / floor), so a busy moment of a shared machine hits both
sides of a ratio alike.

Usage: python bench/peers_bench.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from benchlib import git, make_repo, seed_locks
from scale_bench import compile_bytecode


class Cmd(NamedTuple):
    label: str
    argv: list[str]  # "{i}" becomes the round number
    where: str  # "gitlocks" or "peer": the repository it runs in
    codes: tuple[int, ...] = (0,)
    stdin: str = ""


def commands(alock: str, peer: str | None) -> list[Cmd]:
    py = sys.executable
    edit = {
        "session_id": "bench",
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": "free{i}/app.py"},
    }
    found = [
        Cmd("floor: python3 -c pass", [py, "-c", "pass"], "gitlocks"),
        Cmd("floor: git rev-parse --git-dir", ["git", "rev-parse", "--git-dir"], "gitlocks"),
        Cmd("gitlocks acquire", [alock, "acquire", "new{i}/x.py", "-m", "bench"], "gitlocks"),
        Cmd("gitlocks list", [alock, "list"], "gitlocks"),
        Cmd("gitlocks check", [alock, "check", "area5/a.py", "free/a.py"], "gitlocks", (0, 1)),
        Cmd("gitlocks status", [alock, "status"], "gitlocks"),
        Cmd("gitlocks release", [alock, "release", "new{i}/x.py"], "gitlocks"),
        Cmd(
            "gitlocks guard (block mode, free path)",
            [alock, "guard", "--for", "claude"],
            "gitlocks",
            stdin=json.dumps(edit),
        ),
    ]
    if peer is not None:
        found += [
            Cmd("agent-sync lock", [peer, "lock", "new{i}/x.py", "--reason", "bench"], "peer"),
            Cmd("agent-sync locks", [peer, "locks"], "peer"),
            Cmd("agent-sync unlock", [peer, "unlock", "new{i}/x.py"], "peer"),
        ]
    return found


# (gitlocks command, what it is compared with)
PAIRS = [
    ("gitlocks acquire", "agent-sync lock"),
    ("gitlocks list", "agent-sync locks"),
    ("gitlocks release", "agent-sync unlock"),
    *(
        (f"gitlocks {verb}", floor)
        for verb in (
            "acquire",
            "list",
            "check",
            "status",
            "release",
            "guard (block mode, free path)",
        )
        for floor in ("floor: python3 -c pass", "floor: git rev-parse --git-dir")
    ),
]


def timed(cmd: Cmd, i: int, cwd: Path, env: dict[str, str]) -> float:
    argv = [a.replace("{i}", str(i)) for a in cmd.argv]
    stdin = cmd.stdin.replace("{i}", str(i)).encode()
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, input=stdin, capture_output=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in cmd.codes:
        err = proc.stderr.decode(errors="replace")[:2000]
        raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}\n{err}")
    return elapsed * 1000


def seed_peer(peer: str, repo: Path, env: dict[str, str]) -> None:
    """10 exact-path locks of other agents in agent-sync's database."""
    subprocess.run([peer, "init"], cwd=repo, env=env, check=True, capture_output=True)
    for i in range(10):
        other = dict(env, AGENT_SYNC_ID=f"agent-{i % 7}")
        argv = [peer, "lock", f"area{i}/app.py", "--reason", "seeded", "--ttl", "120"]
        subprocess.run(argv, cwd=repo, env=other, check=True, capture_output=True)


def lfs_note() -> str | None:
    """Why git-lfs is not compared here, or None when its pieces are at hand."""
    missing = []
    if shutil.which("go") is None:
        missing.append("no Go toolchain")
    source = os.environ.get("GIT_LFS_SOURCE")
    if not source or not (Path(source) / "t" / "cmd" / "lfstest-gitserver.go").is_file():
        missing.append("no git-lfs source (GIT_LFS_SOURCE, with t/cmd/lfstest-gitserver.go)")
    if shutil.which("git-lfs") is None:
        missing.append("no git-lfs client")
    if not missing:
        return "git-lfs: its pieces are here, but this script does not drive its server yet"
    return "git-lfs: skipped (" + "; ".join(missing) + ")"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    bindir = Path(sys.executable).parent
    alock = str(bindir / "git-alock")
    peer = shutil.which("agent-sync", path=str(bindir)) or shutil.which("agent-sync")
    compile_bytecode()
    cmds = commands(alock, peer)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        os.environ["HOME"] = tmp
        os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
        for key in ("AGENT_ID", "AGENT_PARENT_ID", "AGENT_SESSION_PID"):
            os.environ.pop(key, None)
        git(base, "config", "--global", "user.name", "bench")
        git(base, "config", "--global", "user.email", "bench@example.invalid")
        env = dict(os.environ, AGENT_ID="bench-main", AGENT_SYNC_ID="bench-main")
        env["PATH"] = str(bindir) + os.pathsep + env.get("PATH", "")
        repos = {"gitlocks": make_repo(base, "gitlocks"), "peer": make_repo(base, "peer")}
        seed_locks(repos["gitlocks"], 10)
        git(repos["gitlocks"], "config", "alock.guardMode", "block")  # the guard only asks
        if peer is not None:
            seed_peer(peer, repos["peer"], env)
        samples: dict[str, list[float]] = {c.label: [] for c in cmds}
        started = time.perf_counter()
        for i in range(args.runs + 1):  # round 0 warms the page cache and is not counted
            for cmd in cmds:
                ms = timed(cmd, i, repos[cmd.where], env)
                if i:
                    samples[cmd.label].append(ms)
        wall = time.perf_counter() - started
        versions = f"Python {sys.version.split()[0]}, {git(base, '--version')}"
    print(f"Whole processes, {args.runs} rounds interleaved; 10 locks of others in each table")
    print(f"{'command':<40}{'median ms':>10}")
    for cmd in cmds:
        print(f"{cmd.label:<40}{statistics.median(samples[cmd.label]):10.1f}")
    print()
    print(f"{'ratio (median of per-round ratios)':<72}{'median':>8}")
    for mine, other in PAIRS:
        if other not in samples or mine not in samples:
            continue
        ratios = [a / b for a, b in zip(samples[mine], samples[other], strict=True)]
        print(f"{mine + ' / ' + other:<72}{statistics.median(ratios):7.2f}x")
    if peer is None:
        print("claude-agent-sync: skipped (agent-sync is not installed: pip install it)")
    print(lfs_note())
    print(f"(timed loop {wall:.0f} s; {versions})")


if __name__ == "__main__":
    main()
