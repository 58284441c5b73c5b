"""Shared claims, claims that end when their work lands, the Agent-Id trailer and commits
as heartbeats: through real commits, merges, rebases and cherry-picks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli import Result, alock, run_git
from support.records import plant

from gitlocks.core.record import LockRecord, RecordError
from gitlocks.core.table import holding
from gitlocks.hooks import HOOKS
from gitlocks.hooks.install import shim_text

BIN = os.path.dirname(sys.executable)
PROJECT = Path(__file__).resolve().parents[2]
A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}
C = {"AGENT_ID": "agent-c"}


def edit_and_commit(
    cwd: Path, path: str, text: str, env: dict[str, str], *args: str, message: str = "change"
) -> Result:
    target = cwd / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    git(cwd, "add", path)
    got = run_git(cwd, "commit", "-q", "-m", message, *args, env=env)
    assert got.code == 0, got.err
    return got


def trailers(cwd: Path, rev: str = "HEAD") -> list[str]:
    out = git(cwd, "log", "-1", "--format=%(trailers:key=Agent-Id,valueonly)", rev)
    return [line for line in out.splitlines() if line]


def record_of(cwd: Path, pattern: str, **env: str) -> dict[str, object]:
    for record in alock(cwd, "list", "--json", **env).json():
        if pattern in record["paths"]:
            return dict(record)
    raise AssertionError(f"no lock on {pattern}")


def events(cwd: Path) -> list[dict[str, object]]:
    return [dict(e) for e in alock(cwd, "log", "--json").json()]


# A merge made where our hooks do not run (another clone, hooks off).
NO_HOOKS = ("-c", "core.hooksPath=/dev/null")


@pytest.fixture
def hooked(repo: Path) -> Path:
    assert alock(repo, "install-hooks").code == 0
    return repo


# --- shared claims ----------------------------------------------------------------------------


def test_shared_claims_overlap_each_other_but_not_exclusive_ones(repo: Path) -> None:
    assert alock(repo, "acquire", "--shared", "docs/**", **A).code == 0
    both = alock(repo, "acquire", "--shared", "docs/CHANGES.md", **B)
    assert both.code == 0 and both.word.startswith("ACQUIRED docs/CHANGES.md (shared)")
    refused = alock(repo, "acquire", "docs/api.md", **C)
    assert refused.code == 1 and refused.word == "REFUSED"
    assert "by agent-a (shared)" in refused.out and "acquire --shared" in refused.out
    # ... and the other way round: an exclusive claim keeps shared ones out.
    assert alock(repo, "acquire", "src/**", **C).code == 0
    other_way = alock(repo, "acquire", "--shared", "src/app.py", "--json", **A)
    assert other_way.code == 1
    [conflict] = other_way.json()["conflicts"]
    assert conflict["holder"] == "agent-c" and conflict["shared"] is False


def test_asking_for_the_other_kind_is_a_new_claim_not_already_yours(repo: Path) -> None:
    assert alock(repo, "acquire", "--shared", "docs/**", **A).code == 0
    again = alock(repo, "acquire", "--shared", "docs/**", **A)
    assert again.word.startswith("ALREADY YOURS docs/** (shared)")
    exclusive = alock(repo, "acquire", "docs/**", "--json", **A)
    assert exclusive.json()["status"] == "acquired"
    assert exclusive.json()["lock"]["shared"] is False


def test_check_and_the_hooks_let_sharers_through_and_stop_everyone_else(hooked: Path) -> None:
    assert alock(hooked, "acquire", "--shared", "src/**", **A).code == 0
    held = alock(hooked, "check", "src/app.py", "--json", **B)
    assert held.code == 1 and held.json()[0]["status"] == "held"
    assert "(shared)" in alock(hooked, "check", "src/app.py", **B).out
    assert alock(hooked, "acquire", "--shared", "src/app.py", **B).code == 0
    mine = alock(hooked, "check", "src/app.py", **B)
    assert mine.code == 0 and mine.word.startswith("YOURS src/app.py")
    # A sharer commits without a warning; someone with no claim there is warned.
    ok = edit_and_commit(hooked, "src/app.py", "b\n", B)
    assert "HELD" not in ok.err
    warned = edit_and_commit(hooked, "src/app.py", "c\n", C)
    assert "HELD src/app.py by agent-a (shared)" in warned.err


def test_list_and_status_show_the_kind(repo: Path) -> None:
    assert alock(repo, "acquire", "--shared", "docs/**", **A).code == 0
    assert "docs/** (shared)" in alock(repo, "list").out
    assert "docs/** (shared) by agent-a" in alock(repo, "status", **B).out


def test_older_records_are_exclusive_and_bad_kinds_are_unusable() -> None:
    base = {
        "format": 1,
        "id": "x1",
        "holder": "h",
        "paths": ["a/**"],
        "created_at": "2030-01-01T00:00:00Z",
        "renewed_at": "2030-01-01T00:00:00Z",
        "expires_at": "2030-01-01T01:00:00Z",
    }
    old = LockRecord.from_dict(dict(base))
    assert old.shared is False and old.until_merged is None and old.awaiting == ()
    for bad in (
        {"shared": "yes"},
        {"shared": 1},
        {"until_merged": "../x"},
        {"until_merged": "-rf"},
        {"until_merged": 5},
        {"awaiting": ["nothex"]},
        {"awaiting": ["a" * 40] * 1001},
    ):
        with pytest.raises(RecordError):
            LockRecord.from_dict({**base, **bad})
    good = LockRecord.from_dict({**base, "shared": True, "until_merged": "feature/x"})
    assert LockRecord.from_json(good.to_json()) == good


def _record(holder: str, shared: bool) -> LockRecord:
    stamp = "2030-01-01T00:00:00Z"
    return LockRecord(
        id=f"id-{holder}-{int(shared)}",
        holder=holder,
        paths=("a/**",),
        created_at=stamp,
        renewed_at=stamp,
        expires_at=stamp,
        shared=shared,
    )


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["me", "x", "y"]), st.booleans()), max_size=6))
def test_holding_matches_the_acquire_rule(locks: list[tuple[str, bool]]) -> None:
    """A path is held against me exactly when acquiring it would be refused for the kind I
    could ask for: exclusive if I hold nothing there, else the kind I hold."""
    records = [_record(h, s) for h, s in locks]

    class Me:  # the asker's side: its own locks
        def __contains__(self, record: LockRecord) -> bool:
            return record.holder == "me"

    theirs, mine = holding(records, Me())  # type: ignore[arg-type]
    others = [r for r in records if r.holder != "me"]
    # Holding nothing there, I could only claim it exclusively: any of theirs refuses it.
    expected = [r for r in others if not (mine and r.shared)]
    assert theirs == expected
    assert mine == [r for r in records if r.holder == "me"]


# --- the Agent-Id trailer ----------------------------------------------------------------


def test_an_agents_commit_carries_its_id_once(hooked: Path) -> None:
    edit_and_commit(hooked, "src/app.py", "1\n", A)
    assert trailers(hooked) == ["agent-a"]
    assert run_git(hooked, "commit", "-q", "--amend", "--no-edit", env=A).code == 0
    assert trailers(hooked) == ["agent-a"]
    assert run_git(hooked, "commit", "-q", "--amend", "-m", "again", env=A).code == 0
    assert trailers(hooked) == ["agent-a"]
    # Another agent amending adds itself: both made the commit.
    assert run_git(hooked, "commit", "-q", "--amend", "--no-edit", env=B).code == 0
    assert trailers(hooked) == ["agent-a", "agent-b"]


def test_rebases_and_cherry_picks_keep_the_trailers_they_carry(hooked: Path) -> None:
    git(hooked, "checkout", "-q", "-b", "work")
    edit_and_commit(hooked, "src/a.py", "a\n", A)
    edit_and_commit(hooked, "src/b.py", "b\n", A)
    git(hooked, "checkout", "-q", "main")
    edit_and_commit(hooked, "README.md", "main moved\n", B)
    picked = run_git(hooked, "cherry-pick", "work~1", env=C)
    assert picked.code == 0, picked.err
    assert trailers(hooked) == ["agent-a"]
    git(hooked, "checkout", "-q", "work")
    rebased = run_git(hooked, "rebase", "-q", "main", env=C)
    assert rebased.code == 0, rebased.err
    assert trailers(hooked, "HEAD") == ["agent-a"] and trailers(hooked, "HEAD~1") == ["agent-a"]


def test_no_trailer_without_a_known_agent_and_none_on_an_empty_message(hooked: Path) -> None:
    edit_and_commit(hooked, "src/app.py", "x\n", {"AGENT_ID": ""})
    assert trailers(hooked) == []  # a person with no claim: nobody to name
    (hooked / "src/app.py").write_text("y\n")
    git(hooked, "add", "src/app.py")
    empty = run_git(hooked, "commit", "-q", "-m", "", env=A)
    assert empty.code != 0 and "empty" in empty.err  # git still aborts it


def test_the_trailer_follows_git_trailer_rules(hooked: Path) -> None:
    body = "subject\n\nbody text\n\nSigned-off-by: Someone <s@example.com>\n"
    (hooked / "src/app.py").write_text("t\n")
    git(hooked, "add", "src/app.py")
    assert run_git(hooked, "commit", "-q", "-m", body, env=A).code == 0
    message = git(hooked, "log", "-1", "--format=%B")
    assert message.rstrip().splitlines()[-2:] == [
        "Signed-off-by: Someone <s@example.com>",
        "Agent-Id: agent-a",
    ]


def test_a_bad_agent_id_never_stops_a_commit(hooked: Path) -> None:
    (hooked / "src/app.py").write_text("z\n")
    git(hooked, "add", "src/app.py")
    got = run_git(hooked, "commit", "-q", "-m", "m", env={"AGENT_ID": "bad id!"})
    assert got.code == 0 and "Traceback" not in got.err
    assert trailers(hooked) == []


# --- commits are heartbeats -----------------------------------------------------------------


def test_a_commit_inside_your_claim_renews_it_and_is_journaled(hooked: Path) -> None:
    assert alock(hooked, "acquire", "src/**", "--ttl", "10m", **A).code == 0
    before = record_of(hooked, "src/**")
    git(hooked, "config", "alock.ttl", "1h")  # the claim's own lifetime counts, not this
    subprocess.run(["sleep", "1.1"], check=True)
    edit_and_commit(hooked, "src/app.py", "renew\n", A)
    after = record_of(hooked, "src/**")
    assert str(after["expires_at"]) > str(before["expires_at"])
    assert str(after["renewed_at"]) > str(before["renewed_at"])
    head = git(hooked, "rev-parse", "HEAD").strip()
    renewed = [e for e in events(hooked) if e["event"] == "renewed"]
    assert renewed and renewed[0]["by_commit"] == head


def test_a_commit_outside_your_claims_or_in_anothers_renews_nothing(hooked: Path) -> None:
    assert alock(hooked, "acquire", "src/**", **A).code == 0
    assert alock(hooked, "acquire", "docs/**", **B).code == 0
    edit_and_commit(hooked, "README.md", "readme\n", A)
    edit_and_commit(hooked, "docs/x.md", "x\n", A)  # B's claim: warned, not renewed
    assert not [e for e in events(hooked) if e["event"] == "renewed"]


# --- claims that end when their work lands --------------------------------------------------


def test_until_merged_claim_lands_when_its_commits_reach_the_branch(hooked: Path) -> None:
    git(hooked, "checkout", "-q", "-b", "feature")
    got = alock(hooked, "acquire", "src/**", "--until-merged", "-m", "auth", **A)
    assert got.code == 0 and "(until merged into main)" in got.out
    edit_and_commit(hooked, "src/app.py", "one\n", A)
    edit_and_commit(hooked, "src/lib.py", "two\n", A)
    record = record_of(hooked, "src/**")
    assert record["until_merged"] == "main" and len(record["awaiting"]) == 2  # type: ignore[arg-type]
    # Not merged yet: a write leaves it alone.
    assert alock(hooked, "acquire", "other/**", **B).code == 0
    assert record_of(hooked, "src/**")["id"] == record["id"]
    git(hooked, "checkout", "-q", "main")
    git(hooked, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    # The merge released it (the post-merge hook), journaled as landed.
    assert alock(hooked, "acquire", "more/**", **B).code == 0
    assert all("src/**" not in r["paths"] for r in alock(hooked, "list", "--json").json())
    [landed] = [e for e in events(hooked) if e["event"] == "landed"]
    assert landed["branch"] == "main" and landed["id"] == record["id"]
    assert landed["commits"] == record["awaiting"]


def test_uncommitted_changes_inside_the_claim_keep_it(hooked: Path) -> None:
    git(hooked, "checkout", "-q", "-b", "feature")
    assert alock(hooked, "acquire", "src/**", "--until-merged", "main", **A).code == 0
    edit_and_commit(hooked, "src/app.py", "one\n", A)
    git(hooked, "checkout", "-q", "main")
    git(hooked, *NO_HOOKS, "merge", "-q", "--ff-only", "feature")  # landed by nobody yet
    (hooked / "src" / "new.py").write_text("still working\n")  # untracked, inside
    assert alock(hooked, "acquire", "more/**", **B).code == 0
    assert record_of(hooked, "src/**")["until_merged"] == "main"
    (hooked / "src" / "new.py").unlink()
    assert alock(hooked, "acquire", "more2/**", **B).code == 0
    assert all("src/**" not in r["paths"] for r in alock(hooked, "list", "--json").json())


def test_a_claim_without_commits_never_lands_and_rebased_work_still_lands(hooked: Path) -> None:
    assert alock(hooked, "acquire", "src/**", "--until-merged", "main", **A).code == 0
    assert alock(hooked, "acquire", "x/**", **B).code == 0
    assert record_of(hooked, "src/**")["awaiting"] == []  # nothing to wait for yet: kept
    git(hooked, "checkout", "-q", "-b", "feature")
    edit_and_commit(hooked, "src/app.py", "one\n", A)
    git(hooked, "checkout", "-q", "main")
    edit_and_commit(hooked, "README.md", "moved on\n", B)
    git(hooked, "checkout", "-q", "feature")
    assert run_git(hooked, "rebase", "-q", "main", env=A).code == 0  # the commit made anew
    git(hooked, "checkout", "-q", "main")
    git(hooked, "merge", "-q", "--ff-only", "feature")
    assert alock(hooked, "acquire", "y/**", **B).code == 0
    assert all("src/**" not in r["paths"] for r in alock(hooked, "list", "--json").json())


def test_until_merged_needs_a_branch_that_exists(repo: Path) -> None:
    missing = alock(repo, "acquire", "src/**", "--until-merged", "nope", **A)
    assert missing.code == 2 and "no branch 'nope'" in missing.err
    bad = alock(repo, "acquire", "--until-merged", "src/**", **A)
    assert bad.code == 2 and "error:" in bad.err
    assert alock(repo, "list", "--json").json() == []


def test_a_hostile_landing_record_blocks_nothing_else(repo: Path) -> None:
    """A record that names commits which do not exist never lands and never breaks a write."""
    assert alock(repo, "acquire", "src/**", "--until-merged", "main", **A).code == 0
    record = record_of(repo, "src/**")
    record["awaiting"] = ["f" * 40, "0" * 40]
    plant(repo, str(record["id"]), record)
    got = alock(repo, "acquire", "other/**", **B)
    assert got.code == 0, got.err
    assert record_of(repo, "src/**")["awaiting"] == record["awaiting"]


def test_in_remote_mode_the_claim_lands_in_the_remotes_branch_on_sync(tmp_path: Path) -> None:
    from support.remote import make_bare, make_clone, remote_events, remote_locks

    bare = make_bare(tmp_path / "shared.git")
    mine = make_clone(bare.as_uri(), tmp_path / "mine")
    other = make_clone(bare.as_uri(), tmp_path / "other")
    assert alock(mine, "install-hooks").code == 0
    got = alock(mine, "acquire", "app/**", "--until-merged", **A)
    assert got.code == 0 and "until merged into main" in got.out, got.err
    git(mine, "checkout", "-q", "-b", "feature")
    edit_and_commit(mine, "app/x.py", "x\n", A)  # the heartbeat is pushed to the remote
    [record] = remote_locks(bare).values()
    assert record.until_merged == "main" and len(record.awaiting) == 1
    # Merged on the remote by someone else: the local main never moves.
    git(mine, "push", "-q", "origin", "feature")
    git(other, "fetch", "-q", "origin")
    git(other, "merge", "-q", "--ff-only", "origin/feature")
    git(other, "push", "-q", "origin", "HEAD:main")
    synced = alock(mine, "sync", "--json")
    assert synced.code == 0, synced.err
    assert [r["id"] for r in synced.json()["landed"]] == [record.id]
    assert remote_locks(bare) == {}
    assert any(e["event"] == "landed" for e in remote_events(bare))
    assert git(mine, "rev-parse", "main") != git(mine, "rev-parse", "feature")


def test_a_landing_record_naming_a_foreign_directory_never_runs_git_there(
    hooked: Path, tmp_path: Path
) -> None:
    """A record is anyone's text: its worktree must be one of this repository's worktrees,
    or git would run in a directory whose own configuration it obeys."""
    evil = tmp_path / "evil"
    git(tmp_path, "init", "-q", str(evil))
    marker = tmp_path / "ran"
    git(evil, "config", "core.fsmonitor", f"touch {marker}; false")
    git(hooked, "checkout", "-q", "-b", "feature")
    assert alock(hooked, "acquire", "src/**", "--until-merged", "main", **A).code == 0
    edit_and_commit(hooked, "src/app.py", "one\n", A)
    record = record_of(hooked, "src/**")
    git(hooked, "checkout", "-q", "main")
    git(hooked, *NO_HOOKS, "merge", "-q", "--ff-only", "feature")
    record["worktree"] = str(evil)
    plant(hooked, str(record["id"]), record)
    assert alock(hooked, "acquire", "other/**", **B).code == 0
    assert not marker.exists()
    assert record_of(hooked, "src/**")["worktree"] == str(evil)  # not landed: kept


def test_status_names_an_edit_inside_a_shared_claim_as_such(repo: Path) -> None:
    assert alock(repo, "acquire", "--shared", "src/**", **A).code == 0
    (repo / "src" / "app.py").write_text("edited\n")
    assert "inside the shared claim of agent-a" in alock(repo, "status", **B).out
    assert alock(repo, "acquire", "--shared", "src/app.py", **B).code == 0
    assert "inside the shared claim" not in alock(repo, "status", **B).out


def test_verify_shows_the_kind_and_lets_sharers_commits_pass(repo: Path) -> None:
    assert alock(repo, "acquire", "--shared", "docs/**", **A).code == 0
    assert alock(repo, "acquire", "--shared", "docs/b.md", **B).code == 0
    base = git(repo, "rev-parse", "HEAD").strip()
    edit_and_commit(repo, "docs/b.md", "b\n", {}, "--trailer", "Agent-Id: agent-b")
    edit_and_commit(repo, "docs/c.md", "c\n", {}, "--trailer", "Agent-Id: agent-c")
    got = alock(repo, "verify", f"{base}..HEAD")
    assert got.code == 1
    [held] = [line for line in got.out.splitlines() if line.startswith("HELD")]
    assert held.startswith("HELD docs/c.md") and "by agent-a (shared, docs/**" in held


# --- a merge is noticed where people look ---------------------------------------------------


def lock_refs(cwd: Path) -> list[str]:
    """The lock refs, read by git alone (a read verb would itself ask about landing)."""
    return git(cwd, "for-each-ref", "--format=%(refname)", "refs/agent-locks/").split()


def feature_work(cwd: Path) -> str:
    """agent-a claims src/** until merged into main and commits inside it on feature."""
    git(cwd, "checkout", "-q", "-b", "feature")
    assert alock(cwd, "acquire", "src/**", "--until-merged", "main", **A).code == 0
    edit_and_commit(cwd, "src/app.py", "one\n", A)
    assert record_of(cwd, "src/**")["awaiting"]
    git(cwd, "checkout", "-q", "main")
    [ref] = lock_refs(cwd)
    return ref


def test_a_merge_lands_the_claim_through_the_post_merge_hook(hooked: Path) -> None:
    feature_work(hooked)
    merged = run_git(hooked, "merge", "-q", "--no-ff", "-m", "merge feature", "feature", env=B)
    assert merged.code == 0, merged.err
    assert "alock: LANDED src/** of agent-a: its work is in main" in merged.err
    assert lock_refs(hooked) == []  # gone before any verb ran
    [landed] = [e for e in events(hooked) if e["event"] == "landed"]
    assert landed["by"] == "agent-b" and landed["branch"] == "main"


def test_a_rebase_that_lands_the_work_runs_post_rewrite(hooked: Path) -> None:
    feature_work(hooked)
    edit_and_commit(hooked, "README.md", "main moved on\n", B)
    rebased = run_git(hooked, "rebase", "-q", "feature", env=B)  # main's commit made anew
    assert rebased.code == 0, rebased.err
    assert "alock: LANDED src/** of agent-a" in rebased.err
    assert lock_refs(hooked) == []


def test_a_merge_that_lands_nothing_is_quiet(hooked: Path, tmp_path: Path) -> None:
    wt = tmp_path / "feature"
    git(hooked, "worktree", "add", "-q", "-b", "feature", str(wt))
    assert alock(wt, "acquire", "src/**", "--until-merged", "main", **A).code == 0
    edit_and_commit(wt, "src/app.py", "one\n", A)
    edit_and_commit(wt, "src/app.py", "two\n", A)
    merged = run_git(hooked, "merge", "-q", "feature~1", env=B)  # only the first commit
    assert merged.code == 0 and merged.err == "", merged.err
    assert len(lock_refs(hooked)) == 1
    rest = run_git(hooked, "merge", "-q", "feature", env=B)
    assert "alock: LANDED src/** of agent-a" in rest.err and lock_refs(hooked) == []


def test_every_bundled_hook_is_the_installed_text() -> None:
    for name in HOOKS:
        assert (PROJECT / "hooks" / name).read_text() == shim_text(name), name


@pytest.mark.parametrize("verb", [("check", "src/app.py"), ("list",), ("status",)])
def test_without_the_merge_hook_the_next_read_lands_the_claim(
    hooked: Path, verb: tuple[str, ...]
) -> None:
    (hooked / ".git" / "hooks" / "post-merge").unlink()
    ref = feature_work(hooked)
    git(hooked, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    assert lock_refs(hooked) == [ref]  # nobody asked yet
    got = alock(hooked, *verb, **B)
    assert got.code == 0, got
    assert "src/**" not in got.out and lock_refs(hooked) == []
    if verb[0] == "check":
        assert got.word.startswith("FREE")


def test_sync_in_local_mode_asks_about_landing(hooked: Path) -> None:
    (hooked / ".git" / "hooks" / "post-merge").unlink()
    feature_work(hooked)
    nothing = alock(hooked, "sync", **B)
    assert nothing.code == 0 and nothing.word.startswith("SYNCED local mode: 1 lock(s)"), nothing
    git(hooked, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    got = alock(hooked, "sync", **B)
    assert got.code == 0, got
    assert "LANDED src/** of agent-a: its work is in main, claim released" in got.out
    assert lock_refs(hooked) == []
    doc = alock(hooked, "sync", "--json", **B).json()
    assert doc["status"] == "synced" and doc["remote"] is None and doc["landed"] == []


@pytest.mark.parametrize("hook", ["post-merge", "post-rewrite"])
def test_the_landing_hooks_ask_through_git_alone_when_nothing_waits(
    hooked: Path, hook: str
) -> None:
    assert alock(hooked, "acquire", "src/**", **A).code == 0  # a claim, but none waits
    probe = (
        "import sys\n"
        "from gitlocks.main import main\n"
        f"code = main(['hook', {hook!r}])\n"
        "heavy = sorted(m for m in sys.modules\n"
        "    if m.split('.')[0] in ('typer', 'click', 'pygit2'))\n"
        "print(code, heavy)\n"
    )
    got = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=hooked,
        input="",
        capture_output=True,
        text=True,
        env={**os.environ, **B},
    )
    assert got.stdout.strip() == "0 []", got.stderr
    assert got.stderr == ""
