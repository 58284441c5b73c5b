"""The git hooks' check: which paths a commit or a push touches, and whose locks they cross.

The hook path (``git-alock hook pre-commit|pre-push``, dispatched by ``gitlocks.main``)
runs on every commit of every user, so it imports neither the command-line framework nor
pygit2: importing pygit2 alone costs more than all the rest of the hook. It asks the git
command line instead, a few milliseconds a call, started concurrently: the staged paths,
the config and the lock refs; then the blobs of those refs. Tests assert that typer,
click, pygit2 and ``gitlocks.cli`` stay out of ``sys.modules``.

Inside a hook git sets ``GIT_DIR``, ``GIT_INDEX_FILE`` and friends. The git command line
honours them all (the temporary index of ``git commit -a`` and ``git commit PATH``, a
linked worktree's git dir), and every call here targets that same repository, so the
variables are passed on as they are. libgit2 would read none of them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from gitlocks.errors import EXIT_ERROR, EXIT_OK, EXIT_REFUSED, GitlocksError, StoreError
from gitlocks.identity import (
    Identity,
    SessionProcess,
    parent_pid,
    resolve_identity,
    session_process,
)
from gitlocks.record import (
    LockRecord,
    RecordError,
    format_duration,
    format_time,
    parse_duration,
    utcnow,
)
from gitlocks.scope import entry_covers, path_entry
from gitlocks.table import Problem, Table, record_entries
from gitlocks.text import printable

if TYPE_CHECKING:
    from gitlocks.locks import CheckItem, Context

HOOK_NAMES = ("pre-commit", "pre-push")
MODES = ("warn", "block")
PREFIX = "alock: "
# The store's layout: the same value as ``gitlocks.store.LOCK_PREFIX``, restated because
# the hook must not import the store (it imports pygit2); a test holds the two equal.
LOCK_PREFIX = "refs/agent-locks/"
# Remote mode's clock-skew allowance when ``alock.clockSkew`` is unset: the same value as
# ``gitlocks.remote.DEFAULT_SKEW_SECONDS`` (not imported, for the same reason; tested).
DEFAULT_SKEW_SECONDS = 30
# Lock refs (and the journal) are pushed by remote mode; they hold no commits to check.
_OWN_REF_PREFIXES = (LOCK_PREFIX, "refs/agent-locks-meta/")
_DIFF_OPTIONS = ("-z", "--name-status", "-M", "--diff-filter=ACDMRT", "--no-color", "--no-ext-diff")
_CONFIG_ARGS = (
    "config",
    "-z",
    "--get-regexp",
    "^(alock\\.hookmode|alock\\.remote|alock\\.clockskew|core\\.ignorecase)$",
)
# Merges: the combined diff names the paths a merge changes against every parent (a
# conflict resolution, an edit made in the merge), not those it takes from one side,
# whose own commits are checked (or already on a remote). --combined-all-paths gives a
# renamed path's name in each parent. All of this works on git 2.30.
_MERGE_OPTIONS = ("-c", "--combined-all-paths")


# --- which paths a commit or a push touches ----------------------------------------------


def _start(args: Sequence[str], cwd: str | None = None) -> subprocess.Popen[bytes]:
    """Start git on the repository the hook runs for, in the same environment."""
    try:
        return subprocess.Popen(
            ["git", *args],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:
        raise StoreError(f"cannot run git: {exc.strerror}") from exc


def _finish(proc: subprocess.Popen[bytes], feed: bytes = b"", ok: Sequence[int] = (0,)) -> bytes:
    out, err = proc.communicate(feed)
    if proc.returncode not in ok:
        detail = err.decode("utf-8", "replace").strip().splitlines()
        name = proc.args[1] if isinstance(proc.args, list) else "git"
        raise StoreError(f"git {name} failed: {detail[-1] if detail else proc.returncode}")
    return out


def git_output(args: Sequence[str], cwd: str | None = None) -> bytes:
    """Run git and return its standard output (StoreError when it fails)."""
    return _finish(_start(args, cwd))


def parse_name_status(raw: bytes) -> list[str]:
    """Paths from ``--name-status -z`` output; renames and copies give both sides.

    A merge's combined entry (``-c --combined-all-paths``) has one status letter per
    parent (``MM``, ``RM``), then the path in each parent, then the merge's own path.
    """
    fields = raw.split(b"\0")
    paths: list[str] = []
    i = 0
    while i < len(fields):
        status = fields[i]
        if not status:
            i += 1
            continue
        if len(status) > 1 and status.isalpha():
            width = len(status) + 1
        else:
            width = 2 if status[:1] in (b"R", b"C") else 1
        paths.extend(os.fsdecode(name) for name in fields[i + 1 : i + 1 + width])
        i += 1 + width
    return list(dict.fromkeys(paths))


def staged_paths(cwd: str | None = None) -> list[str]:
    """The paths the next commit changes: added, copied, modified, deleted, type-changed,
    and both sides of a rename. Read through git, which honours ``GIT_INDEX_FILE``.

    When the commit concludes a merge, only the committer's own changes: see ``_Staged``.
    """
    return _Staged(cwd).paths()


_STAGED_ARGS = ("diff", "--cached", *_DIFF_OPTIONS)
# Against a merge head: any difference at all, each side of a rename under its own name.
_AGAINST_ARGS = ("diff", "--cached", "-z", "--name-only", "--no-renames", "--no-ext-diff")


class _Staged:
    """The staged-path question, started (its git calls run while the caller goes on).

    A commit that concludes a merge (``MERGE_HEAD`` exists: ``git merge`` stopped by a
    conflict or ``--no-commit``, ``git pull`` likewise) has every path the merge brings in
    from the other side staged against HEAD. Those are other commits' changes, checked
    when they were committed and pushed, not the committer's. So then a path counts only
    when its staged content differs from HEAD and from every merge head (one per line of
    ``MERGE_HEAD``; several for an octopus): a conflict resolution, an edit made during
    the merge. A path taken unchanged from either side is not the committer's change.

    Cherry-picks and reverts (``CHERRY_PICK_HEAD``, ``REVERT_HEAD``) are ordinary
    commits: the one made is new, and every path it changes is the committer's doing.
    """

    def __init__(self, cwd: str | None = None) -> None:
        heads = merge_heads(cwd)  # a file read, no git call, when no merge is in progress
        self.procs = [_start(_STAGED_ARGS, cwd)]
        self.procs += [_start([*_AGAINST_ARGS, head, "--"], cwd) for head in heads]

    def paths(self) -> list[str]:
        outs = _finish_all(self.procs)
        staged = parse_name_status(outs[0])
        keep = set(staged)
        for raw in outs[1:]:
            keep.intersection_update(os.fsdecode(name) for name in raw.split(b"\0") if name)
        return [path for path in staged if path in keep]


def _finish_all(procs: Sequence[subprocess.Popen[bytes]]) -> list[bytes]:
    """Every process's output; the first failure is raised once all have been reaped."""
    outs: list[bytes] = []
    failure: StoreError | None = None
    for proc in procs:
        try:
            outs.append(_finish(proc))
        except StoreError as exc:
            failure = failure or exc
    if failure is not None:
        raise failure
    return outs


def merge_heads(cwd: str | None = None) -> list[str]:
    """The commits a merge in progress brings in: the lines of ``MERGE_HEAD``, or none.

    ``MERGE_HEAD`` is always a file in the worktree's own git dir (with the reftable
    backend too), and, unlike ``git rev-parse MERGE_HEAD``, it names every head of an
    octopus. Inside a hook git tells where that dir is: ``GIT_DIR``, else the ``.git`` at
    the top of the worktree, where hooks run. Only elsewhere (``git alock check --staged``
    in a subdirectory) does it take a git call to find it.
    """
    git_dir = _git_dir_hint(cwd)
    if git_dir is not None:
        path = os.path.join(git_dir, "MERGE_HEAD")
    else:
        out = git_output(["rev-parse", "--git-path", "MERGE_HEAD"], cwd)
        path = os.path.join(cwd or os.curdir, os.fsdecode(out.rstrip(b"\n")))
    try:
        with open(path, "rb") as f:
            lines = f.read().decode("ascii", "replace").split()
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
    return list(dict.fromkeys(line.lower() for line in lines if _is_oid(line.lower())))


def _git_dir_hint(cwd: str | None) -> str | None:
    """The git dir, when the environment or a ``.git`` in ``cwd`` says so without git."""
    base = cwd or os.curdir
    env = os.environ.get("GIT_DIR")
    if env:
        return os.path.join(base, env)
    dot_git = os.path.join(base, ".git")
    if os.path.isdir(dot_git):
        return dot_git
    try:  # a linked worktree's or a submodule's ".git" file: "gitdir: <path>"
        with open(dot_git, "rb") as f:
            first = os.fsdecode(f.readline().rstrip(b"\r\n"))
    except OSError:
        return None
    if first.startswith("gitdir: "):
        return os.path.join(base, first[len("gitdir: ") :])
    return None


def _is_oid(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


@dataclass(frozen=True)
class RefUpdate:
    """One line of pre-push's standard input."""

    local_ref: str
    local_sha: str
    remote_ref: str
    remote_sha: str

    @classmethod
    def parse(cls, line: str) -> RefUpdate | None:
        parts = line.split()
        return cls(*parts) if len(parts) == 4 else None


def _is_zero(sha: str) -> bool:
    return not sha.strip("0")


def commits_among(shas: Iterable[str], cwd: str | None = None) -> set[str]:
    """Those of ``shas`` that name a commit (or a tag of one) we have."""
    wanted = list(dict.fromkeys(shas))
    if not wanted:
        return set()
    feed = "".join(f"{sha}^{{commit}}\n" for sha in wanted).encode()
    out = _finish(_start(["cat-file", "--batch-check"], cwd), feed).decode().splitlines()
    # "<oid> commit <size>" for a commit; "<name> missing" (or another type) otherwise.
    return {sha for sha, line in zip(wanted, out, strict=False) if line.split()[1:2] == ["commit"]}


def pushed_paths(updates: Iterable[RefUpdate], cwd: str | None = None) -> list[str]:
    """Paths changed by the commits a push sends: those reachable from a pushed tip and
    from no remote-tracking ref, nor from the remote's current value of the ref when we
    have it. Deletions, and our own lock refs (blobs, pushed by remote mode), carry no
    commits to check."""
    wanted = [
        u
        for u in updates
        if not _is_zero(u.local_sha) and not u.remote_ref.startswith(_OWN_REF_PREFIXES)
    ]
    known = commits_among([u.local_sha for u in wanted] + [u.remote_sha for u in wanted], cwd)
    tips = [u.local_sha for u in wanted if u.local_sha in known]
    bases = [u.remote_sha for u in wanted if u.remote_sha in known]
    if not tips:
        return []
    args = ["log", "--format=", "--no-show-signature", *_DIFF_OPTIONS, *_MERGE_OPTIONS]
    return parse_name_status(git_output([*args, *tips, "--not", "--remotes", *bases], cwd))


# --- the lock table and the configuration, through git ------------------------------------


@dataclass(frozen=True)
class HookConfig:
    mode: str  # warn or block
    ignore_case: bool
    warning: str | None = None
    # Seconds a lock outlives its expiry: remote mode's clock-skew allowance, else 0.
    skew: int = 0


def parse_config(raw: bytes) -> HookConfig:
    """``git config -z --get-regexp`` output: ``key\\nvalue\\0`` (``key\\0`` when bare)."""
    values: dict[str, str | None] = {}
    for item in raw.split(b"\0"):
        if item:
            key, sep, value = os.fsdecode(item).partition("\n")
            values[key.lower()] = value if sep else None
    case = values.get("core.ignorecase", "false")
    ignore_case = case is None or case.strip().lower() in ("true", "yes", "on", "1")
    warnings = []
    skew, skew_warning = _skew(values)
    raw_mode = values.get("alock.hookmode")
    if raw_mode is None or raw_mode.strip().lower() in MODES:
        mode = (raw_mode or "warn").strip().lower()
    else:
        mode = "warn"
        warnings.append(f"unknown alock.hookMode {raw_mode!r} (use warn or block): warning only")
    if skew_warning:
        warnings.append(skew_warning)
    return HookConfig(mode, ignore_case, "; ".join(warnings) or None, skew)


def _skew(values: Mapping[str, str | None]) -> tuple[int, str | None]:
    """Remote mode's ``alock.clockSkew`` (default 30s; ``0`` for none), as the store reads
    it; 0 in local mode, where every lock was written by this machine's clock."""
    if not values.get("alock.remote"):
        return 0, None
    raw = values.get("alock.clockskew")
    if raw is None:
        return DEFAULT_SKEW_SECONDS, None
    if raw.strip() in ("0", "0s"):
        return 0, None
    try:
        return parse_duration(raw, what="alock.clockSkew"), None
    except GitlocksError as exc:
        return DEFAULT_SKEW_SECONDS, f"{exc}; allowing {DEFAULT_SKEW_SECONDS}s"


def read_table(refs: bytes, cwd: str | None, ignore_case: bool, skew: int = 0) -> Table:
    """The lock table from ``for-each-ref`` output (``<oid> <type> <refname>`` lines)."""
    found = []
    for line in refs.decode("utf-8", "replace").splitlines():
        oid, kind, name = line.split(" ", 2)
        found.append((oid, kind, name))
    blobs = [oid for oid, kind, _ in found if kind == "blob"]
    data = _read_blobs(blobs, cwd) if blobs else {}
    records: dict[str, LockRecord] = {}
    problems: list[Problem] = []
    for oid, kind, name in found:
        reason = None
        if kind != "blob":
            reason = f"points at a {kind}, not a lock record blob"
        else:
            try:
                record = LockRecord.from_json(data[oid])
            except (RecordError, KeyError) as exc:
                reason = str(exc)
            else:
                if record.id == name[len(LOCK_PREFIX) :]:
                    records[record.id] = record
                    continue
                reason = f"record id {record.id!r} does not match its ref"
        problems.append(Problem(ref=name, oid=oid, reason=reason))
    return Table(ignore_case=ignore_case, records=records, problems=problems, skew=skew)


def _read_blobs(oids: list[str], cwd: str | None) -> dict[str, bytes]:
    """Contents by id, from one ``cat-file --batch`` (``<oid> <type> <size>\\n<data>\\n``)."""
    out = _finish(_start(["cat-file", "--batch"], cwd), "".join(o + "\n" for o in oids).encode())
    blobs: dict[str, bytes] = {}
    pos = 0
    while pos < len(out):
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        pos = end + 1
        if len(header) != 3:  # "<oid> missing"
            continue
        size = int(header[2])
        blobs[header[0].decode()] = out[pos : pos + size]
        pos += size + 1
    return blobs


# --- the check ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Held:
    """A path of the commit or push inside other holders' live locks."""

    path: str
    locks: tuple[LockRecord, ...]


def find_held(table: Table, identity: Identity, now: datetime, paths: Sequence[str]) -> list[Held]:
    """The paths inside a live lock of a holder who is not a friend, in order.

    Live allows for the table's clock skew (remote mode): a lock another machine wrote
    counts until its expiry plus the allowance, as it does for the command line.
    """
    theirs = _Theirs(table, identity, now)
    if not theirs.live:
        return []
    held = []
    for path in paths:
        locks = theirs.covering(path)
        if locks:
            held.append(Held(path, tuple(locks)))
    return held


class _Theirs:
    """The live locks of holders who are not friends: computed once for many paths."""

    def __init__(self, table: Table, identity: Identity, now: datetime) -> None:
        self.table = table
        self.cutoff = table.cutoff(format_time(now))
        self.ours = table.family(identity.holder, identity.parent)
        self.live = [r for r in table if self.alive(r) and r.holder not in self.ours]

    def alive(self, record: LockRecord) -> bool:
        return record.expires_at > self.cutoff

    def covering(self, path: str) -> list[LockRecord]:
        """Their live locks covering ``path``, by id."""
        entry = path_entry(path)
        if entry is None:  # a name no pattern can spell: decided one lock at a time
            return [r for r in self.live if _covers(r, path, self.table.ignore_case)]
        found = (self.table.records[i] for i in sorted(self.table.covering(entry)))
        return [r for r in found if self.alive(r) and r.holder not in self.ours]


def _covers(record: LockRecord, path: str, ignore_case: bool) -> bool:
    return any(entry_covers(e, path, ignore_case=ignore_case) for e in record_entries(record))


def check_paths(ctx: Context, paths: Sequence[str]) -> list[CheckItem]:
    """FREE, YOURS or HELD for each concrete path (``git alock check --staged``)."""
    from gitlocks import locks

    entries = {path: path_entry(path) for path in paths}
    normal = {path: entry for path, entry in entries.items() if entry is not None}
    checked = locks.check(ctx, list(normal.values()))
    by_path = {path: item._replace(path=path) for path, item in zip(normal, checked, strict=True)}
    odd = [path for path, entry in entries.items() if entry is None]
    if odd:
        table = ctx.store.read_table()
        theirs = _Theirs(table, ctx.identity, ctx.now())
        live = [r for r in table if theirs.alive(r)]
        for path in odd:
            covering = [r for r in live if _covers(r, path, table.ignore_case)]
            held = [r for r in covering if r.holder not in theirs.ours]
            status: Literal["free", "yours", "held"] = (
                "held" if held else "yours" if covering else "free"
            )
            by_path[path] = locks.CheckItem(path, status, held or covering)
    return [by_path[path] for path in entries]


def _runs_hooks(proc: SessionProcess) -> bool:
    """A hook script, or the pre-commit framework: between git and us, never the session."""
    if proc.name.startswith(HOOK_NAMES):  # comm is cut at 15 characters
        return True
    args = _cmdline(proc.pid)
    return any(a in ("pre_commit", "-mpre_commit") or a.endswith("/pre-commit") for a in args)


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [os.fsdecode(a) for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def hook_session() -> SessionProcess:
    """The session process as the command line sees it, seen from inside a hook.

    The command line's chain is ``session -> shell -> git -> git-alock``; a hook adds git's
    hook process (named after the hook, not a shell) and maybe the pre-commit framework,
    which would otherwise be taken for the session and give the committer another id.
    """
    pid = os.getppid()
    proc = session_process(pid)
    for _ in range(8):
        if not _runs_hooks(proc):
            break
        parent = parent_pid(proc.pid)
        if parent is None or parent <= 1:
            break
        proc = session_process(parent)
    return proc


# --- the hook entry point -----------------------------------------------------------------


def _lock_line(held: Held, record: LockRecord, now: datetime) -> str:
    left = (record.expires() - now).total_seconds()
    reason = f' "{record.reason}"' if record.reason else ""
    return (
        f"HELD {held.path} by {record.holder} ({' '.join(record.paths)}){reason}, "
        f"expires in {format_duration(left)} [lock {record.id}]"
    )


@dataclass
class HookReport:
    hook: str
    config: HookConfig
    held: list[Held]
    problems: list[Problem]
    now: datetime

    @property
    def exit_code(self) -> int:
        return EXIT_REFUSED if self.held and self.config.mode == "block" else EXIT_OK

    def render(self) -> str:
        lines = [self.config.warning] if self.config.warning else []
        lines += [
            f"warning: {p.ref} is not a usable lock ({p.reason}); ignored" for p in self.problems
        ]
        for held in self.held:
            lines += [_lock_line(held, record, self.now) for record in held.locks]
        if self.held:
            lines.append(self._advice(len(self.held)))
        return "".join(f"{PREFIX}{printable(line)}\n" for line in lines)

    def _advice(self, count: int) -> str:
        what = "commit" if self.hook == "pre-commit" else "push"
        paths = f"{count} path{'s' if count != 1 else ''} inside another holder's lock"
        if self.config.mode == "block":
            leave = (
                "unstage them (git restore --staged PATH)"
                if what == "commit"
                else "push without those commits"
            )
            return (
                f"REFUSED {what}: {paths}: {leave}, ask the holder to release, "
                f"or bypass with git {what} --no-verify"
            )
        return (
            f"WARNING: {paths}; the {what} goes on. Ask the holder before changing their "
            f"paths (git alock list shows every claim); alock.hookMode=block refuses instead"
        )


def run_check(hook: str, stdin: Iterable[str], cwd: str | None = None) -> HookReport:
    """The hook's question, answered: every path of the commit or push, checked."""
    # Independent git calls run side by side: each costs a process start.
    config = _start(_CONFIG_ARGS, cwd)
    refs = _start(
        ["for-each-ref", "--format=%(objectname) %(objecttype) %(refname)", LOCK_PREFIX], cwd
    )
    staged = _Staged(cwd) if hook == "pre-commit" else None
    settings = parse_config(_finish(config, ok=(0, 1)))  # 1: none of the keys is set
    table = read_table(_finish(refs), cwd, settings.ignore_case, settings.skew)
    if staged is not None:
        paths = staged.paths()
    else:
        paths = pushed_paths(_push_updates(os.environ, stdin), cwd)
    now = utcnow()
    identity = resolve_identity(None, session=hook_session())
    held = find_held(table, identity, now, paths) if paths else []
    return HookReport(hook, settings, held, table.problems if paths else [], now)


def _push_updates(env: Mapping[str, str], stdin: Iterable[str]) -> list[RefUpdate]:
    """pre-push's stdin, or the pre-commit framework's ``PRE_COMMIT_*_REF`` variables."""
    if env.get("PRE_COMMIT_TO_REF"):
        remote = env.get("PRE_COMMIT_REMOTE_BRANCH", "")
        source = env.get("PRE_COMMIT_FROM_REF") or "0" * 40
        return [RefUpdate("", env["PRE_COMMIT_TO_REF"], remote, source)]
    return [u for u in map(RefUpdate.parse, stdin) if u is not None]


def main(argv: Sequence[str]) -> int:
    """``git-alock hook HOOK [ARGS...]``: print the report on stderr, return the exit code.

    An entry point, so it prints. In warn mode nothing stops the commit: not a store
    problem, not even a bug (reported with its traceback). In block mode both do.
    """
    if not argv or argv[0] not in HOOK_NAMES:
        sys.stderr.write(f"error: usage: git-alock hook {'|'.join(HOOK_NAMES)} [ARGS...]\n")
        return EXIT_ERROR
    hook = argv[0]
    try:
        report = run_check(hook, sys.stdin if hook == "pre-push" else ())
    except GitlocksError as exc:
        sys.stderr.write(f"{PREFIX}error: {printable(str(exc))}; {hook} lock check skipped\n")
        return exc.exit_code if _configured_mode() == "block" else EXIT_OK
    except Exception as exc:  # a bug: say so loudly, but a warn-mode hook lets the commit on
        import traceback

        sys.stderr.write(
            f"{PREFIX}error: internal error: {exc.__class__.__name__}: {printable(str(exc))}\n"
            "This is a bug in gitlocks; please report it with the traceback below.\n"
        )
        traceback.print_exc()
        return EXIT_ERROR if _configured_mode() == "block" else EXIT_OK
    sys.stderr.write(report.render())
    return report.exit_code


def _configured_mode() -> str:
    try:
        return parse_config(git_output(["config", "-z", "--get-regexp", "^alock\\.hookmode$"])).mode
    except GitlocksError:
        return "warn"
