"""A sharded remote changed by plain git or a hostile pusher (docs/design.md, section 5.10):
reads go on, writes refuse clearly or stay safe, and no claim is granted twice."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git
from support.cli import alock
from support.remote import make_bare, make_clone

A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}
SHARDS = 8
JOURNAL = "refs/agent-locks-meta/journal"


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    return make_bare(tmp_path / "locks.git")


def test_a_journal_ref_moved_back_after_the_upgrade_stops_every_write(
    bare: Path, tmp_path: Path
) -> None:
    a = make_clone(bare.as_uri(), tmp_path / "a")
    b = make_clone(bare.as_uri(), tmp_path / "b")
    assert alock(a, "acquire", "lib/**", **A).code == 0
    single = git(bare, "rev-parse", JOURNAL).strip()
    assert alock(a, "remote", "--shards", str(SHARDS)).code == 0
    notice = git(bare, "rev-parse", JOURNAL).strip()
    assert alock(a, "acquire", "src/**", **A).code == 0
    # Moved back by hand: an earlier gitlocks would decide on that journal (lib/** only)
    # and grant src/x beside the shards, so this version must not grant there either.
    git(bare, "update-ref", JOURNAL, single)
    for clone in (a, b):
        refused = alock(clone, "acquire", "docs/y", **B)
        assert refused.code == 2, refused
        assert refused.err.startswith("error: ") and JOURNAL in refused.err, refused.err
        assert "Traceback" not in refused.err
        assert alock(clone, "list").code == 0  # reads go on
    git(bare, "update-ref", "-d", JOURNAL)  # gone: an earlier gitlocks starts its own
    refused = alock(b, "acquire", "docs/y", **B)
    assert refused.code == 2 and "is gone" in refused.err, refused.err
    git(bare, "update-ref", JOURNAL, notice)  # put right: writes go on at once
    assert alock(b, "acquire", "docs/y", **B).code == 0
    assert alock(a, "acquire", "src/x", **A).code == 0  # a's own claim covers it
    assert alock(b, "acquire", "src/x", "--json", **B).json()["status"] == "refused"
