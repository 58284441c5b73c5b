"""Recovery: a write killed or failing half-way, and a mutex log left by a dead writer.

Real repositories and bare remotes over file://, never a mock of git. Faults are injected
by monkeypatching one gitlocks function to raise (in-process), or to ``os._exit`` in a
child process; dead writers' leftovers are planted by hand, with ``git update-ref`` and a
log written into ``agent-locks.mutex`` (docs/design.md, sections 4.2, 4.3, 5.1 and 5.6).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from support.cli import Result, alock
from support.procs import git_at_work
from support.remote import make_bare, make_clone, remote_events

from gitlocks.git.transaction import RefsRefused, Transaction
from gitlocks.store import refs as refs_module

LOCKS = "refs/agent-locks/"
JOURNAL = "refs/agent-locks-meta/journal"
LOCAL_JOURNAL = "refs/agent-locks-meta/local-journal"
STAGING = "refs/agent-locks-remote/origin/"
MAIN = "refs/heads/main"
MUTEX = "agent-locks.mutex"
A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}
C = {"AGENT_ID": "agent-c"}
GONE = {"released", "expired", "broken", "auto_released"}


# --- plain git ------------------------------------------------------------------------------


def rev(path: Path, ref: str) -> str | None:
    """What ``ref`` resolves to, or None when it does not exist."""
    out = git(path, "rev-parse", "--verify", "-q", ref, check=False).strip()
    return out or None


def lock_refs(path: Path) -> dict[str, str]:
    """Lock id -> value of every ref under ``refs/agent-locks/``."""
    out = git(path, "for-each-ref", "--format=%(refname) %(objectname)", LOCKS)
    found = {}
    for line in out.splitlines():
        name, _, oid = line.partition(" ")
        found[name[len(LOCKS) :]] = oid
    return found


def journal_events(path: Path, ref: str = JOURNAL) -> list[dict[str, Any]]:
    """Every event of the journal at ``ref``, oldest first, read with ``git log``."""
    if rev(path, ref) is None:
        return []
    out = git(path, "log", "--format=%x1e%B", ref)
    events: list[dict[str, Any]] = []
    for message in reversed(out.split("\x1e")[1:]):
        for line in message.splitlines():
            if line.startswith("{"):
                events.append(json.loads(line))
    return events


def journal_table(path: Path, ref: str = JOURNAL) -> dict[str, str]:
    """Lock id -> blob named by the tree of the journal commit at ``ref`` (section 5.4)."""
    out = git(path, "ls-tree", "-r", ref)
    found = {}
    for line in out.splitlines():
        meta, _, name = line.partition("\t")
        if name.startswith("locks/"):  # locks/<xx>/<id>: subtrees by a hash of the id
            found[name.rsplit("/", 1)[-1]] = meta.split()[2]
    return found


def last_word(events: list[dict[str, Any]]) -> dict[str, str]:
    """Lock id -> the last event the journal says about it (a release of some of a lock's
    patterns leaves the rest held: ``partly released``)."""
    found: dict[str, str] = {}
    for event in events:
        if event.get("id"):
            kind = str(event["event"])
            dropped = event.get("released")
            if kind == "released" and dropped and set(dropped) != set(event["paths"]):
                kind = "partly released"
            found[str(event["id"])] = kind
    return found


def assert_consistent(path: Path, *, tree: bool = True) -> None:
    """The journal's last word on each lock is whether its ref exists, and (``tree``) the
    journal tip's table is the lock refs."""
    refs, words = lock_refs(path), last_word(journal_events(path))
    for lock_id in refs.keys() | words.keys():
        live = lock_id in words and words[lock_id] not in GONE
        assert (lock_id in refs) == live, f"{lock_id}: ref={refs.get(lock_id)} last={words}"
    if not tree:
        return
    table = journal_table(path)
    assert table == refs, f"the journal tip's tree names {table}, the lock refs are {refs}"


def mutex_text(common: Path) -> str:
    path = common / MUTEX
    return path.read_text() if path.exists() else ""


def lock_id_of(got: Result) -> str:
    assert got.code == 0, got
    return str(got.json()["lock"]["id"])


def no_crash(got: Result) -> None:
    assert "Traceback" not in got.err and "internal error" not in got.err, got.err


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def new_commit(path: Path, message: str) -> str:
    """A commit outside every branch (an object id a hostile log can name)."""
    tree = git(path, "write-tree").strip()
    return git(path, "commit-tree", tree, "-m", message).strip()


# --- 1. a sync killed between the fetch and the mirror --------------------------------------

# Syncs the clone at argv[1], dying (exit 9) at the kill point argv[2]:
#   before-mirror: the fetch moved staging; nothing of the local view moved yet;
#   mid-mirror: the view's lock refs moved, the journal (the commit point) did not.
_KILLED_SYNC = r"""
import os, sys
import pygit2
from gitlocks.layout import JOURNAL_REF
from gitlocks.store import refs
from gitlocks.store.remote import RemoteStore

def die(*args, **kwargs):
    os._exit(9)

if sys.argv[2] == "before-mirror":
    RemoteStore._mirror = die
else:
    commit = refs._commit
    def commit_or_die(tx):
        if JOURNAL_REF in tx.names:
            os._exit(9)
        commit(tx)
    refs._commit = commit_or_die
RemoteStore(pygit2.Repository(sys.argv[1])).sync()
"""


def _killed_after_fetch(tmp_path: Path, kill: str) -> tuple[Path, Path, Path, str]:
    """Clone b mirrored agent-a's src/**; a released it; b's next sync died after fetching
    (the journal ref read below: a remote kept in one journal)."""
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    b = make_clone(bare.as_uri(), tmp_path / "b")
    lock_id = lock_id_of(alock(a, "acquire", "src/**", "--json", **A))
    assert alock(b, "sync").code == 0
    assert lock_id in lock_refs(b)
    assert alock(a, "release", "src/**", **A).code == 0
    assert lock_id not in lock_refs(bare)
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_SYNC, str(b), kill],
        cwd=b,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert killed.returncode == 9, killed.stderr
    # Killed after the fetch: staging has the remote's journal, the local view has not.
    assert rev(b, STAGING + "meta/journal") == rev(bare, JOURNAL)
    assert rev(b, JOURNAL) != rev(bare, JOURNAL)
    if kill == "before-mirror":
        assert lock_id in lock_refs(b)
    else:
        assert lock_id not in lock_refs(b) and mutex_text(b / ".git"), "not killed mid-write"
    return bare, a, b, lock_id


def _claim_overlapping(bare: Path, b: Path, lock_id: str, n: int) -> None:
    got = alock(b, "acquire", f"src/x{n}.py", **C)
    no_crash(got)
    assert "never pushed" not in got.err, f"the released lock came back as a phantom:\n{got}"
    assert got.code == 0, got
    assert lock_id not in lock_refs(bare)
    assert lock_id not in lock_refs(b), (
        "the claim's mirror left the released lock in the local view: a phantom that the "
        f"next claim reports as never pushed:\n{alock(b, 'acquire', 'lib/**', **C)}"
    )


def _sync_and_list(bare: Path, b: Path, lock_id: str, n: int) -> None:
    got = alock(b, "sync")
    assert got.code == 0, got
    listed = alock(b, "list", "--json")
    assert listed.code == 0, listed
    assert lock_id not in [r["id"] for r in listed.json()], "list still shows the released lock"
    assert lock_id not in lock_refs(b)


def _switch_again(bare: Path, b: Path, lock_id: str, n: int) -> None:
    got = alock(b, "remote", "origin", "--json")
    no_crash(got)
    assert lock_id not in lock_refs(bare), f"the switch pushed the released lock back: {got}"
    assert got.code == 0, got
    pushed = [r["id"] for r in got.json()["pushed"]]
    assert lock_id not in pushed
    adopted = [e for e in remote_events(bare) if e.get("id") == lock_id]
    assert [e["event"] for e in adopted] == ["granted", "released"]


STEPS: dict[str, Callable[[Path, Path, str, int], None]] = {
    "acquire": _claim_overlapping,
    "sync": _sync_and_list,
    "remote": _switch_again,
}


@pytest.mark.parametrize("first", list(STEPS))
@pytest.mark.parametrize("kill", ["before-mirror", "mid-mirror"])
def test_sync_killed_after_fetch_leaves_no_phantom_lock(
    tmp_path: Path, kill: str, first: str
) -> None:
    bare, _, b, lock_id = _killed_after_fetch(tmp_path, kill)
    order = [first, *(s for s in STEPS if s != first), "acquire", "sync"]
    for n, step in enumerate(order):
        STEPS[step](bare, b, lock_id, n)
    # In the end the local view is the remote's, and no log of a dead writer is left.
    assert lock_refs(b) == lock_refs(bare)
    assert rev(b, JOURNAL) == rev(bare, JOURNAL)
    assert mutex_text(b / ".git") == ""


# --- 2. alock.remote set by hand on a clone with local history ------------------------------


@pytest.mark.parametrize("remote_history", [False, True], ids=["empty-remote", "busy-remote"])
def test_remote_set_by_hand_keeps_local_journal_and_locks(
    tmp_path: Path, remote_history: bool
) -> None:
    bare = make_bare(tmp_path / "locks.git")
    if remote_history:
        other = make_clone(bare.as_uri(), tmp_path / "other", shards=1)
        assert alock(other, "acquire", "lib/**", **B).code == 0
    a = make_clone(bare.as_uri(), tmp_path / "a", remote_mode=False)
    assert alock(a, "acquire", "docs/**", **A).code == 0
    assert alock(a, "release", "docs/**", **A).code == 0
    kept = lock_id_of(alock(a, "acquire", "src/**", "--json", **A))
    blob = lock_refs(a)[kept]
    local_tip = rev(a, JOURNAL)
    local_events = journal_events(a)
    assert [e["event"] for e in local_events] == ["granted", "released", "granted"]
    git(a, "config", "alock.remote", "origin")  # by hand, skipping the switch

    synced = alock(a, "sync")
    assert synced.code == 0, synced
    assert rev(a, LOCAL_JOURNAL) == local_tip, "the local journal was not kept"
    assert journal_events(a, LOCAL_JOURNAL) == local_events
    assert lock_refs(a).get(kept) == blob, "the local lock was lost by the sync"
    listed = [r["id"] for r in alock(a, "list", "--json").json()]
    assert kept in listed
    if remote_history:
        assert rev(a, JOURNAL) == rev(bare, JOURNAL)
        assert len(listed) == 2
    # A second sync keeps the same history once, and still the lock.
    assert alock(a, "sync").code == 0
    assert rev(a, LOCAL_JOURNAL) == local_tip
    assert rev(a, LOCAL_JOURNAL + "-1") is None
    assert lock_refs(a).get(kept) == blob
    # Never silently lost: a claim names it, and the switch pushes it.
    refused = alock(a, "acquire", "tests/**", **A)
    assert refused.code == 2 and "never pushed" in refused.err, refused
    switched = alock(a, "remote", "origin")
    assert switched.code == 0, switched
    assert lock_refs(bare).get(kept) == blob
    assert rev(a, LOCAL_JOURNAL) == local_tip
    assert rev(a, LOCAL_JOURNAL + "-1") is None


# --- 3. a hostile mutex log ------------------------------------------------------------------

HOSTILE = [
    "refs/heads/main",
    "HEAD",
    "packed-refs",
    "../../x",
    "refs/agent-locks/../../heads/main",
    "refs/agent-locks/../heads/main",
]


def _hostile_log(repo: Path, form: str) -> dict[str, Any]:
    """A dead writer's log naming refs outside gitlocks' namespaces.

    refs: the old format (names only); undo: old/new values with the journal not moved;
    redo: old/new values with the journal already at the new value (so forward).
    """
    if form == "refs":
        return {"pid": 1, "refs": HOSTILE}
    old = {name: new_commit(repo, f"old {name}") for name in HOSTILE}
    new: dict[str, str | None] = {name: new_commit(repo, f"new {name}") for name in HOSTILE}
    new[JOURNAL] = rev(repo, JOURNAL) if form == "redo" else new_commit(repo, "other")
    return {"pid": 1, "old": old, "new": new}


def _plant_hostile(repo: Path, tmp_path: Path) -> dict[Path, str]:
    """A ``.lock`` file where each hostile name points (and where plain ones are)."""
    common = repo / ".git"
    (common / "heads").mkdir(exist_ok=True)
    planted = {}
    for name in HOSTILE:
        if name == "packed-refs":
            continue  # a packed-refs.lock is waited for: see the tests below
        path = Path(os.path.normpath(common / f"{name}.lock"))
        path.write_text(f"foreign lock for {name}\n")
        planted[path] = path.read_text()
    assert tmp_path / "x.lock" in planted  # the file two levels above .git
    return planted


@pytest.mark.parametrize("form", ["refs", "undo", "redo"])
def test_hostile_mutex_log_never_touches_foreign_refs_or_files(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    monkeypatch.setattr(refs_module, "LOCKFILE_WAIT_SECONDS", 0.5)
    assert alock(repo, "acquire", "docs/**", **A).code == 0
    common = repo / ".git"
    main, head = rev(repo, MAIN), (common / "HEAD").read_text()
    main_file = (common / MAIN).read_bytes() if (common / MAIN).exists() else None
    packed = (common / "packed-refs").read_bytes() if (common / "packed-refs").exists() else None
    planted = _plant_hostile(repo, tmp_path)
    (common / MUTEX).write_text(json.dumps(_hostile_log(repo, form)))

    got = alock(repo, "acquire", "src/**", **B)
    no_crash(got)
    assert got.code in (0, 2), got
    for path, text in planted.items():
        assert path.exists(), f"{path} was removed"
        assert path.read_text() == text, f"{path} was rewritten"
    assert rev(repo, MAIN) == main
    assert (common / "HEAD").read_text() == head
    assert git(repo, "symbolic-ref", "HEAD").strip() == MAIN
    if main_file is not None:
        assert (common / MAIN).read_bytes() == main_file
    if packed is not None:
        assert (common / "packed-refs").read_bytes() == packed
    if got.code == 0:
        assert_consistent(repo)
        assert mutex_text(common) == ""
    else:
        assert ".lock" in got.err or "mutex" in got.err, got
    # Either way the store is not wedged by the log: the next write goes through.
    again = alock(repo, "acquire", "lib/**", **B)
    assert again.code == 0, again
    assert rev(repo, MAIN) == main and all(path.exists() for path in planted)


@pytest.fixture
def kept_fresh(repo: Path) -> Iterator[Callable[[], None]]:
    """Starts touching packed-refs.lock every 50 ms, as a live git command writing it."""
    path = repo / ".git" / "packed-refs.lock"
    stop = threading.Event()

    def touch() -> None:
        while not stop.wait(0.05):
            if path.exists():
                path.touch()

    thread = threading.Thread(target=touch, daemon=True)
    yield thread.start
    stop.set()
    if thread.is_alive():
        thread.join()


@pytest.mark.parametrize("freshness", ["touched-before", "kept-fresh"])
@pytest.mark.parametrize("log", ["empty", "refs", "undo"])
def test_fresh_packed_refs_lock_survives_and_is_named(
    repo: Path,
    monkeypatch: pytest.MonkeyPatch,
    kept_fresh: Callable[[], None],
    log: str,
    freshness: str,
) -> None:
    monkeypatch.setattr(refs_module, "LOCKFILE_WAIT_SECONDS", 0.5)
    assert alock(repo, "acquire", "docs/**", **A).code == 0
    common = repo / ".git"
    tip, before = rev(repo, JOURNAL), lock_refs(repo)
    if log != "empty":
        (common / MUTEX).write_text(json.dumps(_hostile_log(repo, log)))
    lock = common / "packed-refs.lock"
    lock.write_text("a live git pack-refs\n")  # fresh: touched just before
    if freshness == "kept-fresh":
        kept_fresh()
    started = time.monotonic()
    got = alock(repo, "acquire", "src/**", **B)
    waited = time.monotonic() - started
    no_crash(got)
    assert lock.exists(), f"a fresh packed-refs.lock was removed ({log} log): {got}"
    assert got.code == 2 and "packed-refs.lock" in got.err, got
    assert waited >= 0.4, f"failed after {waited:.2f}s, without waiting"
    assert rev(repo, JOURNAL) == tip and lock_refs(repo) == before
    lock.unlink()
    assert alock(repo, "acquire", "src/**", **B).code == 0
    assert_consistent(repo)


# --- 4. a write that fails half-way ---------------------------------------------------------


def _fail_commit(monkeypatch: pytest.MonkeyPatch, repo: Path, n: int) -> list[dict[str, str]]:
    """Make the ``n``-th transaction's commit fail as git would refuse it; what the lock
    refs held at that moment is recorded (to show whether they had moved already)."""
    real = refs_module._commit
    count: list[int] = []
    seen: list[dict[str, str]] = []

    def commit(tx: Transaction) -> None:
        count.append(1)
        if len(count) == n:
            seen.append(lock_refs(repo))
            raise RefsRefused("injected: failed half-way")
        real(tx)

    monkeypatch.setattr(refs_module, "_commit", commit)
    return seen


def test_a_write_whose_undo_failed_is_decided_again_on_the_undone_table(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write refused half-way whose undo could not finish (git kept refusing it) leaves
    its log in the mutex file and the lock refs half-moved: the write's next try finishes
    that log first, so it decides on the table as it was, never on refs the next writer
    would move back (a claim answered as held, then lost)."""
    seen = _fail_commit(monkeypatch, repo, 2)  # the journal's: the lock refs moved
    undone: list[bool] = []
    monkeypatch.setattr(refs_module.RefWriter, "_put_back", lambda *a: undone.append(False))
    got = alock(repo, "acquire", "src/**", **A)
    monkeypatch.undo()
    no_crash(got)
    assert seen and undone, "the fault was never injected"
    assert got.code == 0 and got.word.startswith("ACQUIRED"), got
    assert alock(repo, "acquire", "docs/**", **B).code == 0  # the next writer
    held = {(r["holder"], r["paths"][0]) for r in alock(repo, "list", "--json").json()}
    assert held == {("agent-a", "src/**"), ("agent-b", "docs/**")}, held
    assert_consistent(repo)


# (verb args, the transaction whose commit fails (the lock refs', then the journal's),
# whether lock refs had moved by then)
HALF_WAY = {
    "acquire-two-scopes": (("acquire", "a/**", "b/**"), 2, True),
    "release-one-pattern": (("release", "docs/**"), 2, True),
    "release-all-journal": (("release", "--all"), 2, True),
    "release-all-locks": (("release", "--all"), 1, False),
}


@pytest.mark.parametrize("case", list(HALF_WAY))
def test_write_failing_half_way_leaves_no_event(
    repo: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    args, n, moved = HALF_WAY[case]
    assert alock(repo, "acquire", "docs/**", "lib/**", **A).code == 0
    assert alock(repo, "acquire", "src/**", **A).code == 0
    common = repo / ".git"
    tip, before, events = rev(repo, JOURNAL), lock_refs(repo), journal_events(repo)
    seen = _fail_commit(monkeypatch, repo, n)
    got = alock(repo, *args, **A)
    monkeypatch.undo()
    no_crash(got)
    assert got.code == 2, got
    assert len(seen) == 1, "the fault was never injected"
    # Moved: the fault came after the lock refs had moved (with the journal still behind).
    assert (seen[0] != before) == moved, seen
    assert rev(repo, JOURNAL) == tip, "the journal moved"
    assert lock_refs(repo) == before, "a lock ref was left at its new value"
    assert journal_events(repo) == events
    assert mutex_text(common) == "", "the undo log was left in the mutex"
    assert not list((common / "refs").rglob("*.lock"))
    assert alock(repo, "acquire", "tests/**", **B).code == 0
    assert alock(repo, *args, **A).code == 0  # and the same write, now that git obliges
    assert_consistent(repo)


# --- 5. a writer killed between the lock refs and the journal -------------------------------


def _dead_write(repo: Path) -> tuple[dict[str, str], dict[str, str], dict[str, Any], list[str]]:
    """agent-a held docs/** and lib/**; three writes later docs/** is released, lib/** has a
    note and src/** is claimed. Returns both states (lock ref or journal name -> value) and
    the log of a writer that did it all in one write, and the lock ids (docs, lib, src)."""
    docs = lock_id_of(alock(repo, "acquire", "docs/**", "--json", **A))
    lib = lock_id_of(alock(repo, "acquire", "lib/**", "--json", **A))
    old = {LOCKS + i: v for i, v in lock_refs(repo).items()}
    old[JOURNAL] = str(rev(repo, JOURNAL))
    assert alock(repo, "release", "docs/**", **A).code == 0
    assert alock(repo, "note", "lib/**", "half done", **A).code == 0
    src = lock_id_of(alock(repo, "acquire", "src/**", "--json", **A))
    new = {LOCKS + i: v for i, v in lock_refs(repo).items()}
    new[JOURNAL] = str(rev(repo, JOURNAL))
    names = sorted(old.keys() | new.keys())
    log = {
        "pid": dead_pid(),
        "old": {n: old.get(n) for n in names},
        "new": {n: new.get(n) for n in names},
    }
    assert old[LOCKS + lib] != new[LOCKS + lib]
    return old, new, log, [docs, lib, src]


def _set(repo: Path, name: str, value: str | None) -> None:
    if value is None:
        git(repo, "update-ref", "-d", name)
    else:
        git(repo, "update-ref", name, value)


def _lock_values(state: dict[str, str]) -> dict[str, str]:
    return {n[len(LOCKS) :]: v for n, v in state.items() if n.startswith(LOCKS)}


def _torn(repo: Path, direction: str) -> tuple[dict[str, str], str, str]:
    """A writer died between the lock refs and the journal; returns the lock ids and values
    the next writer must leave (back: the old ones, forward: the new ones), the journal
    commit it must write on, and a pattern that only the recovered table refuses."""
    old, new, log, (_docs, lib, src) = _dead_write(repo)
    common = repo / ".git"
    if direction == "back":
        # Every lock ref moved (they are at the new values already), the journal did not;
        # the dead writer still held the journal's lock file.
        _set(repo, JOURNAL, old[JOURNAL])
        (common / f"{JOURNAL}.lock").write_text(new[JOURNAL] + "\n")
        target, pattern = old, "docs/x.md"  # docs/** is agent-a's again once rolled back
    else:
        # The journal moved and docs/** is released, but lib/** and src/** did not move,
        # and the writer died holding lib's lock file.
        _set(repo, LOCKS + lib, old[LOCKS + lib])
        _set(repo, LOCKS + src, old.get(LOCKS + src))
        (common / f"{LOCKS}{lib}.lock").write_text(new[LOCKS + lib] + "\n")
        target, pattern = new, "src/x.py"  # src/** is agent-a's once rolled forward
    (common / MUTEX).write_text(json.dumps(log))
    return _lock_values(target), target[JOURNAL], pattern


def _no_leftovers(repo: Path) -> None:
    assert mutex_text(repo / ".git") == "", "the dead writer's log is still there"
    assert not list((repo / ".git" / "refs").rglob("*.lock"))


@pytest.mark.parametrize("direction", ["back", "forward"])
def test_next_writer_finishes_a_dead_writers_update(repo: Path, direction: str) -> None:
    expected, base, _ = _torn(repo, direction)
    mine = lock_id_of(alock(repo, "acquire", "tests/**", "--json", **B))
    expected[mine] = lock_refs(repo)[mine]
    assert lock_refs(repo) == expected, f"not rolled {direction}"
    assert git(repo, "rev-parse", JOURNAL + "^").strip() == base
    _no_leftovers(repo)
    assert_consistent(repo, tree=False)


@pytest.mark.parametrize("direction", ["back", "forward"])
def test_next_writers_journal_commit_carries_the_recovered_table(
    repo: Path, direction: str
) -> None:
    _torn(repo, direction)
    assert alock(repo, "acquire", "tests/**", **B).code == 0
    _no_leftovers(repo)
    assert_consistent(repo)  # its tree: section 5.4, what remote decisions rest on


@pytest.mark.parametrize("direction", ["back", "forward"])
def test_next_writer_decides_on_the_recovered_table(repo: Path, direction: str) -> None:
    expected, _, pattern = _torn(repo, direction)
    got = alock(repo, "acquire", pattern, **B)
    no_crash(got)
    assert got.code == 1 and got.word == "REFUSED", (
        f"granted {pattern} to agent-b over agent-a's lock: decided on the torn state "
        f"before rolling {direction}:\n{got}"
    )
    assert alock(repo, "acquire", "tests/**", **C).code == 0  # the next write recovers
    for lock_id, value in expected.items():
        assert lock_refs(repo).get(lock_id) == value, f"not rolled {direction}"
    _no_leftovers(repo)
    assert_consistent(repo)


@pytest.mark.slow
def test_remote_lock_refs_that_drift_from_the_journal_table_are_repaired(tmp_path: Path) -> None:
    """The remote's journal commit carries the table; its lock refs only mirror it. A ref
    deleted or planted there by plain git never decides anything, and the next write that
    touches it leases on what the remote really has and puts it right."""
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    b = make_clone(bare.as_uri(), tmp_path / "b")
    got = alock(a, "acquire", "src/**", "--json", AGENT_ID="agent-a")
    assert got.code == 0, got.err
    lock_id = got.json()["lock"]["id"]
    git(bare, "update-ref", "-d", f"refs/agent-locks/{lock_id}")  # plain git, on the remote
    refused = alock(b, "acquire", "src/x", AGENT_ID="agent-b")
    assert refused.code == 1 and refused.word == "REFUSED", refused
    released = alock(a, "release", "src/**", AGENT_ID="agent-a")
    assert released.code == 0, released
    assert alock(b, "acquire", "src/x", AGENT_ID="agent-b").code == 0
    on_remote = git(bare, "for-each-ref", "--format=%(refname)", "refs/agent-locks/").split()
    listing = git(bare, "ls-tree", "-r", "--name-only", "refs/agent-locks-meta/journal:locks")
    tip = [name.rsplit("/", 1)[-1] for name in listing.split()]
    assert sorted(r.removeprefix("refs/agent-locks/") for r in on_remote) == sorted(tip)
    assert [e["event"] for e in remote_events(bare)][-2:] == ["released", "granted"]


# A claim of src/** killed (SIGKILL's effect: os._exit, nothing cleaned up) at one step of
# its write: "deciding" with the table read under the mutex, "prepared" with
# every ref locked and nothing moved, "half" with the lock refs moved and not the journal.
_KILLED_WRITE = r"""
import os, sys
from gitlocks.layout import JOURNAL_REF
from gitlocks.main import main
from gitlocks.store import local, refs

step = sys.argv[1]
if step == "deciding":
    read = local.Store._read_current  # the read a write decides on
    def read_current(self, *args, **kwargs):
        table = read(self, *args, **kwargs)
        if self._mutex_fd is not None:
            os._exit(9)
        return table
    local.Store._read_current = read_current
else:
    commit = refs._commit
    def commit_or_die(tx):
        if step == "prepared" or JOURNAL_REF in tx.names:
            os._exit(9)
        commit(tx)
    refs._commit = commit_or_die
sys.exit(main(["acquire", "src/**", "-m", "killed"]))
"""


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the processes from /proc")
@pytest.mark.parametrize("step", ["deciding", "prepared", "half"])
def test_a_writer_killed_at_any_step_loses_and_double_grants_nothing(repo: Path, step: str) -> None:
    """Whatever step a write dies at, its git transactions end with it (no ref stays
    locked), the claim it never committed is not granted, the claim held before keeps its
    lock, and the next writer is granted what the dead one asked for, once."""
    held = lock_id_of(alock(repo, "acquire", "lib/**", "--json", **A))
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_WRITE, step],
        cwd=repo,
        env={**os.environ, **B},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert killed.returncode == 9, killed.stderr
    assert bool(mutex_text(repo / ".git")) == (step != "deciding"), "not killed where meant"
    for _ in range(500):  # each git reads the end of its input and ends: bounded
        if not git_at_work(b"update-ref", repo):
            break
        threading.Event().wait(0.01)
    assert git_at_work(b"update-ref", repo) == [], "a dead writer's transaction still runs"
    got = alock(repo, "acquire", "src/a.py", "--json", **C)
    no_crash(got)
    mine = lock_id_of(got)
    assert alock(repo, "acquire", "src/**", **B).code == 1  # C's now: refused
    listed = {r["id"]: r["holder"] for r in alock(repo, "list", "--json", **C).json()}
    assert listed == {held: "agent-a", mine: "agent-c"}
    assert set(lock_refs(repo)) == {held, mine}
    assert_consistent(repo)


# A release whose lock ref plain git rewrites after the write listed it under the mutex
# (at the write's apply), the writer killed (os._exit) once its log is written: the log
# holds the listing's value as the old one, and nothing of the write moved.
_KILLED_AFTER_A_MOVE = r"""
import os, subprocess, sys
from gitlocks.main import main
from gitlocks.store import local, refs

name, record = sys.argv[1], sys.argv[2]
apply, log = local.Store._apply, refs.RefWriter._log

def moved_then_apply(self, *args, **kwargs):
    blob = subprocess.check_output(["git", "hash-object", "-w", "--stdin"], input=record, text=True)
    subprocess.check_call(["git", "update-ref", name, blob.strip()])
    return apply(self, *args, **kwargs)

def log_then_die(self, entry):
    log(self, entry)
    os._exit(9)

local.Store._apply, refs.RefWriter._log = moved_then_apply, log_then_die
sys.exit(main(sys.argv[3:]))
"""


def test_a_dead_writers_recovery_keeps_a_ref_moved_outside_the_mutex(repo: Path) -> None:
    """Rolling a dead writer back puts back only the refs it moved: a lock ref plain git
    rewrote after the dead writer listed it (its log's old value) is left as git wrote it,
    never set back to what the listing said."""
    held = lock_id_of(alock(repo, "acquire", "lib/**", "--json", **A))
    name = LOCKS + held
    record = json.dumps({**json.loads(git(repo, "cat-file", "blob", name)), "holder": "agent-b"})
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_AFTER_A_MOVE, name, record, "release", "lib/**"],
        cwd=repo,
        env={**os.environ, **A},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert killed.returncode == 9, killed.stderr
    assert mutex_text(repo / ".git"), "not killed where meant"
    rewritten = lock_refs(repo)[held]
    got = alock(repo, "acquire", "tests/**", "--json", **C)  # the next writer recovers
    no_crash(got)
    assert lock_refs(repo)[held] == rewritten, "the dead writer's recovery undid plain git"
    listed = {r["id"]: r["holder"] for r in alock(repo, "list", "--json", **C).json()}
    assert listed[held] == "agent-b"
    _no_leftovers(repo)
