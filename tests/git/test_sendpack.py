"""gitlocks' own push (``gitlocks.git.sendpack``) against the real ``receive-pack``, over a
loopback ``git daemon`` and on a local repository: it must answer exactly as ``git push
--atomic --porcelain --force-with-lease`` answers the same push, move the remote's refs
the same way, and leave to git everything it does not speak."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cli import alock
from support.daemon import Daemon
from support.remote import make_bare, make_clone, pushed_by_git, refs_of

from gitlocks.git import sendpack
from gitlocks.git.connect import Local, Reader, pkt
from gitlocks.git.remote import GitRun, lost_race, never_sent, porcelain, remote_side, run_git
from gitlocks.git.settings import Settings

ZERO = "0" * 40


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Daemon]:
    base = tmp_path / "served"
    base.mkdir()
    with Daemon(base) as running:
        yield running


def _source(tmp_path: Path) -> tuple[Path, list[str]]:
    """A repository with three commits, the objects a push sends."""
    src = tmp_path / "src"
    git(tmp_path, "init", "-q", src.name)
    commits = []
    for n in range(3):
        (src / "f.txt").write_text(f"{n}\n")
        git(src, "add", "-A")
        git(src, "commit", "-q", "-m", f"c{n}")
        commits.append(git(src, "rev-parse", "HEAD").strip())
    return src, commits


def _native(src: Path, url: str, leases: dict[str, str | None], specs: list[str]) -> GitRun:
    where = sendpack.parse_url(url)
    assert where is not None
    session = sendpack.Session(where, 20)
    wanted = [(s.partition(":")[0] or None, s.partition(":")[2]) for s in specs]

    def pack(tips: list[str], known: list[str], ofs: bool) -> bytes:
        return sendpack.pack_objects(str(src / ".git"), tips, known, ofs, 20)

    try:
        run = session.push(leases, wanted, ZERO, "sha1", pack)
    finally:
        session.close()
    assert run is not None
    return run


def _git_push(src: Path, url: str, leases: dict[str, str | None], specs: list[str]) -> GitRun:
    flags = [f"--force-with-lease={ref}:{value or ''}" for ref, value in leases.items()]
    args = ["push", "--atomic", "--porcelain", "--no-verify", *flags, url, *specs]
    return run_git(str(src / ".git"), args, remote="origin", what="push to", timeout=20)


def _told(run: GitRun) -> list[tuple[str, str, str]]:
    """What a push said per ref: its flag, and its reason where it was refused. An update
    is one ("+"): ours never asks whether it was a fast-forward (" ", to git)."""
    lines = porcelain(run.out)
    flag = {" ": "+"}
    return sorted((flag.get(ln.flag, ln.flag), ln.ref, ln.reason if ln.flag == "!" else "")
                  for ln in lines)  # fmt: skip


def _twins(tmp_path: Path, served: Daemon, transport: str) -> tuple[str, Path, str, Path]:
    """Two equal bare remotes: one for git push, one for ours (URLs and paths)."""
    if transport == "daemon":
        first = make_bare(served.base / "a.git")
        second = served.base / "b.git"
        shutil.copytree(first, second, symlinks=True)
        return served.url("a.git"), first, served.url("b.git"), second
    first = make_bare(tmp_path / "a.git")
    second = tmp_path / "b.git"
    shutil.copytree(first, second, symlinks=True)
    return first.as_uri(), first, str(second), second


Before = dict[str, str]
Push = tuple[dict[str, str | None], list[str]]
CASES: dict[str, tuple[Before, Push]] = {
    # name: refs set on both remotes first, then (leases, specs) of the push compared
    "create": ({}, ({"refs/x/one": None, "refs/x/two": None}, ["C2:refs/x/one", "C1:refs/x/two"])),
    "update": ({"refs/x/one": "C0"}, ({"refs/x/one": "C0"}, ["C2:refs/x/one"])),
    "stale lease, nothing moves": (
        {"refs/x/one": "C0", "refs/x/two": "C0"},
        ({"refs/x/one": "C1", "refs/x/two": "C0"}, ["C2:refs/x/one", "C2:refs/x/two"]),
    ),
    "must not exist, but does": (
        {"refs/x/one": "C0"},
        ({"refs/x/one": None, "refs/x/two": None}, ["C2:refs/x/one", "C2:refs/x/two"]),
    ),
    "already there": (
        {"refs/x/one": "C2", "refs/x/two": "C0"},
        ({"refs/x/one": "C0", "refs/x/two": "C0"}, ["C2:refs/x/one", "C1:refs/x/two"]),
    ),
    "everything already there": ({"refs/x/one": "C2"}, ({"refs/x/one": None}, ["C2:refs/x/one"])),
    "delete": (
        {"refs/x/one": "C0", "refs/x/two": "C1"},
        ({"refs/x/one": "C0", "refs/x/two": "C1"}, [":refs/x/one", "C2:refs/x/two"]),
    ),
    "blob refs": ({}, ({"refs/x/blob": None}, ["BLOB:refs/x/blob"])),
}


@pytest.mark.parametrize("transport", ["daemon", "local"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_it_answers_and_moves_refs_as_git_push_does(
    tmp_path: Path, served: Daemon, transport: str, case: str
) -> None:
    src, commits = _source(tmp_path)
    blob = git(src, "rev-parse", "HEAD:f.txt").strip()
    names = {"C0": commits[0], "C1": commits[1], "C2": commits[2], "BLOB": blob}

    def named(text: str) -> str:
        for key, oid in names.items():
            text = text.replace(key, oid)
        return text

    url_git, bare_git, url_ours, bare_ours = _twins(tmp_path, served, transport)
    before, (leases, specs) = CASES[case]
    for bare in (bare_git, bare_ours):
        if before:
            moves = [f"{named(v)}:{r}" for r, v in before.items()]
            git(src, "push", "-q", "--force", str(bare), *moves)
    leases = {ref: named(v) if v else None for ref, v in leases.items()}
    specs = [named(s) for s in specs]

    theirs = _git_push(src, url_git, leases, specs)
    ours = _native(src, url_ours, leases, specs)

    assert _told(ours) == _told(theirs)
    assert (ours.code == 0) == (theirs.code == 0)
    assert refs_of(bare_ours) == refs_of(bare_git)
    git(bare_ours, "fsck", "--no-dangling")


@pytest.mark.parametrize("transport", ["daemon", "local"])
def test_a_refusing_hook_is_told_with_its_words(
    tmp_path: Path, served: Daemon, transport: str
) -> None:
    src, commits = _source(tmp_path)
    url_git, bare_git, url_ours, bare_ours = _twins(tmp_path, served, transport)
    for bare in (bare_git, bare_ours):
        hook = bare / "hooks" / "pre-receive"
        hook.write_text("#!/bin/sh\ncat >/dev/null\necho 'alock: not today' >&2\nexit 1\n")
        hook.chmod(0o755)
    leases: dict[str, str | None] = {"refs/x/one": None}
    theirs = _git_push(src, url_git, leases, [f"{commits[2]}:refs/x/one"])
    ours = _native(src, url_ours, leases, [f"{commits[2]}:refs/x/one"])
    assert _told(ours) == _told(theirs) == [("!", "refs/x/one", "pre-receive hook declined")]
    assert "remote: alock: not today" in ours.err
    assert ours.code != 0
    assert refs_of(bare_ours) == refs_of(bare_git)


@pytest.mark.parametrize("transport", ["daemon", "local"])
def test_a_ref_moved_after_the_advertisement_loses_the_race_on_the_remote(
    tmp_path: Path, served: Daemon, transport: str
) -> None:
    """The lease holds against what was advertised; the remote's own compare, under its
    ref lock, catches the write that came in between: nothing of ours lands."""
    src, commits = _source(tmp_path)
    url, bare, _, _ = _twins(tmp_path, served, transport)
    git(src, "push", "-q", str(bare), f"{commits[0]}:refs/x/one")
    where = sendpack.parse_url(url)
    assert where is not None
    session = sendpack.Session(where, 20)
    assert session.advertised() == {"refs/heads/main": git(bare, "rev-parse", "main").strip(),
                                    "refs/x/one": commits[0]}  # fmt: skip
    git(src, "push", "-q", str(bare), f"{commits[1]}:refs/x/one", f"{commits[1]}:refs/x/two")

    def pack(tips: list[str], known: list[str], ofs: bool) -> bytes:
        return sendpack.pack_objects(str(src / ".git"), tips, known, ofs, 20)

    wanted: list[tuple[str | None, str]] = [
        (commits[2], "refs/x/one"),
        (commits[2], "refs/x/three"),
    ]
    run = session.push({"refs/x/one": commits[0], "refs/x/three": None}, wanted, ZERO, "sha1", pack)
    session.close()
    assert run is not None and run.code != 0
    assert lost_race(porcelain(run.out))
    assert git(bare, "rev-parse", "refs/x/one").strip() == commits[1]
    assert git(bare, "for-each-ref", "refs/x/three") == ""


def test_a_remote_without_atomic_pushes_says_so(tmp_path: Path, served: Daemon) -> None:
    src, commits = _source(tmp_path)
    bare = make_bare(served.base / "a.git", **{"receive.advertiseAtomic": "false"})
    run = _native(src, served.url("a.git"), {"refs/x/one": None}, [f"{commits[0]}:refs/x/one"])
    assert "does not support --atomic" in run.err
    assert git(bare, "for-each-ref", "refs/x") == ""


@pytest.mark.parametrize("transport", ["daemon", "local"])
def test_an_unpack_failure_is_the_remotes_own(
    tmp_path: Path, served: Daemon, transport: str
) -> None:
    """A remote that cannot store the pack says so, and nothing moves. (git push, still
    sending when the remote gives up, may only see the connection reset.)"""
    src, commits = _source(tmp_path)
    url, bare, _, _ = _twins(tmp_path, served, transport)
    git(bare, "config", "receive.maxInputSize", "10")
    before = refs_of(bare)
    run = _native(src, url, {"refs/x/one": None}, [f"{commits[2]}:refs/x/one"])
    lines = porcelain(run.out)
    assert run.code != 0
    assert [(ln.flag, ln.ref) for ln in lines] == [("!", "refs/x/one")]
    assert remote_side(lines, run.err) == "unpack-objects abnormal exit", run.err
    assert "remote: fatal: pack exceeds maximum allowed size" in run.err
    assert refs_of(bare) == before


def test_nothing_listening_is_a_push_never_sent(tmp_path: Path) -> None:
    src, commits = _source(tmp_path)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nobody listens there
    run = _native(
        src, f"git://127.0.0.1:{port}/x.git", {"refs/x/one": None}, [f"{commits[0]}:refs/x/one"]
    )
    assert run.code != 0 and not porcelain(run.out)
    assert never_sent(run.err), run.err


@pytest.mark.parametrize("transport", ["daemon", "local"])
def test_a_missing_repository_is_a_push_never_sent(
    tmp_path: Path, served: Daemon, transport: str
) -> None:
    src, commits = _source(tmp_path)
    url = served.url("nothing.git") if transport == "daemon" else str(tmp_path / "nothing.git")
    leases: dict[str, str | None] = {"refs/x/one": None}
    theirs = _git_push(src, url, leases, [f"{commits[0]}:refs/x/one"])
    ours = _native(src, url, leases, [f"{commits[0]}:refs/x/one"])
    assert ours.code != 0 and not porcelain(ours.out)
    assert never_sent(ours.err) == never_sent(theirs.err), (ours.err, theirs.err)
    said = next(ln for ln in theirs.err.splitlines() if ln.startswith("fatal:"))
    assert said in ours.err


def test_a_push_that_could_not_start_git_is_a_push_never_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No receive-pack could be started (no git, no descriptors left): nothing was sent,
    and the store must not ask the remote whether it landed (and say it may have)."""
    src, commits = _source(tmp_path)
    bare = make_bare(tmp_path / "r.git")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    ours = _native(src, str(bare), {"refs/x/one": None}, [f"{commits[0]}:refs/x/one"])
    assert ours.code == 128 and not porcelain(ours.out)
    assert never_sent(ours.err), ours.err


def test_a_silent_remote_times_out(tmp_path: Path) -> None:
    """A connection that opens and never answers ends at the deadline, not later."""
    _, commits = _source(tmp_path)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(4)  # connections are taken, nothing is ever said
        where = sendpack.parse_url(f"git://127.0.0.1:{sock.getsockname()[1]}/x.git")
        assert where is not None
        session = sendpack.Session(where, 0.5)
        with pytest.raises(TimeoutError):
            session.push({"refs/x/one": None}, [(commits[0], "refs/x/one")], ZERO, "sha1",
                         lambda *_: b"")  # fmt: skip
        session.close()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("git://example.org/locks.git", ("example.org", 9418, "/locks.git")),
        ("git://127.0.0.1:9999/a/b.git", ("127.0.0.1", 9999, "/a/b.git")),
        ("git://[::1]:9999/x.git", ("::1", 9999, "/x.git")),
        ("git://host/~user/x.git", ("host", 9418, "/~user/x.git")),
        ("file:///srv/locks.git", (None, 9418, "/srv/locks.git")),
        ("/srv/locks.git", (None, 9418, "/srv/locks.git")),
        ("../locks.git", (None, 9418, "../locks.git")),
        ("/srv/a:b.git", (None, 9418, "/srv/a:b.git")),
        ("ssh://host/x.git", None),
        ("host:x.git", None),
        ("git@host:x.git", None),
        ("https://host/x.git", None),
        ("ext::ssh host x", None),
        ("file://host/srv/x.git", None),
        ("git://host/x%20y.git", None),
        ("git://host:0/x.git", None),
        ("git://host:99999/x.git", None),
        ("git://host:\u00b2/x.git", None),  # a digit int() refuses: git's to say
        ("git://host:\u0661\u0662/x.git", None),  # Arabic-Indic 12: no port git reads
        ("git://user@host/x.git", None),
        ("git://host", None),
        ("git://bücher.example/x.git", None),
        ("--stateless-rpc", None),
        ("-x.git", None),
        ("", None),
    ],
)
def test_only_git_and_local_urls_are_its_own(url: str, expected: tuple[object, ...] | None) -> None:
    where = sendpack.parse_url(url)
    assert (None if where is None else (where.host, where.port, where.path)) == expected


def _settings(**values: str) -> Settings:
    return Settings({"remote.origin.url": "git://127.0.0.1/x.git", **values})


@pytest.mark.parametrize(
    ("values", "env", "ours"),
    [
        ({}, {}, True),
        ({"url.git://other/.insteadOf": "git://127.0.0.1/"}, {}, False),
        ({"url.ssh://h/.pushInsteadOf": "git://127.0.0.1/"}, {}, False),
        ({"remote.origin.receivepack": "git receive-pack"}, {}, False),
        ({"remote.origin.pushurl": "ssh://host/x.git"}, {}, False),
        ({"remote.origin.pushurl": "/srv/x.git"}, {}, True),
        ({"core.gitProxy": "proxy-command"}, {}, False),
        ({}, {"GIT_PROXY_COMMAND": "proxy-command"}, False),
        ({"push.gpgSign": "true"}, {}, False),
        ({"push.pushOption": "ci.skip"}, {}, False),
        ({"protocol.git.allow": "never"}, {}, False),
        ({"protocol.allow": "never"}, {}, False),
        ({"protocol.allow": "never", "protocol.git.allow": "always"}, {}, True),
        ({"protocol.git.allow": "user"}, {"GIT_PROTOCOL_FROM_USER": "0"}, False),
        ({"protocol.git.allow": "user"}, {}, True),
        ({}, {"GIT_ALLOW_PROTOCOL": "file:ssh"}, False),
        ({}, {"GIT_ALLOW_PROTOCOL": "file:git"}, True),
    ],
)
def test_git_keeps_every_push_it_would_make_differently(
    values: dict[str, str], env: dict[str, str], ours: bool
) -> None:
    assert (sendpack.target(_settings(**values), "origin", env) is not None) is ours


def test_a_local_remote_follows_protocol_file_allow() -> None:
    local = Settings({"remote.origin.url": "/srv/x.git"})
    assert sendpack.target(local, "origin", {}) is not None
    assert sendpack.target(local, "origin", {"GIT_PROTOCOL_FROM_USER": "0"}) is None
    never = Settings({"remote.origin.url": "/srv/x.git", "protocol.file.allow": "never"})
    assert sendpack.target(never, "origin", {}) is None


def test_several_urls_are_pushed_by_git() -> None:
    raw = b"remote.origin.url\ngit://a/x.git\0remote.origin.url\ngit://b/x.git\0"
    assert sendpack.target(Settings.parse(raw), "origin", {}) is None


def _trace(clone: Path, *args: str, **env: str) -> tuple[int, list[str]]:
    """Run ``git alock ARGS`` as a process; its exit code and the git commands it ran."""
    trace = clone.parent / "trace.txt"
    trace.unlink(missing_ok=True)
    full = {**os.environ, "GIT_TRACE": str(trace), "AGENT_ID": "agent-a", **env}
    proc = subprocess.run(["git", "alock", *args], cwd=clone, env=full, capture_output=True)
    ran = [
        ln.split("built-in: ", 1)[1] for ln in trace.read_text().splitlines() if "built-in: " in ln
    ]
    return proc.returncode, ran


@pytest.mark.parametrize("transport", ["daemon", "local"])
def test_a_remote_claim_is_one_connection_of_its_own(
    tmp_path: Path, served: Daemon, transport: str
) -> None:
    """No ``git push`` and no ``ls-remote`` beside it: the claim's own connection both
    lists and pushes."""
    if transport == "daemon":
        make_bare(served.base / "locks.git")
        clone = make_clone(served.url("locks.git"), tmp_path / "clone")
    else:
        clone = make_clone(str(make_bare(tmp_path / "locks.git")), tmp_path / "clone")
    assert alock(clone, "acquire", "src/**", "-m", "first").code == 0  # the journal's first
    code, ran = _trace(clone, "acquire", "docs/**", "-m", "work")
    assert code == 0
    assert not [c for c in ran if c.startswith(("git push", "git ls-remote"))], ran
    assert "git pack-objects --stdout --revs -q --delta-base-offset" in ran
    code, ran = _trace(clone, "release", "docs/**")
    assert code == 0
    assert not [c for c in ran if c.startswith(("git push", "git ls-remote"))], ran
    listed = alock(clone, "list", "--fresh", "--json").out
    assert "docs/**" not in listed and "src/**" in listed


def test_a_push_git_must_make_is_made_by_git(tmp_path: Path, served: Daemon) -> None:
    make_bare(served.base / "locks.git")
    clone = make_clone(served.url("locks.git"), tmp_path / "clone")
    pushed_by_git(clone)
    code, ran = _trace(clone, "acquire", "docs/**", "-m", "work")
    assert code == 0
    assert [c for c in ran if c.startswith("git push")], ran
    assert not [c for c in ran if c.startswith("git receive-pack")], ran


def test_a_sha256_repository_pushes_with_its_own_ids(tmp_path: Path, served: Daemon) -> None:
    src = tmp_path / "src"
    git(tmp_path, "init", "-q", "--object-format=sha256", src.name)
    (src / "f.txt").write_text("x\n")
    git(src, "add", "-A")
    git(src, "commit", "-q", "-m", "c")
    head = git(src, "rev-parse", "HEAD").strip()
    bare = served.base / "s.git"
    git(served.base, "init", "-q", "--bare", "--object-format=sha256", bare.name)
    where = sendpack.parse_url(served.url("s.git"))
    assert where is not None
    session = sendpack.Session(where, 20)

    def pack(tips: list[str], known: list[str], ofs: bool) -> bytes:
        return sendpack.pack_objects(str(src / ".git"), tips, known, ofs, 20)

    run = session.push({"refs/x/one": None}, [(head, "refs/x/one")], "0" * 64, "sha256", pack)
    session.close()
    assert run is not None and run.code == 0, run
    assert git(bare, "rev-parse", "refs/x/one").strip() == head
    # A sha1 repository's push to it is git's to refuse, in its words: not ours to make.
    sha1 = sendpack.Session(where, 20)
    assert sha1.push({"refs/x/two": None}, [(ZERO, "refs/x/two")], ZERO, "sha1", pack) is None
    sha1.close()


def _one_answer(
    answer: bytes, report: bytes | None = None, *, hold: bool = False
) -> tuple[socket.socket, str]:
    """A listener that, to the first connection, sends ``answer`` and then closes it; with
    ``report``, it first takes the push and answers it so, then waits for the hang-up;
    with ``hold``, it says nothing more and waits for the hang-up."""
    import threading

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(4)

    def serve() -> None:
        conn, _ = sock.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(answer)
            while hold and conn.recv(65536):
                pass
            if report is not None:
                conn.recv(65536)
                conn.sendall(report)
                while conn.recv(65536):
                    pass

    threading.Thread(target=serve, daemon=True).start()
    return sock, f"git://127.0.0.1:{sock.getsockname()[1]}/x.git"


def _push_to_one_answer(
    answer: bytes, report: bytes | None = None, *, hold: bool = False
) -> GitRun:
    """A push of one new ref to a listener that answers ``answer`` (and ``report``)."""
    sock, url = _one_answer(answer, report, hold=hold)
    with sock:
        where = sendpack.parse_url(url)
        assert where is not None
        session = sendpack.Session(where, 5)
        run = session.push({"refs/x/one": None}, [("b" * 40, "refs/x/one")], ZERO, "sha1",
                           lambda *_: b"PACK")  # fmt: skip
        session.close()
    assert run is not None
    return run


@pytest.mark.parametrize(
    "answer",
    [
        b"garbage",
        b"0010not a ref\n0000",
        b"ffff" + b"x" * 10,
        b"003fzzzz5cc4b2ac04bb7fcbda7dd6b6faa7ce36de65c4e8 refs/heads/main\0report-status\n0000",
        b"0004" * 3,
        b"0013ERR go away now0000",
        b"",
    ],
)
def test_a_remote_that_speaks_no_git_is_a_push_that_never_began(answer: bytes) -> None:
    run = _push_to_one_answer(answer)
    assert run.code == 128 and not porcelain(run.out)
    assert run.err.startswith("fatal: "), run.err


@pytest.mark.parametrize("head", [b"+%03x", b" %03x", b"0_%02x"])
def test_a_length_of_other_than_four_hex_digits_is_no_git(head: bytes) -> None:
    """As git reads a pkt-line: four hexadecimal digits, no sign, blank or underscore (which
    int() would take). The advertisement is no remote we understand: nothing is sent."""
    line = b"a" * 40 + b" refs/heads/main\0report-status atomic delete-refs\n"
    run = _push_to_one_answer(head % (len(line) + 4) + line + b"0000")
    assert run.code == 128 and not porcelain(run.out)
    assert never_sent(run.err), run.err


@pytest.mark.parametrize("head", [b"+fff", b" fff", b"0_ff", b"0xff"])
def test_a_length_of_other_than_four_hex_digits_is_no_git_at_once(head: bytes) -> None:
    """A length git would not read, naming more than has come, from a server that then
    says nothing and keeps the connection open: no pkt-line, so nothing is waited for (as
    a line read by itself would be refused), and the push ends with git's error, not at
    its timeout."""
    line = b"a" * 40 + b" refs/heads/main\0report-status atomic delete-refs\n"
    run = _push_to_one_answer(pkt(line) + head + b"x" * 10, hold=True)
    assert run.code == 128 and not porcelain(run.out)
    assert never_sent(run.err), run.err


def test_a_host_name_the_resolver_never_answers_for_times_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A name is looked up within the push's deadline: a resolver that does not answer
    (a DNS server gone) holds no write, nor the agent guard, past it. The resolver here
    is the one thing stood in for: it answers only long after the deadline."""
    import _socket
    import threading

    real = _socket.getaddrinfo
    answer = threading.Event()

    def silent_resolver(host: bytes | str, *args: Any) -> Any:
        if host == b"locks.example":
            answer.wait(30)
            raise OSError("no answer")
        return real(host, *args)

    monkeypatch.setattr(_socket, "getaddrinfo", silent_resolver)
    where = sendpack.parse_url("git://locks.example/x.git")
    assert where is not None
    session = sendpack.Session(where, 0.5)
    try:
        with pytest.raises(TimeoutError):
            session.push({"refs/x/one": None}, [("a" * 40, "refs/x/one")], ZERO, "sha1",
                         lambda *_: b"")  # fmt: skip
    finally:
        answer.set()
        session.close()


def test_a_push_refused_before_sending_ends_the_conversation_cleanly(tmp_path: Path) -> None:
    """A stale lease sends nothing; the remote is told so with a flush, and its
    receive-pack ends without complaining of a hang-up."""
    src, commits = _source(tmp_path)
    bare = make_bare(tmp_path / "a.git")
    git(src, "push", "-q", str(bare), f"{commits[0]}:refs/x/one")
    session = sendpack.Session(sendpack.Target(str(bare), str(bare)), 20)
    local = session.channel
    assert isinstance(local, Local)
    run = session.push({"refs/x/one": commits[1]}, [(commits[2], "refs/x/one")], ZERO, "sha1",
                       lambda *_: b"")  # fmt: skip
    assert run is not None and _told(run) == [("!", "refs/x/one", "stale info")]
    session.close()
    assert local.proc.wait(timeout=20) == 0  # not 128: "the remote end hung up unexpectedly"


@pytest.mark.parametrize("head", [b"+00e", b" 00e", b"0_0e", b"00e"])
def test_a_report_length_is_four_hex_digits(head: bytes) -> None:
    assert sendpack._parse_report(head + b"unpack ok\n0000") is None
    assert sendpack._parse_report(b"000eunpack ok\n0000") == ("ok", {})


def test_a_side_band_git_does_not_know_ends_the_answer_as_git_ends_it() -> None:
    """A band other than 1, 2 or 3 is a stream git cannot follow: it stops there, and so
    does our push. The push was sent: the answer is one whose landing must be asked."""
    caps = b"report-status atomic delete-refs side-band-64k"
    line = b"a" * 40 + b" refs/heads/main\0" + caps + b"\n"
    advertised = b"%04x" % (len(line) + 4) + line + b"0000"
    run = _push_to_one_answer(advertised, report=b"0009\x04oops0000")
    assert run.code == 128 and not porcelain(run.out)
    assert "fatal: protocol error: bad band #4" in run.err
    assert not never_sent(run.err), run.err


# --- reading an advertisement at once, against reading it line by line -------------------

HEX = "0123456789abcdef"
REF_LINE = st.one_of(
    st.builds(  # as git writes them
        lambda oid, name: f"{oid} {name}\n".encode(),
        st.text(HEX, min_size=40, max_size=40),
        st.sampled_from(
            [
                "refs/agent-locks/1a2-3b",
                "refs/heads/main",
                "HEAD",
                "refs/x y",
                "shallow",
                "",
                "refs/é",
                "other/ref",
                "refs/a\0b",
            ]
        ),
    ),
    st.sampled_from(
        [
            b"shallow " + b"c" * 40 + b"\n",
            b"d" * 64 + b" refs/long\n",
            b"e" * 40 + b" refs/n",
            b"f" * 40 + b" refs/two\n\n",
            b"A" * 40 + b" refs/upper\n",
            b"1" * 39 + b" refs/s\n",
            b"\xff" * 40 + b" refs/bin\n",
            b"ERR nope\n",
            b"0" * 40 + b" refs/\xff\n",
            b"9" * 40 + b" refs/one\nrefs/two\n",
        ]
    ),
)


class _Chunks:
    """A channel that gives ``data`` in pieces of the sizes given, round and round."""

    def __init__(self, data: bytes, sizes: list[int]) -> None:
        self.data, self.sizes, self.pos, self.turn = data, sizes, 0, 0

    def recv(self, deadline: float) -> bytes:
        size = self.sizes[self.turn % len(self.sizes)]
        self.turn += 1
        chunk = self.data[self.pos : self.pos + size]
        self.pos += len(chunk)
        return chunk


def _said_nothing(*, kill: bool = False) -> str:
    return ""


def _advertise(lines: list[bytes], sizes: list[int]) -> tuple[object, object, object]:
    first = b"a" * 40 + b" refs/heads/main\0report-status atomic\n"
    data = b"".join(pkt(line) for line in [first, *lines]) + b"0000"
    session = sendpack.Session.__new__(sendpack.Session)
    session.refs, session.failed, session.timed_out = None, None, False
    session.channel = _Chunks(data, sizes)  # type: ignore[assignment]
    session.deadline = float("inf")
    session.close = _said_nothing  # type: ignore[method-assign]
    refs = session.advertised()
    return refs, session.failed, getattr(session, "caps", None)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(REF_LINE, max_size=12),
       sizes=st.lists(st.integers(1, 70), min_size=1, max_size=4),
       batch=st.sampled_from([1, 2, 3, 5, sendpack.BATCH_LINES]))  # fmt: skip
def test_an_advertisement_read_at_once_is_the_one_read_line_by_line(
    lines: list[bytes], sizes: list[int], batch: int
) -> None:
    """In batches of any size (a batch of ``batch`` lines, then the next)."""
    real, whole = sendpack._plain_refs, sendpack.BATCH_LINES
    try:
        sendpack.BATCH_LINES = batch
        at_once = _advertise(lines, sizes)
        sendpack.BATCH_LINES = whole
        sendpack._plain_refs = lambda _: None  # type: ignore[assignment]
        by_line = _advertise(lines, sizes)
    finally:
        sendpack._plain_refs, sendpack.BATCH_LINES = real, whole
    assert at_once == by_line


def test_an_endless_advertisement_of_one_ref_costs_no_memory_a_line() -> None:
    """A server that advertises one ref's line again and again (300,000 times here, some
    18 MB): what is kept grows with the refs, not the lines, as when each line was read
    by itself (all of them were held until the flush)."""
    import threading
    import tracemalloc

    first = pkt(b"a" * 40 + b" refs/heads/main\0report-status atomic\n")
    again = pkt(b"b" * 40 + b" refs/heads/main\n") * 300_000
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)

    def serve() -> None:
        conn, _ = sock.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(first)
            conn.sendall(again)
            conn.sendall(b"0000")
            while conn.recv(65536):
                pass

    threading.Thread(target=serve, daemon=True).start()
    with sock:
        where = sendpack.parse_url(f"git://127.0.0.1:{sock.getsockname()[1]}/x.git")
        assert where is not None
        session = sendpack.Session(where, 60)
        tracemalloc.start()
        try:
            refs = session.advertised()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
            session.close()
    assert refs == {"refs/heads/main": "b" * 40}
    assert peak < 8 << 20, f"{peak >> 20} MiB held reading one ref's lines"


@pytest.mark.parametrize(
    "bad", [b"not a ref\n", b"a" * 40 + b" refs/x y\n", b"shallow x\n", b"b" * 41 + b" refs/z\n"]
)
def test_a_line_git_would_refuse_is_refused_before_the_server_says_more(bad: bytes) -> None:
    """The advertisement's lines are judged as they come: a line that is no "<id> <name>",
    from a server that then says nothing and keeps the connection open, ends the push at
    once with git's protocol error (it waited for the flush until the push timed out)."""
    first = b"a" * 40 + b" refs/heads/main\0report-status atomic delete-refs\n"
    run = _push_to_one_answer(
        pkt(first) + pkt(b"c" * 40 + b" refs/heads/x\n") + pkt(bad), hold=True
    )
    assert run.code == 128 and not porcelain(run.out)
    assert run.err.startswith("fatal: protocol error: expected sha/ref"), run.err


def test_a_name_with_a_newline_in_it_is_read_as_line_by_line() -> None:
    """One line's name holds a newline and the next has none: as many newlines as lines,
    yet each name is its own line's, never shifted onto the next line's id."""
    lines = [b"1" * 40 + b" refs/agent-locks/a\nrefs/agent-locks/b\n", b"2" * 40 + b" refs/c"]
    refs, failed, _ = _advertise(lines, [70])
    assert failed is None
    assert refs == {
        "refs/heads/main": "a" * 40,
        "refs/agent-locks/a\nrefs/agent-locks/b": "1" * 40,
        "refs/c": "2" * 40,
    }


# Heads git would not read (a sign, a blank, an underscore: int() takes them), each with a
# line's worth after it, beside well-formed lines, flushes and short or odd lengths.
ODD_HEADS = [b"+00a", b" 00a", b"0_0a", b"00a ", b"+000", b"000 ", b"-004", b"zzzz", b"00A"]
STREAM = st.lists(
    st.one_of(
        st.binary(max_size=20).map(pkt),
        st.sampled_from(ODD_HEADS).map(lambda head: head + b"abcdef"),
        st.sampled_from(
            [b"0000", b"0004", b"0003", b"0008ERR ", b"0009ERR x", b"00ff", b"0005", b"000A1234567"]
        ),
    ),
    max_size=10,
).map(b"".join)


def _line_by_line(reader: Reader) -> list[bytes]:
    lines = []
    while (line := reader.read()) is not None:
        lines.append(line)
        if line.startswith(b"ERR "):
            break
    return lines


def _in_batches(reader: Reader, most: int) -> list[bytes]:
    """``read_section`` called again and again, ``most`` lines at most and eager, until it
    reads to the end of the section."""
    lines: list[bytes] = []
    while not reader.ended:
        lines += reader.read_section(most=most, eager=True)
    return lines


@settings(max_examples=1000, deadline=None)
@given(data=STREAM, sizes=st.lists(st.integers(1, 9), min_size=1, max_size=3),
       most=st.integers(1, 4))  # fmt: skip
def test_a_section_read_at_once_is_the_one_read_pkt_line_by_pkt_line(
    data: bytes, sizes: list[int], most: int
) -> None:
    """``read_section`` against ``read`` in a loop, over any bytes in any pieces: the same
    lines, the same end of stream, and the same bytes left for what is read next; read
    whole, or in batches of ``most`` lines or of what came before it would wait."""
    outcomes = []
    readers = (lambda r: r.read_section(), lambda r: _in_batches(r, most), _line_by_line)
    for read in readers:
        reader = Reader(_Chunks(data, sizes), float("inf"))  # type: ignore[arg-type]
        try:
            got: object = read(reader)
        except EOFError:
            got = EOFError
        rest = None if got is EOFError else bytes(reader.buffer) + data[reader.channel.pos :]  # type: ignore[attr-defined]
        outcomes.append((got, rest))
    assert outcomes[0] == outcomes[1] == outcomes[2]
