"""Every outcome of a push told truly: a push whose answer never came back is settled by
asking the remote; a failure on the remote's side is told apart from a host refusing the
lock refs, with git's own reason."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import git
from support.cli import alock, alock_cli, finish
from support.daemon import Misreporting, free_port
from support.remote import (
    daemon,
    make_bare,
    make_clone,
    refs_of,
    remote_events,
    remote_locks,
)
from support.servers import Host, host

from gitlocks.git.remote import GitRun, never_sent, porcelain, remote_side, summarise

__all__ = ["daemon", "host"]  # the fixture, imported so pytest finds it

A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}


def _kill_receive_pack(bare: Path, state: str) -> None:
    """Make the remote's receive-pack die (SIGKILL) when its ref transaction reaches
    ``state``: "committed" is after the refs moved, before the client hears of it;
    "prepared" is before anything moved."""
    hook = bare / "hooks" / "reference-transaction"
    hook.write_text(f'#!/bin/sh\nif [ "$1" = {state} ]; then kill -9 "$PPID"; fi\n')
    hook.chmod(0o755)


def _unhook(bare: Path) -> None:
    (bare / "hooks" / "reference-transaction").unlink()
    for stale in (bare / "refs").rglob("*.lock"):  # what the killed receive-pack left
        stale.unlink()


@pytest.fixture
def served(host: Host) -> tuple[Path, str]:
    remote = host.remote()
    return remote.bare, remote.url


def test_server_killed_after_the_update_the_claim_landed_and_is_told(
    served: tuple[Path, str], tmp_path: Path
) -> None:
    bare, url = served
    a = make_clone(url, tmp_path / "a", shards=1)
    b = make_clone(url, tmp_path / "b")
    _kill_receive_pack(bare, "committed")
    got = alock(a, "acquire", "src/**", "-m", "work", **A)
    assert got.code == 0, got.err
    assert got.word.startswith("ACQUIRED"), got.out
    assert [r.paths for r in remote_locks(bare).values()] == [("src/**",)]
    _unhook(bare)
    assert alock(a, "list", "--json").json()[0]["paths"] == ["src/**"]  # the view followed
    assert alock(b, "acquire", "src/x.py", **B).code == 1
    assert alock(a, "release", "src/**", **A).code == 0


def test_server_killed_before_the_update_nothing_landed_and_is_told(
    served: tuple[Path, str], tmp_path: Path
) -> None:
    bare, url = served
    a = make_clone(url, tmp_path / "a", shards=1)
    _kill_receive_pack(bare, "prepared")
    before = refs_of(a)
    got = alock(a, "acquire", "src/**", **A)
    assert got.code == 2, got.out
    assert "did not land" in got.err and "nothing was written" in got.err
    assert "refused the lock refs" not in got.err
    assert remote_locks(bare) == {}
    assert refs_of(a) == before
    _unhook(bare)
    assert alock(a, "acquire", "src/**", **A).code == 0


def test_remote_missing_objects_is_its_own_failure_not_a_refusal(
    tmp_path: Path,
) -> None:
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a")
    assert alock(a, "acquire", "docs/**", **A).code == 0
    # The remote lost its objects (a broken disk, a repack gone wrong): it cannot take a
    # push that builds on what it no longer has.
    shutil.rmtree(bare / "objects")
    (bare / "objects" / "pack").mkdir(parents=True)
    (bare / "objects" / "info").mkdir()
    got = alock(a, "acquire", "src/**", **A)
    assert got.code == 2, got.out
    assert "refused the lock refs" not in got.err
    assert "failed on its own side" in got.err and "missing necessary objects" in got.err


def test_git_reasons_are_kept_and_sorted() -> None:
    unpack = GitRun(
        1,
        "!\tab:refs/agent-locks-meta/journal\t[remote rejected] (unpacker error)\n",
        "error: remote unpack failed: unable to create temporary object directory\n"
        "error: failed to push some refs to 'git://h/locks.git'\n",
    )
    lines = porcelain(unpack.out)
    assert remote_side(lines, unpack.err) == "unable to create temporary object directory"
    missing = porcelain("!\tab:refs/agent-locks/x\t[remote rejected] (missing necessary objects)")
    assert remote_side(missing, "") == "missing necessary objects"
    hidden = porcelain("!\tab:refs/agent-locks/x\t[remote rejected] (deny updating a hidden ref)")
    assert remote_side(hidden, "") is None
    refused = "fatal: unable to connect to 127.0.0.1:\n"
    refused += "127.0.0.1[0: 127.0.0.1]: errno=Connection refused\n"
    assert "errno=Connection refused" in summarise(refused)
    assert never_sent(refused)
    assert not never_sent(
        "send-pack: unexpected disconnect while reading sideband packet\n"
        "fatal: the remote end hung up unexpectedly\n"
    )
    # The remote's hooks speak in git's words too: never read as git's own.
    assert not never_sent("remote: mirror: connection refused\n")
    assert never_sent("git@h: Permission denied (publickey).\nfatal: Could not read from remote")
    assert never_sent("fatal: The remote end hung up upon initial contact\n")


def test_a_push_cut_off_after_the_remote_spoke_is_settled_whatever_it_said(
    host: Host, served: tuple[Path, str], tmp_path: Path
) -> None:
    """What the remote said before the connection broke is its hooks' text, never proof
    that nothing was sent: words like git's for a connection that never opened included."""
    bare, url = served
    # Over smart HTTP git's push itself never ends once receive-pack died after its hook
    # spoke (git 2.39): alock.remoteTimeout ends it, then the remote is asked. A shorter
    # bound than the default keeps the test quick; the outcome is the same.
    config = {"alock.remoteTimeout": "10s"} if host.name == "http" else {}
    a = make_clone(url, tmp_path / "a", config=config)
    hook = bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\ncat >/dev/null\necho 'mirror: could not resolve host' >&2\n")
    hook.chmod(0o755)
    _kill_receive_pack(bare, "committed")
    got = alock(a, "acquire", "src/**", "-m", "work", **A)
    assert got.code == 0, got.err
    assert [r.paths for r in remote_locks(bare).values()] == [("src/**",)]
    _unhook(bare)
    assert alock(a, "list", "--json").json()[0]["paths"] == ["src/**"]  # the view followed


def test_a_ref_the_report_leaves_out_is_settled_by_asking(tmp_path: Path) -> None:
    """A remote whose report names no verdict for a ref it was sent ("remote failed to
    report status", git says) may have applied the push: ask it, as when no answer came."""
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a")
    misreporting = Misreporting(
        bare, lambda lines: [ln for ln in lines if b"agent-locks/" not in ln]
    )
    try:
        git(a, "config", "remote.origin.pushurl", misreporting.url)
        got = alock(a, "acquire", "src/**", "-m", "work", **A)
    finally:
        misreporting.close()
    assert got.code == 0, got.err
    assert [r.paths for r in remote_locks(bare).values()] == [("src/**",)]
    assert alock(a, "list", "--json").json()[0]["paths"] == ["src/**"]  # the view followed


@pytest.mark.parametrize("shards", [0, 4])
def test_a_journal_that_landed_beside_a_refused_lock_ref_is_the_answer(
    tmp_path: Path, shards: int
) -> None:
    """git's receive-pack refuses a ref it hides (receive.hideRefs) before its atomic
    transaction begins, and applies the rest: the journal, which is the table, moved. The
    claim is told as what the remote holds, never as refused."""
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    if shards:
        assert alock(a, "remote", "--shards", str(shards)).code == 0
    b = make_clone(bare.as_uri(), tmp_path / "b")
    # Set on a remote in use: switching to one that hides the lock refs is refused.
    git(bare, "config", "receive.hideRefs", "refs/agent-locks")
    got = alock(a, "acquire", "src/**", "-m", "work", **A)
    assert got.code == 0, got.err
    if not shards:  # the journal's own events (a sharded remote's are its shards')
        assert [e for e in remote_events(bare) if e.get("paths") == ["src/**"]]
    assert alock(a, "list", "--json").json()[0]["paths"] == ["src/**"]
    assert alock(b, "acquire", "src/x.py", **B).code == 1
    assert alock(a, "release", "src/**", **A).code == 0
    assert alock(b, "acquire", "src/x.py", **B).code == 0


def _refused_transport(kind: str, tmp_path: Path) -> tuple[str, dict[str, str]]:
    """A remote URL, and config, that git refuses before it sends anything."""
    if kind == "connection refused":
        return f"git://127.0.0.1:{free_port()}/locks.git", {}
    if kind == "unknown host":
        return "git://nowhere.invalid/locks.git", {}
    if kind == "bad url":
        return "htps://nowhere.invalid/locks.git", {}
    if kind == "no repository":
        return str(tmp_path / "gone.git"), {}
    # ssh whose server refuses the key, as OpenSSH says it
    ssh = "echo 'git@h.invalid: Permission denied (publickey).' >&2; exit 255; :"
    return "ssh://git@h.invalid/locks.git", {"core.sshCommand": ssh}


@pytest.mark.parametrize(
    "kind", ["connection refused", "unknown host", "bad url", "no repository", "auth refused"]
)
def test_a_push_git_never_sent_is_told_as_nothing_sent(tmp_path: Path, kind: str) -> None:
    """When git refuses the transport (connection refused, unknown host, bad URL, no such
    repository, credentials refused), no command went out: the claim says nothing was sent
    and nothing changed, never that the push may have landed, and nothing moves locally."""
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a")
    assert alock(a, "acquire", "src/**", **A).code == 0
    url, config = _refused_transport(kind, tmp_path)
    git(a, "config", "remote.origin.url", url)
    for key, value in config.items():
        git(a, "config", key, value)
    before = refs_of(a)
    got = alock(a, "acquire", "docs/**", **A)
    assert got.code == 2, got
    assert "Nothing was sent and nothing changed" in got.err, got.err
    assert "may have landed" not in got.err and "Traceback" not in got.err
    assert refs_of(a) == before
    assert [r.paths for r in remote_locks(bare).values()] == [("src/**",)]


@pytest.mark.parametrize("form", ["path", "file://"])
def test_a_remote_that_talks_without_end_and_git_traces_neither_hang_nor_flood_a_claim(
    tmp_path: Path, form: str
) -> None:
    """The remote's hooks say 25 MB (git relays it as ``remote: ...``) and GIT_TRACE_PACKET
    and GIT_TRACE are set: the claim, which holds the store's mutex while it pushes, lands
    and ends, and its own output stays small."""
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(str(bare) if form == "path" else bare.as_uri(), tmp_path / "a")
    hook = bare / "hooks" / "pre-receive"
    talk = "head -c 26214400 /dev/zero | tr '\\0' x >&2"
    hook.write_text(f"#!/bin/sh\ncat >/dev/null\n{talk}\necho >&2\n")
    hook.chmod(0o755)
    traced = {"AGENT_ID": "agent-a", "GIT_TRACE_PACKET": "1", "GIT_TRACE": "1"}
    got = finish(alock_cli(a, "acquire", "src/**", "-m", "work", env=traced), timeout=300)
    assert got.code == 0, got.err[-2000:]
    assert len(got.out) + len(got.err) < 64 * 1024
    assert [r.paths for r in remote_locks(bare).values()] == [("src/**",)]


def test_a_remote_that_dribbles_ends_the_claim_at_its_bound(tmp_path: Path) -> None:
    """A remote saying a byte now and then (for a minute, then nothing) is cut off at
    alock.remoteTimeout however often it speaks: the bound is on the whole push, and the
    claim ends there with nothing changed locally."""
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(str(bare), tmp_path / "a")
    assert alock(a, "acquire", "src/**", **A).code == 0
    dribble = "i=0; while [ $i -lt 600 ]; do printf . >&2; sleep 0.1; i=$((i+1)); done; exit 1"
    git(a, "config", "remote.origin.receivepack", f"{dribble}; :")
    git(a, "config", "alock.remoteTimeout", "1s")
    before = refs_of(a)
    got = alock(a, "acquire", "docs/**", **A)
    assert got.code == 2, got
    assert "timed out after 1s (alock.remoteTimeout)" in got.err, got.err
    assert refs_of(a) == before
    assert [r.paths for r in remote_locks(bare).values()] == [("src/**",)]
