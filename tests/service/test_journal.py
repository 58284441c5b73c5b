"""The journal: an event for every state change, log, watch, compaction, local refusals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, cast

import pygit2
import pytest
from conftest import git
from support.cli import alock
from test_lifecycle import ctx_for, entries, kill, proc_session

from gitlocks.core import journal as core_journal
from gitlocks.layout import JOURNAL_REF
from gitlocks.render import journal as render_journal
from gitlocks.service import journal, locks
from gitlocks.store.journal import is_journal_commit
from gitlocks.store.local import Store

A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}


def kinds(repo: Path) -> list[str]:
    """Journal event kinds, oldest first."""
    return [e["event"] for e in reversed(journal.events(Store.discover(repo)))]


def test_every_verb_journals_its_event(repo: Path) -> None:
    assert alock(repo, "acquire", "src/**", "-m", "work", **A).code == 0
    assert alock(repo, "renew", "--ttl", "1h", **A).code == 0
    assert alock(repo, "note", "src/**", "half done", **A).code == 0
    assert alock(repo, "release", "src/**", **A).code == 0
    assert alock(repo, "acquire", "docs/**", **A).code == 0
    assert alock(repo, "break", "docs/**", **B).code == 0
    assert alock(repo, "acquire", "tmp/**", **A).code == 0  # alive until released, however slow
    assert alock(repo, "acquire", "lib/**", **A).code == 0
    assert alock(repo, "release", "--all", **A).code == 0
    assert kinds(repo) == [
        "granted",
        "renewed",
        "noted",
        "released",
        "granted",
        "broken",
        "granted",
        "granted",
        "released",
        "released",
    ]
    time.sleep(0.01)
    assert alock(repo, "acquire", "tmp2/**", "--ttl", "1", **A).code == 0
    time.sleep(1.1)
    assert alock(repo, "acquire", "x/**", **B).code == 0
    assert kinds(repo)[-2:] == ["expired", "granted"]
    log = alock(repo, "log", "--json").json()
    newest = log[0]
    assert newest["event"] == "granted" and newest["holder"] == "agent-b"
    assert newest["paths"] == ["x/**"] and newest["commit"]
    broken = next(e for e in log if e["event"] == "broken")
    assert broken["by"] == "agent-b" and broken["holder"] == "agent-a"


def test_lifecycle_events_are_journaled(repo: Path, tmp_path: Path) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(2)
    ]
    try:
        quiet = ctx_for(repo, "agent-q", proc=proc_session(procs[0]))
        noted = ctx_for(repo, "agent-n", proc=proc_session(procs[1]))
        assert locks.acquire(quiet, entries("a/**")).status == "acquired"
        assert locks.acquire(noted, entries("b/**")).status == "acquired"
        assert locks.note(noted, entries("b/**")[0], "step 1 done").lock is not None
    finally:
        for proc in procs:
            kill(proc)
    assert alock(repo, "acquire", "a/x", **B).code == 0
    assert alock(repo, "resume", "b/**", **B).code == 0
    assert kinds(repo)[-3:] == ["auto_released", "granted", "resumed"]


def test_log_limit_since_and_local_refusals(repo: Path) -> None:
    assert alock(repo, "acquire", "src/**", "-m", "first", **A).code == 0
    assert alock(repo, "acquire", "src/app.py", **B).code == 1
    assert alock(repo, "acquire", "docs/**", **B).code == 0
    text = alock(repo, "log").out.splitlines()
    assert len(text) == 3
    assert " granted agent-b docs/** " in text[0]
    assert " refused (local) agent-b src/app.py held src/** by agent-a" in text[1]
    assert ' granted agent-a src/** reason "first" [lock ' in text[2]
    assert len(alock(repo, "log", "-n", "2").out.splitlines()) == 2
    assert alock(repo, "log", "--reverse").out.splitlines() == text[::-1]
    assert alock(repo, "log", "--since", "1h").out.splitlines() == text
    future = (datetime.now(timezone.utc) + timedelta(days=1)).strftime("%Y-%m-%d")
    assert alock(repo, "log", "--since", future).out.strip() == "no events"
    assert alock(repo, "log", "--since", "yesterday-ish").code == 2
    doc = alock(repo, "log", "--json", "-n", "3").json()
    assert [e["event"] for e in doc] == ["granted", "refused", "granted"]
    assert doc[1]["local"] is True and doc[1]["conflicts"][0]["holder"] == "agent-a"
    # Refusals stay local: the shared journal has none.
    assert "refused" not in kinds(repo)


def test_refusal_log_is_bounded(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal, "REFUSALS_KEEP", 5)
    monkeypatch.setattr(journal, "REFUSALS_TRIM_BYTES", 2000)
    store = Store.discover(repo)
    for i in range(100):
        journal.append_refusal(
            store.common_dir, {"event": "refused", "at": f"2030-01-01T00:00:{i:02d}Z"}
        )
    path = Path(journal.refusals_path(store))
    assert path.stat().st_size <= 2500
    newest = journal.refusals(store)
    assert newest[0]["at"] == "2030-01-01T00:00:99Z" or newest[0]["at"].endswith(":99Z")


def test_journal_is_compacted_keeping_the_last_events(repo: Path) -> None:
    git(repo, "config", "alock.journalKeep", "5")
    for i in range(23):
        assert alock(repo, "acquire", f"d{i}/**", **A).code == 0
    store = Store.discover(repo)
    chain = list(store.journal())
    # Compaction happens when the chain reaches 2 * 5 commits: never longer than that.
    assert len(chain) <= 10
    root = chain[-1]
    assert root.events[0]["event"] == "compacted" and root.events[0]["kept"] == 5
    root_commit: Any = pygit2.Repository(str(repo)).get(chain[-1].commit)
    assert not root_commit.parents
    log = journal.events(store)
    paths = [e["paths"][0] for e in log if e["event"] == "granted"]
    assert paths[0] == "d22/**" and len(paths) >= 5
    assert paths == sorted(paths, key=lambda p: -int(p[1:].split("/")[0]))
    assert "compacted" in alock(repo, "log").out


def test_age_policy_keeps_recent_events() -> None:
    policy = core_journal.KeepPolicy.from_config(lambda key: "1d")
    assert policy.events is None and policy.seconds == 86400
    now = datetime(2030, 1, 10, tzinfo=timezone.utc)
    newest_first = [
        {"event": "granted", "at": "2030-01-09T12:00:00Z"},
        {"event": "granted", "at": "2030-01-08T12:00:00Z"},
    ]
    kept, dropped = policy.retain(newest_first, now)
    assert dropped and kept == newest_first[:1]
    assert policy.due(core_journal.AGE_CHECK_EVERY) and not policy.due(1)
    assert core_journal.KeepPolicy.from_config(lambda key: None).events == 1000
    with pytest.raises(Exception, match="journalKeep"):
        core_journal.KeepPolicy.from_config(lambda key: "0")


def test_commit_messages_round_trip() -> None:
    events = [{"event": "granted", "holder": "a", "paths": ["src/**"], "at": "x"}]
    text = core_journal.message(events, 7)
    assert text.splitlines()[0] == "granted a src/**"
    assert core_journal.parse_events(text) == events
    assert core_journal.parse_seq(text) == 7
    assert core_journal.parse_seq("old message\n\n{}\n") == 0


def watch_process(repo: Path, *args: str) -> subprocess.Popen[str]:
    exe = Path(sys.executable).with_name("git-alock")
    return subprocess.Popen(
        [str(exe), "watch", "--interval", "0.05", *args],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_started(repo: Path) -> None:
    # The watcher reads the journal ref once it has started; give it a moment, and a
    # loaded machine a second more (an event written before it reads counts as old).
    time.sleep(2.0)


def test_watch_prints_events_written_by_another_process(repo: Path) -> None:
    assert alock(repo, "acquire", "old/**", **A).code == 0  # before: not printed
    watcher = watch_process(repo, "--count", "3", "--timeout", "30s")
    wait_started(repo)
    assert alock(repo, "acquire", "src/**", "-m", "w", **A).code == 0
    assert alock(repo, "acquire", "src/app.py", **B).code == 1
    assert alock(repo, "release", "src/**", **A).code == 0
    out, err = watcher.communicate(timeout=30)
    assert watcher.returncode == 0, err
    lines = out.splitlines()
    assert len(lines) == 3
    assert " granted agent-a src/** " in lines[0]
    assert "refused (local) agent-b src/app.py" in lines[1]
    assert " released agent-a src/** " in lines[2]
    assert "old/**" not in out


def test_watch_json_timeout_and_ctrl_c(repo: Path) -> None:
    quiet = watch_process(repo, "--timeout", "1s", "--json")
    out, _ = quiet.communicate(timeout=30)
    assert quiet.returncode == 0 and out == ""
    watcher = watch_process(repo, "--json")
    wait_started(repo)
    assert alock(repo, "acquire", "src/**", **A).code == 0
    time.sleep(0.5)
    watcher.send_signal(signal.SIGINT)
    out, _ = watcher.communicate(timeout=30)
    assert watcher.returncode == 130
    import json

    [event] = [json.loads(line) for line in out.splitlines()]
    assert event["event"] == "granted" and event["paths"] == ["src/**"]


def test_watch_survives_compaction(repo: Path) -> None:
    git(repo, "config", "alock.journalKeep", "2")
    watcher = watch_process(repo, "--count", "6", "--timeout", "30s")
    wait_started(repo)
    for i in range(6):
        assert alock(repo, "acquire", f"d{i}/**", **A).code == 0
        time.sleep(0.2)
    out, err = watcher.communicate(timeout=30)
    assert watcher.returncode == 0, err
    printed = [line.split()[3] for line in out.splitlines()]
    assert printed == [f"d{i}/**" for i in range(6)]


def test_journal_ref_is_a_commit_chain_carrying_the_table(repo: Path) -> None:
    """Each journal commit's tree is the table after its write: the same blobs as the refs,
    in subtrees by a hash of the lock id (locks/<xx>/<id>)."""
    from gitlocks.store.journal import shard_of

    lock_id = alock(repo, "acquire", "src/**", "--json", **A).json()["lock"]["id"]
    r = pygit2.Repository(str(repo))
    tip: Any = r.get(r.references[JOURNAL_REF].target)
    assert sorted(e.name for e in tip.tree) == ["format", "locks"]
    assert [e.name for e in tip.tree["locks"]] == [shard_of(lock_id)]
    entry = tip.tree["locks"][shard_of(lock_id)][lock_id]
    assert entry.id == r.references[f"refs/agent-locks/{lock_id}"].target
    assert alock(repo, "acquire", "docs/**", **B).code == 0
    assert alock(repo, "release", "src/**", **A).code == 0
    tip = r.get(r.references[JOURNAL_REF].target)
    assert len(tip.parents) == 1 and "Journal-Seq: 3" in tip.message
    on_refs = {
        n.removeprefix("refs/agent-locks/")
        for n in r.references
        if n.startswith("refs/agent-locks/")
    }
    shards: Any = tip.tree["locks"]
    in_tree = {e.name for shard in shards for e in cast(Any, r[shard.id])}
    assert in_tree == on_refs and len(on_refs) == 1
    assert os.path.exists(repo / ".git" / "agent-locks.mutex")


def test_remote_mode_journals_every_event_on_the_remote(tmp_path: Path) -> None:
    from support.remote import make_bare, make_clone, remote_events

    from gitlocks.identity import resolve_identity
    from gitlocks.service.context import Context
    from gitlocks.store.remote import RemoteStore

    bare = make_bare(tmp_path / "locks.git")
    # One journal, started by a's first claim as an earlier version starts it (so every
    # event read below is a write's, in the order written).
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=0)
    git(a, "config", "alock.clockSkew", "0")
    assert alock(a, "acquire", "src/**", **A).code == 0
    b = make_clone(bare.as_uri(), tmp_path / "b")
    git(b, "config", "alock.clockSkew", "0")
    assert alock(a, "renew", "--ttl", "2h", **A).code == 0
    assert alock(a, "note", "src/**", "half", **A).code == 0
    assert alock(a, "release", "src/**", **A).code == 0
    assert alock(a, "acquire", "docs/**", **A).code == 0
    assert alock(b, "break", "docs/**", **B).code == 0
    assert alock(a, "acquire", "tmp/**", "--ttl", "1", **A).code == 0
    procs = [
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(2)
    ]
    try:
        for proc, holder, scope in zip(
            procs, ("agent-q", "agent-n"), ("q/**", "n/**"), strict=True
        ):
            ident = resolve_identity(None, env={"AGENT_ID": holder}, session=proc_session(proc))
            ctx = Context(RemoteStore(Store.discover(a).repo), ident)
            assert locks.acquire(ctx, entries(scope)).status == "acquired"
        assert locks.note(ctx, entries("n/**")[0], "step 1").lock is not None
    finally:
        for proc in procs:
            kill(proc)
    time.sleep(1.1)
    assert alock(b, "acquire", "q/x", **B).code == 0  # expires tmp/**, releases dead q/**
    assert alock(b, "resume", "n/**", **B).code == 0
    assert alock(b, "release", "--all", **B).code == 0
    seen = [str(e["event"]) for e in remote_events(bare)]
    for kind in (
        "granted",
        "renewed",
        "noted",
        "released",
        "broken",
        "expired",
        "auto_released",
        "resumed",
    ):
        assert kind in seen, kind
    assert alock(a, "sync").code == 0
    shown = [e["event"] for e in alock(a, "log", "--json").json()]
    assert shown == seen[::-1]


# --- regressions: following across compaction and refusal-log trims --------------------------


def follower(repo: Path, **kwargs: Any) -> Iterator[list[core_journal.Event]]:
    """``journal.follow`` driven by hand: each ``next`` is one poll."""
    gen = journal.follow(Store.discover(repo), interval=0, sleep=lambda _: None, **kwargs)
    assert next(gen) == []
    return gen


def granted(batch: list[core_journal.Event]) -> list[str]:
    return [e["paths"][0] for e in batch if e["event"] == "granted"]


def test_follow_keeps_events_written_just_before_a_compaction(repo: Path) -> None:
    git(repo, "config", "alock.journalKeep", "2")
    for name in ("f1", "f2", "f3"):
        assert alock(repo, "acquire", name, **A).code == 0
    polls = follower(repo)
    assert next(polls) == []
    assert alock(repo, "acquire", "f4", **A).code == 0
    assert alock(repo, "acquire", "f5", **A).code == 0  # compacts: a new chain holds f5
    assert granted(next(polls)) == ["f4", "f5"]
    # Several compactions between two polls, and nothing printed twice.
    for i in range(6, 16):
        assert alock(repo, "acquire", f"f{i}", **A).code == 0
    assert granted(next(polls)) == [f"f{i}" for i in range(6, 16)]
    assert next(polls) == []


def test_follow_from_an_empty_journal_across_a_compaction(repo: Path) -> None:
    git(repo, "config", "alock.journalKeep", "1")
    polls = follower(repo)
    for i in range(5):
        assert alock(repo, "acquire", f"g{i}", **A).code == 0
    assert granted(next(polls)) == [f"g{i}" for i in range(5)]


def test_follow_skips_old_chains_it_cannot_connect(repo: Path) -> None:
    git(repo, "config", "alock.journalKeep", "2")
    for name in ("f1", "f2", "f3"):
        assert alock(repo, "acquire", name, **A).code == 0
    store = Store.discover(repo)
    seen = store.version()
    assert alock(repo, "acquire", "f4", **A).code == 0
    assert alock(repo, "acquire", "f5", **A).code == 0
    # The watcher's last commit is unknown (another chain): only the new chain is shown.
    other = str(pygit2.Repository(str(repo)).head.target)
    assert granted(journal._new_since(store, other, store.version() or "")) == ["f5"]
    assert granted(journal._new_since(store, seen, store.version() or "")) == ["f4", "f5"]


def refusal(i: int) -> core_journal.Event:
    return {"event": "refused", "at": f"2030-01-01T00:{i // 60:02d}:{i % 60:02d}Z", "n": i}


def test_follow_refusals_across_a_trim(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal, "REFUSALS_KEEP", 5)
    monkeypatch.setattr(journal, "REFUSALS_TRIM_BYTES", 1000)
    store = Store.discover(repo)
    for i in range(8):
        journal.append_refusal(store.common_dir, refusal(i))
    polls = follower(repo)
    journal.append_refusal(store.common_dir, refusal(8))
    assert [e["n"] for e in next(polls)] == [8]
    emitted = [8]
    for i in range(9, 60):  # trims several times, sometimes between two polls
        journal.append_refusal(store.common_dir, refusal(i))
        if i % 3 == 0:
            emitted += [e["n"] for e in next(polls)]
    emitted += [e["n"] for e in next(polls)]
    path = Path(journal.refusals_path(store))
    assert path.stat().st_size < 1000  # it was trimmed
    assert emitted == list(range(8, 60))
    assert next(polls) == []


def test_follow_refusals_after_a_trim_past_everything_seen(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal, "REFUSALS_KEEP", 3)
    monkeypatch.setattr(journal, "REFUSALS_TRIM_BYTES", 400)
    store = Store.discover(repo)
    for i in range(2):
        journal.append_refusal(store.common_dir, refusal(i))
    polls = follower(repo)
    for i in range(2, 12):
        journal.append_refusal(store.common_dir, refusal(i))
    # Everything still in the log is newer than what the watcher saw; older ones are gone.
    got = [e["n"] for e in next(polls)]
    assert got == sorted(set(got)) and got[-1] == 11 and 0 not in got and 1 not in got
    journal.append_refusal(store.common_dir, refusal(12))
    assert [e["n"] for e in next(polls)] == [12]


def test_follow_refusals_rewritten_in_place(repo: Path) -> None:
    """A same-size rewrite (not by rename) is noticed by its content, not its size."""
    store = Store.discover(repo)
    for i in range(3):
        journal.append_refusal(store.common_dir, refusal(i))
    polls = follower(repo)
    path = Path(journal.refusals_path(store))
    lines = path.read_bytes().splitlines(keepends=True)
    journal.append_refusal(store.common_dir, refusal(3))
    journal.append_refusal(store.common_dir, refusal(4))
    new = path.read_bytes().splitlines(keepends=True)[3:]
    with open(path, "r+b") as f:  # drop the first line, same inode
        f.write(b"".join(lines[1:] + new))
        f.truncate()
    assert [e["n"] for e in next(polls)] == [3, 4]


def test_log_and_watch_lines_escape_user_text(repo: Path) -> None:
    reason = "x\nFREE src/u2\x1b[2J"
    polls = follower(repo)
    assert alock(repo, "acquire", "src/u", "-m", reason, **A).code == 0
    assert alock(repo, "note", "src/u", "n\r\nRELEASED", **A).code == 0
    assert alock(repo, "acquire", "src/u/f.py", "-m", "y\nz", **B).code == 1
    lines = [render_journal.format_event(e) for e in next(polls)]
    assert len(lines) == 3 and all("\n" not in line and "\x1b" not in line for line in lines)
    assert 'reason "x\\nFREE src/u2\\x1b[2J"' in lines[0]
    assert 'text "n\\r\\nRELEASED"' in lines[1]
    log = alock(repo, "log").out.splitlines()
    assert len(log) == 3 and not any(line.startswith(("FREE", "RELEASED")) for line in log)
    assert alock(repo, "log", "--json").json()[-1]["reason"] == reason  # JSON stays exact


def test_an_event_holding_a_line_or_paragraph_separator_is_kept(repo: Path) -> None:
    """JSON writes U+2028, U+2029 and U+0085 as they are: a line of the journal holding
    one is still one event (a reason, a note, a file name may hold them)."""
    odd = "a\u2028b\u2029c\u0085d"
    assert alock(repo, "acquire", "src/a\u2028b", "-m", odd, **A).code == 0
    assert alock(repo, "note", "src/a\u2028b", odd, **A).code == 0
    assert alock(repo, "release", "src/a\u2028b", **A).code == 0
    events = alock(repo, "log", "--json").json()
    assert [e["event"] for e in events] == ["released", "noted", "granted"]
    assert events[2]["reason"] == events[1]["text"] == odd
    assert events[2]["paths"] == ["src/a\u2028b"]
    assert alock(repo, "acquire", "src/**", **A).code == 0
    assert alock(repo, "acquire", "src/a\u2028b", "-m", odd, **B).code == 1  # logged locally
    refused = alock(repo, "log", "--json").json()[0]
    assert refused["event"] == "refused" and refused["paths"] == ["src/a\u2028b"], refused


# --- a journal ref moved onto something else ---------------------------------------------------


def test_is_journal_commit(repo: Path) -> None:
    assert alock(repo, "acquire", "src/**", **A).code == 0
    r = pygit2.Repository(str(repo))
    tip: Any = r.get(r.references[JOURNAL_REF].target)
    objects = Store.discover(repo).objects

    def is_journal(oid: object) -> bool:
        commit = objects.commit(str(oid))
        assert commit is not None
        return is_journal_commit(objects, commit)

    assert is_journal(tip.id)
    assert not is_journal(r.head.target)  # the project's history
    sig = pygit2.Signature("t", "t@example.invalid", 0, 0)
    empty = r.TreeBuilder().write()
    plain: Any = r.get(r.create_commit(None, sig, sig, "no trailer\n", empty, []))
    assert not is_journal(plain.id)
    merge: Any = r.get(
        r.create_commit(None, sig, sig, "m\n\nJournal-Seq: 3\n", empty, [tip.id, plain.id])
    )
    assert not is_journal(merge.id)
    full_tree = r.head.peel(pygit2.Commit).tree_id
    with_files: Any = r.get(r.create_commit(None, sig, sig, "x\n\nJournal-Seq: 2\n", full_tree, []))
    assert not is_journal(with_files.id)


def test_journal_ref_on_a_project_commit_starts_a_fresh_chain(repo: Path) -> None:
    git(repo, "update-ref", JOURNAL_REF, "HEAD")
    assert alock(repo, "acquire", "src/**", **A).code == 0
    r = pygit2.Repository(str(repo))
    tip: Any = r.get(r.references[JOURNAL_REF].target)
    objects = Store.discover(repo).objects
    commit = objects.commit(str(tip.id))
    assert commit is not None and is_journal_commit(objects, commit)
    assert not tip.parents  # not chained onto the project's history
    assert [e["event"] for e in journal.events(Store.discover(repo))] == ["granted"]


def test_the_journal_names_who_removed_what_and_says_each_thing_once(repo: Path) -> None:
    kid = {"AGENT_ID": "kid", "AGENT_PARENT_ID": "boss"}
    assert alock(repo, "acquire", "k/**", **kid).code == 0
    released = alock(repo, "release", "--all", AGENT_ID="boss")
    assert released.word.startswith("RELEASED k/** of kid [lock "), released
    assert alock(repo, "acquire", "a/**", "b/**", AGENT_ID="q").code == 0
    assert alock(repo, "release", "a/**", AGENT_ID="q").code == 0
    assert alock(repo, "acquire", "e/**", "--ttl", "1", AGENT_ID="e").code == 0
    time.sleep(1.2)
    assert alock(repo, "acquire", "f/**", AGENT_ID="f").code == 0
    lines = alock(repo, "log").out.splitlines()
    assert any(" released kid k/** (released by boss) [lock " in ln for ln in lines), lines
    assert any(" released q a/** (kept b/**) [lock " in ln for ln in lines), lines
    assert any(" expired e e/** (swept by f's write) [lock " in ln for ln in lines), lines
    assert not any(ln.count("a/**") > 1 for ln in lines), lines


def test_a_line_says_who_acted_on_whose_lock() -> None:
    """The holder and the lock come first; whoever else acted is said apart, with what
    they did: "expired e e/** by f" read as if f had expired e's lock."""
    at = {"at": "2026-06-01T12:00:00Z", "id": "L"}

    def line(kind: str, **fields: Any) -> str:
        return render_journal.format_event({"event": kind, **at, **fields})

    assert line("expired", holder="e", paths=["e/**"], by="f") == (
        "2026-06-01T12:00:00Z expired e e/** (swept by f's write) [lock L]"
    )
    assert line("broken", holder="a", paths=["src/**"], by="b") == (
        "2026-06-01T12:00:00Z broken a src/** (broken by b) [lock L]"
    )
    assert line("auto_released", holder="a", paths=["x"], pid=42, by="b") == (
        "2026-06-01T12:00:00Z auto_released a x (its process 42 is gone; cleared by b's "
        "write) [lock L]"
    )
    assert line("resumed", holder="b", paths=["x"], by="b", **{"from": "a"}) == (
        "2026-06-01T12:00:00Z resumed b x (taken over from a) [lock L]"
    )
    assert line("released", holder="a", paths=["x"], by="a") == (
        "2026-06-01T12:00:00Z released a x [lock L]"
    )
    assert line("landed", holder="a", paths=["x"], by="c", branch="main") == (
        "2026-06-01T12:00:00Z landed a x (released by c's write, its work landed) "
        "branch main [lock L]"
    )
