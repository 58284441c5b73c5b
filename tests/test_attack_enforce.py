"""An outsider's attacks on enforcement: the guard, the commit hooks, verify and the
remote's pre-receive check, each driven as it really runs (real repositories, real
pushes to bare remotes with the hook installed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git
from helpers import alock, run_git
from remote_fixtures import make_bare, make_clone

from gitlocks.core.ignore import IgnoreList, newly_exempt

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


def hosted_with_ignore(tmp_path: Path, ignore: str) -> tuple[Path, Path, Path]:
    """A bare repository with the hook whose main commits ``ignore`` as its .alockignore,
    then a claim of agent-a on src/api/**; and a plain clone of agent-b's."""
    bare = make_bare(tmp_path / "hosted.git")
    assert alock(tmp_path, "install-remote-hook", str(bare)).code == 0
    holder = make_clone(bare.as_uri(), tmp_path / "holder")
    commit(holder, "ignore list", "agent-a", {".alockignore": ignore})
    git(holder, "push", "-q", "origin", "HEAD:main")
    got = alock(holder, "acquire", "src/api/**", "-m", "rewrite auth", **A)
    assert got.code == 0, got.err
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", bare.as_uri(), "other")
    return bare, holder, other


# --- .alockignore: a change that exempts without adding a line ------------------------------


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # The last matching line decides: the same two lines, swapped.
        ("src/api/**\n!src/api/**\n", "!src/api/**\nsrc/api/**\n"),
        # A line already there, repeated after the negation that overrode it.
        ("src/api/**\n!src/api/**\n", "src/api/**\n!src/api/**\nsrc/api/**\n"),
        # A directory-only line (it matches no file) made a line for files too.
        ("src/api/auth.py/\n", "src/api/auth.py\n"),
    ],
)
def test_an_ignore_change_that_exempts_without_a_new_line_is_seen(old: str, new: str) -> None:
    before, after = IgnoreList(old), IgnoreList(new)
    assert not before.ignored("src/api/auth.py") and after.ignored("src/api/auth.py")
    assert newly_exempt(before, after), "the change exempts src/api/auth.py"


def test_reordering_the_ignore_list_is_no_two_push_bypass_of_the_remote(tmp_path: Path) -> None:
    _, _, other = hosted_with_ignore(tmp_path, "src/api/**\n!src/api/**\n")
    commit(other, "reorder", "agent-b", {".alockignore": "!src/api/**\nsrc/api/**\n"})
    first = run_git(other, "push", "origin", "HEAD:main")
    commit(other, "b edits api", "agent-b", {"src/api/auth.py": "b\n"})
    second = run_git(other, "push", "origin", "HEAD:main")
    assert first.code != 0 or second.code != 0, "agent-b edited inside agent-a's live claim"


# --- pre-push: a new branch is judged under the list before it, not its own ----------------


def test_pre_push_of_a_new_branch_judges_under_the_list_before_it(
    repo: Path, tmp_path: Path
) -> None:
    bare = tmp_path / "plain.git"
    git(tmp_path, "init", "-q", "--bare", bare.name)
    git(repo, "remote", "add", "origin", bare.as_uri())
    git(repo, "push", "-q", "origin", "HEAD:refs/heads/main")
    git(repo, "fetch", "-q", "origin")
    assert alock(repo, "acquire", "src/**", "-m", "rewrite", **A).code == 0
    assert alock(repo, "install-hooks", "--pre-push").code == 0
    git(repo, "config", "alock.hookMode", "block")
    # Committed past the pre-commit check: the list and the edit it would exempt at once.
    (repo / ".alockignore").write_text("src/\n")
    (repo / "src" / "app.py").write_text("b\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", "b edits app", "--trailer", "Agent-Id: agent-b")
    pushed = run_git(repo, "push", "origin", "HEAD:refs/heads/feature", env=B)
    assert pushed.code != 0, pushed.err
    assert "src/app.py" in pushed.err


def test_pre_push_of_a_tag_naming_a_blob_is_no_error(repo: Path, tmp_path: Path) -> None:
    bare = tmp_path / "plain.git"
    git(tmp_path, "init", "-q", "--bare", bare.name)
    git(repo, "remote", "add", "origin", bare.as_uri())
    assert alock(repo, "install-hooks", "--pre-push").code == 0
    git(repo, "config", "alock.hookMode", "block")
    git(repo, "tag", "readme", "HEAD:README.md")
    pushed = run_git(repo, "push", "origin", "refs/tags/readme")
    assert pushed.code == 0, pushed.err


# --- the table guard: a journal commit of the old shape on top of a table ----------------


@pytest.fixture
def hosted(tmp_path: Path) -> tuple[Path, Path]:
    """A bare repository with the hook, and a clone in remote mode where agent-a holds
    src/api/**."""
    bare = make_bare(tmp_path / "hosted.git")
    assert alock(tmp_path, "install-remote-hook", str(bare)).code == 0
    holder = make_clone(bare.as_uri(), tmp_path / "holder")
    got = alock(holder, "acquire", "src/api/**", "-m", "rewrite auth", **A)
    assert got.code == 0, got.err
    return bare, holder


def test_a_journal_commit_without_a_table_on_top_of_one_is_refused(
    hosted: tuple[Path, Path], tmp_path: Path
) -> None:
    bare, holder = hosted
    git(holder, "fetch", "-q", "origin", f"{JOURNAL}:refs/tmp/journal")
    tip = git(holder, "rev-parse", "refs/tmp/journal").strip()
    message = git(holder, "log", "-1", "--format=%B", tip)
    empty_tree = git(holder, "mktree").strip()
    # The shape of a journal commit from before commits carried the table: an empty tree.
    legacy = git(holder, "commit-tree", empty_tree, "-p", tip, "-m", message).strip()
    lock_ref = git(bare, "for-each-ref", "--format=%(refname)", "refs/agent-locks/").strip()
    wiped = run_git(holder, "push", "--atomic", "origin", f"{legacy}:{JOURNAL}", f":{lock_ref}")
    assert wiped.code != 0, "the table guard let the claim's lock ref go with the table"
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", bare.as_uri(), "other")
    commit(other, "b edits api", "agent-b", {"src/api/auth.py": "b\n"})
    assert run_git(other, "push", "-q", "origin", "main").code != 0


def test_a_client_notices_its_claims_lost_to_a_journal_commit_without_a_table(
    tmp_path: Path,
) -> None:
    bare = make_bare(tmp_path / "plain.git")  # a plain host: no hook
    holder = make_clone(bare.as_uri(), tmp_path / "holder")
    assert alock(holder, "acquire", "src/api/**", "-m", "rewrite auth", **A).code == 0
    git(holder, "fetch", "-q", "origin", f"{JOURNAL}:refs/tmp/journal")
    tip = git(holder, "rev-parse", "refs/tmp/journal").strip()
    message = git(holder, "log", "-1", "--format=%B", tip)
    legacy = git(holder, "commit-tree", git(holder, "mktree").strip(), "-p", tip, "-m", message)
    lock_ref = git(bare, "for-each-ref", "--format=%(refname)", "refs/agent-locks/").strip()
    wiped = run_git(holder, "push", "origin", f"{legacy.strip()}:{JOURNAL}", f":{lock_ref}")
    assert wiped.code == 0, wiped.err
    listed = alock(holder, "list", "--fresh", "--json")
    assert listed.code == 2, listed.out
    assert "which carries no lock table" in listed.err
    assert alock(holder, "remote", "--restore").code == 0
    other = make_clone(bare.as_uri(), tmp_path / "other")
    assert alock(other, "acquire", "src/api/auth.py", **B).code == 1
