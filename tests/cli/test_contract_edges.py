"""The product contract (docs/design.md) at its edges: each test failed on the code it was
written against, and says what the contract expects instead.

Local tests use real repositories; the remote ones (marked slow) use bare repositories over
``file://``, never the network.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pygit2
import pytest
from conftest import git
from support.cli import Result, alock
from support.remote import make_bare, make_clone

from gitlocks.core.record import expiry_from, format_time, utcnow
from gitlocks.layout import CACHE_FILE, JOURNAL_REF, LOCK_PREFIX, SYNC_FILE

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


# --- 1. double grant: a verdict kept under the previous bucket rule -----------------------


def test_verdicts_kept_under_an_older_bucket_rule_are_not_believed(repo: Path) -> None:
    """Commit a29eb40 fixed ``bucket_of`` (``./src`` was filed under ``.``, so a claim on
    ``src/x`` never met it: a double grant), but left the verdicts file at ``"format": 1``.
    A repository that ran the earlier version keeps that version's verdict for the blob,
    and a well-formed verdict is believed (4.5): the record stays in bucket ``.`` and the
    double grant outlives the fix. A change to what a verdict means must change the
    file's format (or its name), so that old verdicts are dropped, not believed."""
    assert alock(repo, "acquire", "docs", "--as", "zed").code == 0  # a journal exists
    hand_record(repo, "handmade", paths=["./src"], expires_at="2099-01-01T00:00:00Z")
    oid = git(repo, "rev-parse", LOCK_PREFIX + "handmade").strip()
    assert alock(repo, "list").code == 0  # the current version keeps its verdicts
    common = (repo / git(repo, "rev-parse", "--git-common-dir").strip()).resolve()
    path = common / CACHE_FILE
    assert oid.encode() in path.read_bytes()
    # What the version before a29eb40 wrote for this blob, byte for byte in shape.
    kept = {
        "format": 1,
        "verdicts": {oid: ["handmade", "alice", None, "2099-01-01T00:00:00Z", "."]},
    }
    path.write_text(json.dumps(kept, separators=(",", ":")))
    check = alock(repo, "check", "src/x", "--as", "bob")
    assert check.code == 1 and check.word.startswith("HELD"), check.out
    got = alock(repo, "acquire", "src/x", "--as", "bob")
    assert got.code == 1 and got.word == "REFUSED", f"double grant: {got.out}"


# --- 2. an explicit id's lock dies with the process that ran git alock --------------------

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
    refused = alock(repo, "acquire", "src/app.py", "--as", "bob")
    assert refused.code == 1, f"alice's live claim was auto-released: {refused.out}"
    assert rec["pid"] == 0 or rec["host_id"] == "", f"an explicit id bound to a session: {rec}"


# --- 3. a parent inferred from the process tree --------------------------------------------


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


# --- 4. remote mode ---------------------------------------------------------------------------


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
    assert isinstance(old, pygit2.Commit)
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


def test_a_bug_still_answers_json_to_an_agent_that_asked_for_it(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An internal error is exit 2 with a traceback on stderr, and, under --json, the error
    document on stdout, as for every other error: the agent parses an answer, not nothing."""
    from gitlocks.service import locks

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("a bug")

    monkeypatch.setattr(locks, "check", broken)
    got = alock(repo, "check", "src/app.py", "--json", AGENT_ID="agent-a")
    assert got.code == 2 and "Traceback" in got.err
    assert got.json() == {
        "status": "error",
        "error": "internal error: RuntimeError: a bug",
        "exit_code": 2,
    }
    plain = alock(repo, "check", "src/app.py", AGENT_ID="agent-a")
    assert plain.code == 2 and plain.out == ""


def test_a_json_document_is_laid_out_as_json_indents_it(repo: Path) -> None:
    """Two-space indent, ", " and ": " between items, characters beyond ASCII as they are,
    one trailing newline: scripts that compare documents byte for byte rely on it."""
    assert alock(repo, "acquire", "src/**", "-m", "café ünïcode", AGENT_ID="agent-a").code == 0
    listed = alock(repo, "list", "--json", AGENT_ID="agent-a")
    assert listed.code == 0
    assert "café ünïcode" in listed.out
    assert listed.out == json.dumps(listed.json(), indent=2, ensure_ascii=False) + "\n"
