"""Sub-agents, liveness (dead, interrupted, stale), resume and status."""

from __future__ import annotations

import gc
import json
import os
import re
import subprocess
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import git
from support.cli import alock, cli_env

from gitlocks.core.scope import ScopeEntry, make_entry
from gitlocks.core.table import Table
from gitlocks.errors import StoreError
from gitlocks.identity import SessionProcess, process_alive, process_start_time, resolve_identity
from gitlocks.render import locks as render
from gitlocks.service import lifecycle, locks
from gitlocks.service.context import Context
from gitlocks.service.results import CheckItem
from gitlocks.service.status import status
from gitlocks.store.local import Store

HOST = os.uname().nodename
T0 = datetime(2030, 1, 1, 12, 0, tzinfo=timezone.utc)


def session(pid: int, start: str, name: str = "agent") -> SessionProcess:
    return SessionProcess(pid, start, name, HOST)


def my_session() -> SessionProcess:
    pid = os.getpid()
    return session(pid, process_start_time(pid) or "", "pytest")


def ctx_for(
    repo: Path,
    holder: str,
    *,
    parent: str | None = None,
    proc: SessionProcess | None = None,
    alive: Callable[[int, str], bool] = process_alive,
    clock: Callable[[], datetime] | None = None,
) -> Context:
    env = {"AGENT_ID": holder}
    if parent:
        env["AGENT_PARENT_ID"] = parent
    ident = resolve_identity(None, env=env, session=proc or my_session())
    ctx = Context(Store.discover(repo), ident, alive=alive)
    if clock is not None:
        ctx.clock = clock
    return ctx


def entries(*patterns: str) -> list[ScopeEntry]:
    return [make_entry(p) for p in patterns]


def events(repo: Path) -> list[str]:
    store = Store.discover(repo)
    return [e["event"] for entry in store.journal() for e in reversed(entry.events)]


def proc_session(proc: subprocess.Popen[bytes]) -> SessionProcess:
    start = None
    for _ in range(100):  # /proc may lag the fork by a moment
        start = process_start_time(proc.pid)
        if start:
            break
        time.sleep(0.01)
    assert start
    return session(proc.pid, start, "sleeper")


def kill(proc: subprocess.Popen[bytes]) -> None:
    proc.kill()
    proc.wait()


# --- sub-agents -----------------------------------------------------------------------------

ORCH = {"AGENT_ID": "orch"}
C1 = {"AGENT_ID": "c1", "AGENT_PARENT_ID": "orch"}
C2 = {"AGENT_ID": "c2", "AGENT_PARENT_ID": "orch"}
G1 = {"AGENT_ID": "g1", "AGENT_PARENT_ID": "c1"}
OUT = {"AGENT_ID": "outsider"}


@pytest.mark.parametrize(
    ("first", "first_scope", "second", "second_scope", "code"),
    [
        (ORCH, "src/**", C1, "src/api/**", 0),  # a parent's lock never blocks its child
        (C1, "src/api/**", ORCH, "src/api/x.py", 1),  # a child's lock blocks its parent
        (G1, "src/api/**", ORCH, "src/**", 1),  # and a grandchild's its grandparent
        (C1, "src/api/**", C2, "src/api/x.py", 1),  # siblings block each other
        (C1, "src/api/**", C2, "src/web/**", 0),  # unless they do not overlap
        (C1, "src/api/**", G1, "src/api/v1/**", 0),  # parent c1 of g1
        (ORCH, "src/**", OUT, "src/api/x.py", 1),  # strangers block each other
        (C1, "src/api/**", OUT, "src/**", 1),
        (ORCH, "src/**", C1, "src/**", 1),  # exactly the parent's scope: claim narrower
    ],
)
def test_parent_child_sibling_matrix(
    repo: Path,
    first: dict[str, str],
    first_scope: str,
    second: dict[str, str],
    second_scope: str,
    code: int,
) -> None:
    assert alock(repo, "acquire", first_scope, **first).code == 0
    got = alock(repo, "acquire", second_scope, **second)
    assert got.code == code, got.out
    assert got.word.startswith("REFUSED" if code else f"ACQUIRED {second_scope} as ")


def test_grandchild_passes_through_the_chain_of_records(repo: Path) -> None:
    # The chain is learnt from records: c1's lock names orch as its parent.
    assert alock(repo, "acquire", "src/**", **ORCH).code == 0
    assert alock(repo, "acquire", "src/api/**", **C1).code == 0
    assert alock(repo, "acquire", "src/api/v1/**", **G1).code == 0
    assert alock(repo, "acquire", "src/api/v1/x.py", **C2).code == 1  # c2 is not g1's elder


def test_child_asking_for_parent_scope_gets_hint(repo: Path) -> None:
    assert alock(repo, "acquire", "src/**", **ORCH).code == 0
    got = alock(repo, "acquire", "src/**", **C1)
    assert got.code == 1 and got.word == "REFUSED"
    assert "hint: orch (your parent) holds exactly src/**" in got.out
    assert "narrower" in got.out


def test_release_all_takes_sub_agents_never_the_parent(repo: Path) -> None:
    assert alock(repo, "acquire", "src/**", **ORCH).code == 0
    assert alock(repo, "acquire", "src/api/**", **C1).code == 0
    assert alock(repo, "acquire", "src/api/v1/**", **G1).code == 0
    assert alock(repo, "acquire", "src/web/**", **C2).code == 0
    got = alock(repo, "release", "--all", **C1)
    assert got.code == 0
    assert "src/api/**" in got.out and "src/api/v1/**" in got.out
    left = {r["holder"] for r in alock(repo, "list", "--json").json()}
    assert left == {"orch", "c2"}
    got = alock(repo, "release", "--all", **ORCH)
    assert got.code == 0 and alock(repo, "list", "--json").json() == []


def test_whoami_names_parent_and_sources(repo: Path) -> None:
    doc = alock(repo, "whoami", "--json", **C1).json()
    assert doc["holder"] == "c1" and doc["holder_source"] == "AGENT_ID"
    assert doc["parent"] == "orch" and doc["parent_source"] == "AGENT_PARENT_ID"


# --- dead and alive session processes ------------------------------------------------------


def test_alive_session_blocks_dead_one_is_released(
    repo: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    a = ctx_for(repo, "agent-a", proc=proc_session(sleeper))
    assert locks.acquire(a, entries("src/api/**")).status == "acquired"
    b = ctx_for(repo, "agent-b")
    assert locks.acquire(b, entries("src/api/x.py")).status == "refused"
    kill(sleeper)
    got = locks.acquire(b, entries("src/api/x.py"))
    assert got.status == "acquired"
    assert "auto_released" in events(repo)
    assert [r.holder for r in Store.discover(repo).read_table()] == ["agent-b"]


def test_a_listing_clears_dead_locks_and_the_journal_says_who_did(
    repo: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    """A dead holder's note-less lock is gone from list and status once someone looks
    (a write, in local mode), journaled as auto_released by the one who looked; a live
    one and interrupted work (notes) stay."""
    dead = {"AGENT_ID": "agent-a", "AGENT_SESSION_PID": str(sleeper.pid)}
    assert alock(repo, "acquire", "src/api/**", **dead).code == 0
    assert alock(repo, "acquire", "src/web/**", **dead).code == 0
    assert alock(repo, "note", "src/web/**", "half done", **dead).code == 0
    assert alock(repo, "acquire", "docs/**", AGENT_ID="agent-b").code == 0
    kill(sleeper)
    listed = alock(repo, "list", AGENT_ID="supervisor")
    assert listed.code == 0 and "src/api/**" not in listed.out and "DEAD" not in listed.out
    assert "src/web/**" in listed.out and "INTERRUPTED" in listed.out and "docs/**" in listed.out
    [cleared] = [e for e in alock(repo, "log", "--json").json() if e["event"] == "auto_released"]
    assert cleared["paths"] == ["src/api/**"] and cleared["by"] == "supervisor"
    assert "(its process " in alock(repo, "log").out.splitlines()[0]
    before = alock(repo, "log", "--json").json()
    assert len(alock(repo, "list", "--json").json()) == 2
    assert alock(repo, "log", "--json").json() == before  # nothing left to clear: no write


def test_status_clears_dead_locks_too(repo: Path, sleeper: subprocess.Popen[bytes]) -> None:
    dead = {"AGENT_ID": "agent-a", "AGENT_SESSION_PID": str(sleeper.pid)}
    assert alock(repo, "acquire", "src/api/**", **dead).code == 0
    kill(sleeper)
    report = alock(repo, "status", "--json", AGENT_ID="supervisor").json()
    assert report["others"] == [], report
    assert alock(repo, "list", "--json").json() == []


def test_pid_reuse_counts_as_dead(repo: Path) -> None:
    # Our own pid is alive, but with another start time it is another process.
    reused = session(os.getpid(), "boot:1", "old-agent")
    assert not process_alive(reused.pid, reused.start_time)
    a = ctx_for(repo, "agent-a", proc=reused)
    assert locks.acquire(a, entries("src/**")).status == "acquired"
    b = ctx_for(repo, "agent-b")
    assert locks.acquire(b, entries("src/app.py")).status == "acquired"
    assert "auto_released" in events(repo)


def test_other_host_and_unknown_session_are_never_judged(repo: Path) -> None:
    dead = lambda pid, start: False  # noqa: E731
    elsewhere = SessionProcess(4242, "x:1", "agent", "another-host")
    a = ctx_for(repo, "agent-a", proc=elsewhere)
    assert locks.acquire(a, entries("src/**")).status == "acquired"
    unknown = ctx_for(repo, "agent-c", proc=session(0, "", ""))
    assert locks.acquire(unknown, entries("docs/**")).status == "acquired"
    b = ctx_for(repo, "agent-b", alive=dead)
    assert locks.acquire(b, entries("src/app.py")).status == "refused"
    assert locks.acquire(b, entries("docs/x.md")).status == "refused"


def test_liveness_is_judged_only_for_conflict_candidates(repo: Path) -> None:
    asked: list[int] = []

    def alive(pid: int, start: str) -> bool:
        asked.append(pid)
        return True

    for i in range(5):
        ctx = ctx_for(repo, f"agent-{i}", proc=session(1000 + i, "s"), alive=alive)
        assert locks.acquire(ctx, entries(f"dir{i}/**")).status == "acquired"
    asked.clear()
    b = ctx_for(repo, "agent-b", alive=alive)
    assert locks.acquire(b, entries("dir3/x")).status == "refused"
    assert asked == [1003]


# --- interrupted work ----------------------------------------------------------------------


@pytest.fixture
def interrupted(repo: Path, sleeper: subprocess.Popen[bytes]) -> str:
    """agent-a held src/api/** with notes; its session has died."""
    a = ctx_for(repo, "agent-a", proc=proc_session(sleeper))
    got = locks.acquire(a, entries("src/api/**"), reason="rewrite auth")
    assert got.lock is not None
    assert locks.note(a, make_entry("src/api/**"), "token refresh done").lock is not None
    kill(sleeper)
    return got.lock.id


def test_notes_turn_a_dead_lock_into_interrupted_work(repo: Path, interrupted: str) -> None:
    got = alock(repo, "acquire", "src/api/**", "-m", "mine now?", AGENT_ID="agent-b")
    assert got.code == 1
    assert got.word == f"INTERRUPTED WORK on src/api/**, left by agent-a [lock {interrupted}]"
    assert "token refresh done" in got.out
    assert (
        "git alock resume 'src/api/**'" in got.out and f"git alock break {interrupted}" in got.out
    )
    doc = alock(repo, "acquire", "src/**", "--json", AGENT_ID="agent-b").json()
    assert doc["status"] == "interrupted" and doc["lock"] is None
    assert doc["conflicts"][0]["id"] == interrupted
    assert doc["conflicts"][0]["state"] == "interrupted"
    # It blocks nobody's narrower claim, and stays in place.
    narrow = alock(repo, "acquire", "src/api/util.py", AGENT_ID="agent-c")
    assert narrow.code == 0 and narrow.word.startswith("ACQUIRED")
    assert "auto_released" not in events(repo)
    listed = alock(repo, "list")
    assert "INTERRUPTED" in listed.out
    # The refusal is in the local log.
    log = alock(repo, "log", "--json").json()
    assert any(e["event"] == "interrupted" and e.get("local") for e in log)


@pytest.mark.parametrize(
    ("claim", "same"),
    [
        (["src/api/**"], True),
        (["src/api"], True),  # another spelling of the same subtree
        (["src"], True),  # covers it
        (["**"], True),
        (["src/api/**", "docs/**"], True),  # covers it, and more
        (["src/*"], True),  # covers src/api, so everything beneath it
        (["src/a*/x"], False),  # crosses it only in part: narrower
        (["src/api/x.py"], False),
        (["src/api/v1/**"], False),
    ],
)
def test_what_counts_as_the_same_scope(claim: list[str], same: bool) -> None:
    from gitlocks.core.record import LockRecord

    record = LockRecord(
        id="x", holder="a", paths=("src/api/**",), created_at="", renewed_at="", expires_at=""
    )
    assert lifecycle.covers_scope(entries(*claim), record, False) is same


def test_resume_takes_over_with_notes(repo: Path, interrupted: str) -> None:
    got = alock(repo, "resume", "src/api/**", AGENT_ID="agent-b")
    assert got.code == 0, got.out
    assert got.word.startswith("RESUMED src/api/** from agent-a with 1 note")
    assert "token refresh done" in got.out
    [record] = alock(repo, "list", "--json").json()
    assert record["holder"] == "agent-b" and record["id"] == interrupted
    assert record["notes"][0]["text"] == "token refresh done"
    assert record["reason"] == "rewrite auth"
    # agent-b named no session (AGENT_SESSION_PID): its claim lives by its TTL alone.
    assert record["pid"] == 0 and not record["pid_start"]
    assert events(repo)[0] == "resumed"
    log = alock(repo, "log", "-n", "1", "--json").json()
    assert log[0]["from"] == "agent-a" and log[0]["by"] == "agent-b"
    # Now it is live work of agent-b: it blocks agent-c.
    assert alock(repo, "acquire", "src/api/x.py", AGENT_ID="agent-c").code == 1


def test_resume_refuses_live_work_and_nothing(repo: Path) -> None:
    assert alock(repo, "acquire", "src/**", AGENT_ID="agent-a").code == 0
    held = alock(repo, "resume", "src/**", AGENT_ID="agent-b")
    assert held.code == 1 and held.word.startswith("HELD src/** by agent-a")
    nothing = alock(repo, "resume", "docs/**", AGENT_ID="agent-b")
    assert nothing.code == 1 and nothing.word.startswith("NOT LOCKED")


def test_resume_refused_when_others_claimed_parts_since(repo: Path, interrupted: str) -> None:
    assert alock(repo, "acquire", "src/api/util.py", AGENT_ID="agent-c").code == 0
    got = alock(repo, "resume", interrupted, "--json", AGENT_ID="agent-b")
    assert got.code == 1 and got.json()["status"] == "refused"
    assert got.json()["conflicts"][0]["holder"] == "agent-c"


def test_break_discards_interrupted_work(repo: Path, interrupted: str) -> None:
    got = alock(repo, "break", interrupted, AGENT_ID="agent-b")
    assert got.code == 0 and got.word.startswith("BROKEN src/api/**")
    assert alock(repo, "acquire", "src/api/**", AGENT_ID="agent-b").code == 0


def test_check_ignores_dead_holders(repo: Path, interrupted: str) -> None:
    got = alock(repo, "check", "src/api/auth.py", AGENT_ID="agent-b")
    assert got.code == 0 and got.word.startswith("FREE")


def test_own_lock_of_a_dead_session_is_rebound(
    repo: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    old = ctx_for(repo, "agent-a", proc=proc_session(sleeper))
    assert locks.acquire(old, entries("src/**")).status == "acquired"
    kill(sleeper)
    new = ctx_for(repo, "agent-a")  # restarted under the same id
    got = locks.acquire(new, entries("src/**"))
    assert got.status == "already_yours" and got.lock is not None
    assert got.lock.pid == os.getpid()
    b = ctx_for(repo, "agent-b")
    assert locks.acquire(b, entries("src/app.py")).status == "refused"


# --- stale ---------------------------------------------------------------------------------


def test_stale_holders_are_marked_but_still_block(repo: Path) -> None:
    now = [T0]
    clock = lambda: now[0]  # noqa: E731
    a = ctx_for(repo, "agent-a", clock=clock)
    b = ctx_for(repo, "agent-b", clock=clock)
    assert locks.acquire(a, entries("src/**"), ttl=3600).status == "acquired"
    now[0] = T0 + timedelta(minutes=5)
    got = locks.acquire(b, entries("src/app.py"))
    assert got.status == "refused" and got.conflicts[0].state == "live"
    now[0] = T0 + timedelta(minutes=12)
    got = locks.acquire(b, entries("src/app.py"))
    assert got.status == "refused" and got.conflicts[0].state == "stale"
    text = render.acquire(got, now[0])
    assert "STALE: quiet for 12m" in text
    assert got.to_dict()["conflicts"][0]["quiet_seconds"] == 720
    # A note is a sign of life.
    assert locks.note(a, make_entry("src/**"), "still here").lock is not None
    assert locks.acquire(b, entries("src/app.py")).conflicts[0].state == "live"
    now[0] = T0 + timedelta(minutes=30)
    assert locks.acquire(b, entries("src/app.py")).conflicts[0].state == "stale"
    assert locks.renew(a, None, ttl=3600)
    assert locks.acquire(b, entries("src/app.py")).conflicts[0].state == "live"


def test_stale_after_from_config_and_listing(repo: Path) -> None:
    git(repo, "config", "alock.staleAfter", "1s")
    assert alock(repo, "acquire", "src/**", AGENT_ID="agent-a").code == 0
    time.sleep(1.1)
    got = alock(repo, "acquire", "src/app.py", AGENT_ID="agent-b")
    # Seconds, not exactly one: a loaded machine may take longer between the steps.
    assert got.code == 1 and re.search(r"STALE: quiet for \d+s", got.out)
    assert re.search(r"STALE \d+s", alock(repo, "list").out)
    # A bad value only shapes what is shown: every verb warns and uses the default.
    git(repo, "config", "alock.staleAfter", "soon")
    for args in (("acquire", "src/app.py"), ("list",), ("check", "src/x"), ("status",)):
        got = alock(repo, *args, AGENT_ID="agent-b")
        assert got.code in (0, 1), (args, got)
        assert "warning: invalid alock.staleAfter 'soon'" in got.err, (args, got)
        assert "using the default, 10m" in got.err


# --- status --------------------------------------------------------------------------------


def test_status_across_two_worktrees(repo: Path, worktree: Path) -> None:
    assert alock(repo, "acquire", "src/**", "-m", "refactor", AGENT_ID="agent-a").code == 0
    assert alock(worktree, "acquire", "docs/**", AGENT_ID="agent-b").code == 0
    (repo / "src" / "app.py").write_text("changed\n")
    (repo / "notes.txt").write_text("stray\n")
    (worktree / "src" / "app.py").write_text("b edits a's file\n")
    (worktree / "docs").mkdir()
    (worktree / "docs" / "guide.md").write_text("b's own\n")
    doc = alock(worktree, "status", "--json", AGENT_ID="agent-b").json()
    assert [r["paths"] for r in doc["yours"]] == [["docs/**"]]
    assert [r["holder"] for r in doc["others"]] == ["agent-a"]
    assert doc["others"][0]["state"] == "live"
    trees = {Path(t["path"]).resolve(): t for t in doc["worktrees"]}
    assert set(trees) == {repo.resolve(), worktree.resolve()}
    main = {e["path"]: e for e in trees[repo.resolve()]["edits"]}
    side = {e["path"]: e for e in trees[worktree.resolve()]["edits"]}
    assert main["src/app.py"]["status"] == "others"
    assert main["notes.txt"]["status"] == "unclaimed"
    assert side["src/app.py"]["status"] == "others"
    assert side["src/app.py"]["locks"][0]["holder"] == "agent-a"
    assert side["docs/guide.md"]["status"] == "yours"
    text = alock(worktree, "status", AGENT_ID="agent-b").out
    assert "src/app.py  inside the claim of agent-a" in text
    assert "notes.txt  in no claim" in text
    assert "docs/guide.md" not in text


def test_status_tells_each_worktree_apart_when_git_fails_in_one(repo: Path, worktree: Path) -> None:
    """Every worktree's edits are asked of git at once: one whose git fails (its index
    damaged) says so, the others still list their edits, and the one status ran in is
    marked as such."""
    (repo / "here.txt").write_text("edit\n")
    (worktree / "there.txt").write_text("edit\n")
    index = Path(git(worktree, "rev-parse", "--git-dir").strip()) / "index"
    index.write_bytes(b"DIRC damaged")
    doc = alock(repo, "status", "--json", AGENT_ID="agent-a").json()
    trees = {Path(t["path"]).resolve(): t for t in doc["worktrees"]}
    assert set(trees) == {repo.resolve(), worktree.resolve()}
    assert [e["path"] for e in trees[repo.resolve()]["edits"]] == ["here.txt"]
    assert trees[repo.resolve()]["current"] is True
    assert trees[worktree.resolve()]["current"] is False
    assert trees[worktree.resolve()]["error"] and trees[worktree.resolve()]["edits"] == []


def test_status_reads_every_worktree_with_few_descriptors(repo: Path, tmp_path: Path) -> None:
    """Thirty worktrees under a limit of 80 open files: status asks git about a few at
    a time, so each one's edits are read, none told "Too many open files"."""
    for i in range(30):
        path = tmp_path / f"wt{i}"
        git(repo, "worktree", "add", "-q", "-b", f"side{i}", str(path))
        (path / f"new{i}.txt").write_text("edit\n")
    env = cli_env()
    proc = subprocess.run(
        ["bash", "-c", "ulimit -n 80 && exec git alock status --json"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    trees = json.loads(proc.stdout)["worktrees"]
    assert len(trees) == 31
    assert [t.get("error") for t in trees if t.get("error")] == []
    edited = sorted(e["path"] for t in trees for e in t["edits"])
    assert edited == sorted(f"new{i}.txt" for i in range(30))


def _children() -> set[int]:
    """Our child processes, running or waiting to be reaped."""
    found: set[int] = set()
    for task in os.listdir(f"/proc/{os.getpid()}/task"):
        with open(f"/proc/{os.getpid()}/task/{task}/children") as f:
            found.update(int(pid) for pid in f.read().split())
    return found


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads /proc")
def test_status_leaves_no_git_behind_when_the_table_cannot_be_read(
    repo: Path, worktree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git is asked for the worktrees and the edits before the table is read: a read that
    fails kills and reaps them, so a long-lived server keeps no process from it."""
    ctx = ctx_for(repo, "agent-a")
    ctx.store.read_table()  # whatever the store starts once is started now

    def unreadable() -> Table:
        raise StoreError("cannot read the journal")

    monkeypatch.setattr(ctx.store, "read_table", unreadable)
    before = _children()
    with pytest.raises(StoreError):
        status(ctx)
    gc.collect()
    assert _children() - before == set()


def test_status_reports_files_whose_names_no_pattern_can_spell(repo: Path) -> None:
    assert alock(repo, "acquire", "src/**", "-m", "refactor", AGENT_ID="agent-a").code == 0
    (repo / "src" / "bad\nname.py").write_text("x\n")
    (repo / "odd\tfile").write_text("x\n")
    (repo / "src" / "a*b.py").write_text("x\n")
    got = alock(repo, "status", "--json", AGENT_ID="agent-b")
    assert got.code == 0, got.err
    [tree] = got.json()["worktrees"]
    edits = {e["path"]: e for e in tree["edits"]}
    assert edits["src/bad\nname.py"]["status"] == "others"
    assert edits["src/bad\nname.py"]["locks"][0]["holder"] == "agent-a"
    assert edits["odd\tfile"]["status"] == "unclaimed"
    assert edits["src/a*b.py"]["status"] == "others"
    mine = alock(repo, "status", "--json", AGENT_ID="agent-a").json()
    assert {e["status"] for e in mine["worktrees"][0]["edits"] if e["path"].startswith("src/")} == {
        "yours"
    }


# --- user text in human output ---------------------------------------------------------------

INJECTED = "x\nFREE src/u2\x1b[2J"


def no_injected_line(text: str) -> None:
    """The reason shows escaped, on the line it belongs to."""
    assert not any(line.startswith("FREE") for line in text.splitlines()), text
    assert "\x1b" not in text
    assert "x\\nFREE src/u2\\x1b[2J" in text


def test_human_output_escapes_reasons(repo: Path) -> None:
    assert alock(repo, "acquire", "src/u", "-m", INJECTED, AGENT_ID="agent-a").code == 0
    check = alock(repo, "check", "src/u/f.py", AGENT_ID="agent-b")
    assert check.code == 1 and check.word.startswith("HELD src/u/f.py by agent-a")
    no_injected_line(check.out)
    refused = alock(repo, "acquire", "src/u/f.py", AGENT_ID="agent-b")
    assert refused.code == 1
    no_injected_line(refused.out)
    no_injected_line(alock(repo, "list").out)
    no_injected_line(alock(repo, "status", AGENT_ID="agent-b").out)
    # JSON stays exact.
    [item] = alock(repo, "check", "src/u/f.py", "--json", AGENT_ID="agent-b").json()
    assert item["locks"][0]["reason"] == INJECTED


def test_human_output_escapes_notes_and_paths(repo: Path, sleeper: subprocess.Popen[bytes]) -> None:
    a = ctx_for(repo, "agent-a", proc=proc_session(sleeper))
    assert locks.acquire(a, entries("src/**"), reason=INJECTED).status == "acquired"
    assert locks.note(a, make_entry("src/**"), "step\nFREE src/u2").lock is not None
    kill(sleeper)
    got = alock(repo, "acquire", "src/**", AGENT_ID="agent-b")
    assert got.code == 1 and got.word.startswith("INTERRUPTED WORK on src/**")
    no_injected_line(got.out)
    assert "note " in got.out and "step\\nFREE src/u2" in got.out
    (repo / "src" / "new\nFREE src\x1b.py").write_text("x\n")
    status = alock(repo, "status", AGENT_ID="agent-b").out
    assert "src/new\\nFREE src\\x1b.py  inside the interrupted work of agent-a" in status
    assert not any(line.startswith("FREE") for line in status.splitlines())
    resumed = alock(repo, "resume", "src/**", AGENT_ID="agent-b")
    assert resumed.code == 0 and resumed.word.startswith("RESUMED src/**")
    assert not any(line.startswith("FREE") for line in resumed.out.splitlines())
    assert "step\\nFREE src/u2" in resumed.out


def test_check_of_a_path_with_a_control_character_is_escaped() -> None:
    item = CheckItem("src/a\nFREE b", "free", [])
    assert render.check([item], T0) == "FREE src/a\\nFREE b"


def test_printable() -> None:
    from gitlocks.core.text import printable

    assert printable("plain é ✓ a\\b") == "plain é ✓ a\\b"
    assert printable("a\nb\tc\rd\x00\x1b\x7f\x85") == "a\\nb\\tc\\rd\\x00\\x1b\\x7f\\x85"
    assert printable("a\u2028b\u202ec") == "a\\u2028b\\u202ec"
    assert printable(b"bad\xffname".decode("utf-8", "surrogateescape")) == "bad\\xffname"


def test_status_shows_edits_inside_your_claim_made_in_another_worktree(
    repo: Path, worktree: Path
) -> None:
    """Another worktree editing inside your claim is the conflict you most need to see;
    your own edits where you work are not listed."""
    assert alock(repo, "acquire", "src/**", AGENT_ID="agent-a").code == 0
    (repo / "src" / "app.py").write_text("a's own edit\n")
    (worktree / "src" / "lib.py").write_text("someone else, in a's claim\n")
    text = alock(repo, "status", AGENT_ID="agent-a").out
    assert "src/lib.py  inside your claim, edited in this other worktree" in text, text
    assert "src/app.py" not in text.split("uncommitted edits", 1)[1], text
    doc = alock(repo, "status", "--json", AGENT_ID="agent-a").json()
    current = [t["current"] for t in doc["worktrees"]]
    assert sorted(current) == [False, True]


def test_status_says_where_to_find_each_other_holder(
    repo: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    env = {"AGENT_ID": "agent-a", "AGENT_SESSION_PID": str(sleeper.pid)}
    assert alock(repo, "acquire", "src/**", **env).code == 0
    text = alock(repo, "status", AGENT_ID="agent-b").out
    where = text.split("src/** by agent-a", 1)[1].splitlines()[1]
    assert where.startswith(f"    on {os.uname().nodename}, session "), text
    assert f"pid {sleeper.pid}" in where and f"worktree {repo}" in where, text
