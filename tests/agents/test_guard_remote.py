"""The agent guard in remote mode: a claim met in the clone's view is asked of the lock
remote before an edit is denied, so a claim released from another clone never keeps the
agent out; when the remote cannot be asked, the denial says how old its view is."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import git
from support.cli import Result, alock, cli_env
from support.harness import StandIn
from support.remote import make_bare, make_clone
from support.servers import TRANSPORTS, serve
from test_one_holder import denied, edit, holder_of

ALICE = {"AGENT_ID": "alice"}


@pytest.fixture
def clones(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Path, Path]]:
    """Two clones of a sharded lock remote (over file://, or the transport a test names);
    the second saw alice claim src/**."""
    with contextlib.ExitStack() as stack:
        if (kind := getattr(request, "param", None)) is None:
            url = make_bare(tmp_path / "locks.git").as_uri()
        else:
            url = stack.enter_context(serve(kind, tmp_path / "served", monkeypatch)).remote().url
        theirs = make_clone(url, tmp_path / "theirs", shards=1)
        mine = make_clone(url, tmp_path / "mine")
        assert alock(theirs, "remote", "--shards", "8").code == 0
        assert alock(theirs, "acquire", "src/**", "-m", "auth", **ALICE).code == 0
        assert alock(mine, "sync").code == 0
        yield theirs, mine


@pytest.fixture
def agent(tmp_path: Path, clones: tuple[Path, Path]) -> Iterator[StandIn]:
    one = StandIn(tmp_path / "bin", "claude", clones[1])
    yield one
    one.close()


def remote_holders(clone: Path, path: str) -> list[str]:
    assert alock(clone, "sync").code == 0
    [item] = alock(clone, "check", path, "--json").json()
    return [lock["holder"] for lock in item["locks"]]


@pytest.mark.parametrize("clones", TRANSPORTS, indirect=True)
def test_a_claim_released_from_another_clone_no_longer_denies(
    clones: tuple[Path, Path], agent: StandIn
) -> None:
    theirs, mine = clones
    me = holder_of(agent, mine)
    assert alock(theirs, "release", "src/**", **ALICE).code == 0
    assert denied(agent.guard(edit(mine, "src/app.py"))) == ""
    assert remote_holders(theirs, "src/app.py") == [me]


def test_a_live_claim_is_still_denied_naming_its_holder(
    clones: tuple[Path, Path], agent: StandIn
) -> None:
    _, mine = clones
    holder_of(agent, mine)
    reason = denied(agent.guard(edit(mine, "src/app.py")))
    assert "held by alice" in reason and "lock view" not in reason, reason


def test_an_unreachable_lock_remote_leaves_the_denial_saying_how_old_its_view_is(
    tmp_path: Path, clones: tuple[Path, Path], agent: StandIn
) -> None:
    theirs, mine = clones
    holder_of(agent, mine)
    assert alock(theirs, "release", "src/**", **ALICE).code == 0
    git(mine, "config", "remote.origin.url", (tmp_path / "gone.git").as_uri())
    reason = denied(agent.guard(edit(mine, "src/app.py")))
    assert "held by alice" in reason, reason
    assert "lock view from " in reason and "could not reach origin" in reason, reason


def test_a_silent_lock_remote_holds_the_edit_only_briefly(
    clones: tuple[Path, Path], agent: StandIn
) -> None:
    _, mine = clones
    holder_of(agent, mine)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        git(mine, "config", "remote.origin.url", f"git://127.0.0.1:{port}/locks.git")
        proc = subprocess.run(
            ["sh", "-c", "git alock guard --for claude"],
            input=json.dumps(edit(mine, "src/app.py")),
            cwd=mine,
            env=cli_env(),
            capture_output=True,
            text=True,
            timeout=25,  # far more than alock.guardRemoteTimeout, less than remoteTimeout
        )
    reason = denied(Result(proc.returncode, proc.stdout, proc.stderr))
    assert "held by alice" in reason and "could not reach origin" in reason, reason


def session_start(agent: StandIn, clone: Path) -> str:
    got = agent.guard({"session_id": "s", "cwd": str(clone), "hook_event_name": "SessionStart"})
    assert got.code == 0, got
    return str(json.loads(got.out)["hookSpecificOutput"]["additionalContext"])


def test_session_start_names_the_claims_the_lock_remote_holds_now(
    tmp_path: Path, clones: tuple[Path, Path], agent: StandIn
) -> None:
    theirs, mine = clones
    assert alock(theirs, "acquire", "docs/**", AGENT_ID="bob").code == 0
    assert alock(theirs, "release", "src/**", **ALICE).code == 0
    told = session_start(agent, mine)
    assert "docs/** held by bob" in told and "alice" not in told, told
    # Unreachable: what the clone last saw, said to be so.
    git(mine, "config", "remote.origin.url", (tmp_path / "gone.git").as_uri())
    told = session_start(agent, mine)
    assert "as this clone last saw them: lock view from " in told, told
    assert "could not reach origin" in told
