"""How many pushes a guarded Claude Code session costs in remote mode. A plain script:
prints figures.

The session of the push budget: 20 files edited over 30 turns, 10 commits, one hour, with
the agent guard installed as Claude Code runs it and the post-commit hook installed. A
stand-in harness process named ``claude`` (a symbolic link to this Python) runs every hook
through ``sh -c`` with the event as JSON on stdin, as Claude Code does:

- turn k (0..29): an Edit of ``src/f<k>.py`` for k < 20 (the first edit of a file claims
  it), and an Edit of a file the session already holds (no claim: the guard's fast path);
- after every third turn, a commit of the files edited since the last one (the
  post-commit hook: a heartbeat);
- Stop at the end of every turn (renews when due); SessionEnd at the end (releases).

An hour is simulated in ``60 / --scale`` minutes with every duration scaled alike: the
claims' lifetime (alock.ttl, 30 minutes) becomes ``1800 / scale`` seconds, alock.staleAfter
(10 minutes) ``600 / scale``, and turns are
``120 / scale`` seconds apart. Pushes are counted on the remote, a bare repository whose
pre-receive hook writes one line per push it receives; each journal commit the session
added is one push that landed, and its events say what the push was for.

Usage: python bench/session_push_bench.py [--scale 30] [--url file|daemon]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import GitDaemon, git

TURNS, FILES, COMMIT_EVERY = 30, 20, 3
HOUR, TTL, STALE = 3600.0, 1800, 600
JOURNAL = "refs/agent-locks-meta/journal"


def hook(event: dict[str, object], cwd: Path, env: dict[str, str]) -> None:
    """One hook as Claude Code runs it: ``sh -c`` with the event on stdin."""
    proc = subprocess.run(
        ["sh", "-c", "git alock guard --for claude"],
        cwd=cwd,
        env=env,
        input=json.dumps(event).encode(),
        capture_output=True,
    )
    if proc.returncode != 0 or b"WITHOUT a claim" in proc.stdout:
        raise SystemExit(f"guard failed ({proc.returncode}): {proc.stdout!r} {proc.stderr!r}")


def session(repo: Path, scale: float) -> None:
    """The session itself, run inside the stand-in ``claude`` process."""
    env = dict(os.environ)
    turn_s = HOUR / TURNS / scale
    start = time.monotonic()
    base = {"session_id": "bench", "cwd": str(repo), "transcript_path": ""}
    hook({**base, "hook_event_name": "SessionStart", "source": "startup"}, repo, env)
    edited: list[str] = []
    for turn in range(TURNS):
        wait = start + turn * turn_s - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        names = [f"src/f{turn}.py"] if turn < FILES else []
        if edited:
            names.append(edited[turn % len(edited)])  # a file already claimed
        for name in names:
            tool = {"file_path": str(repo / name), "old_string": "a", "new_string": "b"}
            hook({**base, "hook_event_name": "PreToolUse", "tool_name": "Edit",
                  "tool_input": tool}, repo, env)  # fmt: skip
            (repo / name).parent.mkdir(exist_ok=True)
            with open(repo / name, "a") as f:
                f.write(f"# turn {turn}\n")
            if name not in edited:
                edited.append(name)
        if turn % COMMIT_EVERY == COMMIT_EVERY - 1:
            subprocess.run(["sh", "-c", "git add -A src && git commit -q -m turn"],
                           cwd=repo, env=env, check=True, capture_output=True)  # fmt: skip
        hook({**base, "hook_event_name": "Stop", "stop_hook_active": False}, repo, env)
    hook({**base, "hook_event_name": "SessionEnd", "reason": "exit"}, repo, env)


def journal_kinds(bare: Path, since: str) -> list[list[str]]:
    """The event kinds of each journal commit written after ``since``, oldest first."""
    span = f"{since}..{JOURNAL}" if since else JOURNAL
    out = git(bare, "log", "--reverse", "--format=%H%x00%B%x01", span)
    commits = []
    for chunk in out.split("\x01"):
        if "\x00" not in chunk:
            continue
        body = chunk.split("\x00", 1)[1]
        events = [json.loads(ln) for ln in body.splitlines() if ln.startswith("{")]
        kinds = [e["event"] for e in events]
        if os.environ.get("SESSION_BENCH_TRACE"):
            print(events[0].get("at"), kinds, [e.get("by_commit", "")[:7] for e in events])
        commits.append(kinds)
    return commits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=30.0, help="hour / wall time (30)")
    parser.add_argument("--url", choices=("file", "daemon"), default="file")
    parser.add_argument("--inner", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        session(Path(args.inner), args.scale)
        return
    with tempfile.TemporaryDirectory(prefix="alock-session-") as tmp:
        base = Path(tmp)
        served = base / "served"
        served.mkdir()
        git(served, "init", "-q", "--bare", "locks.git")
        bare = served / "locks.git"
        counter = base / "pushes"
        with GitDaemon(served) as daemon:
            url = bare.as_uri() if args.url == "file" else daemon.url("locks.git")
            seed = base / "seed"
            git(base, "init", "-q", "-b", "main", seed.name)
            (seed / "README.md").write_text("shared\n")
            git(seed, "add", "-A")
            git(seed, "commit", "-q", "-m", "initial")
            git(seed, "push", "-q", bare.as_uri(), "main")
            repo = base / "clone"
            git(base, "clone", "-q", url, repo.name)
            ttl = max(2, round(TTL / args.scale))
            git(repo, "config", "alock.ttl", f"{ttl}s")
            git(repo, "config", "alock.staleAfter", f"{max(1, round(STALE / args.scale))}s")
            alock = [sys.executable, "-m", "gitlocks"]
            for cmd in (["remote", "origin"], ["install-hooks"],
                        ["install-agent-hooks", "--for", "claude"]):  # fmt: skip
                done = subprocess.run([*alock, *cmd], cwd=repo, capture_output=True, text=True)
                if done.returncode != 0:
                    raise SystemExit(f"git alock {' '.join(cmd)}: {done.stderr}")
            git(repo, "commit", "-q", "--allow-empty", "-m", "settings")
            before = subprocess.run(
                ["git", "rev-parse", "-q", "--verify", "refs/agent-locks-meta/journal"],
                cwd=bare, capture_output=True, text=True,
            ).stdout.strip()  # fmt: skip
            hook_file = bare / "hooks" / "pre-receive"
            hook_file.write_text(f"#!/bin/sh\necho push >> '{counter}'\ncat >/dev/null\n")
            hook_file.chmod(0o755)
            standin = base / "claude"
            standin.symlink_to(sys.executable)
            env = dict(os.environ)
            env.pop("AGENT_ID", None)
            env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
            started = time.monotonic()
            subprocess.run(
                [str(standin), os.path.abspath(__file__), "--inner", str(repo),
                 "--scale", str(args.scale)],
                env=env, check=True,
            )  # fmt: skip
            took = time.monotonic() - started
            pushes = len(counter.read_text().splitlines()) if counter.exists() else 0
            commits = journal_kinds(bare, before)
    why = collections.Counter("+".join(sorted(set(k))) for k in commits)
    print(f"guarded Claude Code session over {args.url}://: {TURNS} turns, {FILES} files, "
          f"{TURNS // COMMIT_EVERY} commits, one hour simulated in {took:.0f} s "
          f"(scale {args.scale:g}: alock.ttl {ttl}s for 30m, alock.staleAfter alike)")  # fmt: skip
    print(f"pushes received by the remote: {pushes}")
    print(f"journal commits the session wrote: {len(commits)}")
    for kinds, count in sorted(why.items(), key=lambda kv: -kv[1]):
        print(f"  {count:3d}  {kinds}")
    print(f"ten such sessions an hour: {10 * pushes / 60:.1f} pushes a minute")


if __name__ == "__main__":
    main()
