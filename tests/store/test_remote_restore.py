"""A plain lock remote (no hook) whose table is lost or out of step: clients notice, say
so, never decide on the loss, and put the last view back. Real bare remotes over file://."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pygit2
import pytest
from conftest import git
from support.cli import alock
from support.records import write_blob
from support.remote import make_bare, make_clone, remote_events, remote_locks

from gitlocks.core import journal
from gitlocks.core.table import LazyRecords
from gitlocks.errors import RemoteError
from gitlocks.store.journal import Journal
from gitlocks.store.local import Store
from gitlocks.store.remote import RemoteStore

A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}
JOURNAL = "refs/agent-locks-meta/journal"


def ref(bare: Path, name: str) -> str:
    return git(bare, "rev-parse", "--verify", "-q", name, check=False).strip()


def claimed(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A plain bare remote kept in one journal; clone a holds src/api/**, clone b has
    synced it."""
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    b = make_clone(bare.as_uri(), tmp_path / "b")
    assert alock(a, "acquire", "src/api/**", "-m", "rewrite auth", **A).code == 0
    assert alock(b, "sync").code == 0
    return bare, a, b


def test_a_mirror_push_that_wipes_the_journal_is_reported_and_restored(tmp_path: Path) -> None:
    bare, a, b = claimed(tmp_path)
    last = ref(bare, JOURNAL)
    fresh = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", bare.as_uri(), "fresh")
    git(fresh, "push", "-q", "--mirror", "origin")  # no hook here: the table is gone
    assert not ref(bare, JOURNAL) and not remote_locks(bare)

    listed = alock(b, "list", "--fresh")
    assert listed.code == 2, listed.out
    assert f"the journal {JOURNAL} on the lock remote 'origin' has vanished" in listed.err
    assert "git alock remote --restore" in listed.err
    granted = alock(b, "acquire", "src/api/auth.py", **B)
    assert granted.code == 2 and "has vanished" in granted.err, "never granted over it"
    offline = alock(b, "list", "--json")
    assert [r["holder"] for r in offline.json()] == ["agent-a"], "the view is kept"

    restored = alock(b, "remote", "--restore")
    assert restored.code == 0, restored.err
    assert restored.out.startswith("RESTORED 1 lock(s) on origin")
    assert [r.holder for r in remote_locks(bare).values()] == ["agent-a"]
    journal = ref(bare, JOURNAL)
    assert git(bare, "rev-parse", f"{journal}~1").strip() == last, "the history continues"
    assert remote_events(bare)[-1]["event"] == "restored"
    # Every clone sees it again, and the claim blocks.
    c = make_clone(bare.as_uri(), tmp_path / "c")
    assert alock(c, "check", "--fresh", "src/api/auth.py", **B).code == 1
    assert alock(b, "acquire", "src/api/auth.py", **B).code == 1
    assert alock(a, "release", "src/api/**", **A).code == 0


def test_a_journal_moved_back_is_reported(tmp_path: Path) -> None:
    bare, a, b = claimed(tmp_path)
    before = ref(bare, JOURNAL)
    assert alock(a, "acquire", "docs/**", **A).code == 0
    assert alock(b, "sync").code == 0
    git(bare, "update-ref", JOURNAL, before)  # back one write, by hand
    got = alock(b, "sync")
    assert got.code == 2 and "went back to an older commit" in got.err, got.err
    assert alock(b, "remote", "--restore").code == 0
    assert sorted(r.paths[0] for r in remote_locks(bare).values()) == ["docs/**", "src/api/**"]
    assert alock(b, "sync").code == 0


def test_a_compacted_journal_is_no_loss(tmp_path: Path) -> None:
    _, a, b = claimed(tmp_path)
    git(a, "config", "alock.journalKeep", "1")
    for i in range(4):
        assert alock(a, "acquire", f"area{i}/**", **A).code == 0
    got = alock(b, "sync")
    assert got.code == 0, got.err
    again = alock(b, "remote", "--restore")
    assert again.code == 0 and again.out.startswith("NOTHING TO RESTORE"), again.out


def test_a_journal_emptied_while_no_claim_was_live_is_no_loss(tmp_path: Path) -> None:
    bare, a, b = claimed(tmp_path)
    assert alock(a, "release", "src/api/**", **A).code == 0
    assert alock(b, "sync").code == 0
    git(bare, "update-ref", "-d", JOURNAL)
    assert alock(b, "sync").code == 0


def test_a_hand_pushed_lock_ref_is_deleted_by_the_next_write(tmp_path: Path) -> None:
    bare, a, _ = claimed(tmp_path)
    record = next(iter(remote_locks(bare).values())).to_dict()
    record.update(id="mallory-1", holder="mallory", paths=["**"], exact=[])
    blob = write_blob(a, json.dumps(record))
    git(a, "push", "-q", "origin", f"{blob}:refs/agent-locks/mallory-1")
    assert alock(a, "renew", "--ttl", "2h", **A).code == 0  # a write (a fresh claim is kept)
    assert not ref(bare, "refs/agent-locks/mallory-1")
    assert [r.holder for r in remote_locks(bare).values()] == ["agent-a"]


def test_without_a_journal_check_fresh_and_acquire_agree(tmp_path: Path) -> None:
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    b = make_clone(bare.as_uri(), tmp_path / "b")
    assert alock(b, "sync").code == 0  # b's copy: no locks, no journal
    # A lock ref pushed by hand where there is no journal: the lock refs are the table.
    seed = make_clone(bare.as_uri(), tmp_path / "seed")
    assert alock(seed, "acquire", "tmp/**", **A).code == 0
    record = next(iter(remote_locks(bare).values())).to_dict()
    git(bare, "update-ref", "-d", JOURNAL)
    for name in list(remote_locks(bare)):
        git(bare, "update-ref", "-d", f"refs/agent-locks/{name}")
    record.update(id="mallory-1", holder="mallory", paths=["src/**"], exact=[])
    blob = write_blob(bare, json.dumps(record))
    git(bare, "update-ref", "refs/agent-locks/mallory-1", blob)
    checked = alock(a, "check", "--fresh", "src/app.py", **B)
    assert checked.code == 1 and "HELD" in checked.out, checked.out
    acquired = alock(b, "acquire", "src/app.py", **B)
    assert acquired.code == 1, (acquired.out, acquired.err)
    assert "mallory" in acquired.out


def test_break_names_a_hand_pushed_lock_ref_to_delete_it(tmp_path: Path) -> None:
    bare, a, _ = claimed(tmp_path)
    record = next(iter(remote_locks(bare).values())).to_dict()
    record.update(id="mallory-1", holder="mallory", paths=["**"], exact=[])
    git(bare, "update-ref", "refs/agent-locks/mallory-1", write_blob(bare, json.dumps(record)))
    assert alock(a, "check", "--fresh", "docs/x.md", **B).code == 0, "it blocks nobody"
    broken = alock(a, "break", "mallory-1", **B)
    assert broken.code == 0, (broken.out, broken.err)
    assert not ref(bare, "refs/agent-locks/mallory-1")
    assert [r.holder for r in remote_locks(bare).values()] == ["agent-a"]


def test_a_forged_compacted_root_naming_the_last_tip_is_reported(tmp_path: Path) -> None:
    bare, _, b = claimed(tmp_path)
    tip = ref(bare, JOURNAL)
    repo = pygit2.Repository(str(b))
    sig = pygit2.Signature("gitlocks", "gitlocks@localhost")
    marker = journal.compaction_marker(datetime.now(timezone.utc), 0, tip)
    empty = pygit2.Oid(hex=Journal(Store.discover(b).objects, lambda key: None).tree(None, {}))
    forged = repo.create_commit(None, sig, sig, journal.message([marker], 1), empty, [])
    git(b, "push", "-q", "--force", "origin", f"{forged}:{JOURNAL}")
    got = alock(b, "sync")
    assert got.code == 2 and "which does not continue it" in got.err, got.err


def remote_store(clone: Path) -> RemoteStore:
    store = RemoteStore.discover(clone)
    assert isinstance(store, RemoteStore)
    return store


def records_read(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The ids of each batch of records read whole from now on (``LazyRecords.prefetch``)."""
    reads: list[list[str]] = []
    real = LazyRecords.prefetch

    def counted(self: LazyRecords, ids: Any) -> None:
        reads.append(list(ids))
        real(self, reads[-1])

    monkeypatch.setattr(LazyRecords, "prefetch", counted)
    return reads


def test_a_journal_that_continues_the_view_is_told_without_reading_a_claim_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write elsewhere (the common case after a fetch): whether the view lost claims is
    told from their summaries; no record is read whole (at 10,000 claims, half a second of
    every sync). A loss still names its first claim."""
    bare, a, b = claimed(tmp_path)
    assert alock(a, "acquire", "docs/**", **A).code == 0
    store = remote_store(b)
    reads = records_read(monkeypatch)
    with store.mutex():
        assert store.fetch()  # checks what the view held against the journal fetched
    assert reads == []
    git(bare, "update-ref", "-d", JOURNAL)  # plain git wipes the journal
    with store.mutex(), pytest.raises(RemoteError) as lost:
        store.fetch()
    assert "has vanished" in str(lost.value)
    assert "while 2 live claim(s) stood there (e.g. src/api/** held by agent-a)" in str(lost.value)


def test_a_shard_journal_that_continues_the_view_is_told_without_reading_a_claim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same on a sharded remote: a shard a write elsewhere moved reads no claim whole."""
    _, a, b = claimed(tmp_path)
    assert alock(a, "remote", "--shards", "4").code == 0
    assert alock(b, "sync").code == 0
    for n in range(6):
        assert alock(a, "acquire", f"p{n}/**", **A).code == 0
    store = remote_store(b)
    reads = records_read(monkeypatch)
    with store.mutex():
        assert store.fetch()
    assert reads == []


def test_a_journal_commit_naming_a_shard_by_no_number_is_no_view(tmp_path: Path) -> None:
    """A journal commit pushed by hand whose first event reads as a shard view, naming a
    shard "²" (``str.isdigit`` takes it, ``int()`` does not): the clone that mirrored it
    is asked, when the journal next moves, whether its view lost claims, and reads that
    commit as no view. Sync and claims go on (each stopped with a traceback)."""
    bare, a, b = claimed(tmp_path)
    tip = ref(bare, JOURNAL)
    marker = json.dumps({"event": journal.VIEW_EVENT, "shards": {"\u00b2": ""}})
    (tmp_path / "message").write_text(f"view\n\n{marker}\n\nJournal-Seq: 2\n")
    tree = ref(bare, JOURNAL + "^{tree}")
    forged = git(bare, "commit-tree", tree, "-p", tip, "-F", str(tmp_path / "message")).strip()
    git(bare, "update-ref", JOURNAL, forged)
    assert alock(a, "sync").code == 0  # mirrored: the view now names it
    assert alock(b, "acquire", "docs/**", **B).code == 0  # the journal moves on
    for verb, path in [("sync", None), ("acquire", "lib/**")]:
        got = alock(a, verb, *([path] if path else []), **A)
        assert got.code == 0 and "Traceback" not in got.err, (verb, got.err)
    assert {r.paths[0] for r in remote_locks(bare).values()} == {"src/api/**", "docs/**", "lib/**"}
