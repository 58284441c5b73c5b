"""How many git processes each write verb starts, whole processes, from git's own trace.

Each command runs once as an agent runs it (``git-alock`` from this Python's scripts)
with ``GIT_TRACE2_EVENT`` pointing at a file; every git that gitlocks starts writes a
``start`` event there, and so does every git that git itself starts beneath it (a remote's
``upload-pack``, ``receive-pack``; their session ids name their parent's). Printed per
command: the gits gitlocks started, then those git started for them, and with
``--verbose`` each one's arguments (options that only name the repository left out).

Commands, each in a repository where 10 locks of other holders already sit:

- local mode: ``acquire`` of a new path, a refused ``acquire`` (it crosses another
  holder's lock), ``release``;
- remote mode over a path (``alock.remote origin``, the remote a bare repository reached
  by its file system path, laid out sharded as ``git alock remote origin`` lays it out):
  ``acquire``, ``release``.

Then, with ``--runs N`` (default 15), the median milliseconds of each local command and
each remote one over N rounds (a claim then its release, alternately).

Run: python bench/process_bench.py [--runs N] [--verbose]
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

from benchlib import bench_environment, git, make_repo, seed_locks, verb_of

ALOCK = str(Path(sys.executable).parent / "git-alock")


def traced(argv: list[str], cwd: Path, env: dict[str, str], code: int = 0) -> list[list[str]]:
    """The arguments of each git the command started (and of each git started beneath
    one, marked ``child``), in order of their start."""
    with tempfile.NamedTemporaryFile(suffix=".json") as events:
        proc = subprocess.run(
            argv, cwd=cwd, env=dict(env, GIT_TRACE2_EVENT=events.name), capture_output=True
        )
        if proc.returncode != code:
            raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}\n{proc.stderr.decode()}")
        started = []
        for line in Path(events.name).read_text().splitlines():
            event = json.loads(line)
            if event["event"] == "start":
                child = "/" in event.get("sid", "")
                started.append((["child"] if child else []) + verb_of(event["argv"][1:]))
        return started


def remote_clone(base: Path, env: dict[str, str]) -> Path:
    """A clone in remote mode whose lock remote (a path, sharded) holds 10 locks of others."""
    bare = base / "locks.git"
    git(base, "init", "-q", "--bare", str(bare))
    seed = make_repo(base, "seed")
    git(seed, "push", "-q", str(bare), "HEAD:refs/heads/main")
    clone = base / "clone"
    git(base, "clone", "-q", str(bare), str(clone))
    subprocess.run([ALOCK, "remote", "origin"], cwd=clone, env=env, check=True, capture_output=True)
    for k in range(10):
        argv = [ALOCK, "acquire", f"area{k}/**", "-m", "seeded", "--ttl", "2h"]
        other = dict(env, AGENT_ID=f"agent-{k % 7}")
        subprocess.run(argv, cwd=clone, env=other, check=True, capture_output=True)
    return clone


def report(name: str, started: list[list[str]], verbose: bool) -> None:
    own = [s for s in started if s[:1] != ["child"]]
    print(f"{name:28} {len(own):3} git processes, {len(started) - len(own)} beneath them")
    if verbose:
        for argv in started:
            print("    git " + " ".join(argv)[:100])


def timed(argv: list[str], cwd: Path, env: dict[str, str], code: int = 0) -> float:
    begin = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True)
    ms = (time.perf_counter() - begin) * 1000
    if proc.returncode != code:
        raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}\n{proc.stderr.decode()}")
    return ms


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        env = bench_environment(base)
        local = make_repo(base, "local")
        seed_locks(local, 10)
        remote = remote_clone(base, env)
        refused = [ALOCK, "acquire", "area1/x.py", "-m", "bench"]
        for where, repo in (("local", local), ("remote", remote)):
            acquire = [ALOCK, "acquire", "new/x.py", "-m", "bench"]
            report(f"{where} acquire", traced(acquire, repo, env), args.verbose)
            if where == "local":
                report("local acquire (refused)", traced(refused, repo, env, 1), args.verbose)
            report(
                f"{where} release", traced([ALOCK, "release", "new/x.py"], repo, env), args.verbose
            )
        if not args.runs:
            return
        samples: dict[str, list[float]] = {}
        for i in range(args.runs + 1):  # round 0 warms the page cache: not counted
            for where, repo in (("local", local), ("remote", remote)):
                path = f"run{i}/x.py"
                rows = [
                    (f"{where} acquire", [ALOCK, "acquire", path, "-m", "bench"], 0),
                    (f"{where} release", [ALOCK, "release", path], 0),
                ]
                if where == "local":
                    rows.append(("local acquire (refused)", refused, 1))
                for name, argv, code in rows:
                    ms = timed(argv, repo, env, code)
                    if i:
                        samples.setdefault(name, []).append(ms)
        print(f"\nmedian ms over {args.runs} rounds")
        for name, values in samples.items():
            print(f"{name:28} {statistics.median(values):7.1f}")


if __name__ == "__main__":
    main()
