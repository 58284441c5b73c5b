"""The pre-receive hook decides on the journal's table, and guards it: real bare remotes,
real pushes (file:// and ``git daemon`` on 127.0.0.1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import git
from support.cli import Result, alock, finish, run_git
from support.cli import alock_cli as start_alock
from support.daemon import Daemon
from support.records import write_blob
from support.remote import daemon, make_bare, make_clone, remote_events, remote_locks

from gitlocks.core.record import LockRecord
from gitlocks.hooks import receive, table_guard
from gitlocks.store.journal import Journal
from gitlocks.store.local import Store

__all__ = ["daemon"]  # the fixture, imported so pytest finds it

A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}
JOURNAL = "refs/agent-locks-meta/journal"


def commit(cwd: Path, message: str, agent: str, files: dict[str, str]) -> str:
    for rel, text in files.items():
        path = cwd / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(cwd, "add", "-A")
    git(cwd, "commit", "-q", "-m", message, "--trailer", f"Agent-Id: {agent}")
    return git(cwd, "rev-parse", "HEAD").strip()


def remote_lines(result: Result) -> list[str]:
    return [
        line.removeprefix("remote: ").rstrip()
        for line in result.err.splitlines()
        if line.startswith("remote: alock: ")
    ]


def ref(bare: Path, name: str) -> str:
    return git(bare, "rev-parse", "--verify", "-q", name, check=False).strip()


@pytest.fixture
def hosted(tmp_path: Path) -> tuple[Path, Path]:
    """A bare repository with the hook, its lock table kept in one journal (the sharded
    one's guard: test_sharded_guard.py), and a clone in remote mode where agent-a holds
    src/api/**."""
    bare = make_bare(tmp_path / "hosted.git")
    assert alock(tmp_path, "install-remote-hook", str(bare)).code == 0
    holder = make_clone(bare.as_uri(), tmp_path / "holder", shards=1)
    got = alock(holder, "acquire", "src/api/**", "-m", "rewrite auth", **A)
    assert got.code == 0, got.err
    return bare, holder


def lock_id(bare: Path) -> str:
    (found,) = remote_locks(bare)
    return found


def mallory_record(bare: Path) -> dict[str, object]:
    """A well-formed live record of holder mallory over ``**``."""
    record = next(iter(remote_locks(bare).values())).to_dict()
    record.update(id="mallory-1", holder="mallory", paths=["**"], exact=[], reason="mine")
    LockRecord.from_json(json.dumps(record).encode())  # it parses
    return record


# --- the check decides on the table ---------------------------------------------------------


def test_a_lock_ref_deleted_on_the_remote_does_not_blind_the_check(
    hosted: tuple[Path, Path], tmp_path: Path
) -> None:
    bare, _ = hosted
    # Deleted where no hook runs (on the host itself): the journal's table still holds it.
    git(bare, "update-ref", "-d", f"refs/agent-locks/{lock_id(bare)}")
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", bare.as_uri(), "other")
    commit(other, "b edits api", "agent-b", {"src/api/auth.py": "b\n"})
    refused = run_git(other, "push", "-q", "origin", "main")
    assert refused.code != 0
    assert remote_lines(refused)[0].startswith("alock: HELD src/api/auth.py in ")


def test_a_planted_lock_ref_blocks_no_push(hosted: tuple[Path, Path], tmp_path: Path) -> None:
    bare, _ = hosted
    blob = write_blob(bare, mallory_record(bare))
    git(bare, "update-ref", "refs/agent-locks/mallory-1", blob)
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", bare.as_uri(), "other")
    commit(other, "b edits lib", "agent-b", {"lib/x.py": "b\n"})
    pushed = run_git(other, "push", "-q", "origin", "main")
    assert pushed.code == 0 and not remote_lines(pushed), pushed.err


def test_the_next_write_deletes_a_planted_lock_ref(
    hosted: tuple[Path, Path], tmp_path: Path
) -> None:
    bare, holder = hosted
    blob = write_blob(bare, mallory_record(bare))
    git(bare, "update-ref", "refs/agent-locks/mallory-1", blob)
    assert alock(holder, "acquire", "docs/**", **A).code == 0
    assert not ref(bare, "refs/agent-locks/mallory-1"), "the write cleaned it up"


# --- the remote guards its table --------------------------------------------------------------


def test_deleting_a_live_claims_lock_ref_is_refused(hosted: tuple[Path, Path]) -> None:
    bare, holder = hosted
    name = f"refs/agent-locks/{lock_id(bare)}"
    before = ref(bare, name)
    refused = run_git(holder, "push", "origin", f":{name}")
    assert refused.code != 0
    lines = remote_lines(refused)
    assert f"alock: the push deletes {name}, a claim the lock table still holds" in lines[0]
    assert lines[-1].startswith("alock: REFUSED push: it would change the lock table")
    assert ref(bare, name) == before


def test_planting_a_lock_ref_is_refused(hosted: tuple[Path, Path]) -> None:
    bare, holder = hosted
    blob = write_blob(holder, mallory_record(bare))
    refused = run_git(holder, "push", "origin", f"{blob}:refs/agent-locks/mallory-1")
    assert refused.code != 0
    assert "a lock the lock table does not hold" in remote_lines(refused)[0]
    assert not ref(bare, "refs/agent-locks/mallory-1")


def test_deleting_rewinding_or_replacing_the_journal_is_refused(
    hosted: tuple[Path, Path], tmp_path: Path
) -> None:
    bare, holder = hosted
    assert alock(holder, "renew", "--ttl", "2h", **A).code == 0  # a second journal commit
    tip = ref(bare, JOURNAL)
    deleted = run_git(holder, "push", "origin", f":{JOURNAL}")
    assert deleted.code != 0
    assert f"the push deletes {JOURNAL}" in remote_lines(deleted)[0]
    git(holder, "fetch", "-q", "origin", f"{JOURNAL}:refs/tmp/journal")
    rewound = run_git(holder, "push", "--force", "origin", f"refs/tmp/journal~1:{JOURNAL}")
    assert rewound.code != 0
    assert "which does not descend from it" in remote_lines(rewound)[0]
    project = run_git(holder, "push", "--force", "origin", f"HEAD:{JOURNAL}")
    assert project.code != 0
    assert "which is no gitlocks journal commit" in remote_lines(project)[0]
    # A journal commit of another chain, carrying an empty table.
    objects = Store.discover(holder).objects
    stranger = Journal(objects, lambda key: None).write(None, [{"event": "fresh"}], {})
    replaced = run_git(holder, "push", "--force", "origin", f"{stranger}:{JOURNAL}")
    assert replaced.code != 0
    assert ref(bare, JOURNAL) == tip


def test_a_journal_moved_without_its_lock_refs_is_refused(hosted: tuple[Path, Path]) -> None:
    bare, holder = hosted
    git(holder, "fetch", "-q", "origin", f"{JOURNAL}:refs/tmp/journal")
    tip = ref(holder, "refs/tmp/journal")
    objects = Store.discover(holder).objects
    empty = Journal(objects, lambda key: None).write(tip, [{"event": "break"}], {})
    refused = run_git(holder, "push", "origin", f"{empty}:{JOURNAL}")
    assert refused.code != 0
    assert "in the lock table but leaves its lock ref as it was" in remote_lines(refused)[0]
    assert ref(bare, JOURNAL) == tip


def test_a_mirror_push_from_a_fresh_clone_is_refused_and_the_claim_stands(
    hosted: tuple[Path, Path], tmp_path: Path
) -> None:
    bare, _ = hosted
    fresh = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", bare.as_uri(), "fresh")
    mirrored = run_git(fresh, "push", "--mirror", "origin")
    assert mirrored.code != 0
    assert any(f"the push deletes {JOURNAL}" in line for line in remote_lines(mirrored))
    assert len(remote_locks(bare)) == 1
    other = make_clone(bare.as_uri(), tmp_path / "other")
    listed = alock(other, "list", "--fresh", "--json")
    assert [r["holder"] for r in listed.json()] == ["agent-a"], listed.out
    refused = alock(other, "acquire", "src/api/auth.py", **B)
    assert refused.code == 1, refused.out


def test_the_projects_own_writes_pass_the_guard(hosted: tuple[Path, Path], tmp_path: Path) -> None:
    bare, holder = hosted
    # Compaction every few writes: a new root naming the old tip must pass too.
    git(holder, "config", "alock.journalKeep", "2")
    other = make_clone(bare.as_uri(), tmp_path / "other", config={"alock.journalKeep": "2"})
    steps = [
        (holder, ("acquire", "docs/**"), A),
        (other, ("acquire", "lib/**"), B),
        (holder, ("renew", "--ttl", "2h"), A),
        (other, ("note", "lib/**", "halfway"), B),
        (holder, ("release", "docs/**"), A),
        (other, ("break", "src/api/**"), B),
        (other, ("release", "--all"), B),
        (holder, ("acquire", "src/**"), A),
        (holder, ("sync",), A),
    ]
    for cwd, args, env in steps:
        got = alock(cwd, *args, **env)
        assert got.code == 0, (args, got.out, got.err)
    assert [r.holder for r in remote_locks(bare).values()] == ["agent-a"]
    assert any(e["event"] == "compacted" for e in remote_events(bare)), "a compaction passed"
    # Switching off and on again (the probe refs, the adoption push) passes too.
    assert alock(other, "remote", "--off").code == 0
    assert alock(other, "acquire", "tools/**", **B).code == 0
    switched = alock(other, "remote", "origin")
    assert switched.code == 0, switched.err
    assert sorted(r.holder for r in remote_locks(bare).values()) == ["agent-a", "agent-b"]


def test_racing_clones_over_git_daemon_pass_the_guard(daemon: Daemon, tmp_path: Path) -> None:
    bare = make_bare(daemon.base / "served.git")
    assert alock(tmp_path, "install-remote-hook", str(bare)).code == 0
    clones = [make_clone(daemon.url("served.git"), tmp_path / f"c{i}") for i in range(3)]
    # Writes racing for the journal: a loser refused by the guard retries as after a lost
    # lease, so every claim on its own scope is granted.
    procs = [
        start_alock(c, "acquire", f"area{i}-{n}/**", env={"AGENT_ID": f"agent-{i}"})
        for n in range(3)
        for i, c in enumerate(clones)
    ]
    results = [finish(p) for p in procs]
    assert all(r.code == 0 for r in results), [r.err for r in results]
    for i, c in enumerate(clones):
        assert alock(c, "release", "--all", **{"AGENT_ID": f"agent-{i}"}).code == 0
    contested = [
        start_alock(c, "acquire", "shared/**", env={"AGENT_ID": f"rival-{i}"})
        for i, c in enumerate(clones)
    ]
    granted = [finish(p) for p in contested]
    assert sorted(r.code for r in granted) == [0, 1, 1], [r.err for r in granted]
    assert len(remote_locks(bare)) == 1


def test_a_push_naming_stale_old_values_is_refused_whole(hosted: tuple[Path, Path]) -> None:
    """A push that is not atomic applies every ref whose old value holds: one stale line
    (a lost race) must not let the others through unjudged."""
    bare, _ = hosted
    name = f"refs/agent-locks/{lock_id(bare)}"
    zero = "0" * 40
    lines = [f"{'1' * 40} {zero} {JOURNAL}", f"{ref(bare, name)} {zero} {name}"]
    problems = table_guard.guard(lines, str(bare))
    assert problems and "the lock table moved since this push was prepared" in problems[0]
    assert receive.run_receive(lines, str(bare))[0] == 1


def test_a_write_that_loses_the_race_inside_the_hook_retries(
    hosted: tuple[Path, Path], tmp_path: Path
) -> None:
    """Another write lands after git showed this one the refs and before its pre-receive
    runs: the guard refuses it, and the writer decides again on the new table."""
    bare, holder = hosted
    other = make_clone(bare.as_uri(), tmp_path / "other")
    before = ref(bare, JOURNAL)
    assert alock(other, "acquire", "lib/**", **B).code == 0
    won = ref(bare, JOURNAL)
    (lib_id,) = (i for i, r in remote_locks(bare).items() if r.holder == "agent-b")
    lib_value = ref(bare, f"refs/agent-locks/{lib_id}")
    # Back to before that write; the hook puts it in place just before it judges the next.
    git(bare, "update-ref", JOURNAL, before, won)
    git(bare, "update-ref", "-d", f"refs/agent-locks/{lib_id}")
    hook = bare / "hooks" / "pre-receive"
    shim = hook.read_text()
    (bare / "race-once").write_text("")
    hook.write_text(
        "#!/bin/sh\n"
        "if [ -f race-once ]; then\n"
        "  rm race-once\n"
        f"  env -u GIT_QUARANTINE_PATH git update-ref {JOURNAL} {won} {before}\n"
        f"  env -u GIT_QUARANTINE_PATH git update-ref refs/agent-locks/{lib_id} {lib_value}\n"
        "fi\n" + shim.split("\n", 1)[1]
    )
    assert alock(holder, "sync").code == 0  # its view: before
    got = alock(holder, "acquire", "docs/**", **A)
    assert got.code == 0, got.err
    assert not (bare / "race-once").exists(), "the race happened"
    holders = sorted((r.holder, r.paths[0]) for r in remote_locks(bare).values())
    assert holders == [("agent-a", "docs/**"), ("agent-a", "src/api/**"), ("agent-b", "lib/**")]
