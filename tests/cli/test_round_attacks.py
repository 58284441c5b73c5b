"""Attacks on this round's waiting, listing and renewal through the command line: each a
defect an outside review found, pinned by the test that found it."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from support.cli import alock
from support.records import plant
from support.remote import make_bare, make_clone

from gitlocks.identity import host_identity, process_start_time


def waiter(holder: str, pattern: str, pid: int, start: str, **extra: Any) -> dict[str, Any]:
    """A waiter record as a ``git alock acquire --wait`` of this machine writes one."""
    return {
        "format": 1,
        "id": "wait-0000000001-dead",
        "holder": holder,
        "parent": None,
        "paths": [pattern],
        "reason": "",
        "created_at": "2026-01-01T00:00:00Z",
        "renewed_at": "2026-01-01T00:00:00Z",
        "expires_at": "2999-01-01T00:00:00Z",
        "pid": pid,
        "pid_start": start,
        "host_id": host_identity(),
        "session": "git-alock",
        "waiting": True,
        "queue": 1,
        "wait_until": "2998-12-31T23:59:50Z",
        **extra,
    }


def test_a_listing_takes_a_dead_waiter_out_of_the_queue(
    repo: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    """A waiter killed (kill -9, a closed terminal) stayed in list and status as waiting,
    until its wait's end, while its dead holders' locks were cleared by the same look:
    the queue shown must be the live one, and the journal say who took it out."""
    assert alock(repo, "acquire", "src/**", AGENT_ID="alice").code == 0
    start = process_start_time(sleeper.pid)
    assert start
    plant(repo, "wait-0000000001-dead", waiter("bob", "src/app.py", sleeper.pid, start))
    assert "bob" in alock(repo, "list").out  # alive: in the queue
    sleeper.kill()
    sleeper.wait()
    listed = alock(repo, "list", AGENT_ID="supervisor")
    assert listed.code == 0 and "bob" not in listed.out, listed
    assert alock(repo, "status", "--json").json()["waiters"] == []
    [left] = [e for e in alock(repo, "log", "--json").json() if e["event"] == "left_queue"]
    assert (left["holder"], left["why"], left["by"]) == ("bob", "dead", "supervisor")


JOURNAL = "refs/agent-locks-meta/journal"


def git_in(repo: Path, *args: str, text: str = "") -> str:
    proc = subprocess.run(
        ["git", *args], cwd=repo, input=text, capture_output=True, text=True, check=True
    )
    return proc.stdout.strip()


def add_journal_commit(repo: Path, lines: list[str]) -> None:
    """A journal commit holding ``lines`` on top of the journal, as a hostile clone (or a
    later version) could write one: git alone, no gitlocks code."""
    head = git_in(repo, "rev-parse", JOURNAL)
    message = git_in(repo, "log", "-1", "--format=%B", JOURNAL)
    [seq] = [int(x.split()[1]) for x in message.splitlines() if x.startswith("Journal-Seq:")]
    tree = git_in(repo, "hash-object", "-t", "tree", "-w", "--stdin")
    body = "hostile\n\n" + "\n".join(lines) + f"\n\nJournal-Seq: {seq + 1}\n"
    commit = git_in(repo, "commit-tree", tree, "-p", head, "-F", "-", text=body)
    git_in(repo, "update-ref", JOURNAL, commit, head)


def test_renew_reads_no_removal_of_paths_that_are_not_text(repo: Path) -> None:
    """A removal event whose paths are not all strings (another version's, a hostile
    clone's) was told as lost with Python's spelling of what it held: BROKEN 1 {'a': 2}
    None. An event this version cannot read is skipped, as the others are."""
    assert alock(repo, "acquire", "keep", AGENT_ID="me").code == 0
    at = "2026-01-01T00:00:00Z"
    add_journal_commit(
        repo,
        [
            '{"event": "broken", "holder": "me", "id": "x1", "paths": [1, {"a": 2}, null], '
            f'"at": "{at}", "by": "b"}}',
            f'{{"event": "broken", "holder": "me", "id": "x2", "paths": ["t"], "at": "{at}"}}',
        ],
    )
    got = alock(repo, "renew", "--json", AGENT_ID="me")
    assert got.code == 1, got
    assert [x["id"] for x in got.json()["lost"]] == ["x2"], got


def test_a_bad_wait_default_is_not_blamed_on_the_word_after_wait(repo: Path) -> None:
    """A bare --wait with a bad alock.waitDefault said that --wait had taken the word after
    it as its duration: it took none, the setting is what to fix."""
    git_in(repo, "config", "alock.waitDefault", "soon")
    got = alock(repo, "acquire", "src/app.py", "--wait", AGENT_ID="bob")
    assert got.code == 2 and got.err.startswith("error: invalid alock.waitDefault"), got
    assert "word after it" not in got.err, got


def test_renew_tells_a_loss_once_where_its_claims_are_kept(tmp_path: Path) -> None:
    """In remote mode a renewal with more than half its lifetime left writes nothing
    (KEPT), so the walk back to the holder's last write found the same loss every time:
    every heartbeat said BROKEN and exited 1 for a claim the holder had been told of. A
    renewal that tells of a loss writes (it renews what it keeps), as the design's "each
    loss is told once, since the renewal is the holder's write" says."""
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    assert alock(a, "acquire", "x", AGENT_ID="me").code == 0
    assert alock(a, "acquire", "y", AGENT_ID="me").code == 0
    assert alock(a, "break", "x", AGENT_ID="b").code == 0
    told = alock(a, "renew", "--json", AGENT_ID="me")
    assert told.code == 1 and [x["paths"] for x in told.json()["lost"]] == [["x"]], told
    again = alock(a, "renew", "--json", AGENT_ID="me")
    assert again.code == 0 and again.json()["lost"] == [], again
    assert [r["paths"] for r in again.json()["kept"]] == [["y"]], again  # no news: no push


def test_renew_tells_a_loss_once_across_a_compaction(repo: Path) -> None:
    """A compaction keeps the last events in one new root commit: the loss told and the
    renewal that told it end up in one commit, which the walk back took whole as the
    holder's last write, so the loss was told again (exit 1). Inside that commit the
    events older than the holder's last write are older news."""
    git_in(repo, "config", "alock.journalKeep", "6")
    assert alock(repo, "acquire", "x", AGENT_ID="me").code == 0
    assert alock(repo, "acquire", "y", AGENT_ID="me").code == 0

    def length() -> int:
        return int(git_in(repo, "rev-list", "--count", JOURNAL))

    n = 0
    while length() < 10:
        n += 1
        assert alock(repo, "acquire", f"d{n}", AGENT_ID="other").code == 0
    assert alock(repo, "break", "x", AGENT_ID="b").code == 0
    assert alock(repo, "renew", AGENT_ID="me").code == 1  # told
    before = length()
    while length() >= before:  # others write until the journal is compacted
        n += 1
        assert alock(repo, "acquire", f"d{n}", AGENT_ID="other").code == 0
    root = git_in(repo, "log", "-1", "--format=%B", f"{JOURNAL}~{length() - 1}")
    assert '"compacted"' in root and '"broken"' in root and '"renewed"' in root, root
    again = alock(repo, "renew", "--json", AGENT_ID="me")
    assert again.code == 0 and again.json()["lost"] == [], again
