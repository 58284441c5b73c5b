"""The pre-receive hook: a repository you host refuses pushes into others' live claims.

git runs it in the receiving repository, before any ref moves, with one
``<old> <new> <ref>`` line per pushed ref on standard input and the pushed objects in a
quarantine that the environment git sets makes visible to every git it starts. The commits
a push brings, those reachable from a new value and from no ref the repository has
(``git log <new>... --not --all``), are judged as ``git alock verify`` judges them
(``gitlocks.hooks.verify``, the same code), against the lock table stored in this
repository: the one its journal commit carries, as clients decide (its lock refs only
where there is no journal, or one from before journal commits carried the table).

- Lock refs and the journal hold no commits: a push of them is judged by what it does to
  the table (``gitlocks.hooks.hosted``): one that deletes, rewinds or contradicts it is
  refused in every mode. Remote-mode staging (``refs/agent-locks-remote/*``) passes.
  Notes (``refs/notes/*``) pass: their trees name commits, not files. Deletions of other
  refs pass.
- Every other ref is checked, tags too: a commit is judged by what it changes, whichever
  ref brings it in (one that came in under a passing ref is judged when it reaches another).
- What lands on a branch the push moves is judged too (``gitlocks.hooks.landing``): the
  commits the repository held elsewhere that the default branch does not hold yet (a
  branch pushed before a claim, fast-forwarded onto main after it), and the paths its old
  and new tips differ in that no commit ``old..new`` changes (a force push that drops
  others' work, a merge whose first parent is from before it), as changed by the new tip's
  agents. A commit on the default branch is never judged again.
- Replace refs are not followed (``verify.stored_objects``): what is judged is what is
  stored, never what a pushed ``refs/replace/*`` says it is.
- It refuses (exit 1) by default; ``git config alock.hookMode warn`` in this repository
  makes it report and accept.
- Fail-open: when the check cannot run (an unreadable table, a missing git, a bug), it says
  so and accepts the push. Claims are advisory; a broken check must not stop a team.

A push of lock refs alone (each claim, in remote mode) loads the table guard only: the
claim check's modules are loaded only when a push brings commits.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gitlocks.core.text import printable
from gitlocks.errors import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_REFUSED,
    GitlocksError,
    NotARepository,
    UsageError,
)
from gitlocks.git import run
from gitlocks.layout import OWN_REF_PREFIXES, STAGING_PREFIX

HOOK = "pre-receive"
if TYPE_CHECKING:
    from gitlocks.git.settings import Settings
    from gitlocks.hooks.reading import HookConfig

PREFIX = "alock: "  # as gitlocks.render.hooks.PREFIX: the client hooks' lines
# Refs that are gitlocks' own: never judged.
OWN_PREFIXES = (*OWN_REF_PREFIXES, STAGING_PREFIX)
# git notes: their commits' trees name commits ("4d31.../", "4d/31..."), not the project's
# files, so a claim on the whole tree would refuse every notes push.
NOTES_PREFIX = "refs/notes/"
BRANCH_PREFIX = "refs/heads/"
PASSING_PREFIXES = (*OWN_PREFIXES, NOTES_PREFIX)
# What a push brings is what no ref has yet, but refs that pass unjudged do not count: a
# commit pushed first under one of them, then to a branch, is judged when it gets there.
NOT_JUDGED_YET = tuple(f"--exclude={prefix}*" for prefix in PASSING_PREFIXES)


def pushed_tips(lines: Iterable[str]) -> list[str]:
    """The new values to judge, from pre-receive's ``<old> <new> <ref>`` lines: neither a
    deletion nor one of gitlocks' own refs."""
    tips = [new for _old, new, _ref in _judged(lines)]
    return list(dict.fromkeys(tips))


def _updates(lines: Iterable[str]) -> list[tuple[str, str, str]]:
    """(old, new, ref) of each well-formed ``<old> <new> <ref>`` line."""
    return [(p[0], p[1], p[2]) for p in (line.split() for line in lines) if len(p) == 3]


def _judged(lines: Iterable[str]) -> list[tuple[str, str, str]]:
    """The updates whose new value is judged: neither a deletion nor gitlocks' own refs."""
    return [
        (old, new, ref)
        for old, new, ref in _updates(lines)
        if new.strip("0") and not ref.startswith(PASSING_PREFIXES)
    ]


def moved_refs(lines: Iterable[str]) -> list[tuple[str, str]]:
    """(old, new) of each branch the push moves (neither created nor deleted): what
    lands on it is judged as well as the commits it brings (``landing.undone``). A tag
    moved is no work landing anywhere."""
    return [
        (old, new)
        for old, new, ref in _updates(lines)
        if old.strip("0") and new.strip("0") and ref.startswith(BRANCH_PREFIX)
    ]


def landing_bases(lines: Iterable[str]) -> list[str]:
    """Where the pushed work lands: the old value of each ref the push updates, or
    ``HEAD`` (the repository's default branch) for a ref it creates. Their
    ``.alockignore`` must exempt a path too, not only the list the work's own history
    carries (``commits.Ignores.anchors``)."""
    bases = [old if old.strip("0") else "HEAD" for old, _new, _ref in _judged(lines)]
    return list(dict.fromkeys(bases))


def receive_config(configured: Settings) -> HookConfig:
    """The hook's settings (``gitlocks.hooks.reading.hook_config``, as the receiving end)."""
    # Imported here: only a push that brings commits loads the check.
    from gitlocks.hooks.reading import hook_config

    return hook_config(configured, receiving=True)


def guard_table(lines: Sequence[str], cwd: str | None = None) -> tuple[int, str]:
    """Refuse (exit 1, whatever ``alock.hookMode`` says) a push that would delete, rewind
    or contradict the lock table (``gitlocks.hooks.hosted``): claims of every clone would
    be lost, where a claim check in warn mode only lets one commit through."""
    refs = [parts[2] for parts in (line.split() for line in lines) if len(parts) == 3]
    if not any(ref.startswith(OWN_REF_PREFIXES) for ref in refs):
        return EXIT_OK, ""
    # Imported here: a push of branches alone never loads the table guard.
    from gitlocks.hooks.table_guard import guard_or_error

    problems = guard_or_error(lines, cwd)
    if not problems:
        return EXIT_OK, ""
    text = "".join(f"{PREFIX}{printable(p)}\n" for p in problems)
    advice = (
        "REFUSED push: it would change the lock table other than git alock does. Lock refs "
        "and the journal are written by git alock alone; to push everything else, name the "
        "refs (never --mirror or --prune over refs/agent-locks*)"
    )
    return EXIT_REFUSED, f"{text}{PREFIX}{advice}\n"


def run_receive(lines: Iterable[str], cwd: str | None = None) -> tuple[int, str]:
    """The exit code and the lines for the pusher (on stderr: git relays them)."""
    lines = list(lines)
    code, text = guard_table(lines, cwd)
    if code != EXIT_OK:
        return code, text
    tips = pushed_tips(lines)
    if not tips:
        return EXIT_OK, ""
    # Imported here: only a push that brings commits loads the check and its report.
    from gitlocks.hooks.hosted import table_refs
    from gitlocks.hooks.verify import check_commits
    from gitlocks.render.verify import receive_report

    # The tips on standard input: a mirror push may bring more than a command line holds.
    feed = "".join(tip + "\n" for tip in tips).encode()
    rev_args = ["--stdin", "--not", *NOT_JUDGED_YET, "--all", "--"]
    # Judged on the journal commit's table, as clients decide: a lock ref deleted or
    # planted by hand neither blinds nor blocks the check.
    result = check_commits(
        rev_args,
        cwd,
        read_config=receive_config,
        feed=feed,
        table_source=table_refs,
        landing=moved_refs(lines),
        anchors=landing_bases(lines),
    )
    mode = result.config.mode if result.config is not None else "block"
    code = result.exit_code if mode == "block" else EXIT_OK
    return code, receive_report(result, mode)


def main(argv: Sequence[str]) -> int:
    """``git-alock hook pre-receive``: judge the push; never a traceback."""
    if list(argv[:1]) != [HOOK]:
        sys.stderr.write(f"error: usage: git-alock hook {HOOK}\n")
        return EXIT_ERROR
    try:
        lines = sys.stdin.buffer.read().decode("utf-8", "surrogateescape").splitlines()
        code, text = run_receive(lines)
    except GitlocksError as exc:
        sys.stderr.write(
            f"{PREFIX}error: {printable(str(exc))}; push accepted without the lock check\n"
        )
        return EXIT_OK
    except Exception as exc:  # a bug: say so, but an advisory check never stops a push
        sys.stderr.write(
            f"{PREFIX}internal error: {exc.__class__.__name__}: {printable(str(exc))}; "
            "push accepted without the lock check (a bug in gitlocks: please report it)\n"
        )
        return EXIT_OK
    sys.stderr.write(text)
    return code


# --- installing it into a repository you host -------------------------------------------


def remote_hooks_dir(path: str, *, force: bool = False) -> Path:
    """The hooks directory of the repository at ``path`` (``core.hooksPath`` honoured).

    ``path`` must be the repository itself (a bare repository's directory, or the top of
    a working tree), never a folder inside another one. A repository with a working tree
    is refused unless ``force``: pushes to a checked-out branch are refused by git anyway
    (``receive.denyCurrentBranch``), so a hosted repository is normally bare.
    """
    where = os.path.abspath(path)
    if not os.path.isdir(where):
        raise NotARepository(f"{path} is not a git repository (no such directory)")
    # Our own repository's variables (GIT_DIR inside a hook) must not name another one.
    proc = run.start(
        ["rev-parse", "--is-bare-repository", "--absolute-git-dir", "--git-path", "hooks",
         "--show-cdup"],
        where,
        env=run.Env.CLEAN,
        error=NotARepository,
    )  # fmt: skip
    try:
        out = run.finish(proc, error=NotARepository)
    except NotARepository:
        raise NotARepository(f"{path} is not a git repository") from None
    lines = os.fsdecode(out).split("\n")
    bare = lines[0] == "true"
    git_dir, hooks = lines[1], lines[2]
    real = os.path.realpath(where)
    top = os.path.realpath(
        git_dir if bare else os.path.join(where, lines[3] if len(lines) > 3 else "")
    )
    if top != real:
        raise NotARepository(
            f"{path} is not a git repository but a folder inside {top}: name the repository"
        )
    if not bare and not force:
        raise UsageError(
            f"{path} is not a bare repository: a hosted repository that receives pushes "
            "normally is (git refuses pushes to its checked-out branch); --force installs "
            "the hook anyway"
        )
    return Path(where, hooks).resolve()
