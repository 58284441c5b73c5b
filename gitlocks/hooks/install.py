"""Installing the bundled hooks: the shim git runs (POSIX sh with a marker line, the same
text as the project's ``hooks/`` folder), chaining a foreign hook, uninstalling."""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitlocks.errors import Refused, StoreError, UsageError
from gitlocks.git.changes import git_output
from gitlocks.git.files import write_atomic
from gitlocks.hooks import CLIENT_HOOKS, HOOKS, STDIN_HOOKS

MARKER = "# gitlocks-hook: installed by git alock install-hooks"
# A foreign hook we chain is kept under its own name in this folder of the hooks
# directory: hook managers (husky, overcommit) tell hooks apart by their file name.
CHAINED_DIR = "alock-chained"
# Where earlier versions kept it (``pre-commit.alock-chained``): still found, moved
# to CHAINED_DIR by install-hooks and restored by uninstall-hooks.
LEGACY_SUFFIX = ".alock-chained"


# The shim git runs. ``ALOCK_PYTHON`` is the interpreter that installed the hook (empty in
# the project's hooks/ copy): agents often commit from a shell whose PATH lacks the virtual
# environment. ``-c`` rather than ``-m``: ``-m`` would import a ``gitlocks`` folder of the
# repository being committed to. Older shims stay ours (the marker line) and are "updated".
_SHIM = """\
#!/bin/sh
{marker}
{about}
ALOCK_PYTHON={python}
hook={hook}
# The hook kept from before install-hooks runs first, as if it were still "$0": hook
# managers find their files next to $0 and tell hooks apart by its name. A sh or bash
# script is read by its own shell with $0 so set; anything else runs from {chained_dir}/
# under its own name.
chained="$(dirname "$0")/{chained_dir}/$hook"
run_chained() {{
    shell=$(sed -n '1s/^#![[:space:]]*//p;q' "$chained")
    case $shell in
    */sh | */bash | */dash | */sh\\ -* | */bash\\ -* | */dash\\ -* | */env\\ sh | */env\\ bash)
        ALOCK_CHAINED=$chained $shell -c '. "$ALOCK_CHAINED"' "$0" "$@" ;;
    *) "$chained" "$@" ;;
    esac
}}
if [ -x "$chained" ]; then
{run_chained}
fi
if [ "$hook" = prepare-commit-msg ]; then
    # Only a commit git makes for a revert or a cherry-pick runs no commit-msg: every
    # other one is left to it, without starting Python.
    grand=$(sed 's/.*) . \\([0-9]*\\) .*/\\1/' "/proc/$PPID/stat" 2>/dev/null)
    case $(cat "/proc/$PPID/cmdline" "/proc/$grand/cmdline" 2>/dev/null | tr '\\0' ' ') in
    *revert* | *cherry-pick*) ;;
    *) exit 0 ;;
    esac
fi
if [ -n "$ALOCK_PYTHON" ] && [ -x "$ALOCK_PYTHON" ]; then
    # The command's own entry point (gitlocks.main:main), in the interpreter it lives in.
    exec "$ALOCK_PYTHON" -c 'import sys
if sys.path[:1] == [""]:
    del sys.path[0]  # not the repository being committed to (none with -P, PYTHONSAFEPATH)
try:
    from gitlocks.main import main
except ImportError as exc:
    sys.stderr.write("alock: gitlocks is not importable here (%s); lock check skipped\\n" % exc)
    sys.exit(0)
sys.argv[1:1] = ["hook"]
sys.exit(main())' "$hook" "$@"
fi
if command -v git-alock >/dev/null 2>&1; then
    # Not exec'd: a git-alock that cannot be started (a script whose interpreter is gone)
    # exits 126 or 127, which would refuse every commit.
    git-alock hook "$hook" "$@"
    status=$?
    case $status in 126 | 127) ;; *) exit $status ;; esac
    echo "alock: git-alock on PATH could not run (exit $status); lock check skipped" >&2
    exit 0
fi
echo "alock: gitlocks is not installed here (git-alock is not on PATH); lock check skipped" >&2
exit 0
"""
_CHAIN_COMMIT = '    run_chained "$@" || exit $?'
# pre-push reads its ref list on stdin, and both hooks need it: keep it in an unlinked file.
_CHAIN_PUSH = """\
    input=$(mktemp) || exit 1
    cat >"$input"
    run_chained "$@" <"$input" || {{ status=$?; rm -f "$input"; exit $status; }}
    exec <"$input"
    rm -f "$input\""""


# What each shim says it does, in its comment lines.
_ABOUT = {
    "pre-commit": (
        "Warns when a commit touches paths inside another holder's live lock (git alock).",
        "git config alock.hookMode block: refuse instead. git commit --no-verify: skip it.",
    ),
    "pre-push": (
        "Warns when a push touches paths inside another holder's live lock (git alock).",
        "git config alock.hookMode block: refuse instead. git push --no-verify: skip it.",
    ),
    "commit-msg": (
        "Adds an Agent-Id trailer naming the agent that commits (git alock), once:",
        "never a second one for the same agent. Rebases and cherry-picks keep theirs.",
    ),
    "prepare-commit-msg": (
        "Adds an Agent-Id trailer to the commits of git revert and git cherry-pick, which",
        "run no commit-msg (git alock); a cherry-pick keeps a trailer it carries.",
    ),
    "post-commit": (
        "Renews the committer's own claims on the paths it committed (git alock):",
        "a commit is a heartbeat. It never changes the commit.",
    ),
    "post-merge": (
        "Releases your claims made --until-merged whose work a merge has landed (git alock),",
        "so that they are gone before anyone looks. It never changes the merge.",
    ),
    "post-rewrite": (
        "Releases your claims made --until-merged whose work has landed, after a rebase",
        "or an amend (git alock). It never changes the commits.",
    ),
    "pre-receive": (
        "Refuses a push that changes paths inside another holder's live lock (git alock),",
        "decided on the lock table stored in this repository. Lock refs always pass.",
    ),
}


def shim_text(hook: str, python: str = "") -> str:
    """The hook script for ``hook``; ``python`` is baked in as ``ALOCK_PYTHON``."""
    if hook not in HOOKS:
        raise UsageError(f"unknown hook {hook!r}: use one of {', '.join(HOOKS)}")
    return _SHIM.format(
        marker=MARKER,
        hook=hook,
        about="\n".join("# " + line for line in _ABOUT[hook]),
        python=shlex.quote(python) if python else "''",
        chained_dir=CHAINED_DIR,
        run_chained=_CHAIN_PUSH.format() if hook in STDIN_HOOKS else _CHAIN_COMMIT,
    )


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
    out = os.fsdecode(git_output(["rev-parse", "--git-path", "hooks"], cwd).rstrip(b"\n"))
    return Path(cwd or os.getcwd(), out).resolve()


# In a hooks directory install-hooks had to make: remove the directory with the last hook.
CREATED_MARKER = ".gitlocks-made-this-directory"


def is_ours(path: Path) -> bool:
    """Whether ``path`` is a hook we wrote (it carries our marker line)."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with path.open("rb") as f:
            return MARKER.encode() in f.read(512)
    except OSError:
        return False


def install(directory: Path, hooks: Sequence[str], python: str) -> list[HookChange]:
    """Install our shim for each hook; a foreign hook is moved aside and chained.

    A hooks directory that does not exist yet is made, with a marker file saying so, so
    that ``uninstall`` removes it again once nothing else is in it.
    """
    if not os.path.isdir(directory):
        directory.mkdir(parents=True, exist_ok=True)
        (directory / CREATED_MARKER).write_text("made by git alock install-hooks\n")
    return [_install_one(directory, hook, shim_text(hook, python)) for hook in hooks]


def _install_one(directory: Path, hook: str, text: str) -> HookChange:
    path = directory / hook
    chained = directory / CHAINED_DIR / hook
    legacy = directory / (hook + LEGACY_SUFFIX)
    if is_ours(path) and os.path.lexists(legacy) and not os.path.lexists(chained):
        _move_hook(legacy, chained)  # an install by an older version: the new layout
    keep = chained if os.path.lexists(chained) else None
    if is_ours(path):
        if path.read_text() == text:
            return HookChange(hook, path, "already_installed", keep)
        _write_hook(path, text)
        return HookChange(hook, path, "updated", keep)
    if os.path.lexists(path):
        for other in (chained, legacy):
            if os.path.lexists(other):
                raise Refused(
                    f"{path} is not ours and {other} already exists: "
                    "move one of them away, then install again"
                )
        _move_hook(path, chained)
        keep = chained
    _write_hook(path, text)
    return HookChange(hook, path, "installed", keep)


def _move_hook(source: Path, target: Path) -> None:
    """Move a hook between the hooks directory and CHAINED_DIR, keeping its bytes, mode
    and symlink-ness. A relative symbolic link gains or loses one ``../`` so that it
    names the same file from its new folder; moved back, its text is as it was."""
    try:
        target.parent.mkdir(exist_ok=True)
        if not source.is_symlink() or os.path.isabs(link := os.readlink(source)):
            os.rename(source, target)
            return
        deeper = len(target.parent.parts) - len(source.parent.parts)
        moved = "../" + link if deeper > 0 else link.removeprefix("../") if deeper < 0 else link
        os.symlink(moved, target)
        source.unlink()
    except OSError as exc:
        raise StoreError(f"cannot move {source} to {target}: {exc.strerror}") from exc


def _write_hook(path: Path, text: str) -> None:
    try:
        write_atomic(path, text.encode(), 0o755)
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror}") from exc


def uninstall(directory: Path, hooks: Sequence[str] = CLIENT_HOOKS) -> list[HookChange]:
    """Remove our shims and put back the hooks they chained, as they were."""
    changes = []
    for hook in hooks:
        path = directory / hook
        ours = is_ours(path)
        if ours:
            path.unlink()
        restored = None
        for kept in (directory / CHAINED_DIR / hook, directory / (hook + LEGACY_SUFFIX)):
            if os.path.lexists(kept) and not os.path.lexists(path):
                _move_hook(kept, path)
                restored = path
        if ours or restored is not None:
            changes.append(HookChange(hook, path, "uninstalled", restored))
    with contextlib.suppress(OSError):  # only when empty: nothing else of ours is there
        (directory / CHAINED_DIR).rmdir()
    marker = directory / CREATED_MARKER
    if marker.is_file() and {p.name for p in directory.iterdir()} == {CREATED_MARKER}:
        with contextlib.suppress(OSError):  # made by install-hooks, and empty again
            marker.unlink()
            directory.rmdir()
    if not changes:  # nothing of ours anywhere: say so once, for the hook installed first
        changes.append(HookChange(hooks[0], directory / hooks[0], "not_installed", None))
    return changes
