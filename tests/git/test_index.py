"""A plain path the working tree lacks: the index file says "not there" without a process,
and whenever it cannot be sure, git decides. Checked against ``git ls-files`` itself, for
every index version git writes and for a split index."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git

from gitlocks.git.index import indexed_paths, may_be_indexed
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


@pytest.mark.parametrize("kind", ["2", "3"])
def test_versions_2_and_3_answer_no_without_git(repo: Path, kind: str) -> None:
    prepare(repo, kind)
    index = repo / ".git" / "index"
    assert not may_be_indexed(index, "new.txt")
    assert not may_be_indexed(index, "app.py")  # "src/app.py" holds it, but not as a path
    assert may_be_indexed(index, "gone.txt")
    assert index.read_bytes()[4:8] == int(kind).to_bytes(4, "big")
    assert may_be_indexed(index, "ita.txt") == (kind == "3")
    assert may_be_indexed(index, "café.txt")  # not ASCII: git decides


@pytest.mark.parametrize("kind", ["4", "split", "sparse"])
def test_an_index_that_cannot_tell_leaves_it_to_git(repo: Path, kind: str) -> None:
    prepare(repo, kind)
    assert may_be_indexed(repo / ".git" / "index", "new.txt")


def test_no_index_file_means_nothing_is_staged(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    assert not may_be_indexed(tmp_path / ".git" / "index", "a.txt")
    (tmp_path / ".git" / "index").write_bytes(b"garbage")
    assert may_be_indexed(tmp_path / ".git" / "index", "a.txt")


def test_a_claim_on_a_staged_file_deleted_from_the_tree_stays_exact(repo: Path) -> None:
    prepare(repo, "2")
    store = Store.discover(repo)
    assert store.is_file("gone.txt")
    os.remove(repo / ".git" / "index")
    assert not store.is_file("gone.txt")


def listed(repo: Path) -> list[str]:
    return sorted(p for p in git(repo, "ls-files", "-z", "--cached").split("\0") if p)


@pytest.mark.parametrize("kind", ["2", "3"])
def test_the_index_file_lists_what_git_ls_files_lists(repo: Path, kind: str) -> None:
    prepare(repo, kind)
    # Longer than the flags can say (0xFFF): an entry only, no file could be that long.
    long = "/".join(["d" * 200] * 21)
    blob = git(repo, "rev-parse", "HEAD:README.md").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{long}")
    found = indexed_paths(repo / ".git" / "index", 40)
    assert found is not None and sorted(found) == listed(repo)
    assert long in found


def test_a_sha256_index_is_read_with_its_own_id_length(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "--object-format=sha256")
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_text("b\n")
    git(tmp_path, "add", "-A")
    index = tmp_path / ".git" / "index"
    assert indexed_paths(index, 64) == ["a.txt", "sub/b.txt"]
    assert indexed_paths(index, 40) is None  # read with the wrong length: git decides


@pytest.mark.parametrize("kind", ["4", "split", "sparse"])
def test_an_index_it_cannot_list_is_left_to_git(repo: Path, kind: str) -> None:
    prepare(repo, kind)
    assert indexed_paths(repo / ".git" / "index", 40) is None


def test_a_claim_on_a_new_file_notes_the_closest_path_without_git_ls_files(
    repo: Path, tmp_path: Path
) -> None:
    trace = tmp_path / "trace"
    env = dict(os.environ, AGENT_ID="agent-a", GIT_TRACE=str(trace))
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(["git", "alock", "acquire", "srcc/app.py"], cwd=repo, env=env,
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc
    assert "the closest existing path is src/app.py" in proc.stderr
    assert "ls-files" not in trace.read_text()
