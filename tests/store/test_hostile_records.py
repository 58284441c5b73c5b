"""Hostile blobs and journal commits never break a verb: they are reported and skipped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest
from conftest import git
from support.cli import Result, alock

from gitlocks.git.pruned import KEPT_DIR

A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}


def _blob(repo: Path, data: bytes) -> str:
    proc = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=repo, input=data, capture_output=True
    )
    return proc.stdout.decode().strip()


def _record(**fields: object) -> bytes:
    """A valid record but for ``fields``: times at the ends of the calendar, say."""
    record: dict[str, object] = {
        "format": 1,
        "id": "evil",
        "holder": "h",
        "paths": ["x/**"],
        "created_at": "2026-01-01T00:00:00Z",
        "renewed_at": "2026-01-01T00:00:00Z",
        "expires_at": "2099-01-01T00:00:00Z",
        **fields,
    }
    return json.dumps(record).encode()


@pytest.mark.parametrize(
    "data",
    [
        b'{"format": 1, "id": "evil", "pid": ' + b"9" * 5000 + b"}",
        b"[" * 100_000 + b"]" * 100_000,
        b'{"format": 1, "id": "evil", "reason": "' + b"x" * 400_000 + b'"}',
        b'{"format": 1, "id": "evil", "holder": "h", "paths": ["a"], "notes": [{"at": "junk"}]}',
        _record(expires_at="9999-12-31T23:59:59.5Z"),
        _record(expires_at="9000-12-31T23:59:59.9Z"),
        _record(expires_at="0001-01-01T00:00:00Z", created_at="0001-01-01T00:00:00Z"),
        _record(notes=[{"at": "9999-12-31T23:59:59Z", "text": "n"}]),
    ],
    ids=[
        "huge-number",
        "deep-nesting",
        "huge-blob",
        "bad-note-time",
        "year-9999",
        "year-9000-rounded-up",
        "year-1",
        "note-9999",
    ],
)
def test_a_hostile_record_is_reported_and_breakable(repo: Path, data: bytes) -> None:
    assert alock(repo, "acquire", "src/**", **A).code == 0
    git(repo, "update-ref", "refs/agent-locks/evil", _blob(repo, data))
    for args in (("list",), ("check", "src/x"), ("status",), ("acquire", "docs/**")):
        got = alock(repo, *args, **B)
        assert got.code in (0, 1), (args, got)
        assert "Traceback" not in got.err and "refs/agent-locks/evil" in got.err, (args, got)
    assert alock(repo, "acquire", "src/x", **B).code == 1  # the valid lock still holds
    assert alock(repo, "release", "src/**", **A).code == 0  # its holder can release it
    broken = alock(repo, "break", "evil", **B)
    assert broken.code == 0 and broken.word == "BROKEN unusable ref refs/agent-locks/evil"


@pytest.mark.parametrize(
    "fields",
    [
        {"reason": "why \ud800"},
        {"host": "h\udcff"},
        {"notes": [{"at": "2026-01-01T00:00:00Z", "text": "\udfff"}]},
        {"future_field": ["\ud83d"]},
    ],
    ids=["reason", "host", "note", "extra"],
)
def test_a_record_holding_an_escaped_lone_surrogate_is_refused(
    repo: Path, fields: dict[str, object]
) -> None:
    """An escape spells what no UTF-8 blob holds: such a record could be neither written
    back nor printed as JSON, so it is refused like any other hostile blob."""
    record = json.loads(_record(holder="agent-a", **fields))
    git(repo, "update-ref", "refs/agent-locks/evil", _blob(repo, json.dumps(record).encode()))
    for args in (("list", "--json"), ("status", "--json"), ("check", "--json", "x/y")):
        got = _git_alock(repo, "alock", *args, env=A)  # a real stdout: UTF-8, strict
        assert got.code in (0, 1) and "Traceback" not in got.err, (args, got)
        assert "refs/agent-locks/evil is not a usable lock" in got.err, (args, got)
        json.loads(got.out)
    assert alock(repo, "renew", "x/y", **A).code == 1  # nothing of agent-a's to rewrite
    broken = alock(repo, "break", "evil", **B)
    assert broken.code == 0 and broken.word == "BROKEN unusable ref refs/agent-locks/evil"


def _strict(text: str) -> object:
    """``text`` read as a strict JSON reader (a browser's, node's) reads it."""

    def refuse(constant: str) -> object:
        raise ValueError(f"{constant} is no JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(
    "raw",
    [
        b'"later_field": NaN',
        b'"later_field": {"deep": [1, -Infinity]}',
        b'"later_field": 1e999',
    ],
    ids=["nan", "infinity", "overflow"],
)
def test_a_record_holding_nan_or_infinity_is_refused(repo: Path, raw: bytes) -> None:
    """JSON has no spelling for them: a record holding one (in a field of a later version,
    kept as it is) would make --json documents and the MCP answers no JSON at all."""
    assert alock(repo, "acquire", "src/**", **A).code == 0
    data = _record(holder="agent-a").replace(b'"format": 1', b'"format": 1, ' + raw)
    git(repo, "update-ref", "refs/agent-locks/evil", _blob(repo, data))
    got = alock(repo, "list", "--json", **B)
    assert got.code == 0 and "refs/agent-locks/evil is not a usable lock" in got.err, got
    assert [r["id"] for r in cast("list[dict[str, str]]", _strict(got.out))] != ["evil"]
    later = _record(holder="agent-a", id="later").replace(b'"format": 1', b'"format": 1, "x": 1.5')
    git(repo, "update-ref", "refs/agent-locks/later", _blob(repo, later))
    listed = alock(repo, "list", "--json", **B).json()
    assert sorted(r["id"] for r in listed)[-1] == "later"  # a finite number is kept


def test_a_journal_with_a_huge_sequence_number_starts_a_fresh_chain(repo: Path) -> None:
    assert alock(repo, "acquire", "src/**", **A).code == 0
    tree = git(repo, "rev-parse", "refs/agent-locks-meta/journal^{tree}").strip()
    message = "granted\n\nJournal-Seq: " + "9" * 5000 + "\n"
    commit = git(repo, "commit-tree", tree, "-m", message).strip()
    git(repo, "update-ref", "refs/agent-locks-meta/journal", commit)
    got = alock(repo, "acquire", "docs/**", **B)
    assert got.code == 0, got
    assert alock(repo, "log").code == 0


def test_a_record_too_big_to_read_back_is_refused_when_written(repo: Path) -> None:
    patterns = [f"area/{'x' * 200}{i}" for i in range(2000)]
    got = alock(repo, "acquire", *patterns, **A)
    assert got.code == 2 and "bytes" in got.err, got
    assert alock(repo, "list", "--json").json() == []


@pytest.mark.parametrize(
    "line",
    [
        b"not json at all",
        b'{"event": "refused", "at": 5, "paths": 7, "conflicts": 3, "id": ["x"]}',
        b'{"event": "refused", "n": ' + b"9" * 5000 + b"}",
        b"{" * 50_000,
        b'["a list", "not an event"]',
    ],
    ids=["text", "wrong-types", "huge-number", "deep", "list"],
)
def test_a_malformed_refusal_log_line_never_breaks_log(repo: Path, line: bytes) -> None:
    assert alock(repo, "acquire", "src/**", **A).code == 0
    assert alock(repo, "acquire", "src/x", **B).code == 1  # a refusal is logged
    log = repo / ".git" / "agent-locks-refusals.jsonl"
    log.write_bytes(log.read_bytes() + line + b"\n")
    for args in (("log",), ("log", "--json"), ("log", "--since", "1d")):
        got = alock(repo, *args)
        assert got.code == 0 and "Traceback" not in got.err, (args, got)
    assert "refused" in alock(repo, "log").out


def test_a_journal_event_holding_an_escaped_lone_surrogate_still_prints_as_json(
    repo: Path,
) -> None:
    """Events are free-form: one a hostile commit or refusal log line spells with an
    unpaired surrogate is printed with every character escaped, still one JSON document
    that a real (strict UTF-8) stdout takes."""
    assert alock(repo, "acquire", "src/**", **A).code == 0
    assert alock(repo, "acquire", "src/x", **B).code == 1  # a refusal is logged
    log = repo / ".git" / "agent-locks-refusals.jsonl"
    refusal = {"event": "refused", "at": "2026-01-01T00:00:00Z", "holder": "h", "why": "\udcff"}
    log.write_bytes(log.read_bytes() + json.dumps(refusal).encode() + b"\n")
    tip = git(repo, "rev-parse", "refs/agent-locks-meta/journal").strip()
    seq = int(git(repo, "log", "-1", "--format=%B", tip).split("Journal-Seq: ")[1])
    event = {"event": "released", "at": "2026-01-01T00:00:01Z", "holder": "h", "paths": ["a"]}
    body = json.dumps({**event, "reason": "\ud800 \u00e9"})
    message = f"released\n\n{body}\n\nJournal-Seq: {seq + 1}\n"
    commit = git(repo, "commit-tree", f"{tip}^{{tree}}", "-p", tip, "-m", message).strip()
    git(repo, "update-ref", "refs/agent-locks-meta/journal", commit, tip)
    got = _git_alock(repo, "alock", "log", "--json")
    assert got.code == 0 and "Traceback" not in got.err, got
    events = json.loads(got.out)
    assert {"\ud800 \u00e9", "\udcff"} <= {e.get("reason", e.get("why")) for e in events}
    assert got.out.isascii()  # escaped, all of it


def test_a_journal_event_holding_nan_prints_as_strict_json(repo: Path) -> None:
    """A hostile commit's event may hold NaN or an infinity (Python's JSON reads them):
    ``log --json`` writes each as null, so a strict reader (an agent's, a browser's) still
    reads one document."""
    assert alock(repo, "acquire", "src/**", **A).code == 0
    tip = git(repo, "rev-parse", "refs/agent-locks-meta/journal").strip()
    seq = int(git(repo, "log", "-1", "--format=%B", tip).split("Journal-Seq: ")[1])
    body = (
        '{"event": "released", "at": "2026-01-01T00:00:01Z", "holder": "h", "paths": ["a"], '
        '"late": NaN, "deep": {"n": [1, -Infinity, 2.5]}}'
    )
    message = f"released\n\n{body}\n\nJournal-Seq: {seq + 1}\n"
    commit = git(repo, "commit-tree", f"{tip}^{{tree}}", "-p", tip, "-m", message).strip()
    git(repo, "update-ref", "refs/agent-locks-meta/journal", commit, tip)
    got = _git_alock(repo, "alock", "log", "--json")
    assert got.code == 0 and "Traceback" not in got.err, got
    events = cast(list[dict[str, object]], _strict(got.out))
    hostile = next(e for e in events if "late" in e)
    assert hostile["late"] is None and hostile["deep"] == {"n": [1, None, 2.5]}


@pytest.mark.parametrize(
    "event",
    [
        {"paths": 7},
        {"paths": [1, ["x"]]},
        {"holder": "\ud800", "paths": ["a"]},
        {"paths": ["a\udcff"]},
        {"paths": ["a\n\nJournal-Seq: 99"]},
        {"note": "\ud83d"},
    ],
    ids=["paths-number", "paths-not-text", "holder-surrogate", "path-surrogate", "newline", "note"],
)
def test_a_hostile_journal_event_kept_by_a_compaction_stops_no_write(
    repo: Path, event: dict[str, object]
) -> None:
    """A compaction writes the events it keeps into a new root commit: one another clone
    wrote (paths that are no list of names, a lone surrogate spelled as an escape, a line
    break) is kept as it was, and every later write goes on."""
    git(repo, "config", "alock.journalKeep", "2")  # compacted on a chain 4 long
    assert alock(repo, "acquire", "src/**", **A).code == 0
    assert alock(repo, "acquire", "docs/a", **A).code == 0
    tip = git(repo, "rev-parse", "refs/agent-locks-meta/journal").strip()
    seq = int(git(repo, "log", "-1", "--format=%B", tip).split("Journal-Seq: ")[1])
    line = json.dumps({"event": "hostile", "at": "2099-01-01T00:00:00Z", **event})
    message = f"hostile\n\n{line}\n\nJournal-Seq: {seq + 1}\n"
    commit = git(repo, "commit-tree", f"{tip}^{{tree}}", "-p", tip, "-m", message).strip()
    git(repo, "update-ref", "refs/agent-locks-meta/journal", commit, tip)
    assert alock(repo, "acquire", "docs/b", **B).code == 0
    got = alock(repo, "acquire", "docs/c", **B)  # compacts, keeping the event and docs/b's
    assert got.code == 0 and "Traceback" not in got.err, got
    root = git(repo, "rev-list", "--max-parents=0", "refs/agent-locks-meta/journal").split()
    assert root != [git(repo, "rev-list", "--max-parents=0", tip).strip()]
    kept = [e for e in alock(repo, "log", "--json").json() if e["event"] == "hostile"]
    assert [{k: v for k, v in e.items() if k in event} for e in kept] == [event]
    assert alock(repo, "acquire", "docs/d", **B).code == 0
    assert alock(repo, "acquire", "src/x", **B).code == 1  # the table still holds


def _git_alock(repo: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    full = dict(os.environ)
    full["PATH"] = os.path.dirname(sys.executable) + os.pathsep + full.get("PATH", "")
    full.update(env or {})
    proc = subprocess.run(["git", *args], cwd=repo, env=full, capture_output=True, text=True)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def test_git_dash_c_settings_are_honoured(repo: Path) -> None:
    """``git -c key=value alock``: git passes the settings in the environment."""
    got = _git_alock(repo, "-c", "alock.ttl=2h", "alock", "acquire", "src/**", env=A)
    assert got.code == 0 and "expires in 2h" in got.out, got
    git(repo, "config", "core.ignoreCase", "false")
    folded = _git_alock(repo, "-c", "core.ignoreCase=true", "alock", "acquire", "SRC/x", env=B)
    assert folded.code == 1 and folded.out.startswith("REFUSED"), folded
    bad = _git_alock(repo, "-c", "core.ignoreCase=maybe", "alock", "list")
    assert bad.code == 2 and bad.err.startswith("error: bad boolean"), bad


HIDDEN = "\u202e\u2028\u200b\u00a0\ufeff"  # bidi override, line separator, invisibles


def test_every_human_reply_escapes_hidden_characters(repo: Path) -> None:
    """Reasons, notes and patterns are user text: no reply prints a bidi override, a line
    separator or an invisible character raw (two locks must never look alike)."""
    odd = f"src/a{HIDDEN}b"
    said = []
    for who, args in [
        (A, ("acquire", odd, "-m", f"why{HIDDEN}")),
        (A, ("note", odd, f"step{HIDDEN}")),
        (A, ("renew", odd)),
        (B, ("acquire", odd)),
        (B, ("check", odd)),
        (B, ("list",)),
        (B, ("status",)),
        (B, ("note", odd, "x")),
        (B, ("renew", odd)),
        (A, ("break", odd)),
        (B, ("break", odd)),
        (A, ("release", odd)),
        (A, ("release", odd)),
        (A, ("log",)),
    ]:
        got = alock(repo, *args, **who)
        assert "Traceback" not in got.err, (args, got)
        said.append((args, got.out + got.err))
    for args, text in said:
        assert not any(ch in text for ch in HIDDEN), (args, text)
    assert any("\\u202e" in text for _, text in said)


def test_breaking_your_own_lock_says_to_release_it(repo: Path) -> None:
    assert alock(repo, "acquire", "src/**", **A).code == 0
    got = alock(repo, "break", "src/x", **A)
    assert got.code == 1 and got.word == "NOT LOCKED src/x: it is yours: git alock release src/**"
    assert [r["holder"] for r in alock(repo, "list", "--json").json()] == ["agent-a"]


def test_an_error_with_json_is_a_json_document_too(repo: Path) -> None:
    got = alock(repo, "acquire", "[a-", "--json", **A)
    assert got.code == 2 and got.err.startswith("error: invalid pattern")
    doc = got.json()
    assert doc["status"] == "error" and doc["exit_code"] == 2 and "invalid pattern" in doc["error"]


def test_git_dir_and_work_tree_are_honoured(repo: Path, tmp_path: Path) -> None:
    """``git --git-dir X --work-tree Y alock`` claims in X, never in the current directory's
    repository."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q")
    got = _git_alock(
        elsewhere,
        f"--git-dir={repo / '.git'}",
        f"--work-tree={repo}",
        "alock",
        "acquire",
        ":/src/**",
        env=A,
    )
    assert got.code == 0 and got.out.startswith("ACQUIRED src/**"), got
    assert [r["paths"] for r in alock(repo, "list", "--json").json()] == [["src/**"]]
    assert git(elsewhere, "for-each-ref", "refs/agent-locks/") == ""


@pytest.mark.parametrize(
    ("shared", "file_mode", "dir_mode"),
    [
        ("group", 0o664, 0o2775),
        ("all", 0o664, 0o2775),
        ("0660", 0o660, 0o2770),
        ("0640", 0o640, 0o2750),
        ("false", 0o644, 0o755),
    ],
)
def test_files_in_a_shared_repository_get_the_modes_git_gives(
    tmp_path: Path, shared: str, file_mode: int, dir_mode: int
) -> None:
    """``git init --shared``: every file and directory gitlocks creates (the mutex, logs,
    caches, ref and object directories) is as usable by the group as git's own."""
    mask = os.umask(0o022)
    try:
        repo = tmp_path / "shared"
        git(tmp_path, "init", "-q", f"--shared={shared}", str(repo))
        git(repo, "commit", "-q", "--allow-empty", "-m", "init")
        before = {p for p in (repo / ".git").rglob("*")}
        assert alock(repo, "acquire", "src/**", "-m", "x", **A).code == 0
        assert alock(repo, "acquire", "src/x", **{"AGENT_ID": "agent-b"}).code == 1
        assert alock(repo, "note", "src/**", "half done", **A).code == 0
        assert alock(repo, "release", "src/**", **A).code == 0
        created = sorted(p for p in (repo / ".git").rglob("*") if p not in before)
        assert created, "gitlocks created nothing?"
        for path in created:
            mode = path.stat().st_mode
            if path.is_dir():
                assert mode & 0o7777 == dir_mode, f"{path}: {oct(mode & 0o7777)}"
            elif {"objects", KEPT_DIR} & set(path.parts):  # objects, and their kept links,
                # are read-only, readable as the rest (docs/design.md, section 4.6)
                assert mode & 0o777 == file_mode & 0o444, f"{path}: {oct(mode & 0o777)}"
            else:
                assert mode & 0o777 == file_mode, f"{path}: {oct(mode & 0o777)}"
    finally:
        os.umask(mask)


@pytest.mark.parametrize("inside", [".git", ".git/refs", ".git/objects/info", ".git/hooks"])
def test_anywhere_inside_the_git_directory_is_refused(repo: Path, inside: str) -> None:
    where = repo / inside
    where.mkdir(parents=True, exist_ok=True)
    for verb in (("list",), ("acquire", "src/**")):
        got = alock(where, *verb, **A)
        assert got.code == 2 and got.err == (
            "error: run git alock inside the working tree, not inside .git\n"
        ), got
    assert git(repo, "for-each-ref", "refs/agent-locks/") == ""


def test_a_deleted_current_directory_is_an_error_not_a_traceback(repo: Path) -> None:
    script = 'mkdir gone && cd gone && rmdir ../gone && exec git-alock "$@"'
    env = dict(os.environ, **A)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    for verb in (["list"], ["acquire", "x"], ["status"], ["skill", "install"], ["log"]):
        proc = subprocess.run(
            ["sh", "-c", script, "sh", *verb], cwd=repo, env=env, capture_output=True, text=True
        )
        assert proc.returncode == 2, proc
        assert proc.stderr.startswith("error: the current directory no longer exists"), proc
        assert "Traceback" not in proc.stderr


def test_a_control_character_in_the_current_directory_is_named_as_such(repo: Path) -> None:
    odd = repo / "a\tb"
    odd.mkdir()
    got = alock(odd, "acquire", "x", **A)
    assert got.code == 2 and "the current directory's name holds a control character" in got.err
    assert alock(odd, "acquire", ":/top/**", **A).code == 0  # anchored: the name is not needed


@pytest.mark.parametrize("since", ["0001-01-01", "9999-12-31T23:59:59", "1969-12-31T23:00:00Z"])
def test_log_since_the_ends_of_the_calendar(repo: Path, since: str) -> None:
    assert alock(repo, "acquire", "src/**", **A).code == 0
    got = alock(repo, "log", "--since", since)
    assert got.code == 0 and "Traceback" not in got.err, got


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_a_full_stdout_after_a_claim_says_what_was_done(repo: Path) -> None:
    env = dict(os.environ, **A)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    for extra in ([], ["--json"]):
        with open("/dev/full", "w") as full:
            proc = subprocess.run(
                ["git", "alock", "acquire", f"full{len(extra)}/**", *extra],
                cwd=repo,
                env=env,
                stdout=full,
                stderr=subprocess.PIPE,
                text=True,
            )
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc
        assert "cannot write the answer to standard output" in proc.stderr
        assert f"the command itself ran: ACQUIRED full{len(extra)}/**" in proc.stderr
    held = [r["paths"] for r in alock(repo, "list", "--json").json()]
    assert held == [["full0/**"], ["full1/**"]]
    piped = subprocess.run(
        "git alock list | head -c 1", shell=True, cwd=repo, env=env, capture_output=True, text=True
    )
    assert "Traceback" not in piped.stderr and "error" not in piped.stderr, piped


@pytest.mark.parametrize(
    "args",
    [
        ("acquire", "x", "--ttl", "1" + "0" * 5000),
        ("renew", "--ttl", "9" * 4301),
        ("log", "--since", "1" + "0" * 5000),
        ("watch", "--interval", "nan"),
        ("watch", "--interval", "inf"),
        ("watch", "--interval", "1e10"),
    ],
    ids=["ttl-5000-digits", "renew-4301-digits", "since-5000-digits", "nan", "inf", "1e10"],
)
def test_numbers_beyond_any_use_are_usage_errors(repo: Path, args: tuple[str, ...]) -> None:
    got = alock(repo, *args, **A)
    assert got.code == 2 and got.err.startswith("error: invalid"), got
    assert "Traceback" not in got.err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("args", [["-h"], ["help"], ["help", "acquire"]])
def test_help_on_a_full_stdout_is_an_error_not_a_traceback(repo: Path, args: list[str]) -> None:
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            ["git-alock", *args], cwd=repo, env=env, stdout=full, stderr=subprocess.PIPE, text=True
        )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc
    assert "cannot write to standard output" in proc.stderr


@pytest.mark.parametrize(
    ("value", "error"),
    [("garbage", "bad boolean config value"), ("Group", "bad boolean"), ("0400", "owner")],
)
def test_a_shared_repository_value_git_refuses_is_refused(
    repo: Path, value: str, error: str
) -> None:
    git(repo, "config", "core.sharedRepository", value)
    got = alock(repo, "acquire", "src/**", **A)
    assert got.code == 2 and error in got.err, got
    assert git(repo, "for-each-ref", "refs/agent-locks/") == ""
