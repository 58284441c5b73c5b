"""The hooks' and the guard's reading of the lock table: records a question needs are read
from their loose object files in-process, packed ones through ``cat-file``, and both read
alike (docs/design.md, section 6)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import tracemalloc
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from conftest import git
from support.cli import alock
from support.guard import edit, guard
from support.records import plant

from gitlocks.core.record import LockRecord
from gitlocks.core.scope import ScopeEntry
from gitlocks.core.table import Table
from gitlocks.git import cache
from gitlocks.git import table as hooks_table
from gitlocks.git.objects import CatFile, Found
from gitlocks.identity import resolve_identity
from gitlocks.layout import LOCK_PREFIX
from gitlocks.service.context import Context
from gitlocks.service.locks import acquire
from gitlocks.store.local import Store


def _claims(repo: Path) -> None:
    for holder, pattern in (("a", "src/**"), ("b", "docs/*.md"), ("c", "lib/x.py")):
        ctx = Context(store=Store.discover(repo), identity=resolve_identity(holder))
        assert acquire(ctx, [ScopeEntry(pattern)]).status == "acquired"


Records = dict[str, LockRecord | None]


def _read(repo: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Records, list[str]]:
    """Every record of the table read whole, with no kept verdict, and which ids went to
    ``cat-file``."""
    cache.forget(str(repo / ".git"))
    asked: list[str] = []
    real = CatFile.read

    def read(self: CatFile, names: Sequence[str], limit: int | None = None) -> list[Found | None]:
        asked.extend(names)
        return real(self, names, limit)

    monkeypatch.setattr(CatFile, "read", read)
    table = hooks_table.read_lock_table(str(repo / ".git"), str(repo), False)
    records = {lock_id: table.get(lock_id) for lock_id in sorted(table.refs)}
    return records, asked


def test_loose_records_are_read_without_cat_file(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _claims(repo)
    records, asked = _read(repo, monkeypatch)
    assert len(records) == 3 and all(r is not None for r in records.values())
    assert asked == []


def test_packed_records_read_alike_through_cat_file(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _claims(repo)
    loose, _ = _read(repo, monkeypatch)
    git(repo, "gc", "-q", "--prune=now")  # every record blob into a pack
    assert not list((repo / ".git" / "objects").glob("??/*"))
    packed, asked = _read(repo, monkeypatch)
    assert packed == loose
    assert sorted(asked) == sorted(
        git(repo, "for-each-ref", "--format=%(objectname)", LOCK_PREFIX).split()
    )


def test_the_object_directory_the_environment_names_is_read_as_git_reads_it(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``GIT_OBJECT_DIRECTORY`` names where a hook's records are (a pre-receive hook's
    quarantine, say): read from their files there, with no process; one left in an
    alternate only, through git, which reads alternates."""
    _claims(repo)
    elsewhere = tmp_path / "quarantine"
    oids = git(repo, "for-each-ref", "--format=%(objectname)", LOCK_PREFIX).split()
    for oid in oids[:2]:  # two records moved there; the third stays in .git/objects
        (elsewhere / oid[:2]).mkdir(parents=True, exist_ok=True)
        os.rename(repo / ".git" / "objects" / oid[:2] / oid[2:], elsewhere / oid[:2] / oid[2:])
    monkeypatch.setenv("GIT_OBJECT_DIRECTORY", str(elsewhere))
    monkeypatch.setenv("GIT_ALTERNATE_OBJECT_DIRECTORIES", str(repo / ".git" / "objects"))
    records, asked = _read(repo, monkeypatch)
    assert len(records) == 3 and all(r is not None for r in records.values())
    assert asked == [oids[2]]  # only the one in the alternate went to git


def test_a_damaged_or_oversized_loose_record_reads_as_git_reads_it(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loose file that does not inflate is asked of git (which finds it unreadable); a
    blob past the record limit is no record, read no further than the limit."""
    _claims(repo)
    big = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=repo, input=b"{" + b" " * 300_000 + b"}",
        capture_output=True, check=True,
    ).stdout.decode().strip()  # fmt: skip
    git(repo, "update-ref", LOCK_PREFIX + "big", big)
    victim_id = _ids(repo)[0]
    victim = git(repo, "rev-parse", LOCK_PREFIX + victim_id).strip()
    path = repo / ".git" / "objects" / victim[:2] / victim[2:]
    path.chmod(0o644)
    path.write_bytes(b"not zlib at all")
    records, asked = _read(repo, monkeypatch)
    assert asked == [victim]  # only the damaged one went to git
    table = hooks_table.read_lock_table(str(repo / ".git"), str(repo), False)
    reasons = {p.ref: p.reason for p in table.problems}
    assert "at most" in reasons[LOCK_PREFIX + "big"] and records["big"] is None
    assert reasons[LOCK_PREFIX + victim_id] == "points at a missing object"  # as git says


def _ids(repo: Path) -> list[str]:
    out = git(repo, "for-each-ref", "--format=%(refname)", LOCK_PREFIX)
    return [line[len(LOCK_PREFIX) :] for line in out.split()]


def test_a_planted_loose_blob_of_megabytes_is_never_read_whole(repo: Path) -> None:
    """A lock ref at a loose blob that does not deflate: its file is read only as far as
    the record limit, by the hooks as through ``cat-file`` before, and by the store."""
    _claims(repo)
    planted = plant(repo, "planted", os.urandom(16 << 20))  # as git writes it: loose
    assert (repo / ".git" / "objects" / planted[:2] / planted[2:]).stat().st_size > 16 << 20
    readers: list[Callable[[], Table]] = [
        lambda: hooks_table.read_lock_table(str(repo / ".git"), str(repo), False),
        Store.discover(repo).read_table,
    ]
    for read in readers:
        cache.forget(str(repo / ".git"))
        tracemalloc.start()
        try:
            table = read()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert [p.ref for p in table.problems] == [LOCK_PREFIX + "planted"]
        assert peak < 4 << 20, peak  # the limit's 256 KB and change, not the file's 16 MB


def test_a_fifo_or_an_object_of_no_type_is_missing_and_never_waited_on(repo: Path) -> None:
    """What stands at a record's object path and is no object git would read: a FIFO (git
    opens it and waits for a writer, forever) is never opened to wait on, by the guard's
    reading or the store's; an object of a type git does not know (its ``cat-file`` stops
    on it) is no object either. Both records are missing, every other one is read."""
    _claims(repo)
    fifo_id, odd_id, _ = _ids(repo)
    for lock_id in (fifo_id, odd_id):
        oid = git(repo, "rev-parse", LOCK_PREFIX + lock_id).strip()
        path = repo / ".git" / "objects" / oid[:2] / oid[2:]
        path.unlink()
        if lock_id == fifo_id:
            os.mkfifo(path)
        else:
            path.write_bytes(zlib.compress(b"blobx 2\0{}"))
    cache.forget(str(repo / ".git"))  # every record read again
    got = guard(repo, edit(repo, "free/new.py"), timeout=60)  # the hooks' read, then a claim
    assert got.code == 0 and got.out == "", got
    listed = alock(repo, "list", "--json")
    assert listed.code == 0, listed
    for lock_id in (fifo_id, odd_id):
        said = f"{LOCK_PREFIX}{lock_id} is not a usable lock (points at a missing object)"
        assert said in listed.err, listed
    held = {record["id"] for record in listed.json()}
    assert held == set(_ids(repo)) - {fifo_id, odd_id} and len(held) == 2


def test_a_loose_record_shorter_than_its_header_says_is_no_record(repo: Path) -> None:
    """A record whose loose header says it is larger than a record may be, over a valid
    record's bytes: git's ``cat-file`` says it is too large (and streams fewer bytes than
    that), so it is no lock for the hooks' reader either, and none of them waits on it."""
    _claims(repo)
    ref = git(repo, "for-each-ref", "--format=%(objectname)", LOCK_PREFIX).split()[0]
    body = git(repo, "cat-file", "blob", ref).encode()
    _plant_loose(repo, b"blob %d\0" % (256 * 1024 + 100) + body)
    cache.forget(str(repo / ".git"))
    table = hooks_table.read_lock_table(str(repo / ".git"), str(repo), False)
    assert table.get("planted") is None
    assert LOCK_PREFIX + "planted" in [p.ref for p in table.problems]


@pytest.mark.parametrize("short_by", [1, 100])
def test_a_loose_record_cut_short_of_its_header_stops_no_reader(repo: Path, short_by: int) -> None:
    """A loose record whose contents end before its header's size (a valid record's, with
    a few bytes dropped) is no object git reads whole; asked of git, its cat-file streamed
    what there was and waited for the next name, and the guard waited on it forever."""
    _claims(repo)
    ref = git(repo, "for-each-ref", "--format=%(objectname)", LOCK_PREFIX + "").split()[0]
    body = git(repo, "cat-file", "blob", ref).encode()
    _plant_loose(repo, b"blob %d\0" % len(body) + body[:-short_by])
    cache.forget(str(repo / ".git"))
    got = guard(repo, edit(repo, "src/new.py"), timeout=60)  # not TimeoutExpired
    assert got.code in (0, 2), got
    table = hooks_table.read_lock_table(str(repo / ".git"), str(repo), False)
    assert table.get("planted") is None
    assert LOCK_PREFIX + "planted" in [p.ref for p in table.problems]


def _plant_loose(repo: Path, raw: bytes) -> None:
    """``raw`` (a header and contents, as crafted) as a loose object, under the lock ref
    ``planted``."""
    oid = hashlib.sha1(raw).hexdigest()
    path = repo / ".git" / "objects" / oid[:2] / oid[2:]
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(zlib.compress(raw))
    git(repo, "update-ref", LOCK_PREFIX + "planted", oid)


def test_an_empty_loose_ref_is_never_read_as_its_packed_line(repo: Path) -> None:
    """A loose ref file left empty (a crash while it was written) over a packed line: git
    finds the ref broken and lists it no more, and neither does any reader here; its
    stale packed value is never read as a live lock, nor a stale journal as the store's
    version."""
    _claims(repo)
    git(repo, "pack-refs", "--all")
    victim = _ids(repo)[0]
    (repo / ".git" / LOCK_PREFIX / victim).parent.mkdir(parents=True, exist_ok=True)
    (repo / ".git" / LOCK_PREFIX / victim).write_bytes(b"")
    (repo / ".git" / "refs" / "agent-locks-meta" / "journal").write_bytes(b"")
    listed_by_git = set(_ids(repo))
    assert victim not in listed_by_git and len(listed_by_git) == 2
    cache.forget(str(repo / ".git"))
    hooks = hooks_table.read_lock_table(str(repo / ".git"), str(repo), False)
    assert set(hooks.refs) == listed_by_git
    store = Store.discover(repo)
    assert set(store.read_table().refs) == listed_by_git
    assert store.version() is None and store.ref_value(LOCK_PREFIX + victim) is None
    got = alock(repo, "list", "--json")
    assert got.code == 0 and {r["id"] for r in got.json()} == listed_by_git, got
