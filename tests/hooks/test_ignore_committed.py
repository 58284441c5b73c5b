"""``.alockignore`` is a committed decision: read from what is committed before the
change (HEAD for the guard and the pre-commit check, each commit's parent for verify and
the remote), never from the change it would exempt; and a change that newly exempts
paths inside another holder's live claim is judged as a change of those paths."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git
from support.cli import alock, run_git
from support.daemon import Daemon
from support.guard import denial, edit, guard
from support.remote import daemon, make_bare, make_clone
from test_verify import commit, remote_lines

from gitlocks.core.ignore import IgnoreList, newly_exempt

__all__ = ["daemon"]  # the fixture, imported so pytest finds it

A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}


@pytest.fixture
def claimed(repo: Path) -> Path:
    """``repo`` with a live claim of agent-a on src/**."""
    got = alock(repo, "acquire", "src/**", "-m", "rewrite", **A)
    assert got.code == 0, got.err
    return repo


def _blocking(repo: Path) -> None:
    assert alock(repo, "install-hooks", "--pre-push").code == 0
    git(repo, "config", "alock.hookMode", "block")


# --- the guard ------------------------------------------------------------------------------


def test_an_uncommitted_ignore_line_exempts_nothing_from_the_guard(claimed: Path) -> None:
    (claimed / ".alockignore").write_text("src/\n")
    said = denial(guard(claimed, edit(claimed, "src/app.py")))
    assert "held by agent-a" in said


def test_the_committed_list_still_exempts_for_the_guard(claimed: Path) -> None:
    (claimed / ".alockignore").write_text("*.lock\n")
    git(claimed, "add", ".alockignore")
    git(claimed, "commit", "-q", "--no-verify", "-m", "ignore lockfiles")
    (claimed / ".alockignore").write_text("")  # an edit in progress narrows nothing either
    got = guard(claimed, edit(claimed, "src/deps.lock"))
    assert got.code == 0 and got.out == "", got


# --- the pre-commit check -------------------------------------------------------------------


def test_a_commit_cannot_exempt_its_own_edit(claimed: Path) -> None:
    _blocking(claimed)
    (claimed / ".alockignore").write_text("src/\n")
    (claimed / "src" / "app.py").write_text("b\n")
    git(claimed, "add", "-A")
    got = run_git(claimed, "commit", "-q", "-m", "b edits src", env=B)
    assert got.code != 0, got
    assert "HELD src/app.py by agent-a" in got.err
    assert "HELD .alockignore (newly exempts src) by agent-a" in got.err


def test_a_commit_of_the_ignore_line_alone_is_judged_as_the_paths_it_exempts(
    claimed: Path,
) -> None:
    _blocking(claimed)
    (claimed / ".alockignore").write_text("/docs/*.lock\nsrc/app.*\n")
    git(claimed, "add", ".alockignore")
    got = run_git(claimed, "commit", "-q", "-m", "ignore", env=B)
    assert got.code != 0, got
    assert "newly exempts src/app.*" in got.err and "*.lock" not in got.err
    # The holder may exempt its own claim; a line no claim reaches is nobody's business.
    assert run_git(claimed, "commit", "-q", "-m", "ignore", env=A).code == 0
    (claimed / ".alockignore").write_text("/docs/*.lock\nsrc/app.*\n/docs/\n")
    git(claimed, "add", ".alockignore")
    assert run_git(claimed, "commit", "-q", "-m", "docs", env=B).code == 0
    # A line that may match inside the claim is judged, wherever else it matches.
    (claimed / ".alockignore").write_text("/docs/*.lock\nsrc/app.*\n/docs/\n*.lock\n")
    git(claimed, "add", ".alockignore")
    got = run_git(claimed, "commit", "-q", "-m", "lockfiles", env=B)
    assert got.code != 0 and "newly exempts *.lock" in got.err, got


def test_dropping_a_re_include_is_judged_too(claimed: Path) -> None:
    (claimed / ".alockignore").write_text("*.py\n!src/*.py\n")
    git(claimed, "add", ".alockignore")
    git(claimed, "commit", "-q", "-m", "ignore python outside src")
    _blocking(claimed)
    (claimed / ".alockignore").write_text("*.py\n")
    git(claimed, "add", ".alockignore")
    got = run_git(claimed, "commit", "-q", "-m", "exempt src too", env=B)
    assert got.code != 0 and "newly exempts *.py" in got.err, got


def _git_commands(trace: Path) -> list[str]:
    """The git commands (``cat-file``, ``diff``, ...) a traced run started."""
    import json

    events = [json.loads(line) for line in trace.read_text().splitlines()]
    return [e["argv"][1] for e in events if e["event"] == "start" and len(e["argv"]) > 1]


def test_a_commit_crossing_no_claim_reads_no_list(claimed: Path, tmp_path: Path) -> None:
    """The lists can only exempt a held path: a commit that crosses no claim asks git for
    none of them (no cat-file at all, the claim's record known from the store's kept
    verdict); one that crosses a claim is exempted by the committed list all the same."""
    _blocking(claimed)
    (claimed / ".alockignore").write_text("src/*.lock\n")
    git(claimed, "add", ".alockignore")
    assert run_git(claimed, "commit", "-q", "-m", "ignore lockfiles", env=A).code == 0
    assert alock(claimed, "list").code == 0  # the store keeps its verdict of the claim's blob
    trace = tmp_path / "trace.json"
    (claimed / "free.txt").write_text("x\n")
    git(claimed, "add", "free.txt")
    got = run_git(claimed, "commit", "-q", "-m", "free", env={**B, "GIT_TRACE2_EVENT": str(trace)})
    assert got.code == 0, got
    assert "cat-file" not in _git_commands(trace), _git_commands(trace)
    (claimed / "src").mkdir(exist_ok=True)
    (claimed / "src" / "deps.lock").write_text("x\n")
    git(claimed, "add", "src/deps.lock")
    got = run_git(claimed, "commit", "-q", "-m", "deps", env=B)
    assert got.code == 0 and "HELD" not in got.err, got


# --- verify and the remote -----------------------------------------------------------------


def test_verify_reads_each_commits_parent_list(claimed: Path) -> None:
    base = git(claimed, "rev-parse", "HEAD").strip()
    commit(claimed, "exempt and edit", "agent-b",
           files={".alockignore": "src/\n", "src/app.py": "b\n"})  # fmt: skip
    got = alock(claimed, "verify", f"{base}..HEAD", "--json")
    assert got.code == 1, got
    paths = sorted(f["path"] for f in got.json()["findings"])
    assert paths == [".alockignore (newly exempts src)", "src/app.py"]
    # The next commit is read under the list the first one committed: the first is the
    # one that answers for it.
    commit(claimed, "edit again", "agent-b", files={"src/app.py": "c\n"})
    got = alock(claimed, "verify", "HEAD~1..HEAD", "--json")
    assert got.code == 0 and got.json()["findings"] == []


def test_two_pushes_cannot_exempt_a_claim(daemon: Daemon, tmp_path: Path) -> None:
    bare = make_bare(daemon.base / "served.git")
    assert alock(tmp_path, "install-remote-hook", str(bare)).code == 0
    holder = make_clone(daemon.url("served.git"), tmp_path / "holder")
    assert alock(holder, "acquire", "src/api/**", "-m", "rewrite auth", **A).code == 0
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", daemon.url("served.git"), "other")
    commit(other, "ignore api", "agent-b", files={".alockignore": "src/api/\n"})
    first = run_git(other, "push", "-q", "origin", "main")
    assert first.code != 0, first
    assert any("newly exempts src/api" in line for line in remote_lines(first)), first.err
    # The edit after it rides on the refused line: the push of both is refused too.
    commit(other, "b edits api", "agent-b", files={"src/api/auth.py": "b\n"})
    second = run_git(other, "push", "-q", "origin", "main")
    assert second.code != 0
    assert any("newly exempts src/api" in line for line in remote_lines(second)), second.err
    assert "auth.py" not in git(bare, "ls-tree", "-r", "--name-only", "main")


# --- the rule itself --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "scopes"),
    [
        ("", "src/\n", ["**/src"]),
        ("*.lock\n", "*.lock\n/docs/x\n", ["docs/x"]),
        ("a\n", "a\n", []),
        ("*.py\n!src/*.py\n", "*.py\n", ["**/*.py"]),
        ("", "!src/\n[ab\n", []),  # a re-include exempts nothing; a dead line matches nothing
        ("", "/../x\n", ["**"]),  # no scope spells it: the whole tree stands for it
    ],
)
def test_newly_exempt(old: str, new: str, scopes: list[str]) -> None:
    got = [entry.pattern for _, entry in newly_exempt(IgnoreList(old), IgnoreList(new))]
    assert got == scopes
