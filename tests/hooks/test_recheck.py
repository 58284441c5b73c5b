"""A last outside look at enforcement: attacks the other suites do not try, each run
as it really runs (real repositories, real pushes)."""

from __future__ import annotations

from pathlib import Path

from conftest import git
from support.cli import alock, run_git
from support.remote import make_bare, make_clone

A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}


def _plain_remote(repo: Path, tmp_path: Path) -> Path:
    bare = tmp_path / "plain.git"
    git(tmp_path, "init", "-q", "--bare", bare.name)
    git(repo, "remote", "add", "origin", bare.as_uri())
    git(repo, "push", "-q", "origin", "HEAD:refs/heads/main")
    return bare


def test_pre_push_judges_each_ref_under_its_own_list(repo: Path, tmp_path: Path) -> None:
    """Another branch's committed .alockignore, pushed in the same command, exempts
    nothing on main."""
    _plain_remote(repo, tmp_path)
    main = git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip()
    git(repo, "checkout", "-q", "-b", "assets")
    (repo / ".alockignore").write_text("src/\n")
    git(repo, "add", ".alockignore")
    git(repo, "commit", "-q", "-m", "assets ignore src")
    git(repo, "push", "-q", "origin", "assets")
    (repo / "assets.txt").write_text("v2\n")
    git(repo, "add", "assets.txt")
    git(repo, "commit", "-q", "-m", "assets move on")
    git(repo, "checkout", "-q", main)
    git(repo, "fetch", "-q", "origin")
    assert alock(repo, "acquire", "src/**", "-m", "rewrite", **A).code == 0
    assert alock(repo, "install-hooks", "--pre-push").code == 0
    git(repo, "config", "alock.hookMode", "block")
    (repo / "src" / "app.py").write_text("b\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", "b edits app", "--trailer", "Agent-Id: agent-b")
    alone = run_git(repo, "push", "origin", f"HEAD:refs/heads/{main}", env=B)
    assert alone.code != 0 and "src/app.py" in alone.err, alone
    pushed = run_git(repo, "push", "origin", "assets", f"HEAD:refs/heads/{main}", env=B)
    assert pushed.code != 0, pushed.err
    assert "src/app.py" in pushed.err


def _commit(cwd: Path, message: str, agent: str, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = cwd / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(cwd, "add", "-A")
    git(cwd, "commit", "-q", "--no-verify", "-m", message, "--trailer", f"Agent-Id: {agent}")


def test_an_old_list_in_history_exempts_nothing_landing_on_main(tmp_path: Path) -> None:
    """main once ignored src/, and dropped the line before the claim. Work based on that
    old commit, merged up to date with main and pushed to main, lands inside the live
    claim: the remote refuses it, as it refuses the same edit made on main."""
    bare = make_bare(tmp_path / "hosted.git")
    assert alock(tmp_path, "install-remote-hook", str(bare)).code == 0
    holder = make_clone(bare.as_uri(), tmp_path / "holder")
    _commit(holder, "app", "agent-a", {"src/app.py": "a\n", ".alockignore": "src/\n"})
    old = git(holder, "rev-parse", "HEAD").strip()
    (holder / ".alockignore").unlink()
    _commit(holder, "src is judged again", "agent-a", {})
    git(holder, "push", "-q", "origin", "HEAD:main")
    assert alock(holder, "acquire", "src/**", "-m", "rewrite", **A).code == 0
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", bare.as_uri(), "other")
    # Made on main itself, the edit is refused.
    _commit(other, "b edits app", "agent-b", {"src/app.py": "b\n"})
    direct = run_git(other, "push", "origin", "HEAD:main", env=B)
    assert direct.code != 0 and "src/app.py" in direct.err, direct
    # Made on the old commit, then merged with main: the same tree lands on main.
    git(other, "reset", "-q", "--hard", old)
    (other / ".alockignore").unlink()
    _commit(other, "b edits app", "agent-b", {"src/app.py": "b\n"})
    git(other, "merge", "-q", "--no-edit", "origin/main")
    assert (other / "src" / "app.py").read_text() == "b\n"
    pushed = run_git(other, "push", "origin", "HEAD:main", env=B)
    assert pushed.code != 0, pushed.err
    assert "src/app.py" in pushed.err


def test_where_a_range_lands() -> None:
    """verify judges a range's work under its base's list too (the list of where it lands)."""
    from gitlocks.hooks.verify import range_bases

    assert range_bases(["origin/main..HEAD"]) == ["origin/main"]
    assert range_bases(["..feature"]) == ["HEAD"]
    assert range_bases(["feature", "^main", "^release"]) == ["main", "release"]
    assert range_bases(["feature"]) == [] and range_bases(["a...b"]) == []
