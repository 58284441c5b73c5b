"""An outside review's attacks: each test fails on the code it was written against and says
what the contract (docs/design.md) expects instead.

Local tests use real repositories; the remote ones (marked slow) use bare repositories over
``file://``, never the network.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pygit2
import pytest
from conftest import git
from helpers import Result, alock
from remote_fixtures import make_bare, make_clone

from gitlocks.core.record import LockRecord, expiry_from, format_time, new_lock_id, utcnow
from gitlocks.identity import host_identity, process_start_time
from gitlocks.layout import JOURNAL_REF, LOCK_PREFIX, SYNC_FILE
from gitlocks.store.local import Change, Store

BIN = os.path.dirname(sys.executable)


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    env.update(extra or {})
    return env


def no_crash(got: Result, what: str) -> None:
    assert got.code in (0, 1, 2), f"{what}: exit {got.code}"
    assert "Traceback" not in got.err and "internal error" not in got.err, f"{what}: {got.err}"


def hand_record(repo: Path, lock_id: str, **fields: Any) -> None:
    """A lock record written with plain git, as another tool or version could (5.7 item 4)."""
    now = utcnow()
    data: dict[str, Any] = {
        "format": 1,
        "id": lock_id,
        "holder": "alice",
        "parent": None,
        "paths": ["src"],
        "exact": [],
        "reason": "by hand",
        "created_at": format_time(now),
        "renewed_at": format_time(now),
        "expires_at": expiry_from(now, 3600),
        "host": "",
        "pid": 0,
        "pid_start": "",
        "session": "",
        "worktree": "",
        "branch": None,
        "head": None,
        "notes": [],
        "ttl": 3600,
        "host_id": "",
    }
    data.update(fields)
    blob = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=repo,
        input=json.dumps(data, indent=2) + "\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    git(repo, "update-ref", LOCK_PREFIX + lock_id, blob)


# --- 1. double grant: a valid record whose pattern is not in normal form ------------------


@pytest.mark.parametrize("pattern", ["./src", ".", "lib/../src"])
def test_unnormalised_pattern_in_a_record_still_blocks_overlapping_claims(
    repo: Path, pattern: str
) -> None:
    """``./src``, ``.`` and ``lib/../src`` are valid patterns (2.1 rule 6: they normalise
    cleanly, and ``validate_pattern`` accepts them), so a record holding one is a live claim
    (3.7, 5.7 item 4). The table's bucket index files it under ``.`` or ``lib`` instead of
    ``src`` (or every path), so a claim on ``src/x`` never meets it: both are granted, and
    ``check`` answers FREE for a path inside alice's claim."""
    assert alock(repo, "acquire", "docs", "--as", "zed").code == 0  # a journal exists
    hand_record(repo, "handmade", paths=[pattern])
    listed = alock(repo, "list", "--json")
    assert [r["id"] for r in listed.json() if r["id"] == "handmade"], listed.err
    check = alock(repo, "check", "src/x", "--as", "bob")
    assert check.code == 1 and check.word.startswith("HELD"), check.out
    got = alock(repo, "acquire", "src/x", "--as", "bob")
    assert got.code == 1 and got.word == "REFUSED", f"double grant: {got.out}"


# --- 2. the hook and check disagree about a dead holder ------------------------------------


def _dead_lock(repo: Path, holder: str, paths: tuple[str, ...]) -> str:
    """A lock whose session process ran here and has exited (state DEAD)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        start = process_start_time(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    assert start
    now = utcnow()
    record = LockRecord(
        id=new_lock_id(),
        holder=holder,
        paths=paths,
        created_at=format_time(now),
        renewed_at=format_time(now),
        expires_at=expiry_from(now, 1800),
        host=os.uname().nodename,
        host_id=host_identity(),
        pid=proc.pid,
        pid_start=start,
        session="python",
        ttl=1800,
    )
    store = Store.discover(repo)
    store.transact(lambda table: (Change(put=[record], events=[{"event": "granted"}]), None))
    return record.id


def test_hook_agrees_with_check_about_a_dead_holder(repo: Path) -> None:
    """Design 3.3: "check and the hooks treat dead holders' paths as free". ``check`` does;
    the pre-commit hook never judges liveness, so in block mode it refuses a commit that
    ``check --staged`` calls FREE."""
    lock_id = _dead_lock(repo, "alice", ("src",))
    listed = alock(repo, "list")
    assert "DEAD" in listed.out, listed.out
    assert alock(repo, "install-hooks").code == 0
    git(repo, "config", "alock.hookMode", "block")
    (repo / "src" / "app.py").write_text("changed\n")
    git(repo, "add", "-A")
    checked = alock(repo, "check", "--staged", AGENT_ID="bob")
    assert checked.word == "FREE src/app.py", checked.out
    proc = subprocess.run(
        ["git", "commit", "-q", "-m", "edit"],
        cwd=repo,
        env=cli_env({"AGENT_ID": "bob"}),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, (
        f"check says FREE, the hook refused (lock {lock_id} of a dead holder):\n{proc.stderr}"
    )


# --- 3. an explicit id's lock dies with the process that ran git alock --------------------

_SESSION = r"""
import subprocess, sys
p = subprocess.run(["git", "alock", *sys.argv[1:]], capture_output=True, text=True)
sys.stdout.write(p.stdout); sys.stderr.write(p.stderr); sys.exit(p.returncode)
"""


def in_dead_session(cwd: Path, *args: str) -> Result:
    """Run ``git alock ARGS`` under a session process (python) that then exits."""
    proc = subprocess.run(
        [sys.executable, "-c", _SESSION, *args],
        cwd=cwd,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def test_explicit_id_lock_lives_by_its_ttl_not_by_the_launching_process(repo: Path) -> None:
    """Design 3.3: "A claim with an explicit id and no declared session lives by its TTL
    and heartbeats alone." The record carries the launching process as its session, so
    once that process exits the lock is DEAD and the next overlapping claim of another
    holder auto-releases it: alice's two-hour claim is lost after a second."""
    got = in_dead_session(repo, "acquire", "src", "--as", "alice", "--ttl", "2h", "-m", "long")
    assert got.code == 0, got.err
    rec = alock(repo, "list", "--json").json()[0]
    assert rec["pid"] == 0 or rec["host_id"] == "", f"an explicit id bound to a session: {rec}"
    refused = alock(repo, "acquire", "src/app.py", "--as", "bob")
    assert refused.code == 1, f"alice's live claim was auto-released: {refused.out}"


# --- 4. a parent inferred from the process tree --------------------------------------------


def test_release_all_of_the_session_keeps_explicit_ids_locks(repo: Path) -> None:
    """Design 3.2: a parent is only ever declared (AGENT_PARENT_ID); "nothing is inferred
    from the process tree" (the rule making every explicit id a sub-agent of the shell is
    withdrawn). The code still makes ``--as alice`` a child of the session, so a plain
    ``release --all`` from the same terminal releases alice's lock too."""
    assert alock(repo, "acquire", "src", "--as", "alice").code == 0
    who = alock(repo, "whoami", "--as", "alice")
    assert "parent: none" in who.out, who.out
    assert alock(repo, "acquire", "docs").code == 0  # the session's own holder
    released = alock(repo, "release", "--all")
    assert released.code == 0
    left = [r["holder"] for r in alock(repo, "list", "--json").json()]
    assert left == ["alice"], f"release --all of the session released alice's lock: {left}"


# --- 5. crashes on local files that are only caches or logs -------------------------------


def test_log_survives_a_deeply_nested_line_in_the_refusal_log(repo: Path) -> None:
    """The refusal log is a local file: a line of deeply nested JSON (a hand edit, a bad
    writer) makes ``json.loads`` raise RecursionError, which ``json_objects`` does not
    catch: ``log`` crashes with a traceback instead of skipping the line."""
    assert alock(repo, "acquire", "src", "--as", "alice").code == 0
    common = Path(git(repo, "rev-parse", "--git-common-dir").strip())
    path = (repo / common).resolve() / "agent-locks-refusals.jsonl"
    with path.open("a") as f:
        f.write('{"a":' + "[" * 100_000 + "]" * 100_000 + "}\n")
    got = alock(repo, "log")
    no_crash(got, "log")
    assert got.code == 0, got.err


def test_log_survives_a_deeply_nested_event_in_a_journal_commit(repo: Path) -> None:
    """A journal commit message (which in remote mode anyone who can push writes) with a
    deeply nested JSON line crashes ``log`` (RecursionError in ``json_objects``), and keeps
    crashing it for as long as that commit is in the chain."""
    assert alock(repo, "acquire", "src", "--as", "alice").code == 0
    store = pygit2.Repository(str(repo))
    ref = store.references[JOURNAL_REF]
    old = store[ref.target]
    sig = pygit2.Signature("x", "x@example.invalid", 1_700_000_000, 0)
    message = 'x\n\n{"a":' + "[" * 100_000 + "]" * 100_000 + "}\n\nJournal-Seq: 5\n"
    commit = store.create_commit(None, sig, sig, message, old.tree.id, [ref.target])
    store.references.create(JOURNAL_REF, commit, force=True)
    assert alock(repo, "acquire", "docs", "--as", "bob").code == 0
    got = alock(repo, "log")
    no_crash(got, "log")
    assert got.code == 0, got.err


# --- 6. remote mode ---------------------------------------------------------------------------


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    return make_bare(tmp_path / "locks.git")


@pytest.mark.slow
@pytest.mark.parametrize(
    "content",
    ['{"origin": 1' + "0" * 400 + "}", "[" * 100_000 + "]" * 100_000],
    ids=["huge-int", "deeply-nested"],
)
def test_remote_sync_time_file_never_crashes_a_verb(
    bare: Path, tmp_path: Path, content: str
) -> None:
    """``agent-locks-remote.json`` only says when the clone last heard from the remote. A
    huge integer there (OverflowError in ``float``) or deep nesting (RecursionError, which
    is no ValueError) crashes every remote-mode verb with a traceback, until removed by
    hand."""
    clone = make_clone(bare.as_uri(), tmp_path / "c")
    common = Path(git(clone, "rev-parse", "--git-common-dir").strip())
    (clone / common / SYNC_FILE).write_text(content)
    for args in (("list",), ("acquire", "src", "--as", "alice"), ("status", "--as", "alice")):
        got = alock(clone, *args)
        no_crash(got, " ".join(args))
        assert got.code == 0, f"{' '.join(args)}: {got.err}"


def _plant_odd_entry(bare: Path) -> None:
    """A journal commit on the remote whose table holds an entry named ``a b`` (a blob
    that is no record): hostile, but no worse than the bad records of 3.7."""
    remote = pygit2.Repository(str(bare))
    ref = remote.references[JOURNAL_REF]
    old = remote[ref.target]
    root = remote.TreeBuilder(old.tree)
    locks = remote.TreeBuilder(old.tree["locks"]) if "locks" in old.tree else remote.TreeBuilder()
    locks.insert("a b", remote.create_blob(b"not a record\n"), pygit2.GIT_FILEMODE_BLOB)
    root.insert("locks", locks.write(), pygit2.GIT_FILEMODE_TREE)
    sig = pygit2.Signature("x", "x@example.invalid", 1_700_000_000, 0)
    commit = remote.create_commit(
        None, sig, sig, "odd\n\nJournal-Seq: 99\n", root.write(), [ref.target]
    )
    remote.references.create(JOURNAL_REF, commit, force=True)


@pytest.mark.slow
def test_remote_odd_name_in_the_remote_table_does_not_wedge_the_clone(
    bare: Path, tmp_path: Path
) -> None:
    """Design 3.7: a bad record is reported and skipped, and never breaks a verb. An entry
    of the remote journal's table whose name is no ref component (``a b``) makes every
    mirror refuse to write ``refs/agent-locks/a b``: ``sync`` and ``list --fresh`` exit 2
    for every clone until someone else's write drops the entry."""
    clone = make_clone(bare.as_uri(), tmp_path / "c")
    assert alock(clone, "acquire", "docs", "--as", "zed").code == 0
    _plant_odd_entry(bare)
    got = alock(clone, "sync")
    no_crash(got, "sync")
    assert got.code == 0, got.err
    listed = alock(clone, "list", "--fresh")
    assert listed.code == 0, listed.err


@pytest.mark.slow
def test_remote_claim_that_won_is_never_reported_as_an_error(bare: Path, tmp_path: Path) -> None:
    """A push that won is a grant. When the local mirror fails after it (here: the odd
    table entry above; equally a ``.lock`` file of another git command on a local lock
    ref), ``acquire`` exits 2 with ``error: cannot update the local view`` although the
    remote now holds the claim: the agent believes it holds nothing while its lock blocks
    everyone for 30 minutes."""
    clone = make_clone(bare.as_uri(), tmp_path / "c")
    other = make_clone(bare.as_uri(), tmp_path / "o")
    assert alock(clone, "acquire", "docs", "--as", "zed").code == 0
    _plant_odd_entry(bare)
    for _ in range(3):  # each try fetches what the last one saw; bounded
        got = alock(clone, "acquire", "lib", "--as", "bob")
        no_crash(got, "acquire")
        held = alock(other, "acquire", "lib", "--as", "carol")
        if got.code != 0:
            assert held.code == 0, (
                f"acquire exited {got.code} ({got.err.strip()}) but the remote granted it:\n"
                f"{held.out}"
            )
            assert alock(other, "release", "lib", "--as", "carol").code == 0
        else:
            assert held.code == 1, held.out
            break


# --- 7. flat cost ---------------------------------------------------------------------------


def _seed(repo: Path, count: int, holders: int) -> None:
    """``count`` live locks on ``area<i>/**``, held by ``agent-<i % holders>``, packed."""
    store = Store.discover(repo)
    now = utcnow()
    stamp = format_time(now)
    records = [
        LockRecord(
            id=f"{new_lock_id()}-{i:06d}",
            holder=f"agent-{i % holders}",
            paths=(f"area{i}/**",),
            created_at=stamp,
            renewed_at=stamp,
            expires_at=expiry_from(now, 7200),
            ttl=7200,
        )
        for i in range(count)
    ]
    store.transact(lambda table: (Change(put=records, events=[{"event": "seeded"}]), None))
    git(repo, "pack-refs", "--all")


def _timed(repo: Path, *args: str) -> float:
    start = time.perf_counter()
    got = alock(repo, *args)
    assert got.code == 0, got.err
    return time.perf_counter() - start


@pytest.mark.slow
def test_release_all_costs_the_locks_released_not_the_table(tmp_path: Path) -> None:
    """Design 4.5: a verb costs time in the locks it touches, never in the size of the
    table. Releasing one holder's 1,000 locks took 0.74 s in a table of 1,000 and 3.3 s in
    a table of 10,000 (libgit2 locks and deletes each packed ref one by one, rewriting
    ``packed-refs`` each time): the same work, 4.4 times the cost."""
    costs = []
    for count, holders in ((1000, 1), (10_000, 10)):  # agent-0 holds 1,000 locks in both
        path = tmp_path / f"r{count}"
        path.mkdir()
        git(path, "init", "-q")
        (path / "README.md").write_text("x\n")
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", "init")
        _seed(path, count, holders)
        assert alock(path, "list").code == 0  # verdicts kept, as after any first command
        costs.append(_timed(path, "release", "--all", "--as", "agent-0"))
    small, large = costs
    assert large < 2 * small, f"release --all of 1,000 locks: {small:.2f}s vs {large:.2f}s"
