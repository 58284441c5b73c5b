"""``git alock verify`` and the pre-receive hook, through real commits and real pushes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import git
from support.cli import Result, alock, alock_process, run_git
from support.daemon import Daemon
from support.remote import daemon, make_bare, make_clone

from gitlocks.core.record import utcnow
from gitlocks.hooks import commits, receive, verify
from gitlocks.hooks import install as hook_install
from gitlocks.render import verify as render

__all__ = ["daemon"]  # the fixture, imported so pytest finds it

BIN = os.path.dirname(sys.executable)
A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}


def edit(cwd: Path, rel: str, text: str = "x\n") -> None:
    path = cwd / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def commit(cwd: Path, message: str, *agents: str, files: dict[str, str] | None = None) -> str:
    """Commit ``files`` (all changes when None) with one ``Agent-Id`` trailer per agent."""
    for rel, text in (files or {}).items():
        edit(cwd, rel, text)
    git(cwd, "add", "-A")
    trailers = [arg for agent in agents for arg in ("--trailer", f"Agent-Id: {agent}")]
    git(cwd, "commit", "-q", "--allow-empty", "-m", message, *trailers)
    return git(cwd, "rev-parse", "HEAD").strip()


def held(result: Result) -> list[tuple[str, str]]:
    """(path, subject) of each HELD line."""
    found = []
    for line in result.out.splitlines():
        if line.startswith("HELD "):
            path, _, rest = line[len("HELD ") :].partition(" in ")
            found.append((path, rest.split('"')[1]))
    return found


@pytest.fixture
def claimed(repo: Path) -> Path:
    """``repo`` with a live claim of agent-a on src/api/** ("rewrite auth")."""
    got = alock(repo, "acquire", "src/api/**", "-m", "rewrite auth", **A)
    assert got.code == 0, got.err
    return repo


# --- verify --------------------------------------------------------------------------------


def test_verify_reports_other_agents_and_nobodys_commits(claimed: Path) -> None:
    base = git(claimed, "rev-parse", "HEAD").strip()
    commit(claimed, "by b", "agent-b", files={"src/api/auth.py": "b\n"})
    commit(claimed, "by a", "agent-a", files={"src/api/auth.py": "a\n"})
    commit(claimed, "free", "agent-b", files={"docs/readme.md": "b\n"})
    commit(claimed, "nobody", files={"src/api/auth.py": "n\n"})
    got = alock(claimed, "verify", f"{base}..HEAD", **A)  # who runs verify does not matter
    assert got.code == 1, got.err
    assert held(got) == [("src/api/auth.py", "nobody"), ("src/api/auth.py", "by b")]
    line = got.out.splitlines()[0]
    assert line.startswith("HELD src/api/auth.py in ")
    assert ' "nobody" changed by (no agent), claimed by agent-a ' in line
    assert '(src/api/**, "rewrite auth", expires in 30m) [lock ' in line
    assert got.out.splitlines()[-1] == (
        "2 paths in 2 of 4 commits checked inside other holders' live claims"
    )
    clean = alock(claimed, "verify", "HEAD~2", "^HEAD~3")  # "by a" alone
    assert clean.code == 0 and clean.out == "CLEAN 1 commit checked\n"
    assert held(alock(claimed, "verify", "HEAD~1..HEAD")) == [("src/api/auth.py", "nobody")]


def test_range_semantics_are_git_rev_lists(claimed: Path) -> None:
    git(claimed, "checkout", "-q", "-b", "side")
    commit(claimed, "side api", "agent-b", files={"src/api/side.py": "s\n"})
    git(claimed, "checkout", "-q", "main")
    commit(claimed, "main api", "agent-b", files={"src/api/main.py": "m\n"})
    # One revision is its whole ancestry, the root commit included (against the empty tree).
    whole = alock(claimed, "verify", "main")
    assert whole.code == 1
    assert whole.out.splitlines()[-1].endswith(
        "in 1 of 2 commits checked inside other holders' live claims"
    )
    assert held(whole) == [("src/api/main.py", "main api")]
    assert held(alock(claimed, "verify", "main..side")) == [("src/api/side.py", "side api")]
    assert held(alock(claimed, "verify", "side", "^main")) == [("src/api/side.py", "side api")]
    both = alock(claimed, "verify", "main...side", "--json")
    assert both.json()["commits"] == 2
    assert alock(claimed, "verify", "main..main").out == "CLEAN 0 commits checked\n"


def test_a_root_commit_counts_against_the_empty_tree(tmp_path: Path) -> None:
    path = tmp_path / "fresh"
    git(tmp_path, "init", "-q", str(path))
    commit(path, "root", files={"src/api/auth.py": "r\n", "README.md": "r\n"})
    assert alock(path, "acquire", "src/api/**", **A).code == 0
    got = alock(path, "verify", "HEAD")
    assert held(got) == [("src/api/auth.py", "root")]


def test_a_merge_counts_what_it_changes_against_its_first_parent(claimed: Path) -> None:
    git(claimed, "checkout", "-q", "-b", "side")
    commit(claimed, "holder's work", "agent-a", files={"src/api/auth.py": "a\n"})
    git(claimed, "checkout", "-q", "main")
    commit(claimed, "free work", "agent-b", files={"docs/x.md": "b\n"})
    git(claimed, "merge", "-q", "--no-edit", "side", "-m", "merge side")
    merge = git(claimed, "rev-parse", "HEAD").strip()
    got = alock(claimed, "verify", "HEAD~1..HEAD")  # the merge, and side's commit
    assert held(got) == [("src/api/auth.py", "merge side")], "the holder's own commit passes"
    # Its first parent is main: docs/x.md is not the merge's change, src/api/auth.py is.
    doc = alock(claimed, "verify", "--json", f"{merge}^1..{merge}").json()
    assert [(f["path"], f["agents"]) for f in doc["findings"]] == [("src/api/auth.py", [])]
    # Merged the other way round (side's line), it brings in only the free file.
    git(claimed, "checkout", "-q", "-b", "other", "side")
    git(claimed, "merge", "-q", "--no-edit", "main~1", "-m", "merge main")
    assert alock(claimed, "verify", "side..other", "^main").out == "CLEAN 1 commit checked\n"


def test_several_agents_count_a_claim_only_when_it_is_held_against_all(claimed: Path) -> None:
    assert alock(claimed, "acquire", "lib/**", **B, AGENT_PARENT_ID="lead").code == 0
    assert alock(claimed, "acquire", "docs/**", AGENT_ID="agent-c").code == 0
    commit(claimed, "pair", "agent-a", "agent-b", files={"src/api/x.py": "1\n", "lib/y.py": "1\n"})
    commit(claimed, "docs pair", "agent-a", "agent-b", files={"docs/z.md": "1\n"})
    commit(claimed, "lead", "lead", files={"lib/y.py": "2\n"})  # a parent commits its child's
    commit(claimed, "again", "agent-b", "agent-b", files={"lib/y.py": "3\n"})
    doc = alock(claimed, "verify", "--json", "HEAD~4..HEAD").json()
    assert [(f["subject"], f["path"], f["agents"]) for f in doc["findings"]] == [
        ("docs pair", "docs/z.md", ["agent-a", "agent-b"])
    ]


def test_an_invalid_trailer_counts_as_no_agent_with_a_warning(claimed: Path) -> None:
    commit(claimed, "odd", "agent a", files={"src/api/auth.py": "1\n"})
    commit(claimed, "odd and valid", "bad/id", "agent-a", files={"src/api/auth.py": "2\n"})
    got = alock(claimed, "verify", "HEAD~2..HEAD")
    assert held(got) == [("src/api/auth.py", "odd")]
    warnings = [line for line in got.err.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 2 and "'agent a' is no valid agent id" in warnings[1]
    doc = alock(claimed, "verify", "--json", "HEAD~2..HEAD").json()
    assert doc["findings"][0]["agents"] == [] and len(doc["warnings"]) == 2


def test_trailer_syntax_is_gits(claimed: Path) -> None:
    """Only the trailer block counts: a line in the body is no trailer; keys fold case."""
    edit(claimed, "src/api/auth.py", "1\n")
    git(claimed, "add", "-A")
    body = "body\n\nAgent-Id: agent-a\nsays the body\n\nSigned-off-by: x"
    git(claimed, "commit", "-q", "-m", body)
    commit(claimed, "folded", files={"src/api/auth.py": "2\n"})
    git(claimed, "commit", "-q", "--amend", "-m", "folded\n\nagent-id: agent-a")
    assert held(alock(claimed, "verify", "HEAD~2..HEAD")) == [("src/api/auth.py", "body")]


def test_committed_alockignore_paths_are_not_reported(claimed: Path) -> None:
    commit(claimed, "ignore", files={".alockignore": "src/api/*.lock\n"})
    commit(
        claimed, "lockfile", "agent-b", files={"src/api/deps.lock": "1\n", "src/api/a.py": "1\n"}
    )
    assert held(alock(claimed, "verify", "HEAD~1..HEAD")) == [("src/api/a.py", "lockfile")]
    edit(claimed, ".alockignore", "src/api/**\n")  # not committed: not the repository's list
    assert len(held(alock(claimed, "verify", "HEAD~1..HEAD"))) == 1


def test_renames_deletions_and_empty_commits(claimed: Path) -> None:
    commit(claimed, "add", "agent-a", files={"src/api/old.py": "1\n"})
    git(claimed, "mv", "src/api/old.py", "src/moved.py")
    commit(claimed, "move out", "agent-b")
    git(claimed, "rm", "-q", "src/app.py")
    commit(claimed, "delete free", "agent-b")
    commit(claimed, "nothing", "agent-b")
    got = alock(claimed, "verify", "HEAD~3..HEAD")
    assert held(got) == [("src/api/old.py", "move out")]
    assert got.out.splitlines()[-1].endswith(
        "in 1 of 3 commits checked inside other holders' live claims"
    )


def test_expired_and_released_claims_count_for_nothing(repo: Path) -> None:
    start = time.monotonic()
    assert alock(repo, "acquire", "src/**", "--ttl", "4", **A).code == 0
    commit(repo, "later", "agent-b", files={"src/app.py": "1\n"})
    assert alock(repo, "verify", "HEAD~1..HEAD").code == 1  # a loaded machine has 4 s for it
    time.sleep(max(0.0, start + 5.2 - time.monotonic()))
    assert alock(repo, "verify", "HEAD~1..HEAD").code == 0


def test_json_document(claimed: Path) -> None:
    sha = commit(claimed, "by b", "agent-b", files={"src/api/auth.py": "b\n"})
    got = alock(claimed, "verify", "HEAD~1..HEAD", "--json")
    assert got.code == 1
    doc = got.json()
    assert set(doc) == {"status", "commits", "findings", "warnings"}
    assert (doc["status"], doc["commits"], doc["warnings"]) == ("held", 1, [])
    [finding] = doc["findings"]
    assert set(finding) == {"commit", "subject", "agents", "path", "holders", "locks"}
    assert finding["holders"] == ["agent-a"]
    assert (finding["commit"], finding["subject"], finding["agents"]) == (sha, "by b", ["agent-b"])
    assert finding["locks"][0]["holder"] == "agent-a"
    assert finding["locks"][0]["paths"] == ["src/api/**"]
    same = alock(claimed, "verify", "HEAD~1..HEAD", "--format", "json")
    assert same.json() == doc
    clean = alock(claimed, "verify", "HEAD~1..HEAD~1", "--json")
    assert clean.code == 0
    assert clean.json() == {"status": "clean", "commits": 0, "findings": [], "warnings": []}


def test_github_annotations_escape_what_the_runner_would_read(claimed: Path) -> None:
    assert alock(claimed, "acquire", "docs/**", "-m", "50% done,\nsee: notes", **A).code == 0
    commit(claimed, "a, b: c", "agent-b", files={"docs/a,b:c%.md": "1\n"})
    got = alock(claimed, "verify", "HEAD~1..HEAD", "--format", "github")
    assert got.code == 1
    [line] = got.out.splitlines()
    assert line.startswith("::error file=docs/a%2Cb%3Ac%25.md,title=gitlocks::docs/a,b:c%25.md ")
    assert '"50%25 done,\\nsee: notes"' in line  # printable first: no line break at all
    assert '"a, b: c"' in line
    assert "is inside a live claim of agent-a (" in line and "; changed by agent-b in " in line
    assert alock(claimed, "verify", "HEAD~1..HEAD~1", "--format", "github").out == (
        "CLEAN 0 commits checked\n"
    )
    assert render.escape_data("a%b\r\nc:d,e") == "a%25b%0D%0Ac:d,e"
    assert render.escape_property("a%b\r\nc:d,e") == "a%25b%0D%0Ac%3Ad%2Ce"


def test_github_warnings_are_annotations_too(claimed: Path) -> None:
    commit(claimed, "odd", "bad id", files={"README.md": "1\n"})
    got = alock(claimed, "verify", "HEAD~1..HEAD", "--format", "github")
    assert got.code == 0
    assert got.out.splitlines()[0].startswith("::warning title=gitlocks::commit ")


@pytest.mark.parametrize(
    "args",
    [
        ["nope..HEAD"],
        ["HEAD..nope"],
        ["--", "--output=/tmp/x"],
        ["HEAD", "--format", "xml"],
        ["HEAD", "--json", "--format", "github"],
        [],
    ],
)
def test_bad_input_exits_2_without_a_traceback(claimed: Path, args: list[str]) -> None:
    got = alock_process(claimed, "verify", *args)
    assert got.code == 2, got
    assert "Traceback" not in got.err and "error" in got.err.lower()


def test_a_bad_range_is_named(claimed: Path, tmp_path: Path) -> None:
    got = alock(claimed, "verify", "nope..HEAD")
    assert got.code == 2 and got.err.startswith("error: bad revision range 'nope..HEAD': ")
    outside = tmp_path / "plain"
    outside.mkdir()
    assert alock(outside, "verify", "HEAD").code == 2


def test_from_a_subdirectory_paths_are_the_repositorys(claimed: Path) -> None:
    commit(claimed, "by b", "agent-b", files={"src/api/auth.py": "b\n"})
    assert held(alock(claimed / "src", "verify", "HEAD~1..HEAD")) == [("src/api/auth.py", "by b")]


def test_a_shallow_clones_cut_is_an_error_unless_skipped(claimed: Path, tmp_path: Path) -> None:
    commit(claimed, "one", "agent-b", files={"src/api/1.py": "1\n"})
    commit(claimed, "two", "agent-b", files={"src/api/2.py": "1\n"})
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", claimed.as_uri(), str(shallow))
    git(
        shallow,
        "fetch",
        "-q",
        "origin",
        "+refs/agent-locks/*:refs/agent-locks/*",
        "+refs/agent-locks-meta/*:refs/agent-locks-meta/*",
    )
    got = alock(shallow, "verify", "HEAD")
    assert got.code == 2 and "shallow clone was cut" in got.err and "--unshallow" in got.err
    skipped = alock(shallow, "verify", "HEAD", "--shallow-ok")
    assert skipped.code == 0 and "shallow clone was cut" in skipped.err


def test_ci_reads_fetched_lock_refs(claimed: Path, tmp_path: Path) -> None:
    """A CI checkout: the lock refs fetched as docs/hooks.md says, then verify."""
    ci = tmp_path / "ci"
    git(tmp_path, "clone", "-q", claimed.as_uri(), str(ci))
    commit(ci, "by b", "agent-b", files={"src/api/auth.py": "b\n"})
    unseen = alock(ci, "verify", "origin/main..HEAD")
    assert unseen.code == 2 and not unseen.out, "no lock refs fetched yet: no CLEAN"
    assert (
        "run git fetch --no-tags origin '+refs/agent-locks/*:refs/agent-locks/*' "
        "'+refs/agent-locks-meta/*:refs/agent-locks-meta/*' first" in unseen.err
    )
    assert alock(ci, "verify", "origin/main..HEAD", "--no-table-ok").code == 0
    git(
        ci,
        "fetch",
        "-q",
        "origin",
        "+refs/agent-locks/*:refs/agent-locks/*",
        "+refs/agent-locks-meta/*:refs/agent-locks-meta/*",
    )
    got = alock(ci, "verify", "origin/main..HEAD")
    assert held(got) == [("src/api/auth.py", "by b")]


def test_parsers() -> None:
    raw = b"c1 p1\nsubject\nagent-a\nagent-a\nbad id\n\n\0c2\n\n\0"
    c1, c2 = commits.parse_log(raw)
    assert (c1.oid, c1.parents, c1.subject, c1.agents, c1.invalid) == (
        "c1",
        ("p1",),
        "subject",
        ("agent-a",),
        ("bad id",),
    )
    assert (c2.oid, c2.parents, c2.agents, c2.judged_as) == ("c2", (), (), (commits.NOBODY,))
    # A path spelled like a commit id is still a path: it follows an entry.
    sha = "a" * 40
    diff = f"{sha}\0:000000 100644 0 1 A\0{'b' * 40}\0:100644 000000 1 0 D\0x y\0{'b' * 40}\0"
    assert commits.parse_diff_tree(diff.encode()) == {sha: ["b" * 40, "x y"], "b" * 40: []}


# --- the pre-receive hook --------------------------------------------------------------------


@pytest.fixture
def hosted(tmp_path: Path) -> Path:
    """A bare repository with our pre-receive hook, and agent-a's claim on src/api/**
    written into it by a clone in remote mode."""
    bare = make_bare(tmp_path / "hosted.git")
    got = alock(tmp_path, "install-remote-hook", str(bare))
    assert got.code == 0 and got.out.startswith("INSTALLED pre-receive ("), got.err
    holder = make_clone(bare.as_uri(), tmp_path / "holder")
    assert alock(holder, "acquire", "src/api/**", "-m", "rewrite auth", **A).code == 0
    return bare


def clone(url: str, path: Path) -> Path:
    git(path.parent, "clone", "-q", url, path.name)
    return path


def remote_lines(result: Result) -> list[str]:
    return [
        line.removeprefix("remote: ").rstrip()
        for line in result.err.splitlines()
        if line.startswith("remote: alock: ")
    ]


def branch_of(bare: Path, ref: str = "refs/heads/main") -> str:
    return git(bare, "rev-parse", "--verify", "-q", ref, check=False).strip()


def _refuses_and_accepts(url: str, bare: Path, work: Path) -> None:
    other = clone(url, work)
    before = branch_of(bare)
    commit(other, "b edits api", "agent-b", files={"src/api/auth.py": "b\n"})
    refused = run_git(other, "push", "-q", "origin", "main")
    assert refused.code != 0
    lines = remote_lines(refused)
    assert lines[0].startswith("alock: HELD src/api/auth.py in ")
    assert (
        ' "b edits api" changed by agent-b, claimed by agent-a (src/api/**, "rewrite auth", '
        "expires in " in lines[0]
    )
    assert lines[-1].startswith("alock: REFUSED push: 1 path in 1 commit ")
    assert "pre-receive hook declined" in refused.err
    assert branch_of(bare) == before, "nothing moved"
    # The holder's own commit (its trailer) is accepted.
    git(other, "reset", "-q", "--hard", "origin/main")
    commit(other, "a edits api", "agent-a", files={"src/api/auth.py": "a\n"})
    accepted = run_git(other, "push", "-q", "origin", "main")
    assert accepted.code == 0 and not remote_lines(accepted), accepted.err
    assert branch_of(bare) == git(other, "rev-parse", "HEAD").strip()


def test_push_over_file_url_is_refused_naming_the_holder(hosted: Path, tmp_path: Path) -> None:
    _refuses_and_accepts(hosted.as_uri(), hosted, tmp_path / "other")


def test_push_over_git_daemon_is_refused_naming_the_holder(daemon: Daemon, tmp_path: Path) -> None:
    bare = make_bare(daemon.base / "served.git")
    assert alock(tmp_path, "install-remote-hook", str(bare)).code == 0
    holder = make_clone(daemon.url("served.git"), tmp_path / "holder")
    assert alock(holder, "acquire", "src/api/**", "-m", "rewrite auth", **A).code == 0
    _refuses_and_accepts(daemon.url("served.git"), bare, tmp_path / "other")


def test_lock_refs_deletions_and_free_paths_pass(hosted: Path, tmp_path: Path) -> None:
    holder = tmp_path / "holder"
    # Claims are pushes of lock refs: they pass, as do releases (deletions).
    assert alock(holder, "acquire", "docs/**", **A).code == 0
    assert alock(holder, "release", "docs/**", **A).code == 0
    other = clone(hosted.as_uri(), tmp_path / "other")
    commit(other, "free", files={"lib/x.py": "1\n"})
    assert run_git(other, "push", "-q", "origin", "main:side").code == 0
    deleted = run_git(other, "push", "-q", "origin", ":side")
    assert deleted.code == 0 and not remote_lines(deleted)
    assert not branch_of(hosted, "refs/heads/side")


def test_tags_and_other_refs_are_checked_and_old_commits_are_not_judged_again(
    hosted: Path, tmp_path: Path
) -> None:
    other = clone(hosted.as_uri(), tmp_path / "other")
    commit(other, "b edits api", "agent-b", files={"src/api/auth.py": "b\n"})
    git(other, "tag", "v1")
    assert run_git(other, "push", "-q", "origin", "v1").code != 0
    assert run_git(other, "push", "-q", "origin", "HEAD:refs/review/1").code != 0
    # The holder pushes a commit of its own; a new branch at it brings nothing new.
    git(other, "reset", "-q", "--hard", "origin/main")
    commit(other, "a edits api", "agent-a", files={"src/api/auth.py": "a\n"})
    assert run_git(other, "push", "-q", "origin", "main").code == 0
    copy = run_git(other, "push", "-q", "origin", "main:copy", "main:refs/tags/v2")
    assert copy.code == 0 and not remote_lines(copy)


def test_commits_already_on_the_default_branch_are_not_judged_again(tmp_path: Path) -> None:
    bare = make_bare(tmp_path / "hosted.git")
    other = clone(bare.as_uri(), tmp_path / "other")
    first = git(other, "rev-parse", "HEAD").strip()
    commit(other, "before the claim", "agent-b", files={"src/api/auth.py": "b\n"})
    assert run_git(other, "push", "-q", "origin", "main", f"{first}:refs/heads/release").code == 0
    assert alock(tmp_path, "install-remote-hook", str(bare)).code == 0
    holder = make_clone(bare.as_uri(), tmp_path / "holder")
    assert alock(holder, "acquire", "src/api/**", **A).code == 0
    pushed = run_git(other, "push", "-q", "origin", "main:release")  # moved up to main
    assert pushed.code == 0 and not remote_lines(pushed), pushed.err


def test_a_repository_whose_head_names_no_branch_judges_main_as_its_default(
    tmp_path: Path,
) -> None:
    """``git init --bare`` without init.defaultBranch leaves HEAD at an unborn master while
    the team pushes main: main is then the default branch, so a release branch moved up to
    it brings nothing to judge, and a branch parked before a claim still cannot land on
    main inside it."""
    bare = make_bare(tmp_path / "hosted.git")
    git(bare, "symbolic-ref", "HEAD", "refs/heads/master")
    other = clone(bare.as_uri(), tmp_path / "other")
    git(other, "checkout", "-q", "-b", "main", "origin/main")
    first = git(other, "rev-parse", "HEAD").strip()
    commit(other, "before the claim", "agent-b", files={"src/api/auth.py": "b\n"})
    assert run_git(other, "push", "-q", "origin", "main", f"{first}:refs/heads/release").code == 0
    git(other, "checkout", "-q", "-b", "feature")
    commit(other, "parked", "agent-b", files={"src/api/auth.py": "c\n"})
    assert run_git(other, "push", "-q", "origin", "feature").code == 0
    assert alock(tmp_path, "install-remote-hook", str(bare)).code == 0
    holder = make_clone(bare.as_uri(), tmp_path / "holder")
    assert alock(holder, "acquire", "src/api/**", **A).code == 0
    moved = run_git(other, "push", "-q", "origin", "main:release")
    assert moved.code == 0 and not remote_lines(moved), moved.err
    landed = run_git(other, "push", "origin", "feature:main")
    assert landed.code != 0 and "HELD src/api/auth.py" in landed.err, landed.err


def test_a_pushed_merge_is_judged_against_its_first_parent(hosted: Path, tmp_path: Path) -> None:
    holder = tmp_path / "holder"
    git(holder, "checkout", "-q", "-b", "work")
    commit(holder, "holder's work", "agent-a", files={"src/api/auth.py": "a\n"})
    assert run_git(holder, "push", "-q", "origin", "work").code == 0
    other = clone(hosted.as_uri(), tmp_path / "other")
    commit(other, "free", "agent-b", files={"lib/x.py": "1\n"})
    git(other, "merge", "-q", "--no-edit", "origin/work", "-m", "b merges a's work")
    refused = run_git(other, "push", "-q", "origin", "main")
    assert refused.code != 0
    held_lines = [line for line in remote_lines(refused) if line.startswith("alock: HELD ")]
    assert len(held_lines) == 1 and '"b merges a\'s work"' in held_lines[0]
    # The holder merging it (its trailer) passes; the other side's commits pass as before.
    git(other, "commit", "-q", "--amend", "--no-edit", "--trailer", "Agent-Id: agent-a")
    assert run_git(other, "push", "-q", "origin", "main").code == 0


def test_an_expired_claim_refuses_nothing(tmp_path: Path) -> None:
    bare = make_bare(tmp_path / "hosted.git", **{"alock.clockSkew": "0"})
    assert alock(tmp_path, "install-remote-hook", str(bare)).code == 0
    holder = make_clone(bare.as_uri(), tmp_path / "holder")
    assert alock(holder, "acquire", "src/**", "--ttl", "1", **A).code == 0
    other = clone(bare.as_uri(), tmp_path / "other")
    commit(other, "later", "agent-b", files={"src/app.py": "1\n"})
    time.sleep(2.2)
    pushed = run_git(other, "push", "-q", "origin", "main")
    assert pushed.code == 0 and not remote_lines(pushed), pushed.err


def test_the_hosted_repository_allows_for_clock_skew(tmp_path: Path) -> None:
    bare = make_bare(tmp_path / "hosted.git")
    assert alock(tmp_path, "install-remote-hook", str(bare)).code == 0
    holder = make_clone(bare.as_uri(), tmp_path / "holder")
    assert alock(holder, "acquire", "src/**", "--ttl", "1", **A).code == 0
    other = clone(bare.as_uri(), tmp_path / "other")
    commit(other, "later", "agent-b", files={"src/app.py": "1\n"})
    time.sleep(2.2)
    assert run_git(other, "push", "-q", "origin", "main").code != 0, "30s by default"


def test_warn_mode_reports_and_accepts(hosted: Path, tmp_path: Path) -> None:
    git(hosted, "config", "alock.hookMode", "warn")
    other = clone(hosted.as_uri(), tmp_path / "other")
    commit(other, "b edits api", files={"src/api/auth.py": "b\n"})
    pushed = run_git(other, "push", "-q", "origin", "main")
    assert pushed.code == 0
    lines = remote_lines(pushed)
    assert lines[0].startswith("alock: HELD src/api/auth.py in ")
    assert lines[-1].startswith("alock: WARNING: 1 path in 1 commit ")
    git(hosted, "config", "alock.hookMode", "sometimes")
    commit(other, "again", files={"src/api/auth.py": "c\n"})
    refused = run_git(other, "push", "-q", "origin", "main")
    assert refused.code != 0
    assert "unknown alock.hookMode 'sometimes'" in remote_lines(refused)[0]


def test_a_check_that_cannot_run_accepts_the_push(tmp_path: Path) -> None:
    """Fail-open: outside any repository, git fails; the hook says so and accepts."""
    plain = tmp_path / "plain"
    plain.mkdir()
    line = f"{'0' * 40} {'1' * 40} refs/heads/main\n"
    got = subprocess.run(
        [sys.executable, "-m", "gitlocks", "hook", "pre-receive"],
        cwd=plain,
        input=line,
        capture_output=True,
        text=True,
        env={**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path)},
    )
    assert got.returncode == 0
    assert got.stderr.startswith("alock: error: ")
    assert got.stderr.rstrip().endswith("push accepted without the lock check")
    assert "Traceback" not in got.stderr


def test_pushed_tips_skip_our_refs_and_deletions() -> None:
    z, a, b = "0" * 40, "a" * 40, "b" * 40
    lines = [
        f"{z} {a} refs/agent-locks/1a2-b\n",
        f"{a} {b} refs/agent-locks-meta/journal\n",
        f"{z} {a} refs/agent-locks-remote/origin/view\n",
        f"{a} {z} refs/heads/gone\n",
        f"{z} {b} refs/heads/main\n",
        f"{z} {b} refs/tags/v1\n",
        "garbage\n",
    ]
    assert receive.pushed_tips(lines) == [b]


def test_pre_receive_imports_no_command_line_framework_or_pygit2(
    hosted: Path, tmp_path: Path
) -> None:
    other = clone(hosted.as_uri(), tmp_path / "other")
    old = git(other, "rev-parse", "HEAD").strip()
    new = commit(other, "b edits api", "agent-b", files={"src/api/auth.py": "b\n"})
    git(hosted, "update-ref", "refs/heads/release", old)
    git(hosted, "fetch", "-q", str(other), "HEAD:refs/heads/main")  # a fetch runs no hook
    probe = (
        "import sys\n"
        "from gitlocks.main import main\n"
        "code = main(['hook', 'pre-receive'])\n"
        "heavy = sorted(m for m in sys.modules\n"
        "               if m.split('.')[0] in ('typer', 'click', 'pygit2'))\n"
        "print(code, heavy)\n"
    )
    got = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=hosted,
        input=f"{old} {new} refs/heads/release\n",
        capture_output=True,
        text=True,
    )
    # The default branch already holds the commit: nothing new to judge, nothing loaded.
    assert got.stdout.strip() == "0 []", got.stderr
    git(hosted, "update-ref", "refs/heads/main", old)
    got = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=hosted,
        input=f"{old} {new} refs/heads/main\n",
        capture_output=True,
        text=True,
    )
    assert got.stdout.strip() == "1 []", got.stderr
    assert "alock: HELD src/api/auth.py" in got.stderr


# --- install-remote-hook ---------------------------------------------------------------------


def test_install_remote_hook_refuses_what_is_not_a_hosted_repository(
    repo: Path, tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    for target in (plain, tmp_path / "missing", repo / "src"):
        got = alock(tmp_path, "install-remote-hook", str(target))
        assert got.code == 2 and got.err.startswith("error: "), (target, got)
    refused = alock(tmp_path, "install-remote-hook", str(repo))
    assert refused.code == 2 and "is not a bare repository" in refused.err
    assert "--force" in refused.err
    forced = alock(tmp_path, "install-remote-hook", str(repo), "--force", "--json")
    assert forced.code == 0
    [change] = forced.json()["hooks"]
    assert (change["hook"], change["status"]) == ("pre-receive", "installed")
    assert Path(change["path"]) == repo / ".git" / "hooks" / "pre-receive"


def test_install_remote_hook_is_idempotent_chains_and_uninstalls(tmp_path: Path) -> None:
    bare = make_bare(tmp_path / "hosted.git")
    foreign = bare / "hooks" / "pre-receive"
    foreign.write_text("#!/bin/sh\ncat >/dev/null\necho foreign ran >&2\n")
    foreign.chmod(0o755)
    text = foreign.read_bytes()
    first = alock(tmp_path, "install-remote-hook", str(bare), "--json").json()
    [change] = first["hooks"]
    assert change["status"] == "installed" and change["chained"]
    assert first["repository"] == str(bare)
    again = alock(tmp_path, "install-remote-hook", str(bare))
    assert again.out.startswith("ALREADY INSTALLED pre-receive")
    assert hook_install.is_ours(foreign)
    other = clone(bare.as_uri(), tmp_path / "other")
    commit(other, "free", files={"x": "1\n"})
    pushed = run_git(other, "push", "-q", "origin", "main")
    assert pushed.code == 0 and "remote: foreign ran" in pushed.err
    gone = alock(tmp_path, "install-remote-hook", "--uninstall", str(bare))
    assert gone.code == 0 and gone.out.startswith("UNINSTALLED pre-receive")
    assert foreign.read_bytes() == text
    twice = alock(tmp_path, "install-remote-hook", "--uninstall", str(bare))
    assert twice.code == 0 and twice.out.startswith("NOT INSTALLED pre-receive")


def test_install_remote_hook_honours_core_hooks_path(tmp_path: Path) -> None:
    bare = make_bare(tmp_path / "hosted.git")
    git(bare, "config", "core.hooksPath", str(tmp_path / "shared-hooks"))
    got = alock(tmp_path, "install-remote-hook", str(bare), "--json")
    assert got.code == 0
    assert Path(got.json()["hooks"][0]["path"]) == tmp_path / "shared-hooks" / "pre-receive"


def test_manual_names_the_verbs() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "hooks.md").read_text()
    for needle in ("git alock verify", "install-remote-hook", "refs/agent-locks/*"):
        assert needle in text


def test_render_clean_word() -> None:
    result = verify.Verification([], [], utcnow())
    assert render.report(result) == "CLEAN 0 commits checked"
    assert json.loads(json.dumps(result.to_dict()))["status"] == "clean"


# --- loud where a quiet answer would mislead ----------------------------------------------------


@pytest.mark.parametrize("revision", ["HEAD^{tree}", "HEAD:README.md", "HEAD~1..HEAD^{tree}"])
def test_a_revision_that_names_no_commit_is_an_error(claimed: Path, revision: str) -> None:
    commit(claimed, "by b", "agent-b", files={"src/api/auth.py": "b\n"})
    got = alock(claimed, "verify", revision)
    assert got.code == 2 and not got.out, got.out
    assert got.err.startswith(f"error: {revision!r} names a ")
    assert "not a commit" in got.err and "Traceback" not in got.err


def test_a_tag_of_a_commit_is_a_commit(claimed: Path) -> None:
    commit(claimed, "by b", "agent-b", files={"src/api/auth.py": "b\n"})
    git(claimed, "tag", "-a", "-m", "annotated", "v1")
    assert alock(claimed, "verify", "v1~1..v1").code == 1


def test_no_table_in_sight_names_the_sync_in_remote_mode(tmp_path: Path) -> None:
    bare = make_bare(tmp_path / "locks.git")
    # Remote mode, no journal anywhere: nothing laid out.
    work = make_clone(bare.as_uri(), tmp_path / "work", shards=0)
    got = alock(work, "verify", "HEAD")
    assert got.code == 2 and "run git alock sync first" in got.err, got.err
    assert alock(work, "verify", "HEAD", "--no-table-ok").code == 0
