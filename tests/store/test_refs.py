"""gitlocks.store.refs: which ref names gitlocks may write."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from conftest import git
from hypothesis import example, given
from hypothesis import strategies as st
from support.cli import alock, alock_process

from gitlocks.layout import OWN_REF_PREFIXES, STAGING_PREFIX
from gitlocks.store.refs import Spares, is_own_ref

OWN = re.compile(
    "^(?:"
    + "|".join(re.escape(p) for p in (*OWN_REF_PREFIXES, STAGING_PREFIX))
    + r")[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)*\Z"
)
PARTS = ["refs/", "agent-locks/", "agent-locks-meta/", "agent-locks-remote/", "heads/", "a",
         "b.lock", ".", "..", "/", "x y", "\n", "é", "-", "_"]  # fmt: skip


@given(st.lists(st.sampled_from(PARTS), max_size=6).map("".join))
@example("refs/agent-locks/abc")
@example("refs/agent-locks/abc\n")
@example("refs/agent-locks/")
@example("refs/agent-locks-meta/journal")
def test_own_refs_are_the_pattern(name: str) -> None:
    expected = OWN.match(name) is not None and not any(
        part in ("", ".", "..") or part.endswith(".lock") for part in name.split("/")
    )
    assert is_own_ref(name) == expected


def test_only_text_names_a_ref() -> None:
    assert not is_own_ref(None)
    assert not is_own_ref(b"refs/agent-locks/abc")


def test_a_write_takes_the_transactions_started_ahead(repo: Path, tmp_path: Path) -> None:
    """A claim starts its two update-ref transactions before it decides, and uses them:
    no third is started."""
    trace = tmp_path / "trace.json"
    done = alock_process(
        repo, "acquire", "src/**", "-m", "x", env={"AGENT_ID": "a1", "GIT_TRACE2_EVENT": str(trace)}
    )
    assert done.code == 0, done
    started = [
        json.loads(line)["argv"]
        for line in trace.read_text().splitlines()
        if json.loads(line)["event"] == "start"
    ]
    assert sum("update-ref" in argv for argv in started) == 2, started
    assert alock(repo, "list", AGENT_ID="a2").out.count("src/**") == 1


def test_spares_not_taken_are_let_go_and_move_nothing(repo: Path) -> None:
    """A write that changes nothing (a refusal) drops what it started: each git ends by
    itself, having moved no ref."""
    before = git(repo, "for-each-ref")
    with Spares(os.path.join(repo, ".git"), 2) as spares:
        procs = [tx.proc for tx in spares]
    assert spares == []
    for proc in procs:
        assert proc.wait(timeout=30) == 0
    assert git(repo, "for-each-ref") == before
    assert alock(repo, "acquire", "src/**", AGENT_ID="a1").code == 0
    refused = alock(repo, "acquire", "src/a.py", AGENT_ID="a2")
    assert refused.code == 1 and refused.out.startswith("REFUSED")
