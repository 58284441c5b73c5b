"""git alock beside its peers and the floors, whole processes, round by round. A plain
script: prints figures.

Each round runs, in one fixed order, every command below once, each as a process as an
agent or git runs it, in its own fresh repository where 10 locks of other holders
already sit:

- the floors: ``python3 -c pass`` (starting Python at all) and ``git rev-parse --git-dir``
  (starting git at all);
- every command agents and hooks run, local mode: ``acquire``, ``renew``, ``note``,
  ``check``, ``list``, ``status``, ``whoami``, ``release``, the guard's check of an edit,
  and the three commit hooks ``install-hooks`` installs (``pre-commit``, ``commit-msg``,
  ``post-commit``), each run through its installed shim as git runs it (the staging and
  the commit between them are not timed);
- MCP: ``git alock mcp`` started per round and spoken to over stdio (JSON-RPC, one line
  a message). Three figures: the server's start to its first answer (``initialize``,
  the interpreter and the tool table), then one ``tools/call`` round trip ``acquire`` (the first,
  which opens the store), then one ``release`` (warm). The round trips are calls within
  a running process, not processes, and their ratio to ``python3 -c pass`` says so;
- remote mode (``alock.remote origin``), against a bare remote reached by ``file://`` and
  another by a loopback ``git daemon``, each written by one clone only (uncontended):
  ``acquire`` and ``release`` of one path beside one plain ``git push`` of one new ref to
  the same remote (the yardstick), 10 locks of others on the remote too. After the
  rounds, one traced remote claim over each says where its time goes: each git process it
  starts (from ``GIT_TRACE2_EVENT``), and what importing the remote store costs;
- claude-agent-sync (``agent-sync lock|locks|unlock``): exact-path locks in SQLite, a
  Python command line too. Skipped, with a note, when it is not installed.

- git-lfs (``git lfs lock|locks|unlock``): the Go client against git-lfs's own locks API
  server, lfstest-gitserver, built here from git-lfs's source (``GIT_LFS_SOURCE``, the
  directory holding ``t/cmd/lfstest-gitserver.go``: Debian's source package, for one) with
  Go, served on 127.0.0.1 with its git over ``git http-backend``. Each lock call is one
  HTTP round trip to it, as with any LFS host. Skipped, with a note, where the client, Go
  or the source is missing.

Printed: per command the median milliseconds, and the medians of ratios paired within a
round (gitlocks / peer, gitlocks / floor, remote claim / push), so a busy moment of a
shared machine hits both sides of a ratio alike. Beside each remote's push, the least any
command written in Python could take: starting Python, then the push (beside which the
remote claim's budget, 2x one push, is measured).

``--latency SECONDS`` makes every connection to the file:// remote wait that long before
the remote answers (its upload-pack and receive-pack are wrapped), paid alike by the plain
push and by each connection a claim opens: a stand-in for a distant host.

Run it from a plain install (``pip install .``), as users have it: an editable install's
finder loads in every Python of its environment, the floor included (the bench warns).

Usage: python bench/peers_bench.py [--runs N] [--no-remote] [--no-mcp] [--remote-only]
       [--latency SECONDS]
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
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, NamedTuple

from benchlib import GitDaemon, git, make_repo, seed_locks, verb_of
from scale_bench import compile_bytecode

PYTHON = "floor: python3 -c pass"
GIT = "floor: git rev-parse --git-dir"


class Cmd(NamedTuple):
    label: str
    argv: list[str]  # "{i}" becomes the round number
    where: str  # the repository it runs in: "gitlocks", "peer", "file", "daemon"
    codes: tuple[int, ...] = (0,)
    stdin: str = ""
    before: Callable[[int, Path], None] | None = None  # untimed, in the same repository


def stage(i: int, repo: Path) -> None:
    """A change for the pre-commit hook to check: one new file, staged."""
    (repo / "work").mkdir(exist_ok=True)
    (repo / "work" / f"f{i}.txt").write_text(f"{i}\n")
    git(repo, "add", f"work/f{i}.txt")
    (repo / ".git" / "COMMIT_EDITMSG").write_text(f"change {i}\n")


def commit(i: int, repo: Path) -> None:
    """The commit the post-commit hook follows (its own hooks not run)."""
    git(repo, "commit", "-q", "--no-verify", "-m", f"change {i}")


def commands(alock: str, peer: str | None, remote: bool, lfs: bool = False) -> list[Cmd]:
    py = sys.executable
    edit = {
        "session_id": "bench",
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": "free{i}/app.py"},
    }
    hooks = ".git/hooks/"
    found = [
        Cmd(PYTHON, [py, "-c", "pass"], "gitlocks"),
        Cmd(GIT, ["git", "rev-parse", "--git-dir"], "gitlocks"),
        Cmd("acquire", [alock, "acquire", "new{i}/x.py", "-m", "bench"], "gitlocks"),
        Cmd("renew", [alock, "renew", "--ttl", "1h"], "gitlocks"),
        Cmd("note", [alock, "note", "new{i}/x.py", "halfway"], "gitlocks"),
        Cmd("check", [alock, "check", "area5/a.py", "free/a.py"], "gitlocks", (0, 1)),
        Cmd("list", [alock, "list"], "gitlocks"),
        Cmd("status", [alock, "status"], "gitlocks"),
        Cmd("whoami", [alock, "whoami"], "gitlocks"),
        Cmd("release", [alock, "release", "new{i}/x.py"], "gitlocks"),
        Cmd(
            "guard (block mode, free path)",
            [alock, "guard", "--for", "claude"],
            "gitlocks",
            stdin=json.dumps(edit),
        ),
        Cmd("hook pre-commit", [hooks + "pre-commit"], "gitlocks", before=stage),
        Cmd("hook commit-msg", [hooks + "commit-msg", ".git/COMMIT_EDITMSG"], "gitlocks"),
        Cmd("hook post-commit", [hooks + "post-commit"], "gitlocks", before=commit),
    ]
    if remote:
        for where in ("file", "daemon"):
            found += [
                Cmd(
                    f"git push ({where})",
                    ["git", "push", "-q", "origin", "HEAD:refs/bench/p{i}"],
                    where,
                ),
                Cmd(
                    f"remote acquire ({where})",
                    [alock, "acquire", "r{i}/x.py", "-m", "bench"],
                    where,
                ),
                Cmd(f"remote release ({where})", [alock, "release", "r{i}/x.py"], where),
            ]
    if peer is not None:
        found += [
            Cmd("agent-sync lock", [peer, "lock", "new{i}/x.py", "--reason", "bench"], "peer"),
            Cmd("agent-sync locks", [peer, "locks"], "peer"),
            Cmd("agent-sync unlock", [peer, "unlock", "new{i}/x.py"], "peer"),
        ]
    if lfs:
        found += [
            Cmd("git-lfs lock", ["git", "lfs", "lock", "new{i}/x.py"], "lfs"),
            Cmd("git-lfs locks", ["git", "lfs", "locks"], "lfs"),
            Cmd("git-lfs unlock", ["git", "lfs", "unlock", "new{i}/x.py"], "lfs"),
        ]
    return found


LOCAL = (
    "acquire", "renew", "note", "check", "list", "status", "whoami", "release",
    "guard (block mode, free path)", "hook pre-commit", "hook commit-msg", "hook post-commit",
)  # fmt: skip
MCP = ("mcp: start to first answer", "mcp: tools/call acquire (first)", "mcp: tools/call release")
# (gitlocks command, what it is compared with)
PAIRS = [
    ("acquire", "git-lfs lock"),
    ("list", "git-lfs locks"),
    ("release", "git-lfs unlock"),
    ("acquire", "agent-sync lock"),
    ("list", "agent-sync locks"),
    ("release", "agent-sync unlock"),
    *((verb, PYTHON) for verb in (*LOCAL, *MCP)),
    *(
        (f"remote {verb} ({where})", f"git push ({where})")
        for where in ("file", "daemon")
        for verb in ("acquire", "release")
    ),
]
# The budgets (ceilings, not goals): the claim verbs beside the same job in the same runtime
# and beside git-lfs's client, the guard and the commit hooks beside starting Python, a
# remote claim beside one plain push of one ref to the same remote.
TARGETS: dict[tuple[str, str], float] = {
    **{pair: 0.75 for pair in PAIRS if pair[1].startswith("agent-sync")},
    **{pair: 2.5 for pair in PAIRS if pair[1].startswith("git-lfs")},
    **{(verb, PYTHON): 4.0 for verb in LOCAL if verb.startswith(("guard", "hook"))},
    **{pair: 2.0 for pair in PAIRS if pair[1].startswith("git push")},
}


def timed(cmd: Cmd, i: int, cwd: Path, env: dict[str, str]) -> float:
    if cmd.before is not None:
        cmd.before(i, cwd)
    argv = [a.replace("{i}", str(i)) for a in cmd.argv]
    stdin = cmd.stdin.replace("{i}", str(i)).encode()
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, input=stdin, capture_output=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in cmd.codes:
        err = proc.stderr.decode(errors="replace")[:2000]
        raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}\n{err}")
    return elapsed * 1000


def mcp_round(alock: str, i: int, cwd: Path, env: dict[str, str]) -> list[float]:
    """``git alock mcp`` started, asked ``initialize``, then ``acquire`` and ``release``
    of one path: milliseconds to each answer (see the module's docstring)."""
    proc = subprocess.Popen(
        [alock, "mcp"], cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    send, read = proc.stdin, proc.stdout
    hello = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    }
    path = [f"mcp{i}/x.py"]
    calls: list[tuple[str, dict[str, Any]]] = [
        ("initialize", hello),
        ("tools/call", {"name": "acquire", "arguments": {"paths": path}}),
        ("tools/call", {"name": "release", "arguments": {"paths": path}}),
    ]
    spent = []
    for n, (method, params) in enumerate(calls, 1):
        start = time.perf_counter()
        answer = rpc(send, read, {"jsonrpc": "2.0", "id": n, "method": method, "params": params})
        spent.append((time.perf_counter() - start) * 1000)
        if "result" not in answer or answer["result"].get("isError"):
            raise SystemExit(f"mcp {method}: {answer}")
        if n == 1:
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            send.write(json.dumps(note).encode() + b"\n")
    send.close()
    proc.wait()
    return spent


def rpc(send: IO[bytes], read: IO[bytes], message: dict[str, Any]) -> dict[str, Any]:
    send.write(json.dumps(message).encode() + b"\n")
    send.flush()
    line = read.readline()
    if not line:
        raise SystemExit("mcp: the server ended without answering")
    answer: dict[str, Any] = json.loads(line)
    return answer


def seed_peer(peer: str, repo: Path, env: dict[str, str]) -> None:
    """10 exact-path locks of other agents in agent-sync's database."""
    subprocess.run([peer, "init"], cwd=repo, env=env, check=True, capture_output=True)
    for i in range(10):
        other = dict(env, AGENT_SYNC_ID=f"agent-{i % 7}")
        argv = [peer, "lock", f"area{i}/app.py", "--reason", "seeded", "--ttl", "120"]
        subprocess.run(argv, cwd=repo, env=other, check=True, capture_output=True)


def remote_clone(base: Path, url: str, name: str, alock: str, env: dict[str, str]) -> Path:
    """A clone of ``url`` in remote mode, with 10 locks of other holders on the remote."""
    path = base / name
    subprocess.run(["git", "clone", "-q", url, str(path)], check=True, capture_output=True)
    git(path, "config", "alock.remote", "origin")
    for k in range(10):
        other = dict(env, AGENT_ID=f"agent-{k % 7}")
        argv = [alock, "acquire", f"area{k}/**", "-m", "seeded", "--ttl", "2h"]
        subprocess.run(argv, cwd=path, env=other, check=True, capture_output=True)
    return path


def trace_remote_claim(alock: str, repo: Path, env: dict[str, str], where: str) -> list[str]:
    """Where one remote claim's time goes: each git process it starts, in order, with
    when it started and ended (ms since the claim's process started) and what it ran."""
    with tempfile.NamedTemporaryFile(suffix=".json") as events:
        traced = dict(env, GIT_TRACE2_EVENT=events.name)
        start = time.time()
        subprocess.run(
            [alock, "acquire", "traced/x.py", "-m", "bench"], cwd=repo, env=traced,
            check=True, capture_output=True,
        )  # fmt: skip
        total = (time.time() - start) * 1000
        begun: dict[str, tuple[float, str]] = {}
        rows = []
        for line in Path(events.name).read_text().splitlines():
            event = json.loads(line)
            sid = event.get("sid", "")
            at = stamp(event["time"]) * 1000 - start * 1000
            if "/" in sid:  # a process git itself started (a hook, a remote helper)
                continue
            if event["event"] == "start":
                begun[sid] = (at, " ".join(verb_of(event["argv"][1:]))[:80])
            elif event["event"] == "exit" and sid in begun:
                began, argv = begun[sid]
                rows.append(f"  {began:7.1f} -> {at:7.1f} ms  git {argv}")
    subprocess.run([alock, "release", "traced/x.py"], cwd=repo, env=env, capture_output=True)
    imports = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import gitlocks.store.remote"],
        capture_output=True, text=True,
    ).stderr.splitlines()  # fmt: skip
    heavy = sorted(
        (int(line.split("|")[1]), line.split("|")[2].strip())
        for line in imports
        if line.startswith("import time:") and "cumulative" not in line
    )[-3:]
    rows.append(
        "  importing the remote store (cumulative us): "
        + ", ".join(f"{n} {us}" for us, n in reversed(heavy))
    )
    head = f"one remote claim ({where}): {total:.0f} ms in all; its git processes"
    return [head + " (ms since it started; before the first: Python and imports):", *rows]


def stamp(text: str) -> float:
    """Seconds since the epoch of a trace2 ``time`` (``2026-12-01T17:00:00.123456Z``)."""
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def lfs_note() -> str | None:
    """Why git-lfs is not compared here, or None when its pieces are at hand."""
    missing = []
    if shutil.which("go") is None:
        missing.append("no Go toolchain")
    if lfs_source() is None:
        missing.append("no git-lfs source (GIT_LFS_SOURCE, with t/cmd/lfstest-gitserver.go)")
    if shutil.which("git-lfs") is None:
        missing.append("no git-lfs client")
    return "git-lfs: skipped (" + "; ".join(missing) + ")" if missing else None


def lfs_source() -> Path | None:
    """lfstest-gitserver's source file in ``GIT_LFS_SOURCE``, if it is there."""
    found = Path(os.environ.get("GIT_LFS_SOURCE") or "/nonexistent") / "t" / "cmd"
    server = found / "lfstest-gitserver.go"
    return server if server.is_file() else None


class LfsServer:
    """git-lfs's test server (lfstest-gitserver), built from its source and started on
    127.0.0.1: a locks API, and git over ``git http-backend``, for the repositories in
    ``root``. Basic auth user:pass, as git-lfs's own tests use it."""

    def __init__(self, base: Path) -> None:
        source = lfs_source()
        assert source is not None
        self.root = base / "lfs-served"
        self.root.mkdir()
        binary = base / "lfstest-gitserver"
        # Only the standard library: built without modules, the file named (so its build
        # tag is no obstacle), with Go's cache where it was (a second run is quick).
        env = dict(os.environ, GO111MODULE="off", GOPATH=str(base / "gopath"))
        subprocess.run(
            ["go", "build", "-o", str(binary), str(source)], env=env, check=True,
            capture_output=True,
        )  # fmt: skip
        url_file = self.root / "url"
        env = dict(os.environ, LFSTEST_DIR=str(self.root), LFSTEST_URL=str(url_file))
        self.proc = subprocess.Popen(
            [str(binary)], cwd=self.root, env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        for _ in range(600):  # bounded: 30 s
            if url_file.is_file() and url_file.read_text().startswith("http://127.0.0.1:"):
                break
            time.sleep(0.05)
        else:
            self.stop()
            raise SystemExit("lfstest-gitserver did not say where it listens")
        self.url = url_file.read_text().strip()

    def repository(self, base: Path, name: str, env: dict[str, str]) -> Path:
        """A clone of a new repository on the server, with 10 locks of others there."""
        bare = self.root / f"{name}.git"
        git(self.root, "init", "-q", "--bare", bare.name)
        git(bare, "config", "http.receivepack", "true")
        where = self.url.replace("http://", "http://user:pass@") + f"/{name}.git"
        path = base / name
        subprocess.run(["git", "clone", "-q", where, str(path)], env=env, check=True,
                       capture_output=True)  # fmt: skip
        git(path, "commit", "-q", "--allow-empty", "-m", "initial")
        git(path, "push", "-q", "origin", "HEAD:refs/heads/main")
        for k in range(10):
            argv = ["git", "lfs", "lock", f"area{k}/app.py"]
            subprocess.run(argv, cwd=path, env=env, check=True, capture_output=True)
        return path

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def setup(
    base: Path,
    alock: str,
    peer: str | None,
    remote: bool,
    latency: float = 0.0,
    lfs: LfsServer | None = None,
) -> tuple[dict[str, Path], dict[str, str], GitDaemon | None]:
    os.environ["HOME"] = str(base)
    os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
    for key in ("AGENT_ID", "AGENT_PARENT_ID", "AGENT_SESSION_PID"):
        os.environ.pop(key, None)
    git(base, "config", "--global", "user.name", "bench")
    git(base, "config", "--global", "user.email", "bench@example.invalid")
    env = dict(os.environ, AGENT_ID="bench-main", AGENT_SYNC_ID="bench-main")
    env["PATH"] = str(Path(alock).parent) + os.pathsep + env.get("PATH", "")
    repos = {"gitlocks": make_repo(base, "gitlocks"), "peer": make_repo(base, "peer")}
    seed_locks(repos["gitlocks"], 10)
    git(repos["gitlocks"], "config", "alock.guardMode", "block")  # the guard only asks
    subprocess.run(
        [alock, "install-hooks"], cwd=repos["gitlocks"], env=env, check=True, capture_output=True
    )
    if peer is not None:
        seed_peer(peer, repos["peer"], env)
    if lfs is not None:
        repos["lfs"] = lfs.repository(base, "lfs", env)
    daemon = None
    if remote:
        served = base / "served"
        served.mkdir()
        # One bare remote per transport, each written by its one clone: every claim is
        # uncontended, its view of the remote fresh (a claim whose view is stale costs a
        # refused push and a fetch more: bench/remote_bench.py measures that).
        for name in ("file", "daemon"):
            bare = served / f"{name}.git"
            argv = ["git", "clone", "-q", "--bare", str(repos["peer"]), str(bare)]
            subprocess.run(argv, check=True, capture_output=True)
            git(bare, "config", "receive.denyDeletes", "false")
        daemon = GitDaemon(served)
        daemon.start()
        repos["file"] = remote_clone(base, (served / "file.git").as_uri(), "file", alock, env)
        repos["daemon"] = remote_clone(base, daemon.url("daemon.git"), "daemon", alock, env)
        if latency:
            distant(repos["file"], base, latency)
    return repos, env, daemon


def distant(clone: Path, base: Path, seconds: float) -> None:
    """Make every connection of ``clone`` to its file:// remote (a push, a listing, a
    fetch) wait ``seconds`` before the remote answers: a stand-in for a distant host,
    paid alike by the plain push and by every connection a claim opens."""
    for program in ("upload-pack", "receive-pack"):
        script = base / f"distant-{program}"
        script.write_text(f'#!/bin/sh\nsleep {seconds}\nexec git {program} "$@"\n')
        script.chmod(0o755)
        git(clone, "config", f"remote.origin.{program.replace('-', '')}", str(script))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--no-remote", action="store_true", help="skip remote mode")
    parser.add_argument("--no-mcp", action="store_true", help="skip the MCP server")
    parser.add_argument(
        "--remote-only", action="store_true", help="only the remote section (implies --no-mcp)"
    )
    parser.add_argument(
        "--latency",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="each connection to the file:// remote waits this long first (a distant host)",
    )
    args = parser.parse_args()
    bindir = Path(sys.executable).parent
    alock = str(bindir / "git-alock")
    peer = shutil.which("agent-sync", path=str(bindir)) or shutil.which("agent-sync")
    compile_bytecode()
    with_lfs = lfs_note() is None and not args.remote_only
    cmds = commands(alock, peer, not args.no_remote, with_lfs)
    if args.remote_only:
        args.no_mcp = True
        cmds = [c for c in cmds if c.where in ("file", "daemon")]
    samples: dict[str, list[float]] = {c.label: [] for c in cmds}
    if not args.no_mcp:
        samples.update({label: [] for label in MCP})
    trace: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        lfs = LfsServer(Path(tmp)) if with_lfs else None
        try:
            repos, env, daemon = setup(
                Path(tmp), alock, peer, not args.no_remote, args.latency, lfs
            )
        except BaseException:
            if lfs is not None:
                lfs.stop()
            raise
        try:
            started = time.perf_counter()
            for i in range(args.runs + 1):  # round 0 warms the page cache, not counted
                for cmd in cmds:
                    ms = timed(cmd, i, repos[cmd.where], env)
                    if i:
                        samples[cmd.label].append(ms)
                if not args.no_mcp:
                    spent = mcp_round(alock, i, repos["gitlocks"], env)
                    for label, ms in zip(MCP, spent, strict=True):
                        if i:
                            samples[label].append(ms)
            wall = time.perf_counter() - started
            if not args.no_remote:
                for where in ("file", "daemon"):
                    trace += trace_remote_claim(alock, repos[where], env, where)
        finally:
            if daemon is not None:
                daemon.stop()
            if lfs is not None:
                lfs.stop()
        versions = f"Python {sys.version.split()[0]}, {git(Path(tmp), '--version')}"
    report(samples, args.runs, trace)
    if args.latency:
        print(f"(file://: every connection waited {args.latency:g} s first, as a distant host)")
    if peer is None:
        print("claude-agent-sync: skipped (agent-sync is not installed: pip install it)")
    if not with_lfs:
        print(lfs_note() or "git-lfs: not run with --remote-only")
    print(f"(timed loop {wall:.0f} s; {versions})")


def report(samples: dict[str, list[float]], runs: int, trace: list[str]) -> None:
    print(f"Whole processes, {runs} rounds interleaved; 10 locks of others in each table")
    print(f"{'command':<40}{'median ms':>10}")
    for label, values in samples.items():
        print(f"{label:<40}{statistics.median(values):10.1f}")
    print()
    print(f"{'ratio (median of per-round ratios)':<64}{'median':>8}  target")
    for mine, other in PAIRS:
        if other not in samples or mine not in samples:
            continue
        ratios = [a / b for a, b in zip(samples[mine], samples[other], strict=True)]
        ratio = statistics.median(ratios)
        target = TARGETS.get((mine, other))
        verdict = (
            "" if target is None else f"  <= {target}x " + ("ok" if ratio <= target else "OVER")
        )
        print(f"{mine + ' / ' + other:<64}{ratio:7.2f}x{verdict}")
    print("(the mcp tools/call figures are calls inside a running server, not processes)")
    for where in ("file", "daemon"):
        push = f"git push ({where})"
        if push not in samples or PYTHON not in samples:
            continue
        # A claim is at least a started Python that then pushes: the least any command
        # written in Python could take beside the push, whatever it does inside.
        least = statistics.median(
            (p + f) / p for p, f in zip(samples[push], samples[PYTHON], strict=True)
        )
        print(f"least for any Python command beside {push}: ({PYTHON} + push) / push {least:.2f}x")
    if trace:
        print()
        print("\n".join(trace))


if __name__ == "__main__":
    main()
