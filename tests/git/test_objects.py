"""Objects written and read without a library, checked against git itself."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import git
from support.cli import alock

from gitlocks.errors import StoreError
from gitlocks.git.objects import (
    MODE_BLOB,
    MODE_TREE,
    CatFile,
    Entry,
    Objects,
    cat_file,
    cat_file_check,
)
from gitlocks.git.run import Env
from gitlocks.store.local import Store


def objects_of(repo: Path) -> Objects:
    return Store.discover(repo).objects


def hash_object(repo: Path, text: str) -> str:
    """The id git gives ``text`` as a blob."""
    argv = ["git", "hash-object", "--stdin"]
    return subprocess.run(argv, cwd=repo, input=text, capture_output=True, text=True).stdout.strip()


def test_blobs_trees_and_commits_are_what_git_writes(repo: Path) -> None:
    objects = objects_of(repo)
    blob = objects.write_blob(b"hello\n")
    assert blob == hash_object(repo, "hello\n")
    tree = objects.write_tree([Entry(MODE_BLOB, "b", blob), Entry(MODE_BLOB, "a.txt", blob)])
    listing = git(repo, "ls-tree", tree)
    assert listing.splitlines() == [f"100644 blob {blob}\ta.txt", f"100644 blob {blob}\tb"]
    sub = objects.write_tree([Entry(MODE_TREE, "a", tree), Entry(MODE_BLOB, "a.txt", blob)])
    # git's order: a tree sorts as its name followed by "/", after "a.txt"
    assert [line.split("\t")[1] for line in git(repo, "ls-tree", sub).splitlines()] == [
        "a.txt",
        "a",
    ]
    commit = objects.write_commit(tree, [], "a message\n\nJournal-Seq: 1\n", 1_700_000_000)
    assert git(repo, "cat-file", "-t", commit).strip() == "commit"
    assert git(repo, "log", "-1", "--format=%an <%ae> %at%n%B", commit).startswith(
        "gitlocks <gitlocks@localhost> 1700000000\na message"
    )
    git(repo, "fsck", "--strict", "--no-dangling")
    read = objects.commit(commit)
    assert read is not None and read.tree == tree and read.parent_ids == ()
    assert objects.tree(sub) == [Entry(MODE_BLOB, "a.txt", blob), Entry(MODE_TREE, "a", tree)]


def test_packed_objects_are_read_through_git(repo: Path) -> None:
    assert alock(repo, "acquire", "src/**", "-m", "packed", AGENT_ID="a").code == 0
    git(repo, "repack", "-adq")
    git(repo, "prune-packed")
    table = Store.discover(repo).read_table()
    [record] = list(table)
    assert record.reason == "packed"
    assert not list((repo / ".git" / "objects").glob("??/*"))  # nothing loose was left


def test_an_existing_object_is_never_rewritten(repo: Path) -> None:
    objects = objects_of(repo)
    blob = objects.write_blob(b"same\n")
    path = repo / ".git" / "objects" / blob[:2] / blob[2:]
    before = path.stat()
    assert objects.write_blob(b"same\n") == blob
    assert path.stat().st_ino == before.st_ino  # the same file (its time freshened)
    assert not [p for p in path.parent.iterdir() if p.name.startswith("tmp_obj_")]


def test_sha256_repositories(tmp_path: Path) -> None:
    repo = tmp_path / "r256"
    git(tmp_path, "init", "-q", "--object-format=sha256", str(repo))
    (repo / "a.txt").write_text("x\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "one")
    objects = objects_of(repo)
    blob = objects.write_blob(b"hello\n")
    assert len(blob) == 64 and blob == hash_object(repo, "hello\n")
    got = alock(repo, "acquire", "a.txt", AGENT_ID="a")
    assert got.code == 0, got
    assert alock(repo, "check", "a.txt", AGENT_ID="b").code == 1
    git(repo, "fsck", "--strict", "--no-dangling")


def test_shared_repository_modes(repo: Path) -> None:
    git(repo, "config", "core.sharedRepository", "group")
    objects_dir = repo / ".git" / "objects"
    before = {p for p in objects_dir.glob("??")} | set(objects_dir.glob("??/*"))
    assert alock(repo, "acquire", "src/**", AGENT_ID="a").code == 0
    written = [p for p in objects_dir.glob("??/*") if p not in before]
    assert written
    for path in written:
        assert path.stat().st_mode & 0o040, path  # group may read
        assert not path.stat().st_mode & 0o222, path  # nobody writes an object
    for fanout in {p.parent for p in written} - before:
        assert stat.S_IMODE(fanout.stat().st_mode) & 0o070 == 0o070, fanout


def test_a_cat_file_that_died_is_a_store_error(repo: Path) -> None:
    """Not a BrokenPipeError, which the command line takes for a reader of its output that
    went away (and answers 0 for)."""
    blob = hash_object(repo, "packed\n")
    subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input="packed\n",
                   check=True, capture_output=True, text=True)  # fmt: skip
    git(repo, "gc", "-q")
    objects = objects_of(repo)
    head = git(repo, "rev-parse", "HEAD").strip()
    assert objects.read(head) is not None  # packed: the cat-file --batch is running now
    batch = objects._batch.proc
    assert batch is not None
    os.kill(batch.pid, signal.SIGKILL)
    batch.wait()
    with pytest.raises(StoreError, match="cannot read the object database"):
        objects.read_many([blob, git(repo, "rev-parse", "HEAD^{tree}").strip()])


@pytest.mark.parametrize("fresh", [False, True])
def test_an_object_written_again_stays_as_it_is(repo: Path, fresh: bool) -> None:
    """Written again, looked for first or not (``fresh``), an object keeps its file; a
    fan-out directory nobody made yet is made; no temporary file is left behind."""
    objects = objects_of(repo)
    blob = objects.write_blob(b"first\n", fresh=fresh)
    path = repo / ".git" / "objects" / blob[:2] / blob[2:]
    before = path.stat()
    assert objects.write_blob(b"first\n", fresh=fresh) == blob
    assert path.stat().st_ino == before.st_ino
    assert git(repo, "cat-file", "-p", blob) == "first\n"
    leftovers = [p for p in (repo / ".git" / "objects").rglob("tmp_obj_*")]
    assert not leftovers
    git(repo, "fsck", "--strict")


@pytest.mark.parametrize("fresh", [False, True])
def test_a_reused_loose_object_is_freshened_as_git_freshens_it(repo: Path, fresh: bool) -> None:
    """An object written again finds its file there and keeps it, with its modification
    time set to now, as ``git hash-object -w`` sets it: ``git gc --prune=<date>`` counts
    its grace period from the reuse, so an object a write is about to point a ref at is
    never pruned as long forgotten."""
    objects = objects_of(repo)
    long_ago = 1_000_000_000  # 2001
    for writer in ("git", "gitlocks"):
        data = f"reused by {writer}\n".encode()
        oid = objects.write_blob(data)
        path = repo / ".git" / "objects" / oid[:2] / oid[2:]
        os.utime(path, (long_ago, long_ago))
        if writer == "git":
            argv = ["git", "hash-object", "-w", "--stdin"]
            subprocess.run(argv, cwd=repo, input=data, capture_output=True, check=True)
        else:
            assert objects.write_blob(data, fresh=fresh) == oid
        assert path.stat().st_mtime > long_ago + 86400, writer  # freshened, by either


def test_objects_go_where_the_environment_names_them_for_gits_run_so(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run in the caller's environment (``Env.INHERIT``: a hook's), the objects directory
    is the one ``GIT_OBJECT_DIRECTORY`` names, for writing and reading, as for git; the
    store's own (``Env.CLEAN``) is the repository's."""
    elsewhere = tmp_path / "objects"
    elsewhere.mkdir()
    monkeypatch.setenv("GIT_OBJECT_DIRECTORY", str(elsewhere))
    hooks = Objects(str(repo / ".git"), str(repo / ".git"), None, env=Env.INHERIT)
    blob = hooks.write_blob(b"in the quarantine\n")
    assert (elsewhere / blob[:2] / blob[2:]).is_file()
    assert not (repo / ".git" / "objects" / blob[:2] / blob[2:]).exists()
    argv = ["git", "cat-file", "blob", blob]
    assert subprocess.run(argv, cwd=repo, capture_output=True).stdout == b"in the quarantine\n"
    assert hooks.read(blob) == ("blob", b"in the quarantine\n")
    store = Objects(str(repo / ".git"), str(repo / ".git"), None)
    assert store.read(blob) is None  # not in the repository's own objects
    store.close()
    hooks.close()


@pytest.mark.parametrize("kind", ["file", "dangling symlink", "symlink loop"])
@pytest.mark.parametrize("fresh", [False, True])
def test_a_fanout_that_is_no_directory_is_a_store_error(repo: Path, kind: str, fresh: bool) -> None:
    """Where the object's fan-out directory should be, a file or a symbolic link to
    nowhere: the write says so as a ``StoreError`` (an ``error:`` line), not the error of
    removing a temporary file that was never made; the command line says it likewise."""
    objects = objects_of(repo)
    data = f"{kind} {fresh}\n".encode()
    oid = objects.hash("blob", data)
    fanout = repo / ".git" / "objects" / oid[:2]
    if fanout.exists():
        pytest.skip("the fan-out directory is there already")
    if kind == "file":
        fanout.write_text("")
    elif kind == "dangling symlink":
        fanout.symlink_to(repo / "nowhere" / "at-all")
    else:
        fanout.symlink_to(oid[:2])
    with pytest.raises(StoreError, match="cannot write"):
        objects.write_blob(data, fresh=fresh)


def test_fanouts_that_are_files_fail_a_claim_with_an_error_line(repo: Path) -> None:
    objects_dir = repo / ".git" / "objects"
    for n in range(256):
        fanout = objects_dir / f"{n:02x}"
        if not fanout.exists():
            fanout.write_text("")
    got = alock(repo, "acquire", "src/**", AGENT_ID="a")
    assert got.code == 2, got
    assert "Traceback" not in got.err and "error: cannot write" in got.err, got


@pytest.mark.parametrize("shared", ["0600", "0640", "group"])
def test_new_fanouts_have_the_modes_git_gives_its_own(repo: Path, shared: str) -> None:
    """In a shared repository a fan-out directory gitlocks makes has the mode one git makes
    there has: the set-group-id bit only where the group may enter (git sets it only
    then: under ``0600`` the group has no access it could keep)."""
    git(repo, "config", "core.sharedRepository", shared)
    objects_dir = repo / ".git" / "objects"
    before = set(objects_dir.glob("??"))
    assert alock(repo, "acquire", "src/**", AGENT_ID="a").code == 0
    made = set(objects_dir.glob("??")) - before
    assert made
    n = 0
    while True:  # a blob of git's own, in a fan-out directory git makes
        text = f"git's own {n}\n"
        if not (objects_dir / hash_object(repo, text)[:2]).exists():
            break
        n += 1
    argv = ["git", "hash-object", "-w", "--stdin"]
    oid = subprocess.run(argv, cwd=repo, input=text, capture_output=True, text=True).stdout
    gits = stat.S_IMODE((objects_dir / oid[:2]).stat().st_mode)
    for fanout in made:
        assert oct(stat.S_IMODE(fanout.stat().st_mode)) == oct(gits), fanout


# --- git cat-file, the one reader of its output -------------------------------------------------


def _commit_files(repo: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (repo / name).write_bytes(data)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "files")


def test_cat_file_answers_every_name_in_order_whatever_it_holds(repo: Path) -> None:
    """Missing objects, names with spaces (cat-file's own answer for a missing one then
    holds them), and names it cannot be asked: a newline would make two questions, a NUL
    or a final carriage return (git drops it) another one. ``c`` exists: ``HEAD:c\\r``
    must not answer with it."""
    _commit_files(repo, {"a b": b"spaced\n", "c": b"the c\n", "x 1 2": b"digits\n"})
    names = [
        "HEAD:a b",
        "HEAD:nope",
        "nope 1 2",
        "HEAD:x 1 2",
        "HEAD:c\r",
        "HEAD:c\nHEAD:a b",
        "HEAD:c\0",
        "",
        "HEAD:c",
    ]
    found = cat_file(names, str(repo), env=Env.CLEAN)
    contents = [None if f is None else f[2] for f in found]
    assert contents == [b"spaced\n", None, None, b"digits\n", None, None, None, None, b"the c\n"]
    assert found[0] is not None and found[0][:2] == (
        git(repo, "rev-parse", "HEAD:a b").strip(),
        "blob",
    )


def test_cat_file_reads_many_names_in_pieces_and_bounds_each_object(repo: Path) -> None:
    """More names than one write holds, each answered in turn; an object over ``limit``
    is read past beyond its first ``limit + 1`` bytes, and the next answer is still its own."""
    big = b"x" * (3 << 20)
    _commit_files(repo, {"big": big, "small": b"small\n"})
    names = ["HEAD:big", "HEAD:small", "HEAD:gone"] * 800  # ~20 KB of names a round
    batch = CatFile(str(repo), env=Env.CLEAN)
    try:
        for _ in range(2):  # one process for both reads
            found = batch.read(names, limit=10)
            assert [None if f is None else f[2] for f in found[:3]] == [b"x" * 11, b"small\n", None]
            assert found == found[:3] * 800
        assert batch.read(["HEAD:big"]) == [
            (git(repo, "rev-parse", "HEAD:big").strip(), "blob", big)
        ]
    finally:
        batch.close()


def test_cat_file_check_gives_types_and_sizes(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    readme = git(repo, "rev-parse", "HEAD:README.md").strip()
    found = cat_file_check([head, "HEAD:README.md", "HEAD:nope"], str(repo), env=Env.CLEAN)
    assert found[0] is not None and found[0][:2] == (head, "commit")
    assert found[1:] == [(readme, "blob", len("hello\n")), None]
    assert cat_file_check([], str(repo), env=Env.CLEAN) == []


def test_cat_file_reads_where_the_environment_puts_the_objects(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pre-receive hook reads a push's objects in quarantine: ``Env.INHERIT`` passes
    ``GIT_OBJECT_DIRECTORY`` and ``GIT_ALTERNATE_OBJECT_DIRECTORIES`` on to the git it
    starts; ``Env.CLEAN`` (another repository) drops them."""
    quarantine = tmp_path / "incoming"
    quarantine.mkdir()
    monkeypatch.setenv("GIT_OBJECT_DIRECTORY", str(quarantine))
    monkeypatch.setenv("GIT_ALTERNATE_OBJECT_DIRECTORIES", str(repo / ".git" / "objects"))
    (tmp_path / "pushed").write_text("pushed\n")
    pushed = git(repo, "hash-object", "-w", str(tmp_path / "pushed")).strip()
    head = git(repo, "rev-parse", "HEAD").strip()
    assert not (repo / ".git" / "objects" / pushed[:2] / pushed[2:]).exists()
    inherited = cat_file([pushed, head], str(repo), env=Env.INHERIT)
    assert [f[1] if f else None for f in inherited] == ["blob", "commit"]
    assert inherited[0] == (pushed, "blob", b"pushed\n")
    assert cat_file([pushed], str(repo), env=Env.CLEAN) == [None]
