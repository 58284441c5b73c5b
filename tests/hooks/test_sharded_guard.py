"""The hosted guard of a sharded lock table against pushes crafted by hand (docs/design.md,
sections 5.10 and 6.9): a record is held alike in exactly the shards of its claim."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import git
from support.cli import alock, run_git
from support.records import write_blob
from support.remote import make_bare, make_clone, remote_locks

from gitlocks.core.record import new_lock_id
from gitlocks.core.shard import record_shards
from gitlocks.hooks.hosted import table_refs

A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}
SHARDS = 8
SHARD = "refs/agent-locks-meta/shards/"


@pytest.fixture
def guarded(tmp_path: Path) -> tuple[Path, Path]:
    """(the guarded bare remote, a clone) where agent-a holds src/api/** and agent-b *.md
    (held in every shard)."""
    bare = make_bare(tmp_path / "locks.git")
    assert alock(tmp_path, "install-remote-hook", str(bare)).code == 0
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    assert alock(a, "acquire", "src/api/**", **A).code == 0
    assert alock(a, "remote", "--shards", str(SHARDS)).code == 0
    assert alock(a, "acquire", "*.md", **B).code == 0
    return bare, a


def _entry(lock_id: str) -> str:
    from gitlocks.core.journal import shard_of

    return f"locks/{shard_of(lock_id)}/{lock_id}"


def craft(
    clone: Path, tip: str, remove: tuple[str, ...] = (), add: dict[str, str] | None = None
) -> str:
    """A journal commit on ``tip`` whose table drops ``remove`` and sets ``add``, by hand."""
    env = {"GIT_INDEX_FILE": str(clone / ".git" / "crafted-index")}

    def run(*args: str) -> str:
        got = run_git(clone, *args, env=env)
        assert got.code == 0, got.err
        return got.out.strip()

    run("read-tree", tip)
    for lock_id in remove:
        run("update-index", "--force-remove", _entry(lock_id))
    for lock_id, blob in (add or {}).items():
        run("update-index", "--add", "--cacheinfo", f"100644,{blob},{_entry(lock_id)}")
    tree = run("write-tree")
    return run("commit-tree", tree, "-p", tip, "-m", "by hand\n\nJournal-Seq: 999\n")


def test_the_guard_refuses_a_record_torn_across_shards_or_held_outside_its_own(
    guarded: tuple[Path, Path],
) -> None:
    bare, a = guarded
    assert alock(a, "sync").code == 0
    locks = remote_locks(bare)
    [md] = [i for i, r in locks.items() if r.paths == ("*.md",)]
    tips = {k: git(bare, "rev-parse", f"{SHARD}{k}").strip() for k in range(SHARDS)}
    # A release of *.md in one shard only: the others still hold it, so its ref stays.
    torn = craft(a, tips[0], remove=(md,))
    refused = run_git(a, "push", "origin", f"{torn}:{SHARD}0")
    assert refused.code != 0, "a record torn across shards passed the guard"
    assert "different entries" in refused.err or "not in those of its claim" in refused.err
    # A claim of lib/** written into a shard that is not lib's: a claim of lib/x would
    # lease lib's shard alone and never meet it there.
    [src] = [i for i, r in locks.items() if r.paths == ("src/api/**",)]
    data = json.loads(git(bare, "cat-file", "-p", f"refs/agent-locks/{src}"))
    lock_id = new_lock_id()
    blob = write_blob(a, {**data, "id": lock_id, "paths": ["lib/**"], "exact": []})
    [own] = record_shards(["lib/**"], SHARDS)
    elsewhere = (own + 1) % SHARDS
    planted = craft(a, tips[elsewhere], add={lock_id: blob})
    refused = run_git(
        a,
        "push",
        "--atomic",
        "origin",
        f"{planted}:{SHARD}{elsewhere}",
        f"{blob}:refs/agent-locks/{lock_id}",
    )
    assert refused.code != 0, "a record held outside its own shard passed the guard"
    assert "not in those of its claim" in refused.err, refused.err
    assert {k: git(bare, "rev-parse", f"{SHARD}{k}").strip() for k in range(SHARDS)} == tips
    # Writes made by git alock go on passing.
    assert alock(a, "acquire", "lib/**", **A).code == 0
    assert alock(a, "release", "*.md", **B).code == 0
    union = table_refs(str(bare))
    assert union is not None
    assert set(union.refs) == {f"refs/agent-locks/{i}" for i in remote_locks(bare)}


def test_the_guard_refuses_an_upgrade_that_holds_a_record_outside_its_shards(
    tmp_path: Path,
) -> None:
    bare = make_bare(tmp_path / "locks.git")
    assert alock(tmp_path, "install-remote-hook", str(bare)).code == 0
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    assert alock(a, "acquire", "lib/**", **A).code == 0
    # The upgrade made where no guard runs (a copy), then one record moved by hand from
    # its own shard into another: the union is still the old table.
    copy = tmp_path / "copy.git"
    git(tmp_path, "clone", "-q", "--mirror", str(bare), str(copy))
    x = make_clone(copy.as_uri(), tmp_path / "x")
    assert alock(x, "remote", "--shards", str(SHARDS)).code == 0
    [lib] = remote_locks(copy)
    blob = git(copy, "rev-parse", f"refs/agent-locks/{lib}").strip()
    [own] = record_shards(["lib/**"], SHARDS)
    elsewhere = (own + 1) % SHARDS
    single = git(copy, "rev-parse", f"{SHARD}{own}^").strip()
    for k, change in ((own, {"remove": (lib,)}), (elsewhere, {"add": {lib: blob}})):
        tip = git(copy, "rev-parse", f"{SHARD}{k}").strip()
        moved = craft(x, tip, **change)
        tree = git(x, "rev-parse", f"{moved}^{{tree}}").strip()
        message = git(x, "log", "-1", "--format=%B", tip)
        first = run_git(x, "commit-tree", tree, "-p", single, "-m", message).out.strip()
        git(x, "push", "-q", str(copy), f"+{first}:{SHARD}{k}")
    specs = [f"refs/agent-locks-meta/{name}" for name in ("format", "journal")]
    specs += [f"{SHARD}{k}" for k in range(SHARDS)]
    refused = run_git(copy, "push", "--atomic", str(bare), *specs)
    assert refused.code != 0, "a hand-made upgrade holding a record outside its shard passed"
    assert "not in those of its claim" in refused.err, refused.err
    assert not git(bare, "for-each-ref", SHARD).strip()
    # The upgrade as git alock makes it passes.
    assert alock(a, "remote", "--shards", str(SHARDS)).code == 0


def _commit(cwd: Path, agent: str, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (cwd / rel).parent.mkdir(parents=True, exist_ok=True)
        (cwd / rel).write_text(text)
    git(cwd, "add", "-A")
    git(cwd, "commit", "-q", "-m", "work", "--trailer", f"Agent-Id: {agent}")


def test_what_plain_git_does_to_a_guarded_sharded_table_is_refused(
    guarded: tuple[Path, Path], tmp_path: Path
) -> None:
    """The attacks on the single journal, played on a sharded one: a mirror push from a
    fresh clone, the format ref deleted or moved down, a shard deleted, rewound or moved
    onto a project commit, a shard beyond the count, the notice moved, a live claim's lock
    ref deleted: each refused whole, and the claims stand for every clone."""
    bare, a = guarded
    assert alock(a, "renew", "--ttl", "2h", **A).code == 0  # a second commit on src's shard
    before = git(bare, "for-each-ref")
    fresh = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", bare.as_uri(), "fresh")
    assert run_git(fresh, "push", "--mirror", "origin").code != 0
    [k] = record_shards(["src/api/**"], SHARDS)
    git(a, "fetch", "-q", "origin", f"+{SHARD}{k}:refs/tmp/shard")
    [src] = [i for i, r in remote_locks(bare).items() if r.paths == ("src/api/**",)]
    fewer = write_blob(a, "shards 4\n")
    attacks = [
        ":refs/agent-locks-meta/format",
        f"+{fewer}:refs/agent-locks-meta/format",
        f":{SHARD}{k}",
        f"+refs/tmp/shard~1:{SHARD}{k}",
        f"+HEAD:{SHARD}{k}",
        f"HEAD:{SHARD}{SHARDS}",
        "+HEAD:refs/agent-locks-meta/journal",
        f":refs/agent-locks/{src}",
    ]
    for spec in attacks:
        got = run_git(a, "push", "origin", spec)
        assert got.code != 0 and "remote: alock: " in got.err, (spec, got.err)
    assert git(bare, "for-each-ref") == before
    other = make_clone(bare.as_uri(), tmp_path / "other")
    refused = alock(other, "acquire", "src/api/auth.py", "--json", **B)
    assert refused.json()["status"] == "refused", refused
    # Work into the claim is refused on the union, the lock ref deleted on the host or not.
    git(bare, "update-ref", "-d", f"refs/agent-locks/{src}")
    _commit(fresh, "agent-b", {"src/api/auth.py": "b\n"})
    pushed = run_git(fresh, "push", "origin", "HEAD:main")
    assert pushed.code != 0 and "HELD src/api/auth.py" in pushed.err, pushed.err


def test_a_shard_ref_named_by_no_number_neither_breaks_the_guard_nor_passes_it(
    guarded: tuple[Path, Path],
) -> None:
    """A ref under the shard journals named "²" (``str.isdigit`` takes it, ``int()`` does
    not): pushed, the guard refuses it as no shard, in its own words; left on the remote
    by hand (the guard bypassed), it is no shard to the guard, which reads the table as
    before, and every write goes on. The guard stopped with a traceback either way."""
    bare, a = guarded
    main = git(bare, "rev-parse", "refs/heads/main").strip()
    refused = run_git(a, "push", "origin", f"{main}:{SHARD}\u00b2")
    assert refused.code != 0 and "Traceback" not in refused.err, refused.err
    assert "which is no shard of this 8-shard lock table" in refused.err
    git(bare, "update-ref", f"{SHARD}\u00b2", main)
    for verb, path in [("acquire", "lib/**"), ("release", "src/api/**")]:
        got = alock(a, verb, path, **A)
        assert got.code == 0, (verb, got.err)
    assert {r.paths[0] for r in remote_locks(bare).values()} == {"*.md", "lib/**"}
    scan = table_refs(str(bare))
    assert scan is not None and len(scan.refs) == 2
