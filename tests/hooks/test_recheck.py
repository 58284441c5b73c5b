"""A last outside look at enforcement: attacks the other suites do not try, each run
as it really runs (real repositories, real pushes)."""

from __future__ import annotations

from pathlib import Path

from conftest import git
from helpers import alock, run_git

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
