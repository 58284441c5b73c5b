"""Remote mode over each transport people push lock refs over: a local path, ``git daemon``,
smart HTTP through ``git http-backend`` and ssh to an ``sshd`` (support/servers.py). The
contract's core runs over all four: claims, a refused overlap, a duel, a release, a lost race
read again, a push the host refuses and a host that cannot be reached. The heavy races run
over one transport (test_remote.py, test_consistency.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import git
from support.cli import alock, cli_env, finish
from support.remote import make_clone, refs_of, remote_events, remote_locks
from support.servers import Host, Remote, host, serve

__all__ = ["host"]  # the fixture, imported so pytest finds it

A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}

# git's own words for a host it could not reach, by transport: the error passes them on.
UNREACHABLE = {
    "path": "does not appear to be a git repository",
    "daemon": "unable to connect",
    "http": "Failed to connect",
    "ssh": "Could not read from remote repository",
}

# Sleeps until a shared start time, then becomes ``git alock``: a barrier across processes.
_AT = r"""
import os, sys, time
time.sleep(max(0.0, float(sys.argv[1]) - time.time()))
os.execvp("git", ["git", "alock", *sys.argv[2:]])
"""


def clones(remote: Remote, tmp_path: Path, *names: str) -> list[Path]:
    return [make_clone(remote.url, tmp_path / name) for name in names]


def lock_refs(bare: Path) -> dict[str, str]:
    listed = git(bare, "for-each-ref", "--format=%(refname) %(objectname)",
                 "refs/agent-locks/", "refs/agent-locks-meta/")  # fmt: skip
    return dict(line.split(" ") for line in listed.splitlines())


def pre_receive(bare: Path, body: str) -> None:
    hook = bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\n" + body + "\n")
    hook.chmod(0o755)


def test_a_claim_is_refused_on_another_clone_until_released(host: Host, tmp_path: Path) -> None:
    remote = host.remote()
    a, b = clones(remote, tmp_path, "a", "b")
    got = alock(a, "acquire", "src/api/**", "-m", "auth", **A)
    assert got.code == 0, got.err
    [lock_id] = remote_locks(remote.bare)
    refused = alock(b, "acquire", "src/api/auth.py", **B)
    assert refused.code == 1 and refused.word == "REFUSED", refused
    assert "HELD src/api/** by agent-a" in refused.out
    fresh = alock(b, "list", "--json", "--fresh")
    assert [r["holder"] for r in fresh.json()] == ["agent-a"], fresh
    assert alock(a, "release", "src/api/**", **A).code == 0
    assert lock_id not in remote_locks(remote.bare)
    got = alock(b, "acquire", "src/api/auth.py", **B)
    assert got.code == 0, got.err
    assert [r.holder for r in remote_locks(remote.bare).values()] == ["agent-b"]
    kinds = [e["event"] for e in remote_events(remote.bare)]
    assert kinds == ["granted", "released", "granted"]


def test_two_clones_claiming_one_path_at_once_have_one_winner(host: Host, tmp_path: Path) -> None:
    remote = host.remote()
    config = {"alock.remoteTimeout": "5m"}  # the remote decides the race, never a timeout
    duelists = [make_clone(remote.url, tmp_path / f"d{i}", config=config) for i in range(2)]
    rounds = 2
    for round_no in range(rounds):
        start = time.time() + 0.3
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _AT, repr(start), "acquire", "duel/**", "--json"],
                cwd=clone,
                env=cli_env({"AGENT_ID": f"d{i}"}),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i, clone in enumerate(duelists)
        ]
        results = [finish(proc, timeout=120) for proc in procs]
        for i, got in enumerate(results):
            assert got.code in (0, 1), f"round {round_no}: d{i} could not run: {got}"
        statuses = [got.json()["status"] for got in results]
        assert sorted(statuses) == ["acquired", "refused"], f"round {round_no}: {statuses}"
        winner = statuses.index("acquired")
        assert [r.holder for r in remote_locks(remote.bare).values()] == [f"d{winner}"]
        released = alock(duelists[winner], "release", "duel/**", AGENT_ID=f"d{winner}")
        assert released.code == 0, f"round {round_no}: release by d{winner}: {released}"
    kinds = [e["event"] for e in remote_events(remote.bare)]
    assert kinds == ["granted", "released"] * rounds
    assert remote_locks(remote.bare) == {}


def test_a_claim_that_lost_the_race_is_decided_on_the_table_read_again(
    host: Host, tmp_path: Path
) -> None:
    """B's claim lands on the remote while A's push is on its way (the remote's hook puts it
    there, once): A's push is refused, and A decides again on the table it reads then."""
    remote = host.remote()
    a, b = clones(remote, tmp_path, "a", "b")
    before = lock_refs(remote.bare)
    assert alock(b, "acquire", "src/**", **B).code == 0
    after = lock_refs(remote.bare)
    # The remote back as it was before B's claim; the hook moves it on to B's claim again.
    undo = [f"delete {ref}\n" for ref in after if ref not in before]
    undo += [f"update {ref} {oid}\n" for ref, oid in before.items()]
    subprocess.run(["git", "update-ref", "--stdin"], cwd=remote.bare, input="".join(undo),
                   text=True, check=True)  # fmt: skip
    (tmp_path / "redo").write_text("".join(f"update {ref} {oid}\n" for ref, oid in after.items()))
    pre_receive(
        remote.bare,
        f"cat >/dev/null\n"
        f"mkdir '{tmp_path}/raced' 2>/dev/null || exit 0\n"
        # git forbids ref updates from inside the push's quarantine; B's objects are in.
        f"env -u GIT_QUARANTINE_PATH git update-ref --stdin < '{tmp_path}/redo'",
    )
    got = alock(a, "acquire", "src/api/**", **A)
    assert (tmp_path / "raced").is_dir(), got
    assert got.code == 1 and got.word == "REFUSED", got
    assert "HELD src/** by agent-b" in got.out
    assert lock_refs(remote.bare) == after
    assert alock(a, "list", "--json").json()[0]["holder"] == "agent-b"


def test_a_push_the_host_refuses_is_an_error_that_changes_nothing(
    host: Host, tmp_path: Path
) -> None:
    remote = host.remote()
    [a] = clones(remote, tmp_path, "a")
    pre_receive(remote.bare, "echo 'no lock refs on this host' >&2; exit 1")
    before, served = refs_of(a), refs_of(remote.bare)
    got = alock(a, "acquire", "src/**", **A)
    assert got.code == 2, got
    assert got.err.startswith("error: ") and "refused the lock refs" in got.err, got.err
    assert "no lock refs on this host" in got.err or "pre-receive hook declined" in got.err
    assert refs_of(a) == before and refs_of(remote.bare) == served


def test_a_stopped_host_is_an_error_that_changes_nothing(host: Host, tmp_path: Path) -> None:
    remote = host.remote()
    [a] = clones(remote, tmp_path, "a")
    assert alock(a, "acquire", "src/**", **A).code == 0
    host.stop()
    before = refs_of(a)
    for args in (("acquire", "docs/**"), ("release", "src/**"), ("sync",)):
        got = alock(a, *args, **A)
        assert got.code == 2, (args, got)
        assert got.err.startswith("error: cannot reach the lock remote 'origin'"), got.err
        assert UNREACHABLE[host.name] in got.err, got.err
        assert "Traceback" not in got.err
        assert refs_of(a) == before
    assert alock(a, "list", "--json").json()[0]["paths"] == ["src/**"]  # offline reads work
    host.start()
    assert alock(a, "acquire", "docs/**", **A).code == 0
    held = sorted(p for r in remote_locks(remote.bare).values() for p in r.paths)
    assert held == ["docs/**", "src/**"]


def traced_git(cwd: Path, *args: str) -> str:
    """git's stderr with the headers of its HTTP requests traced."""
    env = cli_env({"GIT_TRACE_CURL": "1", "GIT_TRACE_CURL_NO_DATA": "1"})
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stderr


def test_the_http_host_takes_chunked_and_gzipped_bodies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git sends a push over ``http.postBuffer`` chunked, without a length, and a long
    negotiation gzipped: the test server passes both on as git sent them
    (support/smarthttp.py)."""
    with serve("http", tmp_path / "served", monkeypatch) as http:
        remote = http.remote()
        work = tmp_path / "work"
        git(tmp_path, "clone", "-q", remote.url, work.name)
        (work / "big").write_bytes(os.urandom(200_000))
        git(work, "add", "big")
        git(work, "commit", "-q", "-m", "big")
        pushed = traced_git(work, "-c", "http.postBuffer=4096", "push", "-q", "origin",
                            "HEAD:refs/heads/big")  # fmt: skip
        assert "Transfer-Encoding: chunked" in pushed
        assert git(remote.bare, "rev-parse", "big") == git(work, "rev-parse", "HEAD")
        # Many commits the client lacks, each on a branch of its own: the first request
        # of the fetch names them all ("want" lines, some 5 KB), which git sends gzipped.
        tree = git(remote.bare, "rev-parse", "main^{tree}").strip()
        made = {}
        for n in range(100):
            made[f"refs/heads/w{n}"] = git(
                remote.bare, "commit-tree", tree, "-p", "main", "-m", f"other {n}"
            ).strip()
        feed = "".join(f"create {ref} {oid}\n" for ref, oid in made.items())
        subprocess.run(["git", "update-ref", "--stdin"], cwd=remote.bare, input=feed,
                       text=True, check=True)  # fmt: skip
        fetched = traced_git(work, "fetch", "-q", "origin", "refs/heads/w*:refs/remotes/origin/w*")
        assert "Content-Encoding: gzip" in fetched
        for ref, oid in made.items():
            local = ref.replace("refs/heads/", "refs/remotes/origin/")
            assert git(work, "rev-parse", local).strip() == oid


def test_an_ssh_host_that_refuses_the_connection_is_told_with_ssh_s_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve("ssh", tmp_path / "served", monkeypatch) as ssh:
        [a] = clones(ssh.remote(), tmp_path, "a")
        ssh.stop()
        got = alock(a, "acquire", "src/**", **A)
    assert got.code == 2 and got.err.startswith("error: cannot reach the lock remote"), got
    assert "Connection refused" in got.err, got.err
