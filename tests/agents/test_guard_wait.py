"""The guard can wait its turn (``alock.guardWait``, docs/design.md 6.5 and 4.7): an edit of
a held file pauses until the claim is released, within the harness's hook time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import git
from support.cli import Result, alock
from support.guard import OTHER, denial, edit, guard, holders

from gitlocks.agents.repos import open_repo
from gitlocks.agents.session import guard_wait


def _waiters(repo: Path) -> list[str]:
    out = git(repo, "for-each-ref", "--format=%(refname:lstrip=2)", "refs/agent-locks/")
    return [name for name in out.split() if name.startswith("wait-")]


def test_an_edit_of_a_held_file_waits_for_its_release(repo: Path) -> None:
    git(repo, "config", "alock.guardWait", "40s")
    assert alock(repo, "acquire", "src/app.py", **OTHER).code == 0
    env = dict(os.environ)
    env.pop("AGENT_ID", None)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    feed = repo.parent / "event.json"
    feed.write_text(json.dumps(edit(repo, "src/app.py")))
    with feed.open() as stdin:
        proc = subprocess.Popen(
            ["git", "alock", "guard", "--for", "claude"],
            cwd=repo,
            env=env,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    try:
        ends = time.monotonic() + 60
        while not _waiters(repo):
            assert proc.poll() is None, (proc.returncode, proc.stdout and proc.stdout.read())
            assert time.monotonic() < ends, "the guard never waited"
            time.sleep(0.05)
        assert alock(repo, "release", "src/app.py", **OTHER).code == 0
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    got = Result(proc.returncode, out, err)
    assert got.code == 0 and got.out == "", got  # let through: the claim is the session's
    [(holder, paths)] = holders(repo).items()
    assert holder.startswith("claude-") and paths == ["src/app.py"]
    assert _waiters(repo) == []


def test_a_held_file_is_denied_at_once_without_guard_wait(repo: Path) -> None:
    assert alock(repo, "acquire", "src/app.py", **OTHER).code == 0
    got = guard(repo, edit(repo, "src/app.py"))
    assert "held by other-agent" in denial(got)
    assert _waiters(repo) == []


@pytest.mark.parametrize(
    ("setting", "harness", "seconds"),
    [(None, "claude", 0), ("0", "claude", 0), ("15s", "claude", 15), ("10m", "claude", 50),
     ("10m", "copilot", 20), ("soon", "claude", 0)],
)  # fmt: skip
def test_guard_wait_stays_below_the_hook_time(
    repo: Path, setting: str | None, harness: str, seconds: int
) -> None:
    if setting is not None:
        git(repo, "config", "alock.guardWait", setting)
    found = open_repo(str(repo))
    assert guard_wait(found, harness) == seconds
    if setting == "soon":
        assert any("alock.guardWait" in w for w in found.warnings)
