"""``.alockignore`` as committed at HEAD, read from loose objects in-process (the guard,
before every edit), answers as ``git cat-file HEAD:.alockignore`` does, or hands the
question to git: packed objects, replace refs, an unborn HEAD (docs/design.md, 6.4)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import git
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


def _git_answer(repo: Path) -> bytes | None:
    """What git gives for HEAD:.alockignore as the guard keeps it; None when git stops on
    the repository's objects (the guard's question then fails as it did before)."""
    proc = subprocess.run(
        ["git", "cat-file", "--batch"], cwd=repo, input=b"HEAD:.alockignore\n",
        capture_output=True,
    )  # fmt: skip
    return _as_git_says(repo) if proc.returncode == 0 else None


def _write_object(repo: Path, kind: str, body: bytes) -> str:
    """A loose object of ``kind`` holding ``body`` exactly as given (git does not check
    a tree's entries when it is written so), by id."""
    proc = subprocess.run(
        ["git", "hash-object", "-t", kind, "--literally", "-w", "--stdin"], cwd=repo,
        input=body, capture_output=True, check=True,
    )  # fmt: skip
    return proc.stdout.decode().strip()


def _head_at_tree(repo: Path, tree_body: bytes) -> None:
    tree = _write_object(repo, "tree", tree_body)
    commit = git(repo, "commit-tree", tree, "-m", "crafted").strip()
    git(repo, "update-ref", "HEAD", commit)


def _entry(mode: bytes, name: bytes, oid: str) -> bytes:
    return mode + b" " + name + b"\0" + bytes.fromhex(oid)


@pytest.mark.parametrize(
    "shape",
    [
        "out of order",  # git stops at the first entry sorting after the name
        "after a malformed entry",
        "before a malformed entry",  # git reads the next entry before it compares one
        "before a truncated entry",
        "with a malformed mode",
        "with an empty name before it",
        "a tree's mode on a blob",
        "a submodule's mode on a blob",
        "twice",
    ],
)
def test_a_crafted_tree_gives_no_list_git_would_not(repo: Path, shape: str) -> None:
    """A tree git's own lookup reads otherwise, or stops on, is read as git reads it or
    handed to git: never a list git would not give."""
    listed = _write_object(repo, "blob", b"src/\n")
    other = _write_object(repo, "blob", b"other\n")
    ignore = _entry(b"100644", NAME, listed)
    body = {
        "out of order": _entry(b"100644", b"zz", other) + ignore,
        "after a malformed entry": _entry(b"10064x", b"a", other) + ignore,
        "before a malformed entry": ignore + _entry(b"10064x", b"zz", other),
        "before a truncated entry": ignore + b"100644 zz\0abc",
        "with a malformed mode": _entry(b"10064x", NAME, listed),
        "with an empty name before it": _entry(b"100644", b"", other) + ignore,
        "a tree's mode on a blob": _entry(b"40000", NAME, listed),
        "a submodule's mode on a blob": _entry(b"160000", NAME, listed),
        "twice": ignore + _entry(b"100644", NAME, other),
    }[shape]
    _head_at_tree(repo, body)
    got, said = _in_process(repo), _git_answer(repo)
    assert got is None or got == said, (got, said)


_NAMES = st.sampled_from([b".alockignore", b".alock", b".alockignore0", b".a", b"zz", b"-", b""])
_MODES = st.sampled_from([b"100644", b"100755", b"120000", b"40000", b"160000", b"1x", b""])


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    entries=st.lists(st.tuples(_MODES, _NAMES, st.booleans()), max_size=5), cut=st.integers(0, 3)
)
def test_any_tree_is_read_as_git_reads_it(
    repo: Path, entries: list[tuple[bytes, bytes, bool]], cut: int
) -> None:
    """Trees of entries in any order, modes and names, some cut short: the list read is
    git's own, or git is asked."""
    blobs = [_write_object(repo, "blob", b"src/\n"), _write_object(repo, "blob", b"b/\n")]
    body = b"".join(_entry(mode, name, blobs[which]) for mode, name, which in entries)
    _head_at_tree(repo, body[: len(body) - cut])
    got, said = _in_process(repo), _git_answer(repo)
    assert got is None or got == said, (got, said)


@pytest.mark.parametrize(
    "target",
    ["refs/heads/../../ORIG_HEAD", "refs/heads/main.lock", "refs/heads/a//b", "refs/heads/x.",
     "refs/heads/a b", "refs/heads/@{1}"],
)  # fmt: skip
def test_a_head_naming_no_valid_branch_is_asked_of_git(repo: Path, target: str) -> None:
    """git resolves a HEAD only through a valid ref name: one naming another file of the
    git directory (``..``), or a ref being written (``.lock``), is no branch to git."""
    (repo / ".alockignore").write_text("src/\n")
    _commit(repo)
    head = git(repo, "rev-parse", "HEAD").strip()
    git_dir = repo / ".git"
    for path in (git_dir / "ORIG_HEAD", git_dir / "refs" / "heads" / "main.lock"):
        path.write_text(head + "\n")
    (git_dir / "HEAD").write_text(f"ref: {target}\n")
    got, said = _in_process(repo), _git_answer(repo)
    assert got is None or got == said, (got, said)


@pytest.mark.parametrize(
    "raw",
    [
        b"blob 70000\0src/\n",  # git says it is too large, and streams what there is
        b"blob 05\0src/\n",  # git reads no header with a leading zero
        b"blob 5\0src/\n",  # well formed: read in-process
    ],
)
def test_a_damaged_blob_gives_no_list_git_would_not(repo: Path, raw: bytes) -> None:
    """A loose blob whose header git reads otherwise than its contents (a size larger than
    they are, a size git does not parse) is asked of git, or read as git reads it."""
    import hashlib
    import zlib

    oid = hashlib.sha1(raw).hexdigest()
    path = repo / ".git" / "objects" / oid[:2] / oid[2:]
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(zlib.compress(raw))
    _head_at_tree(repo, _entry(b"100644", NAME, oid))
    got, said = _in_process(repo), _git_answer(repo)
    assert got is None or got == said, (got, said)
    if raw.endswith(b"\n") and raw.startswith(b"blob 5\0"):
        assert got == b"src/\n"


@pytest.mark.parametrize("loose", [b"", b"garbage\n", b"ref: refs/heads/elsewhere\n"])
def test_a_broken_loose_branch_over_a_packed_line_is_asked_of_git(repo: Path, loose: bytes) -> None:
    """git reads a branch from its loose file when there is one, and never past a broken
    one (empty after a crash, say) to its packed line: HEAD names nothing then."""
    (repo / ".alockignore").write_text("src/\n")
    _commit(repo)
    git(repo, "pack-refs", "--all")
    branch = git(repo, "symbolic-ref", "HEAD").strip()
    (repo / ".git" / branch).write_bytes(loose)
    got, said = _in_process(repo), _git_answer(repo)
    assert got is None or got == said, (got, said)


def test_a_packed_branch_among_peeled_lines_is_read_in_process(repo: Path) -> None:
    (repo / ".alockignore").write_text("src/\n")
    _commit(repo)
    git(repo, "tag", "-a", "-m", "t", "v1")  # a peeled line ("^<id>") below it
    git(repo, "tag", "-a", "-m", "t", "zz")
    git(repo, "pack-refs", "--all")
    assert "^" in (repo / ".git" / "packed-refs").read_text()
    assert _in_process(repo) == b"src/\n" == _git_answer(repo)


@pytest.mark.parametrize("kind", ["commit", "tree"])
def test_a_huge_commit_or_tree_is_never_read_whole(repo: Path, kind: str) -> None:
    """HEAD's commit and tree are read as far as the list needs: the commit's first line,
    a root tree of up to a megabyte (a larger one is asked of git). The repository read is
    a guess git may not confirm, and a planted object of gigabytes of zeros inflates from a
    few megabytes on disk."""
    import tracemalloc
    import zlib

    (repo / ".alockignore").write_text("src/\n")
    _commit(repo)
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    if kind == "commit":
        body = f"tree {tree}\n".encode() + b"\0" * (64 << 20)
    else:
        real = _write_object(repo, "blob", b"src/\n")
        body = _entry(b"100644", NAME, real) + _entry(b"100644", b"z" * 60000, real) * 1200
    raw = f"{kind} {len(body)}\0".encode() + body
    oid = __import__("hashlib").sha1(raw).hexdigest()
    path = repo / ".git" / "objects" / oid[:2] / oid[2:]
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(zlib.compress(raw, 1))
    del body, raw
    if kind == "tree":
        git(repo, "update-ref", "HEAD", git(repo, "commit-tree", oid, "-m", "t").strip())
    else:
        git(repo, "update-ref", "HEAD", oid)
    tracemalloc.start()
    try:
        got = _in_process(repo)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got in (None, b"src/\n")
    assert peak < 8 << 20, peak
