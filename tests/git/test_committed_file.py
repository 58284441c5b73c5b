"""``.alockignore`` as committed at HEAD, read from loose objects in-process (the guard,
before every edit), answers as ``git cat-file HEAD:.alockignore`` does, or hands the
question to git: packed objects, replace refs, an unborn HEAD (docs/design.md, 6.4)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import git

from gitlocks.git import files

NAME = b".alockignore"
LIMIT = 64 * 1024


def _as_git_says(repo: Path) -> bytes:
    """What git gives for HEAD:.alockignore, as the guard keeps it: the blob, else b""."""
    proc = subprocess.run(
        ["git", "cat-file", "--batch"], cwd=repo, input=b"HEAD:.alockignore\n",
        capture_output=True, check=True,
    )  # fmt: skip
    header, _, rest = proc.stdout.partition(b"\n")
    parts = header.split()
    if len(parts) != 3 or parts[1] != b"blob":
        return b""
    return rest[: min(int(parts[2]), LIMIT + 1)]


def _in_process(repo: Path) -> bytes | None:
    found = files.git_dirs_around(str(repo))
    assert found is not None
    return files.committed_top_file(*found, NAME, LIMIT)


def _commit(repo: Path, message: str = "c") -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_reads_as_git_does(tmp_path: Path, object_format: str) -> None:
    repo = tmp_path / "r"
    git(tmp_path, "init", "-q", f"--object-format={object_format}", str(repo))
    (repo / "a.txt").write_text("a\n")
    _commit(repo)
    assert _in_process(repo) == b"" == _as_git_says(repo)  # no list committed
    (repo / ".alockignore").write_text("dist/\n*.lock\n")
    assert _in_process(repo) == b""  # in the tree being edited only: not committed
    _commit(repo)
    assert _in_process(repo) == b"dist/\n*.lock\n" == _as_git_says(repo)
    git(repo, "checkout", "-q", "--detach")
    assert _in_process(repo) == _as_git_says(repo)


@pytest.mark.parametrize("kind", ["symlink", "directory", "oversized", "empty"])
def test_odd_entries_read_as_git_reads_them(repo: Path, kind: str) -> None:
    path = repo / ".alockignore"
    if kind == "symlink":
        os.symlink("elsewhere/list", path)
    elif kind == "directory":
        path.mkdir()
        (path / "x").write_text("x\n")
    elif kind == "oversized":
        path.write_text("#" * (LIMIT + 10))
    else:
        path.write_text("")
    _commit(repo)
    assert _in_process(repo) == _as_git_says(repo)


def test_a_linked_worktree_reads_its_own_head(repo: Path, tmp_path: Path) -> None:
    (repo / ".alockignore").write_text("main/\n")
    _commit(repo)
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "side", str(wt))
    (wt / ".alockignore").write_text("side/\n")
    _commit(wt)
    assert _in_process(wt) == b"side/\n" == _as_git_says(wt)
    assert _in_process(repo) == b"main/\n" == _as_git_says(repo)


def test_git_is_asked_where_the_files_cannot_say(repo: Path, tmp_path: Path) -> None:
    (repo / ".alockignore").write_text("dist/\n")
    _commit(repo)
    git(repo, "gc", "-q", "--prune=now")  # every object packed
    assert _in_process(repo) is None
    _commit(repo, "loose commit and tree, the list's blob still packed")
    assert _in_process(repo) is None
    (repo / ".alockignore").write_text("build/\n")
    _commit(repo)
    assert _in_process(repo) == b"build/\n"
    # A replace ref makes git read another object for a commit: git answers then.
    head = git(repo, "rev-parse", "HEAD").strip()
    other = git(repo, "rev-parse", "HEAD~1").strip()
    git(repo, "replace", head, other)
    assert _in_process(repo) is None
    assert _as_git_says(repo) == b"dist/\n"
    git(repo, "replace", "-d", head)
    assert _in_process(repo) == b"build/\n"
    unborn = tmp_path / "unborn"
    git(tmp_path, "init", "-q", str(unborn))
    assert _in_process(unborn) is None


def test_a_damaged_head_or_object_is_asked_of_git(repo: Path) -> None:
    (repo / ".alockignore").write_text("dist/\n")
    _commit(repo)
    head = git(repo, "rev-parse", "HEAD").strip()
    (repo / ".git" / "HEAD").write_bytes(b"\xff\xfe garbage")
    assert _in_process(repo) is None
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    path = repo / ".git" / "objects" / head[:2] / head[2:]
    path.chmod(0o644)
    path.write_bytes(b"not zlib")
    assert _in_process(repo) is None
