"""Enforcement at its edges: the Agent-Id trailer, verify, the remote's pre-receive
hook, commits as heartbeats, claims that end when their work lands, and shared claims.

Each test is a defect found by attacking these features from outside, with real git: it
fails without its fix.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from support.cli import Result, alock, run_git
from support.records import plant, write_blob
from support.remote import make_bare, make_clone

from gitlocks.layout import MUTEX_NAME
from gitlocks.store.local import Store

BIN = os.path.dirname(sys.executable)
A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}
C = {"AGENT_ID": "agent-c"}


def commit(cwd: Path, rel: str, text: str, env: dict[str, str], *args: str) -> Result:
    path = cwd / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    git(cwd, "add", "-A")
    got = run_git(cwd, "commit", "-q", *args, env=env)
    assert got.code == 0, got.err
    return got


def trailers(cwd: Path, rev: str = "HEAD") -> list[str]:
    out = git(cwd, "log", "-1", "--format=%(trailers:key=Agent-Id,valueonly)", rev)
    return [line for line in out.splitlines() if line]


def records(cwd: Path) -> list[dict[str, Any]]:
    return [dict(r) for r in alock(cwd, "list", "--json").json()]


def events(cwd: Path) -> list[str]:
    return [str(e["event"]) for e in alock(cwd, "log", "--json").json()]


@pytest.fixture
def hooked(repo: Path) -> Path:
    assert alock(repo, "install-hooks").code == 0
    return repo


# --- the Agent-Id trailer ---------------------------------------------------------------------


def test_a_message_starting_with_a_hash_gets_its_trailer(hooked: Path) -> None:
    """``git commit -m "#123 fix"``: git keeps that line (no editor ran, so no comment is
    stripped), yet the hook took it for a comment and the commit went out without its
    Agent-Id: verify, and a remote's hook, then held the holder's own commit against its
    own claim."""
    assert alock(hooked, "acquire", "src/**", **A).code == 0
    base = git(hooked, "rev-parse", "HEAD").strip()
    commit(hooked, "src/app.py", "1\n", A, "-m", "#123 fix the parser")
    assert trailers(hooked) == ["agent-a"]
    assert git(hooked, "log", "-1", "--format=%s").strip() == "#123 fix the parser"
    # A last line that looks like a comment stays above the trailer, not below it.
    commit(hooked, "src/app.py", "2\n", A, "-m", "fix\n\n#124 and #125 too")
    assert git(hooked, "log", "-1", "--format=%B").strip().endswith("Agent-Id: agent-a")
    assert alock(hooked, "verify", f"{base}..HEAD", **B).out.startswith("CLEAN 2 commits")


def test_a_revert_by_a_git_that_is_process_1_gets_its_trailer(hooked: Path) -> None:
    """A container whose entrypoint is git itself (``docker run alpine/git revert ...``):
    the hook's parent is process 1, which the walk up to the committing git took for the
    end of the line, and the revert went out naming no agent."""
    probe = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        pytest.skip("no pid namespace to be made here")
    commit(hooked, "src/app.py", "1\n", A, "-m", "one")
    got = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", "git", "revert", "--no-edit", "HEAD"],
        cwd=hooked,
        env={**os.environ, **A},
        capture_output=True,
        text=True,
        check=False,
    )
    assert got.returncode == 0, got.stderr
    assert git(hooked, "log", "-1", "--format=%s").startswith('Revert "one"')
    assert trailers(hooked) == ["agent-a"]


def test_a_revert_with_gits_own_options_before_it_gets_its_trailer(hooked: Path) -> None:
    """``git --config-env NAME=VAR revert``: the option's value is the next word, which the
    hook took for git's command, and the revert went out naming no agent."""
    commit(hooked, "src/app.py", "1\n", A, "-m", "one")
    env = {**A, "ABBREV": "9"}
    got = run_git(
        hooked, "--config-env", "core.abbrev=ABBREV", "revert", "--no-edit", "HEAD", env=env
    )
    assert got.code == 0, got.err
    assert git(hooked, "log", "-1", "--format=%s").startswith('Revert "one"')
    assert trailers(hooked) == ["agent-a"]


def test_a_message_left_empty_still_aborts_with_colon_as_editor(hooked: Path) -> None:
    """The fix must not turn git's abort into a commit: ``GIT_EDITOR=:`` of one's own (an
    agent's usual setting) leaves git's template, comments only, and git aborts."""
    assert alock(hooked, "acquire", "src/**", **A).code == 0
    (hooked / "src" / "app.py").write_text("x\n")
    git(hooked, "add", "-A")
    before = git(hooked, "rev-parse", "HEAD")
    got = run_git(hooked, "commit", "-q", env={**A, "GIT_EDITOR": ":"})
    assert got.code != 0 and "empty commit message" in got.err
    assert git(hooked, "rev-parse", "HEAD") == before


def test_trailer_if_missing_config_does_not_drop_the_trailer(hooked: Path) -> None:
    git(hooked, "config", "trailer.ifmissing", "doNothing")
    commit(hooked, "src/app.py", "1\n", A, "-m", "change")
    assert trailers(hooked) == ["agent-a"]


# --- the remote's pre-receive hook ------------------------------------------------------------


@pytest.fixture
def hosted(tmp_path: Path) -> tuple[Path, Path]:
    """A bare repository with the pre-receive hook and agent-a's claim on src/** stored in
    it, and a plain clone (not in remote mode) that pushes to it."""
    bare = make_bare(tmp_path / "hosted.git")
    assert alock(tmp_path, "install-remote-hook", str(bare)).code == 0
    clone = make_clone(bare.as_uri(), tmp_path / "clone", remote_mode=False)
    assert alock(clone, "acquire", "src/**", "-m", "mine", **A).code == 0
    git(clone, "push", "-q", "origin", "refs/agent-locks/*:refs/agent-locks/*")
    return bare, clone


def _violation(clone: Path) -> str:
    (clone / "src").mkdir(exist_ok=True)
    (clone / "src" / "auth.py").write_text("by b\n")
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "by b", "--trailer", "Agent-Id: agent-b")
    return git(clone, "rev-parse", "HEAD").strip()


@pytest.mark.parametrize(
    "stash", ["refs/agent-locks-meta/stash", "refs/agent-locks/stash", "refs/notes/stash"]
)
def test_commits_parked_under_an_unjudged_ref_are_judged_on_a_branch(
    hosted: tuple[Path, Path], stash: str
) -> None:
    """Refs that pass unjudged (gitlocks' own, notes) also counted as "already here" for
    every later push (``--not --all``): park the commit there, then push the branch, and
    the commit inside agent-a's claim went in unjudged."""
    bare, clone = hosted
    tip = _violation(clone)
    parked = run_git(clone, "push", "origin", f"{tip}:{stash}")
    assert parked.code == 0, parked.err
    got = run_git(clone, "push", "origin", f"{tip}:refs/heads/main")
    assert got.code == 1 and "REFUSED push" in got.err, got.err
    assert git(bare, "rev-parse", "main").strip() != tip


def test_a_replaced_commit_is_judged_as_stored(hosted: tuple[Path, Path]) -> None:
    """``refs/replace/<commit>`` is anyone's to push: git then reads the commit as another
    one, and the hook judged the harmless stand-in."""
    _, clone = hosted
    tip = _violation(clone)
    stand_in = git(clone, "commit-tree", "-p", "HEAD~1", "-m", "harmless", "HEAD~1^{tree}")
    git(clone, "push", "-q", "origin", f"{stand_in.strip()}:refs/replace/{tip}")
    got = run_git(clone, "push", "origin", f"{tip}:refs/heads/main")
    assert got.code == 1 and "REFUSED push" in got.err, got.err


def test_a_replaced_claim_record_is_read_as_stored(hosted: tuple[Path, Path]) -> None:
    """The same through the claim's record: replaced by a copy that expired long ago."""
    bare, clone = hosted
    tip = _violation(clone)
    [mine] = records(clone)
    blob = git(bare, "rev-parse", f"refs/agent-locks/{mine['id']}").strip()
    old = "2001-01-01T00:00:00Z"
    expired = dict(mine, created_at=old, renewed_at=old, expires_at=old)
    copy = write_blob(clone, expired)
    git(clone, "push", "-q", "origin", f"{copy}:refs/replace/{blob}")
    got = run_git(clone, "push", "origin", f"{tip}:refs/heads/main")
    assert got.code == 1 and "REFUSED push" in got.err, got.err
    # verify reads the objects as stored too (a clone can hold replace refs of its own).
    git(clone, "fetch", "-q", "origin", "refs/replace/*:refs/replace/*")
    assert alock(clone, "verify", "HEAD~1..HEAD").code == 1


def test_a_notes_push_is_not_judged_by_the_names_in_its_tree(hosted: tuple[Path, Path]) -> None:
    """A notes commit's tree names commits (``4d3179...``), not files: a claim on the whole
    tree (``:/``, shared or not) refused every notes push, calling a commit id a path."""
    _, clone = hosted
    assert alock(clone, "acquire", ":/", "--shared", **A).code == 0  # the whole tree, shared
    git(clone, "push", "-q", "origin", "+refs/agent-locks/*:refs/agent-locks/*")
    git(clone, "notes", "add", "-m", "reviewed", "HEAD")
    got = run_git(clone, "push", "origin", "refs/notes/commits")
    assert got.code == 0, got.err
    assert "HELD" not in got.err


# --- commits as heartbeats, claims that end when their work lands ----------------------------


@pytest.fixture
def feature(hooked: Path, tmp_path: Path) -> Path:
    """agent-a's worktree on branch feat, with a claim on src/** until merged into main and
    one commit in it, merged into main already."""
    wt = tmp_path / "feat"
    git(hooked, "worktree", "add", "-q", "-b", "feat", str(wt))
    assert alock(wt, "acquire", "src/**", "--until-merged", "main", **A).code == 0
    commit(wt, "src/app.py", "1\n", A, "-m", "first")
    [record] = records(wt)
    assert len(record["awaiting"]) == 1
    return wt


# A merge made where our hooks do not run (another clone, hooks off): the post-merge hook
# would land the claim at once, before the change these tests make after it.
NO_HOOKS = ("-c", "core.hooksPath=/dev/null")


def test_a_new_commit_inside_the_claim_keeps_it_from_landing(hooked: Path, feature: Path) -> None:
    """The first commit landed; the holder goes on and commits again inside the claim. The
    heartbeat of that very commit swept first, found the claim landed (the new commit was
    not awaited yet, the worktree clean) and released it while the work was unmerged."""
    git(hooked, *NO_HOOKS, "merge", "-q", "--ff-only", "feat")
    commit(feature, "src/app.py", "2\n", A, "-m", "second")
    assert [r["paths"] for r in records(feature)] == [["src/**"]]
    assert "landed" not in events(feature)
    # Once the second commit lands too, the next write releases it.
    git(hooked, "merge", "-q", "--ff-only", "feat")
    assert alock(hooked, "acquire", "docs/**", **B).code == 0
    assert [r["holder"] for r in records(hooked)] == ["agent-b"]
    assert "landed" in events(hooked)


def test_a_commit_made_without_hooks_keeps_the_claim_too(
    hooked: Path, feature: Path, tmp_path: Path
) -> None:
    """A commit the post-commit hook never saw (hooks off, another clone's tool) is not
    awaited; the claim landed on the first commit alone while this one was unmerged."""
    git(hooked, *NO_HOOKS, "merge", "-q", "--ff-only", "feat")
    (feature / "src" / "app.py").write_text("2\n")
    none = tmp_path / "no-hooks"
    none.mkdir()
    git(feature, "-c", f"core.hooksPath={none}", "commit", "-q", "-am", "unrecorded")
    assert len(records(hooked)[0]["awaiting"]) == 1
    assert alock(hooked, "acquire", "docs/**", **B).code == 0
    assert sorted(str(r["holder"]) for r in records(hooked)) == ["agent-a", "agent-b"]


def test_a_rename_out_of_the_claim_is_an_uncommitted_change_inside(
    hooked: Path, feature: Path
) -> None:
    """A staged rename of a file out of the claim changes the claim (its source goes), but
    the status reading kept only the destination, and the claim landed."""
    git(hooked, *NO_HOOKS, "merge", "-q", "--ff-only", "feat")
    git(feature, "mv", "src/app.py", "moved.py")
    assert alock(hooked, "acquire", "docs/**", **B).code == 0
    assert sorted(str(r["holder"]) for r in records(hooked)) == ["agent-a", "agent-b"]


def test_the_landing_check_leaves_the_holders_index_alone(hooked: Path, feature: Path) -> None:
    """Another agent's write asks the holder's worktree for its status. A plain ``git
    status`` refreshes and rewrites that worktree's index (taking index.lock), so the
    holder's own ``git add`` or ``git commit`` at that moment fails."""
    git(hooked, "merge", "-q", "--ff-only", "feat")
    index = Path(git(feature, "rev-parse", "--git-path", "index").strip())
    if not index.is_absolute():
        index = feature / index
    stamp = time.time() + 5
    os.utime(feature / "src" / "app.py", (stamp, stamp))  # same content, new stat: stale
    before = index.stat()
    assert alock(hooked, "acquire", "docs/**", **B).code == 0
    assert "landed" in events(hooked)  # it was asked, and the work had landed
    after = index.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_other_machines_records_cost_no_ancestry_walk(
    hooked: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record waiting to land is anyone's text, with up to 1,000 commits: every write
    tested each commit's ancestry (a walk of history) before seeing that the record
    belongs to another machine and cannot land here."""
    tip = git(hooked, "rev-parse", "HEAD").strip()
    record = {
        "format": 1,
        "id": "planted-landing",
        "holder": "agent-z",
        "paths": ["src/**"],
        "created_at": "2030-01-01T00:00:00Z",
        "renewed_at": "2030-01-01T00:00:00Z",
        "expires_at": "2999-01-01T00:00:00Z",
        "host_id": "another-boot:4026531836",
        "worktree": str(hooked),
        "until_merged": "main",
        "awaiting": [tip] * 1000,
    }
    plant(hooked, "planted-landing", record)
    asked: list[str] = []
    contains = Store.contains

    def counted(self: Store, tip: str, commit: str) -> bool:
        asked.append(commit)
        return contains(self, tip, commit)

    monkeypatch.setattr(Store, "contains", counted)
    assert alock(hooked, "acquire", "docs/**", **B).code == 0
    assert asked == []
    assert "planted-landing" in {str(r["id"]) for r in records(hooked)}


def test_a_commit_waits_little_for_a_busy_store(hooked: Path) -> None:
    """The post-commit heartbeat waited up to 15 s for a store another process held (in
    remote mode up to 25 s: a sync on a slow remote holds it that long), after the commit
    was made. It now gives up after a few seconds; the next commit renews."""
    assert alock(hooked, "acquire", "src/**", **A).code == 0
    mutex = Path(git(hooked, "rev-parse", "--git-common-dir").strip())
    path = (hooked / mutex if not mutex.is_absolute() else mutex) / MUTEX_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        # The store stays held for the whole commit: it can only finish by giving up.
        got = commit(hooked, "src/app.py", "1\n", A, "-m", "while busy")
    finally:
        os.close(fd)
    assert "claims not renewed" in got.err


def test_until_merged_head_is_refused_in_remote_mode(tmp_path: Path) -> None:
    """In remote mode ``refs/remotes/origin/HEAD`` exists, so ``--until-merged HEAD`` was
    taken: a claim waiting on a symbolic ref that sync never refreshes (git refuses HEAD
    as a branch name)."""
    bare = make_bare(tmp_path / "locks.git")
    clone = make_clone(bare.as_uri(), tmp_path / "clone")
    assert git(clone, "symbolic-ref", "refs/remotes/origin/HEAD").strip()
    got = alock(clone, "acquire", "src/**", "--until-merged", "HEAD", **A)
    assert got.code == 2 and "invalid branch name" in got.err
    assert alock(clone, "acquire", "src/**", "--until-merged", **A).code == 0  # main


# --- the store and the hooks around them ------------------------------------------


def _interrupt(cwd: Path, sleeper: subprocess.Popen[bytes], *args: str) -> None:
    """agent-a claims ``args`` in ``cwd`` as the session ``sleeper``, notes it, and dies."""
    env = {**A, "AGENT_SESSION_PID": str(sleeper.pid)}
    got = alock(cwd, "acquire", *args, **env)
    assert got.code == 0, got.err
    assert alock(cwd, "note", args[0], "half done", **env).code == 0
    sleeper.kill()
    sleeper.wait()


def test_interrupted_shared_work_can_be_resumed_beside_another_sharer(
    repo: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    assert alock(repo, "acquire", "--shared", "docs/**", **B).code == 0
    _interrupt(repo, sleeper, "docs/**", "--shared")
    got = alock(repo, "resume", "docs/**", **C)
    assert got.code == 0 and got.word.startswith("RESUMED"), got.out


def test_resumed_work_does_not_land_on_the_previous_holders_commits(
    hooked: Path, tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    wt = tmp_path / "feat"
    git(hooked, "worktree", "add", "-q", "-b", "feat", str(wt))
    other = tmp_path / "other"
    git(hooked, "worktree", "add", "-q", "-b", "other", str(other))
    env = {**A, "AGENT_SESSION_PID": str(sleeper.pid)}
    assert alock(wt, "acquire", "src/**", "--until-merged", "main", **env).code == 0
    commit(wt, "src/app.py", "1\n", A, "-m", "first")
    assert alock(wt, "note", "src/**", "half done", **env).code == 0
    (wt / "src" / "app.py").write_text("more, uncommitted\n")  # so it cannot land yet
    sleeper.kill()
    sleeper.wait()
    git(hooked, "merge", "-q", "--ff-only", "feat")
    got = alock(other, "resume", "src/**", **C)
    assert got.code == 0, got.out
    assert alock(hooked, "acquire", "docs/**", **B).code == 0
    assert "landed" not in events(hooked)
    assert "agent-c" in {str(r["holder"]) for r in records(hooked)}


def test_a_reason_spelt_like_the_option_is_a_reason(repo: Path) -> None:
    got = alock(repo, "acquire", "src/**", "-m", "--until-merged", **A)
    assert got.code == 0, got.err
    assert records(repo)[0]["reason"] == "--until-merged"


# --- races --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "count",
    [
        6,
        pytest.param(
            32,
            marks=pytest.mark.skipif(
                not os.environ.get("ALOCK_STRESS"), reason="stress: set ALOCK_STRESS=1"
            ),
        ),
    ],
)
def test_concurrent_commits_lose_no_heartbeat(hooked: Path, tmp_path: Path, count: int) -> None:
    """Many worktrees commit at once inside one until-merged claim: each post-commit must
    record its commit (no lost update of ``awaiting``) and journal its renewal."""
    assert alock(hooked, "acquire", "src/**", "--until-merged", "main", **A).code == 0
    trees = []
    for i in range(count):
        wt = tmp_path / f"w{i}"
        git(hooked, "worktree", "add", "-q", "-b", f"w{i}", str(wt))
        (wt / "src" / "app.py").write_text(f"{i}\n")
        git(wt, "add", "-A")
        trees.append(wt)
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), **A)
    procs = [
        subprocess.Popen(
            ["git", "commit", "-q", "-m", f"w{i}"],
            cwd=wt,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i, wt in enumerate(trees)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0 and b"error" not in err, err
    heads = {git(wt, "rev-parse", "HEAD").strip() for wt in trees}
    [record] = records(hooked)
    assert set(record["awaiting"]) == heads
    assert events(hooked).count("renewed") == count
