"""The lock refs judged through the cache's verdicts by blob id (``gitlocks.git.cache``): a
table read with them is the table read without them, whatever moved the refs in between
(loose refs over packed lines, symbolic refs, a lock deleted, ``pack-refs`` again, records
planted by hand), and a cache that does not hold is dropped, never believed into an
answer."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli import alock
from support.records import edit_cache, plant, seed_locks, write_blob

from gitlocks.core.judging import Problem
from gitlocks.core.record import LockRecord, expiry_from, format_time, utcnow
from gitlocks.core.table import Table, lazy_table
from gitlocks.errors import StoreError
from gitlocks.git import cache, files
from gitlocks.git import table as fast_table
from gitlocks.git.objects import Objects
from gitlocks.layout import CACHE_FILE, LOCK_PREFIX
from gitlocks.store.local import Store


def oracle(repo: Path) -> Table:
    """The table as read from the refs and every record, nothing kept believed: records
    read by the store's own reader, which reads on where git refuses a hand-edited
    packed-refs (the hooks' cat-file stops there, and says so)."""
    store = Store.discover(repo)
    found = fast_table.list_refs(str(repo))  # as git lists them
    table, _ = lazy_table(
        found.refs.items(),
        known={},
        read=store.objects.read_records,
        version=None,
        ignore_case=False,
    )
    table.problems.extend(
        Problem(ref=n, oid="", reason=f"a symbolic ref to {t}; never followed")
        for n, t in sorted(found.symbolic.items())
    )
    return table


def shape(table: Table) -> tuple[object, ...]:
    return (table.summaries, table.refs, sorted(table.problems), dict(table.records))


def assert_read_alike(repo: Path) -> None:
    """A new store and the hooks' reader both read the table the oracle reads."""
    expected = shape(oracle(repo))
    assert shape(Store.discover(repo).read_table()) == expected
    common = str(Store.discover(repo).common_dir)
    assert shape(fast_table.read_lock_table(common, str(repo), False)) == expected


def record_blob(repo: Path, lock_id: str, path: str, holder: str = "agent-x") -> str:
    now = utcnow()
    stamp = format_time(now)
    record = LockRecord(
        id=lock_id,
        holder=holder,
        paths=(path,),
        reason="planted",
        created_at=stamp,
        renewed_at=stamp,
        expires_at=expiry_from(now, 3600),
        host="h",
        worktree=str(repo),
        branch=None,
        head=None,
        ttl=3600,
    )
    return write_blob(repo, record.to_json())


def lock_ids(repo: Path) -> list[str]:
    out = git(repo, "for-each-ref", "--format=%(refname)", LOCK_PREFIX)
    return [line[len(LOCK_PREFIX) :] for line in out.split()]


def judged_now(repo: Path) -> bool:
    """Whether the kept verdicts judge every lock ref but a few."""
    common = str(Store.discover(repo).common_dir)
    judged, rest, _ = cache.judge(common, fast_table.list_refs(str(repo)).refs)
    return judged is not None and len(rest) <= 3


SEEDED = 1010  # a large table: verdicts kept only by 32 at once


@pytest.fixture
def packed(repo: Path) -> Path:
    """A repository of a large table of packed locks, read once."""
    seed_locks(repo, SEEDED)
    Store.discover(repo).read_table()
    assert (repo / ".git" / CACHE_FILE).exists()
    assert judged_now(repo)
    return repo


def test_kept_verdicts_read_the_table_alike(packed: Path) -> None:
    assert_read_alike(packed)
    assert judged_now(packed)


def test_loose_refs_over_packed_lines_win(packed: Path) -> None:
    first, second, third = lock_ids(packed)[:3]
    # a record renewed (a loose ref over its packed line), one made unusable, one symbolic
    git(packed, "update-ref", LOCK_PREFIX + first, record_blob(packed, first, "moved/**"))
    plant(packed, second, b"not a record")
    git(packed, "symbolic-ref", LOCK_PREFIX + third, "refs/heads/main")
    plant(packed, "newcomer-1", b"{}")
    assert judged_now(packed)  # the refs not moved keep their judgement
    assert_read_alike(packed)
    table = Store.discover(packed).read_table()
    assert table.summaries[first].buckets == ("moved",)
    assert second not in table.summaries and third not in table.refs


def test_a_packed_problem_mended_by_a_loose_ref(packed: Path) -> None:
    """A packed ref judged no usable record, then pointed at a good one (loose): the
    problem goes with its packed line."""
    victim = lock_ids(packed)[1]
    plant(packed, victim, b"not a record")
    git(packed, "pack-refs", "--all")
    Store.discover(packed).read_table()
    assert judged_now(packed)
    git(packed, "update-ref", LOCK_PREFIX + victim, record_blob(packed, victim, "mended/**"))
    assert_read_alike(packed)
    table = Store.discover(packed).read_table()
    assert not table.problems and table.summaries[victim].buckets == ("mended",)


def test_a_packed_lock_deleted_leaves_the_others_judged(packed: Path) -> None:
    gone = lock_ids(packed)[5]
    git(packed, "update-ref", "-d", LOCK_PREFIX + gone)  # packed-refs rewritten without it
    assert judged_now(packed)
    assert_read_alike(packed)
    assert gone not in Store.discover(packed).read_table().refs


def test_pack_refs_again_changes_no_judgement(packed: Path) -> None:
    """Where git keeps a ref (a loose file, a packed line) is git's business: the judgement
    of each ref stands while it names the same blob."""
    first = lock_ids(packed)[0]
    git(packed, "update-ref", LOCK_PREFIX + first, record_blob(packed, first, "moved/**"))
    git(packed, "pack-refs", "--all")
    assert judged_now(packed)
    assert_read_alike(packed)
    assert Store.discover(packed).read_table().summaries[first].buckets == ("moved",)


def flip_a_blob_id(raw: bytes) -> bytes:
    """One digit of the first kept blob id changed: a file damaged, still well formed."""
    at = raw.index(b'"oid":["') + len(b'"oid":["')
    return raw[:at] + (b"1" if raw[at : at + 1] == b"0" else b"0") + raw[at + 1 :]


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: b"",
        lambda raw: raw[: len(raw) // 2],
        lambda raw: raw[:-1],
        lambda raw: raw.replace(b"gitlocks cache", b"gitlocks cachf"),
        lambda raw: raw + b"x",
        lambda raw: b"\xff" * 100,
        lambda raw: flip_a_blob_id(raw),
        lambda raw: raw.replace(b'"agent-1"', b'"agent-2"', 1),
    ],
)
def test_a_damaged_cache_costs_time_never_an_answer(packed: Path, damage: object) -> None:
    path = packed / ".git" / CACHE_FILE
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    assert_read_alike(packed)


def edit_a_holder(repo: Path) -> None:
    """A kept summary made to disagree with its record."""

    def edit(document: dict[str, Any]) -> dict[str, Any]:
        document["summaries"]["holder"][0] = "agent-9"
        return document

    edit_cache(repo / ".git", edit)


def test_a_verdict_that_does_not_hold_is_dropped(packed: Path) -> None:
    """A kept summary that is not its record's (a file edited by hand) stops the question
    that reads the record, forgets what was kept, and the next read is right."""
    path = packed / ".git" / CACHE_FILE
    edit_a_holder(packed)
    table = Store.discover(packed).read_table()
    victim = next(i for i, s in table.summaries.items() if s.holder == "agent-9")
    with pytest.raises(StoreError, match="does not match what was kept"):
        table.records[victim]
    assert not path.exists()
    assert_read_alike(packed)


def test_a_missing_record_is_never_kept(packed: Path) -> None:
    """A lock ref whose blob is missing has no verdict: the object may yet arrive."""
    victim = lock_ids(packed)[3]
    missing = "1" * 40
    cache.forget(str(packed / ".git"))
    text = (packed / ".git" / "packed-refs").read_text()
    line = next(x for x in text.splitlines() if x.endswith(LOCK_PREFIX + victim))
    (packed / ".git" / "packed-refs").write_text(
        text.replace(line, f"{missing} {LOCK_PREFIX}{victim}")
    )
    assert_read_alike(packed)
    assert missing.encode() not in (packed / ".git" / CACHE_FILE).read_bytes()


# --- any sequence of changes, in a small table --------------------------------------------

OPS = st.lists(
    st.tuples(
        st.sampled_from(
            ["renew", "spoil", "symbolic", "delete", "unlink-loose", "pack", "new", "read"]
        ),
        st.integers(0, 7),
    ),
    min_size=1,
    max_size=8,
)


@pytest.fixture(scope="module")
def small_seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("seed") / "r"
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(base.parent)}
    subprocess.run(["git", "init", "-q", "-b", "main", str(base)], check=True, env=env)
    for args in (["user.name", "T"], ["user.email", "t@example.com"]):
        subprocess.run(["git", "-C", str(base), "config", *args], check=True, env=env)
    subprocess.run(
        ["git", "-C", str(base), "commit", "-q", "--allow-empty", "-m", "init"], check=True, env=env
    )
    seed_locks(base, 8)
    return base


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ops=OPS)
def test_any_changes_read_alike(
    small_seed: Path, tmp_path: Path, ops: list[tuple[str, int]]
) -> None:
    repo = tmp_path / f"r{len(list(tmp_path.iterdir()))}"
    shutil.copytree(small_seed, repo, symlinks=True)
    Store.discover(repo).read_table()
    for op, k in ops:
        ids = lock_ids(repo)
        target = ids[k % len(ids)] if ids else f"none-{k}"
        ref = LOCK_PREFIX + target
        if op == "renew" and ids:
            git(repo, "update-ref", "--no-deref", ref, record_blob(repo, target, f"r{k}/**"))
        elif op == "spoil":
            git(repo, "update-ref", "--no-deref", ref, write_blob(repo, f"spoilt {k}"))
        elif op == "symbolic":
            git(repo, "symbolic-ref", ref, "refs/heads/main")
        elif op == "delete" and ids:
            git(repo, "update-ref", "-d", "--no-deref", ref)
        elif op == "unlink-loose":
            loose = repo / ".git" / ref
            if loose.is_file():
                loose.unlink()
        elif op == "pack":
            git(repo, "pack-refs", "--all")
        elif op == "new":
            lock_id = f"new-{k}"
            blob = record_blob(repo, lock_id, f"n{k}")  # over a symbolic one, never through
            git(repo, "update-ref", "--no-deref", LOCK_PREFIX + lock_id, blob)
        assert_read_alike(repo)


def test_the_hooks_drop_a_verdict_that_does_not_hold(packed: Path) -> None:
    """The hooks' reader stops on a kept summary its record contradicts, as the store
    does, and forgets what was kept: else every commit would stop again on it."""
    edit_a_holder(packed)
    common = str(Store.discover(packed).common_dir)
    table = fast_table.read_lock_table(common, str(packed), False)
    victim = next(i for i, s in table.summaries.items() if s.holder == "agent-9")
    with pytest.raises(StoreError, match="run the command again"):
        table.records[victim]
    assert not (packed / ".git" / CACHE_FILE).exists()
    assert_read_alike(packed)


def test_a_cache_that_cannot_be_removed_still_says_try_again(
    packed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forgetting what was kept is best effort: a cache that will not go (its directory
    read-only, say) never turns "try again" into a traceback."""
    edit_a_holder(packed)

    def refuse(path: str) -> None:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(files, "discard", refuse)
    table = Store.discover(packed).read_table()
    victim = next(i for i, s in table.summaries.items() if s.holder == "agent-9")
    with pytest.raises(StoreError, match="run the command again"):
        table.records[victim]
    assert (packed / ".git" / CACHE_FILE).exists()


def test_a_damaged_blob_id_never_reaches_the_journal(packed: Path) -> None:
    """A kept file damaged into another well-formed one (a blob id changed) is not
    believed: a write would otherwise put the wrong blob in the journal's table tree, a
    tree naming an object nobody has."""
    path = packed / ".git" / CACHE_FILE
    path.write_bytes(flip_a_blob_id(path.read_bytes()))
    got = alock(packed, "acquire", "elsewhere/**", "--as", "agent-z")
    assert got.code == 0, got
    git(packed, "fsck", "--no-dangling", "--connectivity-only")
    assert_read_alike(packed)


def a_blob_id_spelt(spelling: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """An edit putting ``spelling`` in place of the first kept blob id."""

    def edit(document: dict[str, Any]) -> dict[str, Any]:
        document["summaries"]["oid"][0] = spelling
        return document

    return edit


@pytest.mark.parametrize(
    "spelling", ["zz", "abc123", "0" * 39, "0" * 41, " " + "0" * 39, "0" * 20 + "\u00e9" * 20]
)
def test_a_crafted_blob_id_no_git_would_name_judges_nothing(packed: Path, spelling: str) -> None:
    """A cache crafted with its check sums to match is believed as far as it goes: a
    verdict filed under a blob id git never names (not hex, or of another length) is the
    verdict of no ref, and that ref's record is read."""
    edit_cache(packed / ".git", a_blob_id_spelt(spelling))
    for verb in (
        ("acquire", "elsewhere/**", "--as", "agent-z"),
        ("release", "--all", "--as", "agent-3"),
    ):
        got = alock(packed, *verb)
        assert got.code == 0 and "Traceback" not in got.err, got
    git(packed, "fsck", "--no-dangling")
    assert_read_alike(packed)


def a_row_twice(document: dict[str, Any]) -> dict[str, Any]:
    """The first kept record listed again."""
    for column in document["summaries"].values():
        column.append(column[0])
    return document


def test_a_cache_holding_a_record_twice_judges_nothing(packed: Path) -> None:
    """gitlocks never keeps one blob twice: a cache that does is no judgement of any ref,
    rather than a table holding one lock twice."""
    edit_cache(packed / ".git", a_row_twice)
    assert not judged_now(packed)
    listed = alock(packed, "list", "--json")
    assert listed.code == 0 and "not a usable lock" not in listed.err, listed
    assert len(listed.json()) == SEEDED
    assert_read_alike(packed)


def test_a_pipe_in_the_cache_place_never_hangs_a_command(packed: Path) -> None:
    """Opening a named pipe waits for a writer that never comes: the cache is read only
    when it is a regular file. (The timeout only stops a hung command.)"""
    path = packed / ".git" / CACHE_FILE
    path.unlink()
    os.mkfifo(path)
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    done = subprocess.run(
        ["git", "alock", "check", "area5/x", "--as", "agent-z"],
        cwd=packed, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1 and done.stdout.startswith("HELD area5/x"), done
    assert_read_alike(packed)


def _capped_memory() -> None:
    """In the child: at most 1 GiB of address space, so a 3 GiB file cannot be read whole."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def test_a_cache_larger_than_any_written_is_passed_over(packed: Path) -> None:
    """A cache of 3 GiB (sparse: damaged, or planted) is no cache gitlocks wrote: a
    command reads the table without it, in bounded memory; the verdicts are kept again on
    the next write."""
    path = packed / ".git" / CACHE_FILE
    with open(path, "r+b") as f:
        f.truncate(3 << 30)
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    done = subprocess.run(
        ["git", "alock", "check", "area5/x", "--as", "agent-z"],
        cwd=packed, env=env, capture_output=True, text=True, preexec_fn=_capped_memory,
    )  # fmt: skip
    assert done.returncode == 1 and done.stdout.startswith("HELD area5/x"), done
    assert_read_alike(packed)
    wrote = subprocess.run(
        ["git", "alock", "acquire", "elsewhere/**", "--as", "agent-z"],
        cwd=packed, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert wrote.returncode == 0, wrote
    assert path.stat().st_size < files.CACHE_LIMIT
    assert_read_alike(packed)


def test_a_store_that_found_a_verdict_false_reads_the_table_again(packed: Path) -> None:
    """A process that lives on (the live page follows the journal with one store) asks
    again after "try again": the table read with the false verdict goes with it."""
    edit_a_holder(packed)
    store = Store.discover(packed)
    table = store.read_table()
    victim = next(i for i, s in table.summaries.items() if s.holder == "agent-9")
    with pytest.raises(StoreError, match="run the command again"):
        table.records[victim]
    assert shape(store.read_table()) == shape(oracle(packed))


def _lines(text: bytes) -> list[bytes]:
    return text.split(b"\n")


def _lock_lines(text: bytes) -> list[bytes]:
    return [x for x in _lines(text) if b" " + LOCK_PREFIX.encode() in x]


HAND_EDITS: dict[str, Callable[[bytes], bytes]] = {
    "crlf": lambda t: t.replace(b"\n", b"\r\n"),
    "one-line-crlf": lambda t: t.replace(_lock_lines(t)[2], _lock_lines(t)[2] + b"\r"),
    "duplicate-after": lambda t: t.replace(
        _lock_lines(t)[1],
        _lock_lines(t)[1] + b"\n" + _lock_lines(t)[3][:40] + _lock_lines(t)[1][40:],
    ),
    "duplicate-before": lambda t: t.replace(
        _lock_lines(t)[1],
        _lock_lines(t)[3][:40] + _lock_lines(t)[1][40:] + b"\n" + _lock_lines(t)[1],
    ),
    "unsorted": lambda t: (
        b"\n".join(x for x in _lines(t)[1:-1] if x != _lock_lines(t)[0])
        + b"\n"
        + _lock_lines(t)[0]
        + b"\n"
    ),
    "peeled": lambda t: t.replace(_lock_lines(t)[2], _lock_lines(t)[2] + b"\n^" + b"1" * 40),
    "non-ascii": lambda t: t.replace(
        _lock_lines(t)[2],
        _lock_lines(t)[2]
        + b"\n"
        + _lock_lines(t)[2][:41]
        + "refs/agent-locks/é\xff".encode("utf-8", "surrogateescape"),
    ),
    "uppercase-id": lambda t: t.replace(
        _lock_lines(t)[2], _lock_lines(t)[2][:40].upper() + _lock_lines(t)[2][40:]
    ),
    "short-id": lambda t: t.replace(_lock_lines(t)[2], _lock_lines(t)[2][1:]),
    "long-id": lambda t: t.replace(_lock_lines(t)[2], b"a" * 24 + _lock_lines(t)[2]),
    "no-final-newline": lambda t: t.rstrip(b"\n"),
    "nul": lambda t: t.replace(_lock_lines(t)[2], _lock_lines(t)[2] + b"\x00x"),
    "space-in-name": lambda t: t.replace(_lock_lines(t)[2], _lock_lines(t)[2] + b" trailing"),
    "no-header": lambda t: b"\n".join(_lines(t)[1:]),
}


@pytest.mark.parametrize("edit", sorted(HAND_EDITS))
def test_a_hand_edited_packed_refs_reads_alike(small_seed: Path, tmp_path: Path, edit: str) -> None:
    """packed-refs edited by hand: git reads it, and every reader reads the lock refs git
    lists, judged and kept as any others; where git refuses the file (an unterminated
    last line, a short id), every reader stops with an error, never reads a table
    without the locks git could not list."""
    repo = tmp_path / "r"
    shutil.copytree(small_seed, repo, symlinks=True)
    path = repo / ".git" / "packed-refs"
    path.write_bytes(HAND_EDITS[edit](path.read_bytes()))
    common = str(Store.discover(repo).common_dir)
    if subprocess.run(["git", "for-each-ref"], cwd=repo, capture_output=True).returncode:
        with pytest.raises(StoreError):
            Store.discover(repo).read_table()
        with pytest.raises(StoreError):
            fast_table.read_lock_table(common, str(repo), False)
        return
    assert_read_alike(repo)  # the long way, then kept
    assert_read_alike(repo)  # with what was kept
    store = Store.discover(repo)
    for name, oid in fast_table.list_refs(str(repo)).refs.items():
        if name.isascii():  # gitlocks writes no other: only its line is listed
            assert store.ref_value(name) == oid, name  # a write's old value, as listed


def test_the_hooks_read_many_loose_records_through_their_verdicts(
    small_seed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many records written since the last read (by another tool, here) are read once,
    by the store, which keeps their verdicts: the hooks read none of them."""
    repo = tmp_path / "r"
    shutil.copytree(small_seed, repo, symlinks=True)
    blobs = [record_blob(repo, f"loose-{i}", f"l{i}/**") for i in range(65)]
    stdin = "".join(f"create {LOCK_PREFIX}loose-{i} {b}\n" for i, b in enumerate(blobs))
    subprocess.run(["git", "update-ref", "--stdin"], cwd=repo, input=stdin, text=True, check=True)
    Store.discover(repo).read_table()  # keeps the verdicts of the new records
    assert judged_now(repo)
    read: list[str] = []
    real = Objects.read_many

    def counted(
        self: Objects, oids: Iterable[str], *, limit: int | None = None
    ) -> dict[str, tuple[str, bytes]]:
        oids = list(oids)
        read.extend(oids)
        return real(self, oids, limit=limit)

    monkeypatch.setattr(Objects, "read_many", counted)
    common = str(Store.discover(repo).common_dir)
    fast_table.read_lock_table(common, str(repo), False)
    assert read == []
    assert_read_alike(repo)


# --- racing writers beside a kept cache --------------------------------------------------

_CHURN = r"""
import os, random, subprocess, sys, time
kept = sys.argv[1]
while True:
    subprocess.run(["git", "pack-refs", "--all"], capture_output=True)
    try:  # the cache lost, cut short or put back, at any moment
        if random.random() < 0.5:
            os.unlink(kept)
        else:
            raw = open(kept, "rb").read()
            with open(kept + ".cut", "wb") as f:
                f.write(raw[: random.randrange(len(raw) + 1)])
            os.replace(kept + ".cut", kept)
    except OSError:
        pass
    time.sleep(random.random() * 0.05)
"""


@pytest.mark.slow
def test_racing_claims_beside_a_kept_cache_have_one_winner(packed: Path) -> None:
    """Writers racing for overlapping scopes in a table of packed locks, while refs are
    packed again and the cache is lost and cut short, and one writer is killed:
    one claim wins each round, and the table reads alike after."""
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    churn = subprocess.Popen(
        [sys.executable, "-c", _CHURN, str(packed / ".git" / CACHE_FILE)], cwd=packed
    )
    patterns = ["hot/x/**", "hot/**", "hot/x/y", "hot", "hot/x"]  # each overlaps each
    problems: list[str] = []
    try:
        for round_ in range(3):
            alock_script = os.path.join(os.path.dirname(sys.executable), "git-alock")
            writers = [
                subprocess.Popen(
                    [alock_script, "acquire", patterns[i % 5], "--as", f"w{round_}-{i}"],
                    cwd=packed,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                for i in range(8)
            ]
            time.sleep(0.1 * round_)  # not a measure: only where the killed one is caught
            writers[round_].kill()
            winners = []
            for proc in writers:
                out, err = proc.communicate()
                if proc.returncode == 0:
                    winners.append(out)
                elif proc.returncode not in (1, 2, -9) or "Traceback" in err:
                    problems.append(f"round {round_}: exit {proc.returncode}: {err}")
            table = Store.discover(packed).read_table()
            hot = [s.holder for s in table.summaries.values() if s.holder.startswith("w")]
            if len(winners) > 1 or len(hot) > 1:
                problems.append(f"round {round_}: winners {winners}, holders {hot}")
            for holder in hot:
                alock(packed, "release", "--all", "--as", holder)
    finally:
        churn.kill()
        churn.wait()
    assert not problems, problems
    assert_read_alike(packed)


def test_verbs_beside_kept_verdicts_answer_as_the_records_say(packed: Path) -> None:
    """The verbs in a table of packed locks read through their kept verdicts: a packed
    lock holds its area, a ref moved by hand to another lock's record holds nothing, a
    record expired over its packed line frees its area, and a holder's locks released and
    packed again are gone; each time the table reads as its records say."""
    table = oracle(packed)
    ids = sorted(table.records)
    area = {i: table.records[i].paths[0].removesuffix("/**") + "/x" for i in ids[:4]}

    def check(lock_id: str, *, held: bool) -> None:
        got = alock(packed, "check", area[lock_id], "--as", "agent-z")
        assert (got.code, got.out.split()[0]) == ((1, "HELD") if held else (0, "FREE")), got
        assert judged_now(packed)
        assert_read_alike(packed)

    check(ids[0], held=True)
    assert alock(packed, "acquire", area[ids[0]], "--as", "agent-z").code == 1
    # ids[1]'s ref moved to ids[0]'s record: a problem, holding nothing
    git(
        packed,
        "update-ref",
        LOCK_PREFIX + ids[1],
        git(packed, "rev-parse", LOCK_PREFIX + ids[0]).strip(),
    )
    check(ids[1], held=False)
    check(ids[0], held=True)
    # ids[2]'s record, expired, over its packed line
    expired = table.records[ids[2]]
    past = format_time(utcnow() - timedelta(hours=1))
    blob = write_blob(packed, expired.with_changes(expires_at=past).to_json())
    git(packed, "update-ref", LOCK_PREFIX + ids[2], blob)
    check(ids[2], held=False)
    got = alock(packed, "acquire", area[ids[2]], "--as", "agent-z")
    assert got.code == 0, got
    # every lock of ids[3]'s holder released, then packed again
    holder = table.records[ids[3]].holder
    assert alock(packed, "release", "--all", "--as", holder).code == 0
    git(packed, "pack-refs", "--all")
    assert alock(packed, "check", area[ids[3]], "--as", "agent-z").code == 0
    assert_read_alike(packed)
    left = oracle(packed)
    assert not left.held_by(holder)
    assert {p.ref for p in left.problems} == {LOCK_PREFIX + ids[1]}


def test_a_writer_killed_before_its_rename_leaves_no_file_behind(packed: Path) -> None:
    """The temporary file of a cache writer that died (SIGKILL) before its rename is removed
    by the next write of the cache; a live writer's is left to it."""
    common = packed / ".git"
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)  # fmt: skip
    dead = common / f".{CACHE_FILE}.{ended.stdout.strip()}.tmp"
    dead.write_bytes(b"gitlocks cache half written")
    live = common / f".{CACHE_FILE}.{os.getppid()}.tmp"
    live.write_bytes(b"still writing")
    (common / CACHE_FILE).unlink()
    assert alock(packed, "list").code == 0  # judges every record: keeps their verdicts
    assert (common / CACHE_FILE).is_file()
    assert not dead.exists() and live.exists()
