"""gitlocks.hooks.commit: what the last commit changed, as the post-commit hook reads it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import git

from gitlocks.hooks.commit import committed


def expected(repo: Path) -> tuple[str, list[str]]:
    """The long way: HEAD's parents, then a diff against the first (all paths for a root)."""
    ids = git(repo, "rev-list", "--parents", "-n1", "HEAD").split()
    against = [ids[1], ids[0]] if len(ids) > 1 else ["--root", ids[0]]
    raw = git(repo, "diff-tree", "-r", "-z", "--name-only", "--no-commit-id", "--no-renames",
              *against)  # fmt: skip
    return ids[0], [p for p in raw.split("\0") if p]


def test_every_kind_of_commit_reads_as_its_parents_and_first_diff_say(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    (repo / "a.txt").write_text("a\n")
    (repo / "odd\nname é.txt").write_text("x\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "root")
    assert committed(os.fspath(repo)) == expected(repo)  # a root: every path
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one parent")
    assert committed(os.fspath(repo)) == expected(repo)
    git(repo, "commit", "-q", "--allow-empty", "-m", "nothing")
    assert committed(os.fspath(repo)) == (expected(repo)[0], [])
    git(repo, "checkout", "-q", "-b", "side", "HEAD~2")
    (repo / "c.txt").write_text("c\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "side")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-edit", "side")
    head, paths = committed(os.fspath(repo))
    assert (head, paths) == expected(repo) and paths == ["c.txt"]  # against the first parent


def test_a_hook_asks_git_for_its_settings_once(repo: Path, tmp_path: Path) -> None:
    """Each hook asks git for its settings and its common directory once, in a real
    commit with the hooks."""
    import json

    from support.cli import alock

    assert alock(repo, "install-hooks", AGENT_ID="a1").code == 0
    (repo / "new.txt").write_text("x\n")
    git(repo, "add", "new.txt")
    trace = tmp_path / "trace.json"
    env = {**os.environ, "AGENT_ID": "a1", "GIT_TRACE2_EVENT": str(trace)}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env["PATH"]
    subprocess.run(["git", "commit", "-q", "-m", "new"], cwd=repo, env=env, check=True)
    started = [
        " ".join(event["argv"])
        for event in map(json.loads, trace.read_text().splitlines())
        if event["event"] == "start"
    ]
    # pre-commit and post-commit read the settings and name the common directory once
    # each, and commit-msg reads the settings for its cleanup rules.
    assert sum(" config -z --list" in argv for argv in started) == 3, started
    assert sum("rev-parse --git-common-dir" in argv for argv in started) == 2, started
    # and pre-commit's staged paths: asked once
    assert sum(" diff --cached " in f"{argv} " for argv in started) == 1, started
