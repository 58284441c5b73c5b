"""Edges of the local store on loose objects and ``git update-ref --stdin``.

Real repositories, hostile states planted with plain git, writers killed with SIGKILL in a
child process at the step under test (the fault points ``tests/store/test_recovery.py``
uses: ``gitlocks.store.refs._commit`` and the transaction's own steps).
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import git
from support.cli import alock
from support.daemon import Daemon
from support.remote import daemon, make_bare, make_clone, remote_locks

from gitlocks.core.record import utcnow
from gitlocks.core.scope import ScopeEntry
from gitlocks.errors import GitlocksError
from gitlocks.git.transaction import RefsRefused, Transaction
from gitlocks.identity import resolve_identity
from gitlocks.service.context import Context
from gitlocks.service.lifecycle import states
from gitlocks.service.locks import acquire, renew
from gitlocks.store.local import Store
from gitlocks.store.remote import RemoteStore

__all__ = ["daemon"]  # the fixture, imported so pytest finds it

LOCKS = "refs/agent-locks/"
JOURNAL = "refs/agent-locks-meta/journal"
A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}


def rev(path: Path, ref: str) -> str | None:
    out = git(path, "rev-parse", "--verify", "-q", ref, check=False).strip()
    return out or None


def symref_target(path: Path, ref: str) -> str | None:
    return git(path, "symbolic-ref", "-q", ref, check=False).strip() or None


def lock_refs(path: Path) -> dict[str, str]:
    out = git(path, "for-each-ref", "--format=%(refname) %(objectname)", LOCKS)
    return {line.split()[0][len(LOCKS) :]: line.split()[1] for line in out.splitlines() if line}


def journal_table(path: Path) -> dict[str, str]:
    """Lock id -> blob id, as the journal commit's tree holds the table."""
    out = git(path, "ls-tree", "-r", "--format=%(path) %(objectname)", JOURNAL)
    table = {}
    for line in out.splitlines():
        name, oid = line.rsplit(" ", 1)
        table[name.rsplit("/", 1)[-1]] = oid
    return table


def journal_events(path: Path) -> list[dict[str, object]]:
    out = git(path, "log", "--format=%B%x00", JOURNAL)
    events: list[dict[str, object]] = []
    for message in out.split("\0"):
        for line in message.splitlines():
            if line.startswith("{"):
                events.append(json.loads(line))
    return events


# --- a symbolic journal ref -----------------------------------------------------------------


def test_symbolic_journal_ref_is_replaced_by_the_next_write(repo: Path) -> None:
    """Design 4.1: a planted symbolic journal ref is deleted (the symref itself) by the next
    write, which starts a fresh journal. The write deleted nothing (the ref reads as absent,
    so no old value was given to ``delete``) and every write failed with "exit 128"."""
    assert alock(repo, "acquire", "docs/**", **A).code == 0
    main = rev(repo, "HEAD")
    branch = git(repo, "symbolic-ref", "HEAD").strip()
    git(repo, "symbolic-ref", JOURNAL, branch)
    got = alock(repo, "acquire", "src/**", **B)
    assert got.code == 0, f"a write never replaces the symbolic journal ref: {got}"
    assert symref_target(repo, JOURNAL) is None
    assert rev(repo, branch) == main, "the branch the symref named moved"
    assert git(repo, "rev-list", "--count", JOURNAL).strip() == "1", "not a fresh journal"
    first = journal_events(repo)[0]
    assert first.get("event") == "journal_reset", journal_events(repo)
    assert branch in str(first.get("reason"))
    assert alock(repo, "acquire", "src/x.py", **A).code == 1  # agent-b's claim holds


# --- a writer killed with SIGKILL at each step of a write -----------------------------------

# Runs ``git alock ARGV[2:]`` in the current directory, killing itself (SIGKILL) at the
# step ARGV[1]:
#   logged: objects and the undo/redo log written, no ref locked yet;
#   prepared: every ref locked and compared (both transactions prepared), nothing moved;
#   locks-moved: the lock refs committed, the journal (the commit point) not;
#   journal-sent: ``commit`` sent for the journal, git left to finish it alone;
#   done: everything moved, the log not cleared.
_KILLED_WRITE = r"""
import os, signal, sys
from gitlocks.layout import JOURNAL_REF
from gitlocks.store import refs

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

point, real = sys.argv[1], refs._commit
if point == "logged":
    refs.RefWriter._apply = die
elif point == "prepared":
    refs._commit = die
elif point == "locks-moved":
    def commit(tx):
        if JOURNAL_REF in tx.names:
            die()
        real(tx)
    refs._commit = commit
elif point == "journal-sent":
    def commit(tx):
        if JOURNAL_REF in tx.names:
            tx.proc.stdin.write(b"commit\n")
            tx.proc.stdin.flush()
            die()
        real(tx)
    refs._commit = commit
elif point == "done":
    refs.RefWriter._clear = die
from gitlocks.main import main
sys.exit(main(sys.argv[2:]))
"""

KILL_POINTS = ["logged", "prepared", "locks-moved", "journal-sent", "done"]
COMMITTED = {"journal-sent", "done"}  # killed at or after the commit point


def tree_table(path: Path) -> dict[str, str]:
    """Lock id -> blob named by the journal tip's tree (``locks/<xx>/<id>``)."""
    found = {}
    for line in git(path, "ls-tree", "-r", JOURNAL).splitlines():
        meta, _, name = line.partition("\t")
        if name.startswith("locks/"):
            found[name.rsplit("/", 1)[-1]] = meta.split()[2]
    return found


def kill_during(repo: Path, point: str, *args: str, agent: str = "agent-a") -> None:
    env = dict(os.environ, AGENT_ID=agent)
    got = subprocess.run(
        [sys.executable, "-c", _KILLED_WRITE, point, *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert got.returncode == -9, f"not killed at {point}: {got}"
    # git's own update-ref may outlive the writer by a moment (journal-sent): wait for it
    # to let its lock file go, as any next writer would find it.
    wait = subprocess.run(
        ["sh", "-c", 'i=0; while [ -e "$1" ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done',
         "sh", str(repo / ".git" / f"{JOURNAL}.lock")],
        check=False,
    )  # fmt: skip
    assert wait.returncode == 0


def assert_whole(repo: Path) -> None:
    assert tree_table(repo) == lock_refs(repo), "the journal's table and the lock refs differ"
    assert not list((repo / ".git" / "refs").rglob("*.lock")), "a lock file was left"
    assert (repo / ".git" / "agent-locks.mutex").read_text() == "", "the log was left"
    assert git(repo, "fsck", "--no-dangling", check=False) is not None


@pytest.mark.parametrize("point", KILL_POINTS)
def test_claim_killed_at_each_step_is_all_or_nothing(repo: Path, point: str) -> None:
    assert alock(repo, "acquire", "docs/**", **A).code == 0
    before = lock_refs(repo)
    kill_during(repo, point, "acquire", "src/**", "-m", "killed")
    got = alock(repo, "acquire", "src/app.py", **B)
    if point in COMMITTED:
        assert got.code == 1, f"agent-a's claim, past its commit point, was lost: {got}"
    else:
        assert got.code == 0, f"a claim killed before its commit point holds: {got}"
    assert_whole(repo)
    assert before.items() <= lock_refs(repo).items()


@pytest.mark.parametrize("point", KILL_POINTS)
def test_release_of_packed_refs_killed_at_each_step_is_all_or_nothing(
    repo: Path, point: str
) -> None:
    """Deleting packed lock refs rewrites packed-refs: a kill must still leave one state."""
    for pattern in ("docs/**", "src/**", "lib/**"):
        assert alock(repo, "acquire", pattern, **A).code == 0
    git(repo, "pack-refs", "--all")
    kill_during(repo, point, "release", "src/**", "lib/**")
    got = alock(repo, "acquire", "src/app.py", **B)
    if point in COMMITTED:
        assert got.code == 0, f"a release past its commit point was undone: {got}"
    else:
        assert got.code == 1, f"a release killed before its commit point happened: {got}"
    assert_whole(repo)
    assert alock(repo, "acquire", "docs/x.md", **B).code == 1  # untouched throughout


# --- remote mode: the push budget against what others read ----------------------------------


def test_a_holder_renewing_well_inside_stale_after_never_reads_as_stale(tmp_path: Path) -> None:
    """Design 5.9: a renewal that pushes nothing must still leave the claim readable as live
    until the holder's next renewal. agent-a renews every 6 minutes, well inside the lifetime
    (1h) and alock.staleAfter (10m); another clone, reading just before each renewal, must
    never see agent-a's claim as STALE. A renewal pushes once the holder has been quiet for half
    of alock.staleAfter, so the one at 6m pushes (with three quarters it was kept, and the
    claim read STALE from 10m until the one at 12m)."""
    bare = make_bare(tmp_path / "locks.git")
    a = make_clone(bare.as_uri(), tmp_path / "a")
    b = make_clone(bare.as_uri(), tmp_path / "b")
    t0 = utcnow()

    def ctx(repo: Path, agent: str, seconds: float) -> Context:
        at = t0 + timedelta(seconds=seconds)
        return Context(
            store=RemoteStore.discover(repo),
            identity=resolve_identity(agent),
            clock=lambda: at,
            alive=lambda pid, start: True,
        )

    assert acquire(ctx(a, "agent-a", 0), [ScopeEntry("src/**")], ttl=3600).status == "acquired"
    seen = []
    for k in (1, 2, 3, 4):
        reader = ctx(b, "agent-b", 360 * k - 1)
        reader.store.sync()
        seen += [(360 * k - 1, s) for s in states(reader, reader.store.read_table()).values()]
        renew(ctx(a, "agent-a", 360 * k), None)
    assert [s for _, s in seen] == ["live"] * 4, f"(seconds, state) another clone read: {seen}"


# --- a shared repository made shared after git init -----------------------------------------


def test_object_directories_keep_the_group_as_gits_own_in_a_shared_repository(
    repo: Path,
) -> None:
    """``core.sharedRepository`` set after ``git init`` (objects/ itself has no setgid bit):
    git gives every fan-out directory it creates the set-group-id bit, so objects later
    written there by other members of the group keep the repository's group. gitlocks' own
    fan-out directories did not, and git never fixes a directory it did not create."""
    git(repo, "config", "core.sharedRepository", "group")
    objects_dir = repo / ".git" / "objects"
    assert not objects_dir.stat().st_mode & stat.S_ISGID
    before = set(objects_dir.glob("??"))
    for n in range(40):  # some land in a new fan-out directory
        (repo / "scratch.txt").write_text(f"git's own {n}\n")
        oid = git(repo, "hash-object", "-w", "scratch.txt").strip()
        if objects_dir / oid[:2] not in before:
            break
    gits = objects_dir / oid[:2]
    assert gits not in before and gits.stat().st_mode & stat.S_ISGID, "git's own, as a reference"
    before = set(objects_dir.glob("??"))
    for n in range(8):
        assert alock(repo, "acquire", f"dir{n}/**", **A).code == 0
    ours = set(objects_dir.glob("??")) - before
    assert ours, "no new fan-out directory was made"
    lacking = sorted(p.name for p in ours if not p.stat().st_mode & stat.S_ISGID)
    assert not lacking, f"fan-out directories without the set-group-id bit: {lacking}"


def test_a_refused_shared_repository_value_leaves_the_umask_as_it_was(repo: Path) -> None:
    """The store opened in a long-lived process (the MCP server, the page) with a value git
    refuses: the error, and the process's umask untouched (it was left at 0 before)."""
    git(repo, "config", "core.sharedRepository", "garbage")
    mask = os.umask(0o022)
    try:
        with pytest.raises(GitlocksError, match="bad boolean"):
            Store.discover(repo)
        assert os.umask(0o022) == 0o022, "the umask was left changed"
    finally:
        os.umask(mask)


# --- remote mode: a push that outlives its timeout ------------------------------------------


def test_a_push_that_timed_out_is_never_said_to_have_written_nothing(
    tmp_path: Path, daemon: Daemon
) -> None:
    """The remote is slow to accept (its pre-receive hook takes 4 s), and the client gives up
    after alock.remoteTimeout (1 s). receive-pack goes on without the client and lands the
    push. The fetch that settles the outcome came too early to see it, so the command must
    not say the push did not land, or that nothing was written: it did, a moment later."""
    bare = make_bare(daemon.base / "locks.git")
    a = make_clone(daemon.url("locks.git"), tmp_path / "a")
    marker = tmp_path / "hook-done"
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\ncat >/dev/null\nsleep 4\ntouch '{marker}'\n")
    hook.chmod(0o755)
    git(a, "config", "alock.remoteTimeout", "1s")
    got = alock(a, "acquire", "src/**", **A)
    finish_wait = subprocess.run(
        ["sh", "-c", 'i=0; while [ ! -e "$1" ] && [ $i -lt 1000 ]; do sleep 0.02; i=$((i+1)); done',
         "sh", str(marker)],
        check=False,
    )  # fmt: skip
    assert finish_wait.returncode == 0 and marker.exists(), "the remote's hook never finished"
    landed = False
    for _ in range(200):  # receive-pack moves the refs just after its hook
        if remote_locks(bare):
            landed = True
            break
        subprocess.run(["sleep", "0.02"], check=False)
    if landed:
        said = got.out + got.err
        assert "did not land" not in said and "nothing was written" not in said, (
            f"told the push wrote nothing, and it landed:\n{said}"
        )


# --- git's reason for refusing a transaction ------------------------------------------------


def test_a_refused_transaction_says_gits_reason(repo: Path) -> None:
    """A ref not at the value expected: the error carries git's own words, not "exit 128"
    (its standard error was closed before it was read)."""
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-ref", LOCKS + "x", head)
    wrong = "1" * len(head)
    tx = Transaction(str(repo / ".git"), "gitlocks")
    tx.queue(LOCKS + "x", None, wrong, len(head))
    with pytest.raises(RefsRefused) as refused:
        tx.ask("prepare")
        tx.answer()
    tx.abort()
    said = str(refused.value)
    assert "exit 128" not in said and LOCKS + "x" in said, said
    assert rev(repo, LOCKS + "x") == head


# --- many unreadable objects ----------------------------------------------------------------


def test_many_lock_refs_at_corrupt_loose_objects_never_hang_a_verb(repo: Path) -> None:
    """Design 3.7: a bad record never breaks a verb. 900 lock refs whose loose objects are
    corrupt: each falls through to ``git cat-file --batch``, which complains about each on
    its standard error; nobody read that pipe, so it filled, cat-file stopped, and ``list``
    waited for it for ever."""
    blobs = repo / ".git" / "scratch"
    blobs.mkdir()
    paths = []
    for n in range(900):
        path = blobs / f"b{n}"
        path.write_text(f'{{"id": "x{n}", "junk": {n}}}\n')
        paths.append(str(path))
    got = subprocess.run(
        ["git", "hash-object", "-w", "--stdin-paths"],
        cwd=repo,
        input="\n".join(paths) + "\n",
        capture_output=True,
        text=True,
        check=True,
    )
    oids = got.stdout.split()
    lines = "".join(
        f"create {LOCKS}1a2324c0000-{n:010d} {oid}\n" for n, oid in enumerate(oids, start=1)
    )
    subprocess.run(["git", "update-ref", "--stdin"], cwd=repo, input=lines, text=True, check=True)
    for oid in oids:
        loose = repo / ".git" / "objects" / oid[:2] / oid[2:]
        loose.chmod(0o644)
        loose.write_bytes(b"x")  # no longer zlib: unreadable, for us and for git
    env = dict(
        os.environ,
        AGENT_ID="agent-a",
        PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
    )
    proc = subprocess.Popen(
        ["git", "alock", "list"], cwd=repo, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # git, gitlocks and its cat-file
        proc.communicate()
        pytest.fail("git alock list never ended: it hung on 900 unreadable lock objects")
    listed = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    assert listed.returncode == 0, listed.stderr[-500:]
    assert listed.stderr.count("is not a usable lock") == 900
    assert alock(repo, "acquire", "src/**", **A).code == 0


# --- SHA-256 repositories and remote mode ---------------------------------------------------


def test_remote_mode_in_a_sha256_repository_is_an_error_never_a_traceback(
    tmp_path: Path, daemon: Daemon
) -> None:
    """The local store reads and writes SHA-256 objects itself; remote mode still opens the
    repository with libgit2 to switch, which may not know the format. Switching must then
    be an ``error:`` (exit 2), not an internal error with a traceback; a setting made by
    hand still reads the view (a remote claim needs no libgit2), and ``remote --off`` must
    still get out of it."""
    bare = daemon.base / "locks.git"
    git(daemon.base, "init", "-q", "--bare", "--object-format=sha256", bare.name)
    seed = tmp_path / "seed"
    git(tmp_path, "init", "-q", "--object-format=sha256", seed.name)
    git(seed, "commit", "-q", "--allow-empty", "-m", "initial")
    git(seed, "push", "-q", str(bare), "HEAD:refs/heads/main")
    a = tmp_path / "a"
    git(tmp_path, "clone", "-q", daemon.url("locks.git"), a.name)
    assert alock(a, "acquire", "src/**", **A).code == 0  # local mode: no libgit2
    switched = alock(a, "remote", "origin", **A)
    assert "Traceback" not in switched.err and "internal error" not in switched.err, switched
    if switched.code != 0:  # libgit2 without SHA-256
        assert switched.code == 2 and switched.err.startswith("error: "), switched
        git(a, "config", "alock.remote", "origin")
        listed = alock(a, "list", **A)  # reading and claiming need no libgit2
        assert listed.code == 0 and "Traceback" not in listed.err, listed
        assert alock(a, "remote", "--off", **A).code == 0
    assert alock(a, "acquire", "src/x.py", **B).code == 1


# --- the object format is the repository's, as git reads it ---------------------------------


@pytest.mark.parametrize("where", ["global", "command line"])
def test_the_object_format_is_the_repositorys_own(repo: Path, where: str) -> None:
    """git takes extensions.objectFormat from the repository's own config only. A global
    setting or ``git -c`` made gitlocks hash SHA-256 objects into a SHA-1 repository: junk
    files under objects/ (``git fsck``: bad sha1 file) and every write refused."""
    env = dict(os.environ, AGENT_ID="agent-a")
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env["PATH"]
    command = ["git", "alock", "acquire", "src/**"]
    if where == "global":
        git(repo, "config", "--global", "extensions.objectFormat", "sha256")
    else:
        command[1:1] = ["-c", "extensions.objectFormat=sha256"]
    assert git(repo, "rev-parse", "--show-object-format").strip() == "sha1"
    got = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, check=False)
    assert got.returncode == 0, got.stderr
    assert len(lock_refs(repo)) == 1 and len(next(iter(lock_refs(repo).values()))) == 40
    fsck = subprocess.run(
        ["git", "fsck", "--no-dangling"], cwd=repo, capture_output=True, text=True, check=False
    )
    assert "bad sha1 file" not in fsck.stderr, fsck.stderr


# --- an oversized lock object ---------------------------------------------------------------

_LIST_WITHIN = r"""
import resource, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from gitlocks.main import main
sys.exit(main(["list"]))
"""


@pytest.mark.parametrize("stored", ["loose", "packed"])
def test_an_oversized_lock_object_is_judged_without_inflating_it(repo: Path, stored: str) -> None:
    """Design 3.7: a record over MAX_RECORD_BYTES is no usable record. A planted lock ref at
    a blob of 300 MB of zeros (1.3 MB deflated) must read as that, in a reader limited to
    512 MB of address space, instead of costing every reader the whole blob in memory."""
    made = subprocess.run(
        ["sh", "-c", "head -c 300000000 /dev/zero | git hash-object -w --stdin"],
        cwd=repo, capture_output=True, text=True, check=True,
    )  # fmt: skip
    git(repo, "update-ref", LOCKS + "1a2324c0000-0000000001", made.stdout.strip())
    if stored == "packed":  # read through cat-file --batch, not from its file
        git(repo, "repack", "-a", "-d", "-q")
        git(repo, "prune-packed")
    env = dict(os.environ, AGENT_ID="agent-a")
    got = subprocess.run(
        [sys.executable, "-c", _LIST_WITHIN, str(512 * 1024 * 1024)],
        cwd=repo, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert got.returncode == 0, got.stderr[-800:]
    assert "is not a usable lock" in got.stderr


_HOOK_WITHIN = """
import resource, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from gitlocks.main import main
sys.exit(main(["hook", "pre-commit"]))
"""


def test_the_commit_hook_judges_an_oversized_lock_object_without_inflating_it(
    repo: Path,
) -> None:
    """The hooks read records through git alone (git/table.py): the same bound holds there."""
    made = subprocess.run(
        ["sh", "-c", "head -c 300000000 /dev/zero | git hash-object -w --stdin"],
        cwd=repo, capture_output=True, text=True, check=True,
    )  # fmt: skip
    git(repo, "update-ref", LOCKS + "1a2324c0000-0000000002", made.stdout.strip())
    git(repo, "repack", "-a", "-d", "-q")
    (repo / "src" / "app.py").write_text("changed\n")
    git(repo, "add", "src/app.py")
    got = subprocess.run(
        [sys.executable, "-c", _HOOK_WITHIN, str(512 * 1024 * 1024)],
        cwd=repo, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert got.returncode == 0, got.stderr[-800:]
    assert "is not a usable lock" in got.stderr, got.stderr
