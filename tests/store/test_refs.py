"""gitlocks.store.refs: which ref names gitlocks may write."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from hypothesis import example, given
from hypothesis import strategies as st
from support.cli import alock, alock_process

from gitlocks.layout import OWN_REF_PREFIXES, STAGING_PREFIX
from gitlocks.store.refs import is_own_ref

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


def trace_of(
    repo: Path, tmp_path: Path, *args: str, update_refs_started: int = 0
) -> tuple[int, list[dict[str, Any]]]:
    """Run ``git alock ARGS`` as a process; its exit code and git's trace2 events of every
    git it ran, once each of those has ended (a dropped transaction ends by itself), and
    once at least ``update_refs_started`` ``update-ref`` have said they started: one the
    command started just before it ended may not have written a line yet."""
    trace = tmp_path / f"trace-{len(list(tmp_path.iterdir()))}.json"
    done = alock_process(repo, *args, env={"AGENT_ID": "a1", "GIT_TRACE2_EVENT": str(trace)})
    for _ in range(300):  # bounded: each git started writes its exit event as it ends
        events = [json.loads(line) for line in trace.read_text().splitlines()]
        ended = {e["sid"] for e in events if e["event"] in ("exit", "signal")}
        started = {e["sid"] for e in events if e["event"] == "start"}
        if started <= ended and len(update_refs(events)) >= update_refs_started:
            return done.code, events
        time.sleep(0.05)
    raise AssertionError(f"a git {args} started never ended: {events}")


def update_refs(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == "start" and "update-ref" in e["argv"]]


def test_only_a_write_starts_transactions(repo: Path, tmp_path: Path) -> None:
    """A verb refused before it writes (a pattern it refuses) starts no ref transaction,
    and moves nothing; nor does a verb that reads."""
    before = git(repo, "for-each-ref")
    code, events = trace_of(repo, tmp_path, "acquire", "src/**", "/etc/passwd")
    assert code == 2 and not update_refs(events), events
    assert git(repo, "for-each-ref") == before
    assert not list((repo / ".git").rglob("*.lock"))
    for verb in (["check", "src/a.py"], ["list"], ["status"]):
        code, events = trace_of(repo, tmp_path, *verb)
        assert code == 0 and not update_refs(events), (verb, events)


def test_a_write_that_changes_nothing_starts_no_transaction(repo: Path, tmp_path: Path) -> None:
    """A transaction starts once a write knows it moves refs: a refused claim starts none,
    and moves nothing."""
    assert alock(repo, "acquire", "src/**", AGENT_ID="a2").code == 0
    before = git(repo, "for-each-ref")
    code, events = trace_of(repo, tmp_path, "acquire", "src/a.py")
    assert code == 1 and not update_refs(events), events
    assert git(repo, "for-each-ref") == before
    code, events = trace_of(repo, tmp_path, "acquire", "docs/**", update_refs_started=1)
    assert code == 0 and update_refs(events), events


def test_a_claim_asks_git_each_question_once(repo: Path, tmp_path: Path) -> None:
    """One ls-files answers both of a claim's questions of the index (is a plain path
    missing from the tree a file there; what lies near a pattern that covers nothing), one
    rev-parse HEAD's branch and commit, one for-each-ref the refs under the mutex; a
    release asks the index nothing."""
    (repo / "src" / "app.py").unlink()  # still in the index: a file, so claimed exactly
    code, events = trace_of(
        repo, tmp_path, "acquire", "src/app.py", "new/x.py", update_refs_started=2
    )
    assert code == 0, events
    started = [" ".join(e["argv"]) for e in events if e["event"] == "start"]
    for asked, times in (("ls-files", 1), ("for-each-ref", 1), ("HEAD", 1), ("update-ref", 2)):
        assert sum(asked in argv for argv in started) == times, (asked, started)
    [record] = alock(repo, "list", "--json", AGENT_ID="a1").json()
    assert record["exact"] == ["src/app.py"] and record["branch"] in ("main", "master")
    assert record["head"] == git(repo, "rev-parse", "HEAD").strip()
    code, events = trace_of(repo, tmp_path, "release", "src/app.py", update_refs_started=2)
    started = [" ".join(e["argv"]) for e in events if e["event"] == "start"]
    assert code == 0 and not any("ls-files" in argv for argv in started), started


# A write whose ref another git moves between the read of its value and the prepare (at
# the write's log, the last step before the transactions are asked to prepare).
_MOVED_UNDER = r"""
import subprocess, sys
from gitlocks.main import main
from gitlocks.store import refs

which = sys.argv[1]
log = refs.RefWriter._log
moved = []

def moved_under(self, entry):
    log(self, entry)
    if moved:
        return
    moved.append(entry)
    if which == "journal":
        name = "refs/agent-locks-meta/journal"
        tree = subprocess.check_output(["git", "rev-parse", "HEAD^{tree}"], text=True).strip()
        new = subprocess.check_output(["git", "commit-tree", "-m", "other", tree], text=True)
    else:
        name = next(n for n in entry["old"] if n.startswith("refs/agent-locks/"))
        new = subprocess.check_output(["git", "hash-object", "-w", "--stdin"], input=b"x")
    subprocess.check_call(["git", "update-ref", name, new.strip()])

refs.RefWriter._log = moved_under
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("which", ["journal", "lock"])
def test_a_ref_moved_under_a_write_is_decided_again(repo: Path, which: str) -> None:
    """Both transactions are asked to prepare at once: git's compare refuses the one whose
    ref moved, the other is let go, nothing of that try lands and no ref stays locked; the
    writer reads what the other git wrote and decides again on it (docs/design.md, 4.2)."""
    assert alock(repo, "acquire", "src/**", AGENT_ID="a1").code == 0
    verb = ["acquire", "docs/**"] if which == "journal" else ["release", "--all"]
    done = subprocess.run(
        [sys.executable, "-c", _MOVED_UNDER, which, *verb],
        cwd=repo,
        env={**os.environ, "AGENT_ID": "a1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done
    after = git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    refs = dict(line.split() for line in after.splitlines() if "agent-locks/" in line)
    assert not list((repo / ".git").rglob("*.lock"))
    listed = json.loads(alock(repo, "list", "--json").out)
    if which == "journal":  # a fresh journal, src/**'s lock read from its ref, docs/** added
        assert done.returncode == 0 and len(refs) == 2
        assert sorted(lock["paths"][0] for lock in listed) == ["docs/**", "src/**"]
    else:  # the blob put there by hand is no lock of a1's: it stays, a bad record
        x = subprocess.run(["git", "hash-object", "--stdin"], input="x", text=True,
                           capture_output=True, cwd=repo, check=True).stdout.strip()  # fmt: skip
        assert list(refs.values()) == [x] and listed == []
    assert alock(repo, "acquire", "lib/**", AGENT_ID="a2").code == 0


# A claim made by plain git (a fetch of lock refs, another tool) after a write listed the
# refs under the mutex and before its transaction: made once, at the first write's apply.
_CLAIMED_UNDER = r"""
import subprocess, sys
from gitlocks.main import main
from gitlocks.store import local

apply = local.Store._apply
done = []

def claimed_under(self, table, change, scan=None):
    if not done:
        done.append(1)
        name, made = sys.argv[2], ["git", "hash-object", "-w", "--stdin"]
        if name.startswith("refs/agent-locks-meta/"):  # a commit that is no journal's
            made = ["git", "commit-tree", "HEAD^{tree}"]
        oid = subprocess.check_output(made, input=sys.argv[1], text=True).strip()
        subprocess.check_call(["git", "update-ref", name, oid])
    return apply(self, table, change, scan)

local.Store._apply = claimed_under
sys.exit(main(sys.argv[3:]))
"""


@pytest.mark.parametrize("which", ["journal", "lock"])
def test_a_ref_moved_by_plain_git_between_listing_and_write_is_decided_again(
    repo: Path, which: str
) -> None:
    """The write's compare refuses a ref moved since its listing, and the writer reads the
    table again and decides on it (docs/design.md, 4.2): what plain git wrote meanwhile is
    never written over, and the command answers instead of failing."""
    assert alock(repo, "acquire", "docs/**", AGENT_ID="a").code == 0
    held = git(repo, "for-each-ref", "--format=%(refname)", "refs/agent-locks/").split()
    if which == "journal":  # moved onto a commit that is no journal's: a fresh chain
        name, record, verb = "refs/agent-locks-meta/journal", "x", ["acquire", "src/**"]
    else:  # a's lock rewritten by hand as b's, under a's release
        name = held[0]
        rewritten = {**json.loads(git(repo, "cat-file", "blob", name)), "holder": "b"}
        record = json.dumps(rewritten, indent=2)
        verb = ["release", "--all"]
    done = subprocess.run(
        [sys.executable, "-c", _CLAIMED_UNDER, record, name, *verb],
        cwd=repo,
        env={**os.environ, "AGENT_ID": "a"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done
    assert not list((repo / ".git").rglob("*.lock"))
    if which == "lock":
        made = subprocess.run(["git", "hash-object", "--stdin"], input=record, text=True,
                              capture_output=True, cwd=repo)  # fmt: skip
        assert git(repo, "rev-parse", name).strip() == made.stdout.strip()
        assert [lock["holder"] for lock in json.loads(alock(repo, "list", "--json").out)] == ["b"]
