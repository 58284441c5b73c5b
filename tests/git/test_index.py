"""A plain path the working tree lacks is exact when git's index holds it: asked of
``git ls-files``, for every index version git writes, a split and a sparse index."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git

from gitlocks.store.local import Store

# Staged then deleted from the tree (still in the index); never anywhere; the tail of an
# indexed path ("app.py" of "src/app.py"); a directory of the index; a non-ASCII name;
# one added with --intent-to-add (an extended entry: version 3 flags) then deleted.
# A file outside a sparse checkout's cone (only in the index, under a sparse directory).
ASKED = [
    "gone.txt", "new.txt", "app.py", "src", "src/app.py", "café.txt", "cafe.txt", "ita.txt",
    "lib/x.py",
]  # fmt: skip


def indexed(repo: Path, path: str) -> bool:
    return path in git(repo, "ls-files", "-z", "--", f":(literal){path}").split("\0")


def prepare(repo: Path, kind: str) -> None:
    for name in ("gone.txt", "café.txt"):
        (repo / name).write_text("x\n")
        git(repo, "add", name)
        (repo / name).unlink()
    if kind != "2":  # an intent-to-add entry is extended: the index becomes version 3
        (repo / "ita.txt").write_text("x\n")
        git(repo, "add", "--intent-to-add", "ita.txt")
        (repo / "ita.txt").unlink()
    if kind == "split":
        git(repo, "update-index", "--split-index")
    elif kind == "sparse":
        (repo / "lib").mkdir()
        (repo / "lib" / "x.py").write_text("x\n")
        git(repo, "add", "lib/x.py")
        git(repo, "commit", "-q", "-m", "lib")
        git(repo, "sparse-checkout", "set", "--cone", "--sparse-index", "src")
        assert not (repo / "lib").exists()
    else:
        git(repo, "update-index", "--index-version", kind)


@pytest.mark.parametrize("kind", ["2", "3", "4", "split", "sparse"])
def test_is_file_answers_as_git_does_for_every_index(repo: Path, kind: str) -> None:
    prepare(repo, kind)
    store = Store.discover(repo)
    for path in ASKED:
        in_tree = (repo / path).is_file()
        assert store.is_file(path) == (in_tree or indexed(repo, path)), (kind, path)


def test_a_claim_on_a_staged_file_deleted_from_the_tree_stays_exact(repo: Path) -> None:
    prepare(repo, "2")
    store = Store.discover(repo)
    assert store.is_file("gone.txt")
    os.remove(repo / ".git" / "index")
    assert not store.is_file("gone.txt")


def test_a_claim_on_a_new_file_notes_the_closest_path(repo: Path) -> None:
    env = dict(os.environ, AGENT_ID="agent-a")
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(["git", "alock", "acquire", "srcc/app.py"], cwd=repo, env=env,
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc
    assert "the closest existing path is src/app.py" in proc.stderr
