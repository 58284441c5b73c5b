"""One consistent lock table, and nothing outside the lock namespaces.

Everything here goes through the command line (``alock`` in-process, or ``git alock`` as a
real process) and plain git: records are read with ``git cat-file`` and
``git for-each-ref``, the journal with ``git log``, and hostile states are planted with
``git symbolic-ref``, ``git hash-object`` and ``git update-ref``, as an attacker or a
careless script would. Nothing here imports gitlocks itself, so it holds whatever shape
the package takes.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from support.cli import Result, alock, finish
from support.daemon import Daemon
from support.remote import daemon, make_bare, make_clone, remote_events

__all__ = ["daemon"]  # the fixture, imported so pytest finds it

LOCKS = "refs/agent-locks/"
JOURNAL = "refs/agent-locks-meta/journal"
MAIN = "refs/heads/main"
A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}
# Events after which a lock no longer exists (each lock here has a single pattern, so a
# release always removes the whole lock).
GONE = {"released", "expired", "broken", "auto_released"}
# Events after which it still does.
LIVE = {"granted", "renewed", "noted", "resumed", "adopted"}


# --- plain git ------------------------------------------------------------------------------


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Our environment, with the installed ``git-alock`` on PATH (as ``alock_process``)."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.update(extra or {})
    return env


def rev(path: Path, ref: str) -> str | None:
    """What ``ref`` resolves to, or None when it does not exist."""
    out = git(path, "rev-parse", "--verify", "-q", ref, check=False).strip()
    return out or None


def symref_target(path: Path, ref: str) -> str | None:
    """The ref that ``ref`` points to when it is a symbolic ref, else None."""
    out = git(path, "symbolic-ref", "-q", ref, check=False).strip()
    return out or None


def lock_refs(path: Path) -> dict[str, str]:
    """Every ref under ``refs/agent-locks/``: the lock id (last component) and its value."""
    out = git(path, "for-each-ref", "--format=%(refname) %(objectname)", LOCKS)
    found = {}
    for line in out.splitlines():
        name, _, oid = line.partition(" ")
        found[name[len(LOCKS) :]] = oid
    return found


def record(path: Path, lock_id: str) -> dict[str, Any]:
    """The JSON record a lock ref points at."""
    data: dict[str, Any] = json.loads(git(path, "cat-file", "blob", LOCKS + lock_id))
    return data


def write_record(path: Path, lock_id: str, data: dict[str, Any]) -> None:
    """Replace a lock's record by hand, as plain git would: a new blob, a moved ref."""
    raw = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    blob = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=path,
        input=raw,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    old = rev(path, LOCKS + lock_id)
    assert old is not None
    git(path, "update-ref", LOCKS + lock_id, blob, old)


def journal_events(path: Path) -> list[dict[str, Any]]:
    """Every event of the journal, oldest first, read from its commit messages."""
    if rev(path, JOURNAL) is None:
        return []
    out = git(path, "log", "--format=%x1e%B", JOURNAL)
    events: list[dict[str, Any]] = []
    for message in reversed(out.split("\x1e")[1:]):
        for line in message.splitlines():
            if not line.startswith("{"):
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(event, dict):
                events.append(event)
    return events


def last_event(events: list[dict[str, Any]], lock_id: str) -> str | None:
    kinds = [str(e.get("event")) for e in events if e.get("id") == lock_id]
    return kinds[-1] if kinds else None


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def no_crash(got: Result, what: str) -> None:
    assert "Traceback" not in got.err and "internal error" not in got.err, f"{what}: {got.err}"


# --- sessions -------------------------------------------------------------------------------

# Runs ``git alock`` once per argument list (its own process is the session, since it is
# neither a shell nor git), prints the results as one JSON line, then sleeps or exits.
# The agent declares itself the session of its claims (AGENT_SESSION_PID), as agent
# integrations do: its death then ends them (docs/design.md, section 3.3).
_SESSION = r"""
import json, os, subprocess, sys, time
results = []
env = dict(os.environ, AGENT_SESSION_PID=str(os.getpid()))
for args in json.loads(sys.argv[1]):
    p = subprocess.run(["git", "alock", *args], capture_output=True, text=True, env=env)
    results.append([p.returncode, p.stdout, p.stderr])
print(json.dumps(results), flush=True)
if sys.argv[2] == "stay":
    time.sleep(120)
"""


def in_dead_session(cwd: Path, env: dict[str, str], *commands: list[str]) -> list[Result]:
    """Run ``git alock`` commands under one session process, which then exits."""
    proc = subprocess.run(
        [sys.executable, "-c", _SESSION, json.dumps(commands), "exit"],
        cwd=cwd,
        env=cli_env(env),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [Result(*r) for r in json.loads(proc.stdout)]


class LiveSession:
    """A session process that ran ``git alock`` commands and stays alive until closed."""

    def __init__(
        self, cwd: Path, env: dict[str, str], *commands: list[str], prefix: tuple[str, ...] = ()
    ) -> None:
        self.proc = subprocess.Popen(
            [*prefix, sys.executable, "-c", _SESSION, json.dumps(commands), "stay"],
            cwd=cwd,
            env=cli_env(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            raise AssertionError(f"the session process gave no results: {self.close()}")
        self.results = [Result(*r) for r in json.loads(line)]

    def close(self) -> str:
        """Kill the session (and anything it started); return what it wrote to stderr."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        _, err = self.proc.communicate(timeout=10)
        return err


# --- 1. symbolic refs in the lock namespaces ------------------------------------------------


def cli(cwd: Path, *args: str, **env: str) -> Result:
    """``alock``, with a crash turned into a result, so that the damage is checked first."""
    try:
        return alock(cwd, *args, **env)
    except Exception as exc:
        return Result(2, "", f"internal error (raised {exc!r}); Traceback above")


def test_local_lock_symref_is_reported_and_never_followed(repo: Path) -> None:
    main = rev(repo, MAIN)
    git(repo, "symbolic-ref", LOCKS + "evil", MAIN)
    said = ""
    steps = [
        (A, ("acquire", "src/**")),
        (B, ("list",)),
        (B, ("check", "README.md")),
        (A, ("release", "src/**")),
        (B, ("break", "evil")),
    ]
    for who, args in steps:
        got = cli(repo, *args, **who)
        said += got.out + got.err
        assert rev(repo, MAIN) == main, f"{' '.join(args)} moved refs/heads/main: {got}"
        assert symref_target(repo, LOCKS + "evil") in (None, MAIN), got
        no_crash(got, " ".join(args))
        if args[0] == "list":
            assert "evil" in got.out + got.err, f"list does not report the symref:\n{got}"
        if args[0] == "check":
            assert got.word == "FREE README.md", got
        if args[0] == "acquire":  # granted, or refused for a reason that names the symref
            assert got.code == 0 or (got.code == 2 and "evil" in got.err), got
    assert "evil" not in [r["id"] for r in cli(repo, "list", "--json", **B).json()]
    assert git(repo, "cat-file", "-t", MAIN).strip() == "commit"


def test_local_symref_to_another_lock_is_never_followed(repo: Path) -> None:
    mine = alock(repo, "acquire", "src/**", "--json", **A).json()["lock"]["id"]
    blob = rev(repo, LOCKS + mine)
    git(repo, "symbolic-ref", LOCKS + "alias", LOCKS + mine)
    listed = cli(repo, "list", "--json", **B)
    no_crash(listed, "list")
    assert [r["id"] for r in listed.json()] == [mine], "one lock, seen twice through a symref"
    broke = cli(repo, "break", "alias", **B)
    assert rev(repo, LOCKS + mine) == blob, f"breaking the alias broke the lock it names: {broke}"
    assert symref_target(repo, LOCKS + mine) is None
    no_crash(broke, "break")
    assert cli(repo, "acquire", "src/app.py", **B).code == 1


def test_local_journal_symref_never_moves_a_branch(repo: Path) -> None:
    assert alock(repo, "acquire", "docs/**", **A).code == 0
    main = rev(repo, MAIN)
    git(repo, "symbolic-ref", JOURNAL, MAIN)
    said = ""
    steps = [
        (B, ("acquire", "src/**")),
        (A, ("release", "docs/**")),
        (B, ("list",)),
        (B, ("check", "src/app.py")),
        (B, ("break", "docs/**")),
        (A, ("acquire", "lib/**")),
    ]
    for who, args in steps:
        got = cli(repo, *args, **who)
        said += got.out + got.err
        assert rev(repo, MAIN) == main, f"{' '.join(args)} moved refs/heads/main: {got}"
        assert git(repo, "cat-file", "-t", MAIN).strip() == "commit"
        if got.code == 0 and args[0] in ("acquire", "release"):
            # A write went through: it journaled somewhere else than main, so the symref
            # cannot still be there.
            target = symref_target(repo, JOURNAL)
            assert target != MAIN, f"{' '.join(args)} wrote while the journal still names main"
        no_crash(got, " ".join(args))
    assert "journal" in said.lower(), f"the journal symref was never reported:\n{said}"


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    return make_bare(tmp_path / "locks.git")


@pytest.fixture
def clones(bare: Path, tmp_path: Path) -> tuple[Path, Path]:
    """Two clones in remote mode; agent-a holds docs/** on the remote."""
    a = make_clone(bare.as_uri(), tmp_path / "a")
    b = make_clone(bare.as_uri(), tmp_path / "b")
    assert alock(a, "acquire", "docs/**", **A).code == 0
    return a, b


REMOTE_STEPS = [
    ("sync",),
    ("acquire", "src/**"),
    ("list",),
    ("check", "src/x.py"),
    ("release", "src/**"),
]


@pytest.mark.slow
def test_remote_lock_symref_to_a_branch_is_never_followed(
    bare: Path, clones: tuple[Path, Path]
) -> None:
    _, b = clones
    main = rev(bare, MAIN)
    git(bare, "symbolic-ref", LOCKS + "evil", MAIN)
    said = ""
    for args in [("break", "evil"), *REMOTE_STEPS]:
        got = cli(b, *args, **B)
        said += got.out + got.err
        assert rev(bare, MAIN) == main, f"{' '.join(args)} moved the remote's main: {got}"
        assert symref_target(bare, LOCKS + "evil") in (None, MAIN), got
        no_crash(got, " ".join(args))
    assert git(bare, "cat-file", "-t", MAIN).strip() == "commit"
    assert rev(b, MAIN) == rev(b, "refs/remotes/origin/main") == main  # the clone's too
    assert "evil" in said, f"the remote's symref was never reported:\n{said}"


@pytest.mark.slow
def test_remote_symref_to_another_lock_is_never_followed(
    bare: Path, clones: tuple[Path, Path]
) -> None:
    _, b = clones
    [kept] = lock_refs(bare)
    blob = rev(bare, LOCKS + kept)
    git(bare, "symbolic-ref", LOCKS + "alias", LOCKS + kept)
    for args in [("break", "alias"), *REMOTE_STEPS]:
        got = cli(b, *args, **B)
        assert rev(bare, LOCKS + kept) == blob, f"{' '.join(args)} broke {kept}: {got}"
        assert symref_target(bare, LOCKS + kept) is None
        assert symref_target(bare, LOCKS + "alias") in (None, LOCKS + kept), got
        no_crash(got, " ".join(args))
    assert cli(b, "acquire", "docs/x.md", **B).code == 1


def test_a_local_lock_ref_planted_symbolic_is_never_written_through(
    bare: Path, clones: tuple[Path, Path]
) -> None:
    """A clone's view of a remote lock moves the local lock ref itself, never the ref a
    planted symbolic one names (docs/design.md, 4.1): nothing outside gitlocks' refs is
    written, whatever the symref points at, and the lock still refuses."""
    _, b = clones
    held = git(bare, "for-each-ref", "--format=%(refname)", LOCKS).split()[0]
    git(b, "symbolic-ref", held, "refs/notes/planted")
    for args in REMOTE_STEPS:
        got = cli(b, *args, **B)
        no_crash(got, " ".join(args))
        planted = git(b, "for-each-ref", "--format=%(refname)", "refs/notes/")
        assert planted == "", f"{' '.join(args)} wrote through the symref: {got}"
    assert cli(b, "acquire", "docs/x.md", **B).code == 1


@pytest.mark.slow
def test_remote_journal_symref_never_moves_a_branch(bare: Path, clones: tuple[Path, Path]) -> None:
    a, b = clones
    main = rev(bare, MAIN)
    git(bare, "symbolic-ref", JOURNAL, MAIN)
    steps = [
        (b, B, ("acquire", "src/**")),
        (a, A, ("release", "docs/**")),
        (b, B, ("sync",)),
        (a, A, ("break", "src/**")),
        (a, A, ("acquire", "lib/**")),
    ]
    for clone, who, args in steps:
        got = cli(clone, *args, **who)
        assert rev(bare, MAIN) == main, f"{' '.join(args)} moved the remote's main: {got}"
        assert git(bare, "cat-file", "-t", MAIN).strip() == "commit"
        no_crash(got, " ".join(args))


@pytest.mark.slow
def test_remote_journal_moved_onto_a_branch_commit_is_never_written_over(
    bare: Path, tmp_path: Path
) -> None:
    """A remote journal ref holding a branch's commit may be a symref the remote does not
    name (protocol v0): writes stop, reads go on, and the branch stays where it was (a
    sharded remote's journal ref holds the notice: test_shards_hostile.py)."""
    a = make_clone(bare.as_uri(), tmp_path / "a", shards=1)
    b = make_clone(bare.as_uri(), tmp_path / "b")
    assert alock(a, "acquire", "docs/**", **A).code == 0
    main = rev(bare, MAIN)
    assert main is not None
    git(bare, "update-ref", JOURNAL, main)
    for clone, who, args in [(b, B, ("acquire", "src/**")), (a, A, ("release", "docs/**"))]:
        got = cli(clone, *args, **who)
        no_crash(got, " ".join(args))
        assert got.code == 2 and "not a gitlocks journal commit" in got.err, got
        assert rev(bare, MAIN) == main and rev(bare, JOURNAL) == main
    assert cli(b, "list", **B).code == 0
    git(bare, "update-ref", "-d", JOURNAL)  # as the message says: the next write starts afresh
    assert cli(b, "acquire", "src/**", **B).code == 0
    assert rev(bare, MAIN) == main


@pytest.mark.slow
@pytest.mark.parametrize("target", [MAIN, "refs/tags/v1"])
def test_a_remote_without_a_table_never_deletes_a_symrefs_target(
    tmp_path: Path, target: str
) -> None:
    """No journal on the remote yet: the lock refs are the table, read as the remote shows
    them, so a symref among them reads as its target; the first write must not delete it."""
    bare = make_bare(tmp_path / "fresh.git")
    main = rev(bare, MAIN)
    assert main is not None
    if target != MAIN:
        git(bare, "update-ref", target, main)
    git(bare, "symbolic-ref", LOCKS + "evil", target)
    clone = make_clone(bare.as_uri(), tmp_path / "c")
    for args in [("acquire", "src/a.py"), ("release", "src/a.py"), ("break", "evil")]:
        got = cli(clone, *args, **A)
        no_crash(got, " ".join(args))
        assert rev(bare, target) == main, f"{' '.join(args)} moved {target}: {got}"
    assert symref_target(bare, LOCKS + "evil") == target


# --- 2. times that are not in the canonical spelling ----------------------------------------


def _spell(moment: datetime, spelling: str) -> str:
    if spelling == "space":
        return moment.strftime("%Y-%m-%d %H:%M:%SZ")
    if spelling == "offset":
        return moment.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    if spelling == "fraction":
        return moment.strftime("%Y-%m-%dT%H:%M:%S.250000Z")
    if spelling == "west":  # the same instant, in a zone whose clock reads five hours less
        return moment.astimezone(timezone(timedelta(hours=-5))).isoformat()
    raise AssertionError(spelling)


@pytest.mark.parametrize("spelling", ["space", "offset", "fraction", "west"])
def test_non_canonical_expiry_is_never_misread_as_expired(repo: Path, spelling: str) -> None:
    lock_id = alock(repo, "acquire", "src/**", "--json", **A).json()["lock"]["id"]
    data = record(repo, lock_id)
    ahead = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(hours=2)
    data["expires_at"] = _spell(ahead, spelling)
    write_record(repo, lock_id, data)
    got = alock(repo, "acquire", "src/app.py", **B)
    no_crash(got, "acquire")
    if got.code == 0:
        # Only acceptable if the record was found unusable, and said so.
        assert lock_id in got.out + got.err, f"granted over a live lock, silently:\n{got}"
    else:
        assert got.code == 1 and got.word == "REFUSED", got
    assert lock_id in lock_refs(repo), "the record was swept"
    kinds = [e["event"] for e in journal_events(repo) if e.get("id") == lock_id]
    assert not GONE & set(kinds), f"a lock expiring in 2h was journaled as {kinds}"
    check = alock(repo, "check", "src/app.py", **B)
    no_crash(check, "check")
    if got.code == 1:
        assert check.code == 1 and check.word.startswith("HELD src/app.py by agent-a"), check


# --- 3. interrupted work --------------------------------------------------------------------


def _interrupted(repo: Path) -> str:
    """agent-a claimed src/api/** for 3s, left a note, and its session died."""
    acquired, noted = in_dead_session(
        repo,
        A,
        ["acquire", "src/api/**", "--ttl", "3s", "-m", "rewrite auth", "--json"],
        ["note", "src/api/**", "tokens done"],
    )
    assert acquired.code == 0, acquired
    assert noted.code == 0, noted
    lock_id: str = acquired.json()["lock"]["id"]
    return lock_id


def _sleep_past_expiry(repo: Path, lock_id: str, extra: float) -> None:
    """Sleep until ``extra`` seconds after the lock's expiry (record times are whole seconds)."""
    stamp = str(record(repo, lock_id)["expires_at"]).replace("Z", "+00:00")
    expires = datetime.fromisoformat(stamp)
    time.sleep(max(0.0, (expires - datetime.now(timezone.utc)).total_seconds() + extra))


def test_interrupted_work_outlives_its_ttl(repo: Path) -> None:
    lock_id = _interrupted(repo)
    _sleep_past_expiry(repo, lock_id, 1.1)
    other = alock(repo, "acquire", "docs/**", **B)
    assert other.code == 0, other
    assert lock_id in lock_refs(repo), "an unrelated write dropped interrupted work at its TTL"
    kinds = [e["event"] for e in journal_events(repo) if e.get("id") == lock_id]
    assert not GONE & set(kinds), kinds
    resumed = alock(repo, "resume", "src/api/**", **B)
    assert resumed.code == 0, resumed
    assert resumed.word.startswith("RESUMED src/api/** from agent-a"), resumed.out
    assert "tokens done" in resumed.out


def test_interrupted_work_goes_once_interrupted_keep_passes(repo: Path) -> None:
    git(repo, "config", "alock.interruptedKeep", "1s")
    lock_id = _interrupted(repo)
    _sleep_past_expiry(repo, lock_id, 2.2)  # past the keep too, however it is counted
    other = alock(repo, "acquire", "docs/**", **B)
    assert other.code == 0, other
    assert lock_id not in lock_refs(repo), "kept past alock.interruptedKeep"
    kind = last_event(journal_events(repo), lock_id)
    assert kind is not None and kind not in LIVE, f"its removal was not journaled: {kind}"
    nothing = alock(repo, "resume", "src/api/**", **B)
    assert nothing.code == 1 and nothing.word.startswith("NOT LOCKED"), nothing


# --- 4. holders that share a hostname -------------------------------------------------------


def _unshare_prefix() -> tuple[str, ...]:
    """An ``unshare`` command line that runs its command in a new pid namespace (as root,
    or else inside a user namespace), or skip the test saying why there is none."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed here: cannot make a second pid namespace")
    base = ("unshare", "--pid", "--fork", "--mount-proc", "--kill-child")
    why = ""
    for prefix in (base, (*base, "--user", "--map-root-user")):
        probe = subprocess.run([*prefix, "true"], capture_output=True, text=True)
        if probe.returncode == 0:
            return prefix
        why = probe.stderr.strip()
    pytest.skip(f"unshare --pid is not permitted here: {why}")


@pytest.fixture
def boxed(repo: Path) -> Iterator[tuple[LiveSession, str]]:
    """A live holder of shared/** in another pid namespace, with this machine's hostname."""
    session = LiveSession(
        repo,
        {"AGENT_ID": "boxed"},
        ["acquire", "shared/**", "-m", "in a container", "--json"],
        prefix=_unshare_prefix(),
    )
    try:
        [got] = session.results
        assert got.code == 0, got
        yield session, got.json()["lock"]["id"]
    finally:
        session.close()


def test_holder_in_another_pid_namespace_is_judged_by_ttl_only(
    repo: Path, boxed: tuple[LiveSession, str]
) -> None:
    session, lock_id = boxed
    assert record(repo, lock_id)["host"] == os.uname().nodename  # the same hostname
    check = alock(repo, "check", "shared/x.py", **B)
    assert check.code == 1 and check.word.startswith("HELD shared/x.py by boxed"), check
    got = alock(repo, "acquire", "shared/x.py", **B)
    assert got.code == 1 and got.word == "REFUSED", got
    assert lock_id in lock_refs(repo), "a live holder in another pid namespace was released"
    assert last_event(journal_events(repo), lock_id) == "granted"
    assert session.proc.poll() is None  # it was alive all along


def test_agent_in_another_pid_namespace_never_releases_a_live_holder(repo: Path) -> None:
    prefix = _unshare_prefix()
    holder = LiveSession(repo, A, ["acquire", "shared/**", "--json"])
    try:
        [got] = holder.results
        assert got.code == 0, got
        lock_id = got.json()["lock"]["id"]
        boxed = LiveSession(
            repo,
            {"AGENT_ID": "boxed"},
            ["check", "shared/x.py"],
            ["acquire", "shared/x.py"],
            prefix=prefix,
        )
        boxed.close()
        check, claim = boxed.results
        assert check.code == 1 and check.word.startswith("HELD shared/x.py by agent-a"), check
        assert claim.code == 1 and claim.word == "REFUSED", claim
        assert lock_id in lock_refs(repo), "released from inside another pid namespace"
        assert holder.proc.poll() is None
    finally:
        holder.close()


def _foreign(value: Any, mine: dict[str, str]) -> Any:
    """``value`` with every clear-text mention of this machine's identity replaced."""
    if isinstance(value, str):
        for ours, theirs in mine.items():
            value = value.replace(ours, theirs)
        return value
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(mine.get(str(value), value))
    if isinstance(value, list):
        return [_foreign(v, mine) for v in value]
    if isinstance(value, dict):
        return {k: _foreign(v, mine) for k, v in value.items()}
    return value


def test_holder_from_another_boot_with_the_same_hostname_is_judged_by_ttl_only(
    repo: Path,
) -> None:
    """Without unshare: a record edited to say "same hostname, another boot and pid
    namespace" (the boot id and the pid-namespace inode of docs/design.md, section 3.3 replaced
    wherever the record spells them), with a pid that is dead here."""
    lock_id = alock(repo, "acquire", "shared/**", "--json", **A).json()["lock"]["id"]
    mine: dict[str, str] = {}
    try:
        mine[Path("/proc/sys/kernel/random/boot_id").read_text().strip()] = (
            "0badb007-0000-4000-8000-000000000000"
        )
        ns = os.readlink("/proc/self/ns/pid")  # pid:[4026531836]
        mine[ns[ns.index("[") + 1 : -1]] = "4026599999"
    except (OSError, ValueError):
        pass
    data = _foreign(record(repo, lock_id), mine)
    data["host"] = os.uname().nodename
    data["pid"] = dead_pid()
    data["pid_start"] = "0badb007-0000-4000-8000-000000000000:12345"
    write_record(repo, lock_id, data)
    check = alock(repo, "check", "shared/x.py", **B)
    assert check.code == 1 and check.word.startswith("HELD shared/x.py by agent-a"), check
    got = alock(repo, "acquire", "shared/x.py", **B)
    assert got.code == 1 and got.word == "REFUSED", got
    assert lock_id in lock_refs(repo)


# --- 5. writes racing git pack-refs ---------------------------------------------------------

_PACKER = r"""
import subprocess, sys, time
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    subprocess.run(["git", "pack-refs", "--all"], capture_output=True)
"""


@pytest.mark.slow
def test_writes_racing_pack_refs_keep_journal_and_refs_in_step(repo: Path) -> None:
    seconds = 5.0
    # Two packers, so that packed-refs.lock comes and goes often enough to meet a write.
    packers = [
        subprocess.Popen([sys.executable, "-c", _PACKER, str(seconds + 2)], cwd=repo)
        for _ in range(2)
    ]
    problems: list[str] = []
    held: list[tuple[str, str]] = []  # (pattern, lock id), oldest first
    tally = {"ok": 0, "failed": 0}
    try:
        end = time.monotonic() + seconds
        i = 0
        while time.monotonic() < end and i < 1000:
            i += 1
            # Keep a few locks for a while, so that releases meet packed refs.
            releasing = len(held) >= 3
            pattern, lock_id = held[0] if releasing else (f"pk/{i}/**", "")
            tip, refs = rev(repo, JOURNAL), lock_refs(repo)
            if releasing:
                got = alock(repo, "release", pattern, **A)
            else:
                got = alock(repo, "acquire", pattern, "--json", **A)
            what = f"op {i}: {'release' if releasing else 'acquire'} {pattern}"
            if got.code == 0:
                tally["ok"] += 1
                if not releasing:
                    lock_id = got.json()["lock"]["id"]
                events = journal_events(repo)
                exists = lock_id in lock_refs(repo)
                kind = last_event(events, lock_id)
                if releasing:
                    held.pop(0)
                    if exists or kind != "released":
                        problems.append(f"{what}: RELEASED but ref exists={exists}, last={kind}")
                else:
                    held.append((pattern, lock_id))
                    if not exists or kind != "granted":
                        problems.append(f"{what}: ACQUIRED but ref exists={exists}, last={kind}")
            elif got.code == 2:
                tally["failed"] += 1
                if rev(repo, JOURNAL) != tip:
                    problems.append(f"{what}: failed ({got.err.strip()}) but the journal moved")
                if lock_refs(repo) != refs:
                    problems.append(f"{what}: failed ({got.err.strip()}) but lock refs changed")
            else:
                problems.append(f"{what}: exit {got.code}: {got.out} {got.err}")
    finally:
        for packer in packers:
            packer.kill()
            packer.wait()
    # The whole story: the journal's last word on each lock is whether its ref exists.
    events = journal_events(repo)
    refs = lock_refs(repo)
    for lock_id in {str(e["id"]) for e in events if e.get("id")} | set(refs):
        kind = last_event(events, lock_id)
        if (lock_id in refs) != (kind is not None and kind not in GONE):
            problems.append(f"end: lock {lock_id}: ref exists={lock_id in refs}, last={kind}")
    assert not problems, f"{tally}:\n" + "\n".join(problems[:20])
    assert tally["ok"] >= 3, tally  # enough writes to have met pack-refs


# --- 6. the remote duel ---------------------------------------------------------------------

# 30 rounds in the test suite; ALOCK_DUEL_ROUNDS=500 (say) for a stress run.
DUEL_ROUNDS = int(os.environ.get("ALOCK_DUEL_ROUNDS", "30"))
# Sleeps until a shared start time, then becomes ``git alock``: a barrier across processes.
_AT = r"""
import os, sys, time
time.sleep(max(0.0, float(sys.argv[1]) - time.time()))
os.execvp("git", ["git", "alock", *sys.argv[2:]])
"""


@pytest.mark.slow
def test_remote_duel_never_grants_one_scope_twice(daemon: Daemon, tmp_path: Path) -> None:
    bare = make_bare(daemon.base / "locks.git")
    urls = [bare.as_uri(), bare.as_uri(), daemon.url("locks.git")]
    config = {"alock.remoteTimeout": "5m"}
    clones = [make_clone(url, tmp_path / f"d{i}", config=config) for i, url in enumerate(urls)]
    for round_no in range(DUEL_ROUNDS):
        start = time.time() + 0.3
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _AT, repr(start), "acquire", "duel/**", "--json"],
                cwd=clone,
                env=cli_env({"AGENT_ID": f"d{i}"}),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i, clone in enumerate(clones)
        ]
        results = [finish(proc, timeout=120) for proc in procs]
        for i, got in enumerate(results):
            assert got.code in (0, 1), f"round {round_no}: d{i} could not run: {got}"
        statuses = [got.json()["status"] for got in results]
        winners = [i for i, status in enumerate(statuses) if status == "acquired"]
        assert len(winners) == 1, f"round {round_no}: {statuses}"
        assert sorted(statuses) == ["acquired", "refused", "refused"], statuses
        [w] = winners
        released = alock(clones[w], "release", "duel/**", AGENT_ID=f"d{w}")
        assert released.code == 0, f"round {round_no}: release by d{w}: {released}"
    # Replay the remote's journal: never two grants of duel/** without a release between.
    live: str | None = None
    grants = 0
    for event in remote_events(bare):  # the shard journals' events, each once
        if "duel/**" not in event.get("paths", []):
            continue
        if event["event"] == "granted":
            grants += 1
            assert live is None, f"granted {event} while {live} was still held"
            live = str(event["id"])
        elif event["event"] in GONE and event.get("id") == live:
            live = None
    assert grants == DUEL_ROUNDS
    assert live is None
