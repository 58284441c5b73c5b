"""The pre-receive hook: a repository you host refuses pushes into others' live claims.

The commits a push brings (from a new value, ``--not --all``) are judged as ``git alock
verify`` judges them (``gitlocks.hooks.verify``) against the table the journal commit
carries; what lands on a moved branch too (``gitlocks.hooks.landing``). A push of the lock
namespaces is judged by what it does to the table (``gitlocks.hooks.hosted``), refused in
every mode. Notes, remote-mode staging and deletions pass. It refuses unless
``alock.hookMode warn``, and fails open. docs/design.md, section 6.9.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from gitlocks.core.text import printable
from gitlocks.errors import (
    EXIT_OK,
    EXIT_REFUSED,
    GitlocksError,
    NotARepository,
    StoreError,
    UsageError,
)
from gitlocks.git import run
from gitlocks.layout import OWN_REF_PREFIXES, STAGING_PREFIX

HOOK = "pre-receive"
TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
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
    """The new values to judge (``_judged``), from pre-receive's lines."""
    return list(dict.fromkeys(new for _old, new, _ref in _judged(lines)))


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


def receive_config(configured: Settings) -> HookConfig:
    """The hook's settings (``gitlocks.hooks.reading.hook_config``, as the receiving end)."""
    # Imported here: only a push that brings commits loads the check.
    from gitlocks.hooks.reading import hook_config

    return hook_config(configured, receiving=True)


def guard_table(lines: Sequence[str], cwd: str | None = None) -> tuple[int, str]:
    """Refuse (exit 1, whatever ``alock.hookMode`` says) a push that would delete, rewind
    or contradict the lock table: claims of every clone would be lost."""
    if not any(ref.startswith(OWN_REF_PREFIXES) for _old, _new, ref in _updates(lines)):
        return EXIT_OK, ""
    # Imported here: a push of branches alone never loads the table guard.
    from gitlocks.hooks.table_guard import guard

    try:
        problems = guard(lines, cwd)
    except (StoreError, ValueError) as exc:  # a table not read cannot be shown to stay whole
        problems = [f"the lock table could not be read ({exc})"]
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
    # What lands on each branch moved (not a tag, neither created nor deleted) is judged
    # too; where the work lands (an old value, HEAD for a new ref) anchors its lists.
    moved = [
        (old, new)
        for old, new, ref in _updates(lines)
        if old.strip("0") and new.strip("0") and ref.startswith(BRANCH_PREFIX)
    ]
    bases = [old if old.strip("0") else "HEAD" for old, _new, _ref in _judged(lines)]
    result = check_commits(
        rev_args,
        cwd,
        read_config=receive_config,
        feed=feed,
        table_source=table_refs,
        landing=moved,
        anchors=list(dict.fromkeys(bases)),
    )
    mode = result.config.mode if result.config is not None else "block"
    code = result.exit_code if mode == "block" else EXIT_OK
    return code, receive_report(result, mode)


def main(argv: Sequence[str]) -> int:
    """``git-alock hook pre-receive``: judge the push; never a traceback."""
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


def remote_hooks_dir(path: str, *, force: bool = False) -> Path:
    """The hooks directory of the repository at ``path`` (``core.hooksPath`` honoured),
    never a folder inside another one; one with a working tree only with ``force``."""
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
