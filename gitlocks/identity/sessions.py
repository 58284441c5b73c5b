"""Harness sessions: which holder an agent harness process is, for everything it runs.

The guard records that a harness process (pid, start time, host identity) is holder H;
every gitlocks process below it resolves to H (docs/design.md, section 3.2). The register
is one small file per session process, keyed by its pid and a digest of its start time and
host identity, plus a list of the repositories it claimed in. An entry only names a
holder: the lock table stays the one truth. Stdlib only and cheap: every command asks.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping

from gitlocks.core.digest import sha256_hex
from gitlocks.core.text import is_digits
from gitlocks.core.value import Value
from gitlocks.identity.processes import (
    HARNESS_PROCESSES,
    HOLDER_SCOPE_ENV,
    INIT_PROCESSES,
    SessionProcess,
    holder_scope,
    host_identity,
    is_pass_through,
    is_terminal_server,
    parent_chain,
    process_alive,
    process_start_time,
    register_dir,
    trusted,
    valid_holder,
)

# Entries are tiny; a larger file is no entry of ours and is not read.
MAX_ENTRY_BYTES = 64 * 1024
# The repositories one session claimed in: a bound, so a hostile file cannot cost much.
MAX_REPOS = 256
# Pruning looks at this many entries at most per call.
MAX_PRUNE = 512
# A temporary file this old was left by a writer killed between its write and its rename.
STALE_TMP_SECONDS = 3600
# What a corrupt file makes json.loads raise: a nesting too deep is a RecursionError.
_UNREADABLE = (ValueError, RecursionError)


class Registered(Value):
    """A harness session and the holder it is."""

    __slots__ = ("harness", "holder", "parent", "session")

    def __init__(
        self, session: SessionProcess, holder: str, parent: str | None, harness: str
    ) -> None:
        self.session = session
        self.holder = holder
        self.parent = parent
        self.harness = harness


def _key(pid: int, start_time: str) -> str:
    digest = sha256_hex("\0".join((start_time, host_identity())).encode())
    return f"{pid}-{digest[:16]}"


def lookup(env: Mapping[str, str] | None = None) -> Registered | None:
    """The nearest registered harness session among our ancestors (from our parent
    upwards), or None."""
    where = register_dir(env)
    # Without a host identity (no /proc) no pid can be judged: an entry could be anyone's.
    if where is None or not trusted(where) or not host_identity():
        return None
    for pid, start_time, name in parent_chain(os.getppid()):
        found = _read(where, pid, start_time)
        if found is not None and can_be_harness(name):
            return found
        if name in HARNESS_PROCESSES:
            return None  # a harness of its own, started from another's shell: not that one
    return None


def left_the_session(env: Mapping[str, str] | None = None) -> bool:
    """Whether a process given an exported holder (``GITLOCKS_HOLDER``) has left the harness's
    tree: it runs in the harness's pid namespace (``GITLOCKS_HOLDER_SCOPE``), reads the register
    and sees its ancestors up to pid 1, none of them the harness (a daemon, a tmux server)."""
    env = os.environ if env is None else env
    scope = env.get(HOLDER_SCOPE_ENV, "")
    if not scope or scope != holder_scope():
        return False  # another namespace (a sandbox's), or a harness that did not say
    where = register_dir(env)
    if where is None or not trusted(where):
        return False  # no register to find the harness in: the exported holder is all
    chain = parent_chain(os.getppid())
    return bool(chain) and chain[-1][0] == 1


def _read(where: str, pid: int, start_time: str) -> Registered | None:
    data = _doc(os.path.join(where, _key(pid, start_time) + ".json"))
    if data is None:
        return None
    holder, parent, harness = data.get("holder"), data.get("parent"), data.get("harness")
    if data.get("pid") != pid or data.get("start_time") != start_time:
        return None  # another process's entry under this name: not ours to believe
    if not isinstance(holder, str) or not valid_holder(holder):
        return None
    if parent is not None and (not isinstance(parent, str) or not valid_holder(parent)):
        parent = None
    name = data.get("name") if isinstance(data.get("name"), str) else ""
    session = SessionProcess(pid, start_time, str(name), os.uname().nodename)
    return Registered(session, holder, parent, harness if isinstance(harness, str) else "")


def register(
    session: SessionProcess,
    holder: str,
    parent: str | None,
    harness: str,
    env: Mapping[str, str] | None = None,
) -> bool:
    """Record that ``session`` is ``holder``; whether the register could be written. An
    entry that already says so is left alone (every event asks; only the first writes)."""
    where = register_dir(env)
    if where is None or not session.pid or not session.start_time or not host_identity():
        return False
    if not can_be_harness(session.name):
        return False
    if not trusted(where):  # every event asks: the directory is made only once
        try:
            os.makedirs(where, mode=0o700, exist_ok=True)
        except OSError:
            pass
        if not trusted(where):
            return False
    current = _read(where, session.pid, session.start_time)
    if current is not None and (current.holder, current.parent) == (holder, parent):
        return True
    doc = {
        "holder": holder,
        "parent": parent,
        "harness": harness,
        "pid": session.pid,
        "start_time": session.start_time,
        "name": session.name,
        "host_id": host_identity(),
        "host": os.uname().nodename,
    }
    try:
        # Imported here: only the guard's first event of a session writes an entry.
        from gitlocks.git.files import write_atomic

        entry_path = os.path.join(where, _key(session.pid, session.start_time) + ".json")
        write_atomic(entry_path, json.dumps(doc).encode())
    except OSError:
        return False
    return True


def can_be_harness(name: str) -> bool:
    """Whether a process so named may be registered: never a shell, a wrapper, a terminal
    server or an init system (a guard run by hand, or from an orphaned hook, finds one of
    those), whose descendants are every command of a terminal, or of the machine."""
    return not (name in INIT_PROCESSES or is_pass_through(name) or is_terminal_server(name))


def add_repository(
    session: SessionProcess, common_dir: str, root: str, env: Mapping[str, str] | None = None
) -> None:
    """Remember that ``session`` claimed in the repository of ``common_dir``, whose working
    tree ``root`` it acted in."""
    where = register_dir(env)
    if where is None or not session.pid or not session.start_time:
        return
    common = os.path.realpath(common_dir)
    if any(common == known for known, _ in repositories(session, env)):
        return  # the common case, decided without a lock
    import fcntl  # only here: a repository new to the session

    line = json.dumps({"common": common, "root": os.path.realpath(root)}) + "\n"
    path = os.path.join(where, _key(session.pid, session.start_time) + ".repos")
    try:
        os.makedirs(where, mode=0o700, exist_ok=True)
        if not trusted(where):
            return
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            # One writer at a time (parallel hooks of one session): an append, or, when the
            # list is full, a rewrite that drops the repositories gone since (scratch
            # clones, a test suite's), so that they never hide the ones that remain.
            fcntl.flock(fd, fcntl.LOCK_EX)
            raw = os.pread(fd, MAX_ENTRY_BYTES + 1, 0)
            known = _existing(raw)
            if any(common == c for c, _ in known):
                return
            if len(raw) + len(line) > MAX_ENTRY_BYTES:
                kept = "".join(json.dumps({"common": c, "root": r}) + "\n" for c, r in known)
                os.ftruncate(fd, 0)
                line = kept + line
            os.write(fd, line.encode("utf-8", "surrogateescape"))
        finally:
            os.close(fd)
    except OSError:
        pass


def repositories(
    session: SessionProcess, env: Mapping[str, str] | None = None
) -> list[tuple[str, str]]:
    """(git common directory, working tree) of each repository ``session`` claimed in, as
    recorded, where both still exist."""
    where = register_dir(env)
    if where is None or not trusted(where) or not session.pid:
        return []
    try:
        with open(os.path.join(where, _key(session.pid, session.start_time) + ".repos"), "rb") as f:
            raw = f.read(MAX_ENTRY_BYTES)
    except OSError:
        return []
    return _existing(raw)


def _existing(raw: bytes) -> list[tuple[str, str]]:
    """The repositories of a list (``raw``) that still exist, each once, at most
    ``MAX_REPOS``."""
    found: list[tuple[str, str]] = []
    for line in raw.decode("utf-8", "surrogateescape").splitlines():
        try:
            item = json.loads(line)
        except _UNREADABLE:
            continue
        if not isinstance(item, dict):
            continue
        common, root = item.get("common"), item.get("root")
        if not (isinstance(common, str) and isinstance(root, str)):
            continue
        if not (os.path.isabs(common) and os.path.isabs(root)):
            continue
        if any(common == known for known, _ in found):
            continue
        if os.path.isdir(common) and os.path.isdir(root):
            found.append((common, root))
            if len(found) == MAX_REPOS:
                break
    return found


def forget(session: SessionProcess, env: Mapping[str, str] | None = None) -> None:
    """Remove ``session``'s entry (its end)."""
    where = register_dir(env)
    if where is None or not trusted(where) or not session.pid:
        return
    key = os.path.join(where, _key(session.pid, session.start_time))
    _unlink(key + ".json", key + ".repos")


def _unlink(*paths: str) -> None:
    for path in paths:
        try:
            os.unlink(path)
        except OSError:
            pass


def prune(env: Mapping[str, str] | None = None) -> int:
    """Remove the entries of sessions whose process is gone or whose machine rebooted since,
    and what writers left behind (a list of repositories whose session is gone, an old
    temporary file); how many entries went."""
    where = register_dir(env)
    if where is None or not trusted(where):
        return 0
    gone = 0
    for entry in _entries(where):
        path = entry.path
        if entry.name.startswith("."):
            if entry.name.endswith(".tmp") and _older_than(entry, STALE_TMP_SECONDS):
                _unlink(path)
        elif entry.name.endswith(".json"):
            gone += _prune_entry(path, env)
        elif entry.name.endswith(".repos") and not os.path.lexists(
            path[: -len(".repos")] + ".json"
        ):
            pid = entry.name.split("-", 1)[0]
            if is_digits(pid) and process_start_time(int(pid)) is None:
                _unlink(path)
    return gone


def _prune_entry(path: str, env: Mapping[str, str] | None) -> int:
    data = _doc(path)
    pid_text = os.path.basename(path).split("-", 1)[0]
    start_time = data.get("start_time") if data is not None else None
    if data is None or not is_digits(pid_text) or not isinstance(start_time, str):
        return 0
    host_id = data.get("host_id")
    boot = host_identity().split(":", 1)[0]
    if (
        data.get("host") == os.uname().nodename
        and isinstance(host_id, str)
        and boot
        and host_id.split(":", 1)[0] != boot
    ):
        # Written on this machine before it last booted: no process of it is left. (Another
        # machine sharing this home has a name of its own; a container shares the boot.)
        _unlink(path, path.removesuffix(".json") + ".repos")
        return 1
    registered = _read(os.path.dirname(path), int(pid_text), start_time)
    if registered is None:
        return 0
    session = registered.session
    if process_alive(session.pid, session.start_time):
        return 0
    forget(session, env)
    return 1


def _older_than(entry: os.DirEntry[str], seconds: float) -> bool:
    import time  # only here: pruning is the register's one use of the clock

    try:
        return time.time() - entry.stat(follow_symlinks=False).st_mtime > seconds
    except OSError:
        return False


def _entries(where: str) -> Iterator[os.DirEntry[str]]:
    try:
        with os.scandir(where) as it:
            for n, entry in enumerate(it):
                if n >= MAX_PRUNE:
                    return
                yield entry
    except OSError:
        return


def _doc(path: str) -> dict[str, object] | None:
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_ENTRY_BYTES + 1)
        data = json.loads(raw) if len(raw) <= MAX_ENTRY_BYTES else None
    except (OSError, *_UNREADABLE):
        return None
    return data if isinstance(data, dict) else None


def running(common_dir: str) -> list[tuple[Registered, str]]:
    """The registered sessions of this host and pid namespace whose process runs and that
    acted in the repository of ``common_dir``, each with the working tree it acted in: the
    live page's sessions that hold nothing (docs/design.md, section 7.5)."""
    where = register_dir()
    if where is None or not trusted(where) or not host_identity():
        return []
    common = os.path.realpath(common_dir)
    found = []
    for item in _entries(where):
        pid = item.name.split("-", 1)[0]
        if item.name.startswith(".") or not item.name.endswith(".json") or not is_digits(pid):
            continue
        data = _doc(item.path)
        start_time = data.get("start_time") if data is not None else None
        if not isinstance(start_time, str):
            continue
        registered = _read(where, int(pid), start_time)  # None: written elsewhere
        if registered is None or not process_alive(int(pid), start_time):
            continue
        root = dict(repositories(registered.session)).get(common)
        if root is not None:
            found.append((registered, root))
    return found


def entry(session: SessionProcess, env: Mapping[str, str] | None = None) -> Registered | None:
    """The register's entry for exactly ``session``, or None."""
    if not (session.pid and session.start_time and host_identity()):
        return None
    where = register_dir(env)
    return _read(where, session.pid, session.start_time) if where and trusted(where) else None
