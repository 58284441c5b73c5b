"""Every verb through the command line: reply words, exit codes and JSON shapes."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import git
from support.cli import alock, alock_process

from gitlocks import __version__

A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}


def test_acquire_refuse_release_cycle(repo: Path) -> None:
    got = alock(repo, "acquire", "src/api/**", "-m", "rewrite auth", **A)
    assert got.code == 0, got.err
    assert got.word.startswith("ACQUIRED src/api/**")
    assert "expires in 30m" in got.out

    refused = alock(repo, "acquire", "src/api/auth.py", "-m", "fix", **B)
    assert refused.code == 1
    lines = refused.out.splitlines()
    assert lines[0] == "REFUSED"
    assert lines[1].startswith("HELD src/api/** by agent-a (crosses your src/api/auth.py)")
    assert '"rewrite auth"' in lines[1] and "expires in" in lines[1]

    assert alock(repo, "acquire", "src/web/**", **B).code == 0
    again = alock(repo, "acquire", "src/api/**", **A)
    assert again.code == 0 and again.word.startswith("ALREADY YOURS")

    released = alock(repo, "release", "src/api/**", **A)
    assert released.code == 0 and released.word.startswith("RELEASED src/api/**")
    assert alock(repo, "acquire", "src/api/auth.py", **B).code == 0


def test_acquire_json_shapes(repo: Path) -> None:
    first = alock(repo, "acquire", "src/*.py", "--json", "-m", "x", **A).json()
    assert first["status"] == "acquired" and first["conflicts"] == []
    lock = first["lock"]
    for key in (
        "id",
        "holder",
        "parent",
        "paths",
        "reason",
        "created_at",
        "renewed_at",
        "expires_at",
        "host",
        "pid",
        "worktree",
        "branch",
        "head",
        "notes",
    ):
        assert key in lock
    assert lock["format"] == 1 and lock["paths"] == ["src/*.py"] and lock["holder"] == "agent-a"
    assert lock["expires_at"].endswith("Z") and lock["branch"] == "main"

    refused = alock(repo, "acquire", "src/a*", "--json", **B)
    assert refused.code == 1
    doc = refused.json()
    assert doc["status"] == "refused" and doc["lock"] is None
    [conflict] = doc["conflicts"]
    assert conflict["id"] == lock["id"] and conflict["holder"] == "agent-a"
    assert conflict["paths"] == ["src/*.py"]
    assert conflict["overlapping"] == [["src/a*", "src/*.py"]]
    assert conflict["expires_at"] == lock["expires_at"]

    same = alock(repo, "acquire", "src/*.py", "--json", **A).json()
    assert same["status"] == "already_yours" and same["lock"]["id"] == lock["id"]


def test_multi_pattern_claim_is_all_or_nothing(repo: Path) -> None:
    assert alock(repo, "acquire", "docs/**", **A).code == 0
    got = alock(repo, "acquire", "src/**", "docs/guide.md", **B)
    assert got.code == 1
    listing = alock(repo, "list", "--json").json()
    assert [r["paths"] for r in listing] == [["docs/**"]]


def test_relative_patterns_from_subdirectory(repo: Path) -> None:
    sub = repo / "src"
    got = alock(sub, "acquire", "api/*.py", "--json", **A).json()
    assert got["lock"]["paths"] == ["src/api/*.py"]
    root = alock(sub, "acquire", ":/docs", "--json", **A).json()
    assert root["lock"]["paths"] == ["docs"]
    absolute = alock(sub, "acquire", str(repo / "tools"), "--json", **A).json()
    assert absolute["lock"]["paths"] == ["tools"]
    check = alock(repo / "src", "check", "api/x.py", "--json", **B).json()
    assert check[0]["path"] == "src/api/x.py" and check[0]["status"] == "held"


def test_exact_file_rule(repo: Path) -> None:
    (repo / "packages").mkdir()
    (repo / "packages" / "README.md").write_text("x\n")
    got = alock(repo, "acquire", "packages/README.md", "--json", **A).json()
    assert got["lock"]["exact"] == ["packages/README.md"]
    # Not a file yet: covers its subtree, but the existing file is only itself.
    assert alock(repo, "acquire", "packages/*/package.json", **B).code == 0
    assert alock(repo, "acquire", "packages/README.md/x", **B).code == 0
    assert alock(repo, "acquire", "packages/READ*", **B).code == 1


def test_check_free_yours_held(repo: Path) -> None:
    assert alock(repo, "acquire", "src/api/**", **A).code == 0
    mine = alock(repo, "check", "src/api/x.py", **A)
    assert mine.code == 0 and mine.word.startswith("YOURS src/api/x.py")
    held = alock(repo, "check", "src/api/x.py", "README.md", **B)
    assert held.code == 1
    assert held.out.splitlines()[0].startswith("HELD src/api/x.py by agent-a")
    assert held.out.splitlines()[1] == "FREE README.md"
    doc = alock(repo, "check", "README.md", "src/api/x.py", "--json", **B).json()
    assert [d["status"] for d in doc] == ["free", "held"]
    assert doc[1]["locks"][0]["holder"] == "agent-a"


def test_renew_and_note(repo: Path) -> None:
    assert alock(repo, "acquire", "src/**", "--ttl", "1m", **A).code == 0
    renewed = alock(repo, "renew", "--ttl", "2h", **A)
    assert renewed.code == 0 and renewed.word.startswith("RENEWED src/**")
    assert "expires in 2h" in renewed.out
    assert alock(repo, "renew", **B).code == 1
    noted = alock(repo, "note", "src/**", "half done", **A)
    assert noted.code == 0 and noted.word.startswith("NOTED")
    [record] = alock(repo, "list", "--json").json()
    assert [n["text"] for n in record["notes"]] == ["half done"]
    assert alock(repo, "note", "src/**", "mine?", **B).code == 1


def test_renew_says_which_claims_were_lost_and_by_whom(repo: Path) -> None:
    """A renewal after someone broke a claim says so (exit 1), once: the renewal is the
    holder's write, so the next one has no news. A pattern named again is answered from
    further back; one never held is NOT LOCKED."""
    assert alock(repo, "acquire", "src/**", **A).code == 0
    assert alock(repo, "acquire", "docs/**", **A).code == 0
    assert alock(repo, "break", "src/**", **B).code == 0
    told = alock(repo, "renew", **A)
    assert told.code == 1 and told.word.startswith("BROKEN src/** by agent-b at "), told
    assert "acquire again to go on" in told.word
    assert "RENEWED docs/**" in told.out or "KEPT docs/**" in told.out
    assert alock(repo, "renew", **A).code == 0  # told already
    doc = alock(repo, "renew", "--json", "src/**", "docs/**", "lib/**", **A)
    assert doc.code == 1, doc
    got = doc.json()
    assert [(x["event"], x["by"], x["paths"], x["pattern"]) for x in got["lost"]] == [
        ("broken", "agent-b", ["src/**"], "src/**")
    ]
    assert got["not_locked"] == ["lib/**"] and got["status"] in ("renewed", "kept")
    named = alock(repo, "renew", "lib/**", **A)
    assert named.code == 1 and named.out == "NOT LOCKED lib/**: you hold no lock there\n"


def test_renew_says_a_claim_expired_or_was_released_by_the_lead(repo: Path) -> None:
    kid = {"AGENT_ID": "kid", "AGENT_PARENT_ID": "boss"}
    assert alock(repo, "acquire", "k/**", **kid).code == 0
    assert alock(repo, "acquire", "j/**", **kid).code == 0
    assert alock(repo, "release", "--all", AGENT_ID="boss").code == 0
    told = alock(repo, "renew", **kid)
    assert told.code == 1, told
    assert sorted(told.out.splitlines()) == [
        f"NOT LOCKED {p}: released by boss at {at}; acquire again to go on [lock {i}]"
        for p, at, i in sorted(
            (e["paths"][0], e["at"], e["id"])
            for e in alock(repo, "log", "--json").json()
            if e["event"] == "released"
        )
    ]
    assert alock(repo, "acquire", "e/**", "--ttl", "1", **A).code == 0
    time.sleep(1.2)
    assert alock(repo, "acquire", "f/**", **B).code == 0  # sweeps A's expired claim
    gone = alock(repo, "renew", **A)
    assert gone.code == 1 and gone.word.startswith("NOT LOCKED e/**: it expired (swept by "), gone
    assert "agent-b's write" in gone.word


def test_release_partial_and_all(repo: Path) -> None:
    assert alock(repo, "acquire", "a/**", "b/**", **A).code == 0
    got = alock(repo, "release", "a/**", **A)
    assert got.code == 0 and "still holding b/**" in got.out
    assert alock(repo, "release", "zzz", **A).word == "NOT LOCKED zzz"
    other = alock(repo, "release", "b/**", **B)
    assert other.code == 1 and other.word.startswith("HELD b/** by agent-a")
    assert alock(repo, "acquire", "c/**", **A).code == 0
    done = alock(repo, "release", "--all", "--json", **A).json()
    assert done["status"] == "released" and len(done["released"]) == 2
    assert alock(repo, "list", "--json").json() == []


def test_break_records_who_broke_it(repo: Path) -> None:
    lock = alock(repo, "acquire", "src/**", "--json", **A).json()["lock"]
    got = alock(repo, "break", lock["id"], **B)
    assert got.code == 0 and got.word.startswith("BROKEN src/** held by agent-a")
    assert alock(repo, "break", lock["id"], **B).code == 1
    assert alock(repo, "acquire", "src/x", **A).code == 0
    by_pattern = alock(repo, "break", "src/**", "--json", **B).json()
    assert by_pattern["status"] == "broken" and by_pattern["locks"][0]["paths"] == ["src/x"]
    log = git(repo, "log", "--format=%B", "refs/agent-locks-meta/journal")
    assert '"by": "agent-b"' in log and '"event": "broken"' in log


def test_list_human_output(repo: Path) -> None:
    assert alock(repo, "list").out.strip() == "no locks"
    alock(repo, "acquire", "src/**", "-m", "refactor", **A)
    alock(repo, "acquire", "docs/**", **B)
    out = alock(repo, "ls", **A).out.splitlines()
    assert out[0].split() == ["ID", "HOLDER", "PATHS", "EXPIRES", "STATE", "REASON"]
    assert out[1].startswith("*") and "agent-a" in out[1] and "refactor" in out[1]
    assert not out[2].startswith("*") and "in 30m" in out[2]


def test_ttl_expiry(repo: Path) -> None:
    start = time.monotonic()
    assert alock(repo, "acquire", "src/**", "--ttl", "3", **A).code == 0
    assert alock(repo, "acquire", "src/x", **B).code == 1  # a loaded machine has 3 s for it
    time.sleep(max(0.0, start + 3.2 - time.monotonic()))
    assert alock(repo, "check", "src/x", **B).word == "FREE src/x"
    assert alock(repo, "acquire", "src/x", **B).code == 0
    assert [r["holder"] for r in alock(repo, "list", "--json").json()] == ["agent-b"]
    log = git(repo, "log", "--format=%B", "refs/agent-locks-meta/journal")
    assert '"event": "expired"' in log


def test_ttl_from_git_config(repo: Path) -> None:
    git(repo, "config", "alock.ttl", "2h")
    assert "expires in 2h" in alock(repo, "acquire", "x", **A).out
    git(repo, "config", "alock.ttl", "soon")
    got = alock(repo, "acquire", "y", **A)
    assert got.code == 2 and "alock.ttl" in got.err


def test_whoami_and_version(repo: Path) -> None:
    got = alock(repo, "whoami", "--json", AGENT_ID="kid", AGENT_PARENT_ID="boss").json()
    assert got["holder"] == "kid" and got["holder_source"] == "AGENT_ID"
    assert got["parent"] == "boss" and got["parent_source"] == "AGENT_PARENT_ID"
    human = alock(repo, "whoami", "--as", "me")
    assert human.out.startswith("holder: me (from --as)")
    assert alock(repo, "version").out.strip() == f"gitlocks {__version__}"


def test_worktrees_share_one_table(repo: Path, worktree: Path) -> None:
    assert alock(repo, "acquire", "src/**", **A).code == 0
    got = alock(worktree, "acquire", "src/app.py", **B)
    assert got.code == 1
    assert alock(worktree, "acquire", "docs/**", **B).code == 0
    assert len(alock(repo, "list", "--json").json()) == 2


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["acquire", "[a-"], "invalid pattern"),
        (["acquire", "!src"], "invalid pattern"),
        (["acquire", "src/[z-a]"], "invalid pattern"),
        (["acquire", "../outside"], "outside"),
        (["acquire", "/etc/passwd"], "outside"),
        (["acquire", "x", "--ttl", "0"], "--ttl"),
        (["acquire", "x", "--ttl", "-5"], "--ttl"),
        (["acquire", "x", "--ttl", "abc"], "--ttl"),
        (["acquire", "x", "--ttl", "inf"], "--ttl"),
        (["acquire", "x", "--ttl", "nan"], "--ttl"),
        (["acquire", "x", "--as", "bad name"], "invalid --as id"),
        (["acquire", "x", "--as", "../x"], "invalid --as id"),
        (["acquire", "x", "--as", "a/b"], "invalid --as id"),
        (["acquire", "x", "--as", "a" * 65], "invalid --as id"),
        (["frobnicate"], "No such command"),
        ([], "name a verb"),
        (["acquire"], "Missing argument"),
        (["release", "x", "--all"], "not both"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(repo: Path, args: list[str], needle: str) -> None:
    got = alock(repo, *args)
    assert got.code == 2, got
    assert got.err.startswith("error: ") and needle in got.err
    assert "Traceback" not in got.err
    assert git(repo, "for-each-ref", "refs/agent-locks/", "refs/agent-locks-meta/") == ""


def test_bad_agent_id_env(repo: Path) -> None:
    got = alock(repo, "acquire", "x", AGENT_ID="no spaces please")
    assert got.code == 2 and got.err.startswith("error: invalid")


def test_not_a_repository_and_bare(tmp_path: Path) -> None:
    got = alock(tmp_path, "list")
    assert got.code == 2 and got.err.startswith("error: not a git repository")
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    got = alock(bare, "acquire", "x")
    assert got.code == 2 and "bare repository" in got.err


def test_corrupt_refs_are_reported_not_fatal(repo: Path) -> None:
    junk = _write_blob(repo, b"not json at all")
    git(repo, "update-ref", "refs/agent-locks/junk", junk)
    wrong = _write_blob(repo, b'{"format": 99}')
    git(repo, "update-ref", "refs/agent-locks/future", wrong)
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-ref", "refs/agent-locks/commit", head)
    listing = alock(repo, "list")
    assert listing.code == 0
    assert listing.err.count("warning: refs/agent-locks/") == 3
    assert "not a JSON lock record" in listing.err and "format 99" in listing.err
    assert "commit" in listing.err
    got = alock(repo, "acquire", "src/**", **A)
    assert got.code == 0 and "warning:" in got.err


def _write_blob(repo: Path, data: bytes) -> str:
    proc = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=repo,
        input=data,
        capture_output=True,
        check=True,
    )
    return proc.stdout.decode().strip()


def test_help_explains_with_examples(repo: Path) -> None:
    top = alock(repo, "--help")
    assert top.code == 0 and "acquire" in top.out and "Example" in top.out
    for verb in ("acquire", "release", "renew", "list", "check", "note", "break", "whoami"):
        got = alock(repo, verb, "--help")
        assert got.code == 0 and "Example" in got.out, verb


def test_installed_git_subcommand(repo: Path) -> None:
    got = alock_process(repo, "acquire", "src/**", "-m", "via git", env=A)
    assert got.code == 0, got.err
    assert got.out.startswith("ACQUIRED src/**")
    refused = alock_process(repo, "acquire", "src/x", env=B)
    assert refused.code == 1 and refused.out.startswith("REFUSED")
    bad = alock_process(repo, "nope")
    assert bad.code == 2 and bad.err.startswith("error: ")


def test_ignore_case_repository(repo: Path) -> None:
    git(repo, "config", "core.ignoreCase", "true")
    assert alock(repo, "acquire", "SRC/Api/**", **A).code == 0
    refused = alock(repo, "acquire", "src/api/auth.py", **B)
    assert refused.code == 1 and refused.word == "REFUSED"
    assert alock(repo, "check", "src/API/x", **B).word.startswith("HELD src/API/x by agent-a")
    git(repo, "config", "core.ignoreCase", "false")
    assert alock(repo, "acquire", "src/api/auth.py", **B).code == 0


def test_break_a_gone_id_never_reads_it_as_a_path(repo: Path) -> None:
    assert alock(repo, "acquire", ".", "-m", "whole tree", **A).code == 0
    gone = alock(repo, "break", "0190000aaaa-deadbeef00", **B)
    assert gone.code == 1 and gone.word.startswith("NOT LOCKED")
    assert [r["paths"] for r in alock(repo, "list", "--json").json()] == [["**"]]


def test_break_by_pattern_spares_your_own_locks(repo: Path) -> None:
    assert alock(repo, "acquire", "src/api/**", **A).code == 0
    assert alock(repo, "acquire", "src/web/**", **B).code == 0
    got = alock(repo, "break", "src/**", "--json", **B).json()
    assert [r["holder"] for r in got["locks"]] == ["agent-a"]
    assert [r["holder"] for r in alock(repo, "list", "--json").json()] == ["agent-b"]


def test_a_record_with_a_bad_pattern_is_reported_and_breakable(repo: Path) -> None:
    bad = (
        b'{"format": 1, "id": "bad1", "holder": "F", "paths": ["[a-"], '
        b'"created_at": "2020-01-01T00:00:00Z", "renewed_at": "2020-01-01T00:00:00Z", '
        b'"expires_at": "2099-01-01T00:00:00Z"}'
    )
    git(repo, "update-ref", "refs/agent-locks/bad1", _write_blob(repo, bad))
    listing = alock(repo, "list")
    assert listing.code == 0 and "refs/agent-locks/bad1" in listing.err
    assert alock(repo, "acquire", "src/**", **A).code == 0
    broken = alock(repo, "break", "bad1", **B)
    assert broken.code == 0 and broken.word == "BROKEN unusable ref refs/agent-locks/bad1"
    assert alock(repo, "list").err == ""


def test_spellings_of_one_scope_are_one_claim(repo: Path) -> None:
    assert alock(repo, "acquire", "src/api", **A).code == 0
    again = alock(repo, "acquire", "src/api/**", **A)
    assert again.word.startswith("ALREADY YOURS")
    released = alock(repo, "release", "src/api/", **A)
    assert released.word.startswith("RELEASED src/api")
    assert alock(repo, "list", "--json").json() == []
    assert alock(repo, "acquire", "lib/**", **A).code == 0
    child = alock(repo, "acquire", "lib", AGENT_ID="kid", AGENT_PARENT_ID="agent-a")
    assert child.code == 1 and "narrower" in child.out


def test_renew_keeps_the_lifetime_a_lock_was_claimed_with(repo: Path) -> None:
    assert "expires in 4h" in alock(repo, "acquire", "long", "--ttl", "4h", **A).out
    assert "expires in 4h" in alock(repo, "renew", **A).out
    assert "expires in 30m" in alock(repo, "renew", "--ttl", "30m", **A).out
    longer = alock(repo, "acquire", "long", "--ttl", "8h", **A)
    assert longer.word.startswith("ALREADY YOURS") and "expires in 8h" in longer.out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["acquire", "x", "-m", "bad \udcff byte"], "not valid UTF-8"),
        (["acquire", "x", "-m", "r" * 1001], "at most 1000"),
    ],
)
def test_bad_reason_text(repo: Path, args: list[str], needle: str) -> None:
    got = alock(repo, *args, **A)
    assert got.code == 2 and needle in got.err and "Traceback" not in got.err


def test_help_verb_and_usage_lines_as_the_manual_writes_them(repo: Path) -> None:
    listing = alock(repo, "help")
    assert listing.code == 0 and listing.out.startswith("usage: git alock VERB")
    one = alock(repo, "help", "acquire")
    assert one.code == 0 and "Usage: git alock acquire [OPTIONS] PATTERN..." in one.out
    assert "{" not in one.out.split("Usage:", 1)[1].splitlines()[0]
    missing = alock(repo, "acquire")
    assert missing.code == 2 and "Missing argument 'PATTERN...'" in missing.err
    assert alock(repo, "help", "nope").code == 2


def test_list_long_says_where_each_holder_runs(
    repo: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    env = {"AGENT_ID": "agent-a", "AGENT_SESSION_PID": str(sleeper.pid)}
    assert alock(repo, "acquire", "src/**", "-m", "why", **env).code == 0
    lines = alock(repo, "list", "--long").out.splitlines()
    assert lines[0].split() == ["ID", "HOLDER", "PATHS", "EXPIRES", "STATE", "WHERE", "REASON"]
    assert f"{os.uname().nodename}:python" in lines[1] and f"[{sleeper.pid}]:{repo}" in lines[1]
    assert alock(repo, "list").out.splitlines()[0].split()[-1] == "REASON"  # unchanged
