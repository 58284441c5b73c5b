"""The git hooks: which paths a commit or a push touches, the check, and installation.

The hook path (``git-alock hook pre-commit|pre-push``, dispatched by ``gitlocks.main``)
runs on every commit of every user, so this module must not import the command-line
framework: a test asserts that typer and ``gitlocks.cli`` stay out of ``sys.modules``.

Inside a hook git sets ``GIT_DIR``, ``GIT_INDEX_FILE`` and friends. libgit2 reads none of
them, so the paths of a commit come from the git command line, which honours the
temporary index of ``git commit -a`` and ``git commit PATH``; the lock store is opened
from ``GIT_DIR`` when git set it, else discovered from the current directory (git runs
hooks at the top of the working tree). Every git call here targets that same repository,
so the variables are passed on as they are.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import pygit2

from gitlocks import locks, render
from gitlocks.errors import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_REFUSED,
    GitlocksError,
    InvalidPattern,
    NotARepository,
    Refused,
    StoreError,
    UsageError,
)
from gitlocks.identity import SessionProcess, resolve_identity, session_process
from gitlocks.locks import CheckItem, Context
from gitlocks.scope import ScopeEntry, entry_covers
from gitlocks.store import Store
from gitlocks.table import record_entries

HOOK_NAMES = ("pre-commit", "pre-push")
MARKER = "# gitlocks-hook: installed by git alock install-hooks"
CHAINED_SUFFIX = ".alock-chained"
MODES = ("warn", "block")
PREFIX = "alock: "
# Lock refs (and the journal) are pushed by remote mode; they hold no commits to check.
_OWN_REF_PREFIXES = ("refs/agent-locks/", "refs/agent-locks-meta/")
_DIFF_OPTIONS = ("-z", "--name-status", "-M", "--diff-filter=ACDMRT", "--no-color", "--no-ext-diff")

# The shim git runs. ``ALOCK_PYTHON`` is the interpreter that installed the hook (empty in
# the copy shipped in the project's hooks/ folder): agents often commit from a shell whose
# PATH lacks the virtual environment, and the hook must still find gitlocks there.
_SHIM = """\
#!/bin/sh
{marker}
# Warns when a {verb} touches paths inside another holder's live lock (git alock).
# git config alock.hookMode block: refuse instead. git {verb} --no-verify: skip it.
ALOCK_PYTHON={python}
hook={hook}
chained="$(dirname "$0")/$hook{suffix}"
if [ -x "$chained" ]; then
{run_chained}
fi
if [ -n "$ALOCK_PYTHON" ] && [ -x "$ALOCK_PYTHON" ]; then
    exec "$ALOCK_PYTHON" -c 'import sys
del sys.path[0]  # not the repository being committed to
try:
    from gitlocks.hooks import main
except ImportError as exc:
    sys.stderr.write("alock: gitlocks is not importable here (%s); lock check skipped\\n" % exc)
    sys.exit(0)
sys.exit(main(sys.argv[1:]))' "$hook" "$@"
fi
if command -v git-alock >/dev/null 2>&1; then
    exec git-alock hook "$hook" "$@"
fi
echo "alock: gitlocks is not installed here (git-alock is not on PATH); lock check skipped" >&2
exit 0
"""
_CHAIN_COMMIT = '    "$chained" "$@" || exit $?'
# pre-push reads its ref list on stdin, and both hooks need it: keep it in an unlinked file.
_CHAIN_PUSH = """\
    input=$(mktemp) || exit 1
    cat >"$input"
    "$chained" "$@" <"$input" || {{ status=$?; rm -f "$input"; exit $status; }}
    exec <"$input"
    rm -f "$input\""""


def shim_text(hook: str, python: str = "") -> str:
    """The hook script for ``hook``; ``python`` is baked in as ``ALOCK_PYTHON``."""
    if hook not in HOOK_NAMES:
        raise UsageError(f"unknown hook {hook!r}: use one of {', '.join(HOOK_NAMES)}")
    return _SHIM.format(
        marker=MARKER,
        hook=hook,
        verb="commit" if hook == "pre-commit" else "push",
        python=shlex.quote(python) if python else "''",
        suffix=CHAINED_SUFFIX,
        run_chained=_CHAIN_COMMIT if hook == "pre-commit" else _CHAIN_PUSH.format(),
    )


# --- which paths a commit or a push touches ----------------------------------------------


def _git(args: Sequence[str], cwd: str | None = None) -> bytes:
    """Run git on the repository the hook runs for (same environment) and return stdout."""
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except OSError as exc:
        raise StoreError(f"cannot run git: {exc.strerror}") from exc
    if proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise StoreError(f"git {args[0]} failed: {detail[-1] if detail else proc.returncode}")
    return proc.stdout


def parse_name_status(raw: bytes) -> list[str]:
    """Paths from ``--name-status -z`` output; renames and copies give both sides."""
    fields = raw.split(b"\0")
    paths: list[str] = []
    i = 0
    while i < len(fields):
        status = fields[i]
        if not status:
            i += 1
            continue
        width = 2 if status[:1] in (b"R", b"C") else 1
        for name in fields[i + 1 : i + 1 + width]:
            paths.append(os.fsdecode(name))
        i += 1 + width
    return list(dict.fromkeys(paths))


def staged_paths(cwd: str | None = None) -> list[str]:
    """The paths the next commit changes: added, copied, modified, deleted, type-changed,
    and both sides of a rename. Read through git, which honours ``GIT_INDEX_FILE``."""
    return parse_name_status(_git(["diff", "--cached", *_DIFF_OPTIONS], cwd))


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


def pushed_paths(
    updates: Iterable[RefUpdate], is_commit: Callable[[str], bool], cwd: str | None = None
) -> list[str]:
    """Paths changed by the commits a push sends: those reachable from a pushed tip and
    from no remote-tracking ref, nor from the remote's current value of the ref when we
    have it. Deletions, and our own lock refs (blobs, pushed by remote mode), carry no
    commits to check."""
    tips: list[str] = []
    bases: list[str] = []
    for update in updates:
        if _is_zero(update.local_sha) or update.remote_ref.startswith(_OWN_REF_PREFIXES):
            continue
        if not is_commit(update.local_sha):
            continue
        tips.append(update.local_sha)
        if not _is_zero(update.remote_sha) and is_commit(update.remote_sha):
            bases.append(update.remote_sha)
    if not tips:
        return []
    args = ["log", "--format=", "--no-show-signature", *_DIFF_OPTIONS]
    return parse_name_status(_git([*args, *tips, "--not", "--remotes", *bases], cwd))


# --- the check ----------------------------------------------------------------------------


def _path_entry(path: str) -> ScopeEntry | None:
    """A concrete path as an exact scope entry: its wildcard characters escaped, so that a
    file named ``a*b`` is that file only. None for a name no pattern can spell (control
    characters); :func:`check_paths` decides those one lock at a time."""
    escaped = "".join("\\" + ch if ch in "\\*?[" else ch for ch in path)
    if escaped.startswith("!"):
        escaped = "\\" + escaped
    try:
        return ScopeEntry(escaped, exact=True)
    except InvalidPattern:
        return None


def check_paths(ctx: Context, paths: Sequence[str]) -> list[CheckItem]:
    """FREE, YOURS or HELD for each concrete root-relative path, in order."""
    entries = {path: _path_entry(path) for path in paths}
    normal = {path: entry for path, entry in entries.items() if entry is not None}
    checked = locks.check(ctx, list(normal.values()))
    by_path = {path: replace(item, path=path) for path, item in zip(normal, checked, strict=True)}
    odd = [path for path, entry in entries.items() if entry is None]
    if odd:
        by_path.update((item.path, item) for item in _check_odd(ctx, odd))
    return [by_path[path] for path in entries]


def _check_odd(ctx: Context, paths: list[str]) -> list[CheckItem]:
    """The slow way, for names with control characters: every live lock, one by one."""
    table, live = locks.live_table(ctx)
    ident = ctx.identity
    friends = {ident.holder, *locks.ancestors(ident, table)} | locks.descendants(
        ident.holder, table
    )
    items = []
    for path in paths:
        covering = [
            record
            for record in live
            if any(
                entry_covers(entry, path, ignore_case=table.ignore_case)
                for entry in record_entries(record)
            )
        ]
        theirs = [r for r in covering if r.holder not in friends]
        status: Literal["free", "yours", "held"] = (
            "held" if theirs else "yours" if covering else "free"
        )
        items.append(CheckItem(path, status, theirs or covering))
    return items


def hook_mode(store: Store) -> tuple[str, str | None]:
    """``warn`` or ``block`` from ``alock.hookMode``, and a warning for a value we ignore."""
    if "GIT_CONFIG_PARAMETERS" in os.environ or "GIT_CONFIG_COUNT" in os.environ:
        # ``git -c alock.hookMode=block commit``: only git itself reads these.
        proc = subprocess.run(
            ["git", "config", "--get", "alock.hookMode"], capture_output=True, check=False
        )
        raw = proc.stdout.decode("utf-8", "replace").strip() or None
    else:
        raw = store.config_get("alock.hookMode")
    if raw is None:
        return "warn", None
    mode = raw.strip().lower()
    if mode in MODES:
        return mode, None
    return "warn", f"unknown alock.hookMode {raw!r} (use warn or block): warning only"


def open_store() -> Store:
    """The repository the hook runs for: ``GIT_DIR`` when git set it, else discovered."""
    git_dir = os.environ.get("GIT_DIR")
    if not git_dir:
        return Store.discover()
    try:
        return Store(pygit2.Repository(git_dir))
    except pygit2.GitError as exc:
        raise NotARepository(f"cannot open the git repository at {git_dir}: {exc}") from exc


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


def _parent_pid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode("utf-8", "replace")
        return int(text[text.rfind(")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        pass
    try:
        out = subprocess.run(
            ["ps", "-o", "ppid=", "-p", str(pid)], capture_output=True, text=True, check=False
        ).stdout
        return int(out.strip())
    except (OSError, ValueError):
        return None


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
        parent = _parent_pid(proc.pid)
        if parent is None or parent <= 1:
            break
        proc = session_process(parent)
    return proc


# --- the hook entry point -----------------------------------------------------------------


@dataclass
class HookReport:
    hook: str
    mode: str
    items: list[CheckItem]
    warnings: list[str]
    now: datetime

    @property
    def held(self) -> list[CheckItem]:
        return [item for item in self.items if item.status == "held"]

    @property
    def exit_code(self) -> int:
        return EXIT_REFUSED if self.held and self.mode == "block" else EXIT_OK

    def render(self) -> str:
        lines = list(self.warnings)
        held = self.held
        if held:
            lines += render.check(held, self.now).splitlines()
            lines.append(self._advice(len(held)))
        return "".join(f"{PREFIX}{line}\n" for line in lines)

    def _advice(self, count: int) -> str:
        what = "commit" if self.hook == "pre-commit" else "push"
        paths = f"{count} path{'s' if count != 1 else ''} inside another holder's lock"
        if self.mode == "block":
            leave = (
                "unstage them (git restore --staged PATH)"
                if what == "commit"
                else ("push without those commits")
            )
            return (
                f"REFUSED {what}: {paths}: {leave}, ask the holder to release, "
                f"or bypass with git {what} --no-verify"
            )
        return (
            f"WARNING: {paths}; the {what} goes on. Ask the holder before changing their "
            f"paths (git alock list shows every claim); alock.hookMode=block refuses instead"
        )


def run_check(hook: str, args: Sequence[str], stdin: Iterable[str]) -> HookReport:
    """The hook's question, answered: every path of the commit or push, checked."""
    store = open_store()
    mode, warning = hook_mode(store)
    ctx = Context(store=store, identity=resolve_identity(None, session=hook_session()))
    if hook == "pre-commit":
        paths = staged_paths()
    else:
        paths = pushed_paths(_push_updates(os.environ, stdin), _is_commit(store))
    items = check_paths(ctx, paths) if paths else []
    warnings = [warning] if warning else []
    if items:
        warnings += [p for p in render.problems(store.read_table().problems).splitlines() if p]
    return HookReport(hook, mode, items, warnings, ctx.now())


def _push_updates(env: Mapping[str, str], stdin: Iterable[str]) -> list[RefUpdate]:
    """pre-push's stdin, or the pre-commit framework's ``PRE_COMMIT_*_REF`` variables."""
    if env.get("PRE_COMMIT_TO_REF"):
        remote = env.get("PRE_COMMIT_REMOTE_BRANCH", "")
        source = env.get("PRE_COMMIT_FROM_REF") or "0" * 40
        return [RefUpdate("", env["PRE_COMMIT_TO_REF"], remote, source)]
    return [u for u in map(RefUpdate.parse, stdin) if u is not None]


def _is_commit(store: Store) -> Callable[[str], bool]:
    def is_commit(sha: str) -> bool:
        try:
            store.repo.revparse_single(sha).peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError):
            return False
        return True

    return is_commit


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
        report = run_check(hook, argv[1:], sys.stdin if hook == "pre-push" else ())
    except GitlocksError as exc:
        sys.stderr.write(f"{PREFIX}error: {exc}; {hook} lock check skipped\n")
        return EXIT_OK if _mode_hint() != "block" else exc.exit_code
    except Exception as exc:  # a bug: say so loudly, but a warn-mode hook lets the commit on
        sys.stderr.write(
            f"{PREFIX}error: internal error: {exc.__class__.__name__}: {exc}\n"
            "This is a bug in gitlocks; please report it with the traceback below.\n"
        )
        traceback.print_exc()
        return EXIT_OK if _mode_hint() != "block" else EXIT_ERROR
    sys.stderr.write(report.render())
    return report.exit_code


def _mode_hint() -> str:
    """The configured mode when the store could not tell us (git reads the config)."""
    proc = subprocess.run(
        ["git", "config", "--get", "alock.hookMode"], capture_output=True, check=False
    )
    return proc.stdout.decode("utf-8", "replace").strip().lower() or "warn"


# --- install and uninstall ----------------------------------------------------------------


@dataclass(frozen=True)
class HookChange:
    """What install or uninstall did to one hook."""

    hook: str
    path: Path
    status: str  # installed, updated, already_installed, uninstalled, not_installed
    chained: Path | None = None  # the foreign hook we run first (or restored)

    def to_dict(self) -> dict[str, Any]:
        return {
            "hook": self.hook,
            "path": os.fspath(self.path),
            "status": self.status,
            "chained": os.fspath(self.chained) if self.chained else None,
        }


def hooks_dir(cwd: str | None = None) -> Path:
    """The directory git runs hooks from: ``core.hooksPath`` if set, else the common git
    dir's ``hooks`` (shared by linked worktrees). git prints it relative to ``cwd``."""
    out = os.fsdecode(_git(["rev-parse", "--git-path", "hooks"], cwd).rstrip(b"\n"))
    return Path(cwd or os.getcwd(), out).resolve()


def is_ours(path: Path) -> bool:
    """Whether ``path`` is a hook we wrote (it carries our marker line)."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with path.open("rb") as f:
            head = f.read(512)
    except OSError:
        return False
    return MARKER.encode() in head


def install(directory: Path, hooks: Sequence[str], python: str) -> list[HookChange]:
    """Install our shim for each hook; a foreign hook is moved aside and chained."""
    directory.mkdir(parents=True, exist_ok=True)
    return [_install_one(directory, hook, shim_text(hook, python)) for hook in hooks]


def _install_one(directory: Path, hook: str, text: str) -> HookChange:
    path = directory / hook
    chained = directory / (hook + CHAINED_SUFFIX)
    keep = chained if os.path.lexists(chained) else None
    if is_ours(path):
        if path.read_text() == text:
            return HookChange(hook, path, "already_installed", keep)
        _write_hook(path, text)
        return HookChange(hook, path, "updated", keep)
    if os.path.lexists(path):
        if keep is not None:
            raise Refused(
                f"{path} is not ours and {chained.name} already exists: "
                "move one of them away, then install again"
            )
        # A rename keeps the foreign hook's bytes, mode and symlink-ness exactly.
        os.rename(path, chained)
        keep = chained
    _write_hook(path, text)
    return HookChange(hook, path, "installed", keep)


def _write_hook(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.alock-tmp")
    try:
        tmp.write_text(text)
        tmp.chmod(0o755)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StoreError(f"cannot write {path}: {exc.strerror}") from exc


def uninstall(directory: Path, hooks: Sequence[str] = HOOK_NAMES) -> list[HookChange]:
    """Remove our shims and put back the hooks they chained, as they were."""
    changes = []
    for hook in hooks:
        path = directory / hook
        chained = directory / (hook + CHAINED_SUFFIX)
        ours = is_ours(path)
        if ours:
            path.unlink()
        restored = None
        if os.path.lexists(chained) and not os.path.lexists(path):
            os.rename(chained, path)
            restored = path
        status = "uninstalled" if ours else "not_installed"
        changes.append(HookChange(hook, path, status, restored))
    return changes
