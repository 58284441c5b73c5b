"""Commits already made, judged against the lock table: ``git alock verify`` and the
pre-receive hook (docs/design.md, section 6.9; docs/hooks.md). Whatever the number of
commits, the question costs a constant number of git processes: one ``git log``, one
``git diff-tree --stdin`` and two ``cat-file`` calls for the ``.alockignore`` lists (only
when some claim is live), besides the table's own reads. Part of the hook path: imports
neither typer nor pygit2.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from gitlocks.core.judging import Problem
from gitlocks.core.record import format_time, is_object_id, utcnow
from gitlocks.errors import EXIT_OK, EXIT_REFUSED, StoreError, UsageError
from gitlocks.git import files, settings
from gitlocks.git.changes import finish_git, git_output, start_git
from gitlocks.git.objects import cat_file_check
from gitlocks.git.run import Env
from gitlocks.git.settings import Settings
from gitlocks.git.table import hook_objects, read_lock_table, read_table
from gitlocks.hooks.check import CommittedIgnores
from gitlocks.hooks.commits import (
    LOG_ARGS,
    TRAILER,
    Commit,
    Finding,
    Ignores,
    changed_paths,
    judge,
    parse_log,
    read_ignores,
)
from gitlocks.hooks.reading import HookConfig, hook_config
from gitlocks.layout import JOURNAL_REF


@dataclass
class Verification:
    """The answer for a range of commits (or the commits a push brings)."""

    commits: list[Commit]
    findings: list[Finding]
    now: datetime
    config: HookConfig | None = None  # None: no commit, so nothing was read
    warnings: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def status(self) -> str:
        return "held" if self.findings else "clean"

    @property
    def exit_code(self) -> int:
        return EXIT_REFUSED if self.findings else EXIT_OK

    def warning_lines(self) -> list[str]:
        lines = list(self.warnings)
        lines += [f"{p.ref} is not a usable lock ({p.reason}); ignored" for p in self.problems]
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "commits": len(self.commits),
            "findings": [f.to_dict() for f in self.findings],
            "warnings": self.warning_lines(),
        }


def _shallow(common_dir: str) -> set[str]:
    """The commits a shallow clone cut the parents of (none in a full clone)."""
    try:
        with open(os.path.join(common_dir, "shallow"), "rb") as f:
            return set(f.read().decode("ascii", "replace").split())
    except OSError:
        return set()


# Replace refs make git read one object as another: anyone who can push one could have a
# commit, a record or .alockignore judged as something else.
NO_REPLACE = "GIT_NO_REPLACE_OBJECTS"


@contextmanager
def stored_objects() -> Iterator[None]:
    """Every git started meanwhile ignores replace refs (the variable is put back after)."""
    saved = os.environ.get(NO_REPLACE)
    os.environ[NO_REPLACE] = "1"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(NO_REPLACE, None)
        else:
            os.environ[NO_REPLACE] = saved


@stored_objects()  # every object read as stored: a pushed replace ref changes nothing
def check_commits(
    rev_args: Sequence[str],
    cwd: str | None = None,
    *,
    read_config: Callable[[Settings], HookConfig] = hook_config,
    bad_range: Sequence[str] | None = None,
    feed: bytes = b"",
    table_source: Callable[[str | None], files.Scan | None] | None = None,
    landing: Sequence[tuple[str, str]] = (),
    shallow_ok: bool = True,
    anchors: Sequence[str] = (),
) -> Verification:
    """The commits ``git log REV_ARGS`` lists, judged against the repository's lock table.

    ``bad_range``: the revisions as typed; a ``git log`` failure is then the user's mistake
    (exit 2). ``feed``: ``git log``'s stdin. ``table_source``: the lock refs to judge on
    (None, or its None: the lock refs). ``landing``: (old, new) of the refs a push moves.
    """
    # Independent git calls run side by side: each costs a process start.
    common = start_git(["rev-parse", "--git-common-dir"], cwd)
    log = start_git([*LOG_ARGS, *rev_args], cwd)
    config = settings.start(cwd)
    common_dir = ""
    try:
        common_dir = os.path.join(cwd or "", os.fsdecode(finish_git(common).strip()))
        raw_log = finish_git(log, feed)
    except StoreError as exc:
        for proc in (log, config):
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        if bad_range is None or not common_dir:
            raise
        detail = str(exc).removeprefix("git log failed: ").removeprefix("fatal: ")
        raise UsageError(f"bad revision range {' '.join(bad_range)!r}: {detail}") from None
    commits = parse_log(raw_log)
    configured = settings.finish(config)
    now = utcnow()
    if not commits and not landing:
        return Verification([], [], now)
    hook_settings = read_config(configured)
    warnings = [hook_settings.warning] if hook_settings.warning else []
    shallow = _shallow(common_dir)
    judged = []
    for commit in commits:
        if not commit.parents and commit.oid in shallow:
            if not shallow_ok:
                raise UsageError(
                    f"commit {commit.short} is where this shallow clone was cut: its changes "
                    "are unknown, so nothing can be said of them. Fetch the whole history "
                    "(git fetch --unshallow; fetch-depth: 0 in actions/checkout), or pass "
                    "--shallow-ok to skip such commits"
                )
            warnings.append(
                f"commit {commit.short} is where a shallow clone was cut: its changes are "
                "unknown, so it was not checked (fetch the whole history: fetch-depth: 0)"
            )
            continue
        warnings += [
            f"commit {commit.short}: {TRAILER} {value!r} is no valid agent id; ignored"
            for value in commit.invalid
        ]
        judged.append(commit)
    source = table_source(cwd) if table_source is not None else None
    if source is not None:
        table = read_table(
            source, hook_objects(common_dir, cwd), hook_settings.ignore_case,
            hook_settings.skew, common_dir,
        )  # fmt: skip
    else:
        table = read_lock_table(common_dir, cwd, hook_settings.ignore_case, hook_settings.skew)
    latest = table.summaries.latest()
    live = latest is not None and latest > table.cutoff(format_time(now))
    # Without a live claim no commit can cross one: then no paths are read at all.
    changed = changed_paths(judged, cwd) if live else {}
    ignores = read_ignores(judged, changed, cwd) if changed else Ignores()
    if changed and anchors:
        lists = tuple(CommittedIgnores(list(anchors), cwd).finish())
        ignores = replace(ignores, anchors=lists)
    findings = judge(judged, changed, table, now, ignores)
    if landing and live:
        # Imported here: only a push that moves a branch while a claim is live reads it.
        from gitlocks.hooks.landing import undone

        findings += undone(landing, changed, table, now, cwd)
    return Verification(judged, findings, now, hook_settings, warnings, table.problems)


def verify_range(
    revisions: Sequence[str],
    cwd: str | None = None,
    *,
    no_table_ok: bool = False,
    shallow_ok: bool = False,
) -> Verification:
    """``git alock verify RANGE...``: the commits ``git rev-list RANGE...`` names. A
    revision naming no commit, no lock table in sight (unless ``no_table_ok``) and a
    shallow clone's cut (unless ``shallow_ok``) are errors, exit 2, never ``CLEAN``."""
    if not revisions:
        raise UsageError("name the commits to verify, e.g. git alock verify origin/main..HEAD")
    with stored_objects():
        _only_commits(revisions, cwd)
    if not no_table_ok:
        _table_in_sight(cwd)
    # --end-of-options: a revision is never read as an option, whatever it starts with.
    rev_args = ["--end-of-options", *revisions, "--"]
    return check_commits(
        rev_args,
        cwd,
        bad_range=revisions,
        table_source=_journal_table,
        shallow_ok=shallow_ok,
        anchors=range_bases(revisions),
    )


def range_bases(revisions: Sequence[str]) -> list[str]:
    """Where a range's work lands (``Ignores.anchors``): ``A`` of ``A..B`` and of ``^A``
    (``HEAD`` for ``..B``); none for a range with no base."""
    bases = []
    for rev in revisions:
        if rev.startswith("^") and len(rev) > 1:
            bases.append(rev[1:])
        elif ".." in rev and "..." not in rev:
            bases.append(rev.split("..", 1)[0] or "HEAD")
    return list(dict.fromkeys(bases))


def _journal_table(cwd: str | None) -> files.Scan | None:
    """The table the journal commit carries, as clients decide (docs/design.md 5.4); None
    (the lock refs decide) in remote mode and where the journal carries no table."""
    if settings.read(cwd).get("alock.remote"):
        return None
    # Imported here: the hosted table's reader is git alone, like the rest of the hook path.
    from gitlocks.hooks.hosted import table_refs

    return table_refs(cwd)


def _only_commits(revisions: Sequence[str], cwd: str | None) -> None:
    """Every object the revisions name is a commit (or a tag of one): ``HEAD^{tree}`` or
    ``HEAD:README.md`` would list no commit at all, and so pass every check."""
    named = ", ".join(repr(r) for r in revisions)
    proc = start_git(["rev-parse", "--end-of-options", *revisions, "--"], cwd)
    try:
        out = finish_git(proc)
    except StoreError as exc:
        detail = str(exc).removeprefix("git rev-parse failed: ").removeprefix("fatal: ")
        raise UsageError(f"bad revision range {named}: {detail}") from None
    words = [line.lstrip("^") for line in out.decode("ascii", "replace").split()]
    oids = [word for word in words if is_object_id(word)]
    if not oids:
        return
    found = cat_file_check(
        [n for oid in oids for n in (oid, f"{oid}^{{commit}}")], cwd, env=Env.INHERIT
    )
    for named_object, peeled in zip(found[0::2], found[1::2], strict=True):
        if peeled is None or peeled[1] != "commit":
            kind = named_object[1] if named_object else "missing object"
            raise UsageError(
                f"{named} names a {kind}, not a commit: verify takes commits and "
                "ranges of them (e.g. git alock verify origin/main..HEAD)"
            )


def fetch_command(cwd: str | None) -> str:
    """How this clone gets the lock table: ``git alock sync`` in remote mode, else a fetch
    of the lock namespaces from its first remote (``origin`` where there is one)."""
    if settings.read(cwd).get("alock.remote"):
        return "git alock sync"
    names = git_output(["remote"], cwd).decode("utf-8", "replace").split()
    remote = "origin" if "origin" in names or not names else names[0]
    return (
        f"git fetch --no-tags {remote} '+refs/agent-locks/*:refs/agent-locks/*' "
        "'+refs/agent-locks-meta/*:refs/agent-locks-meta/*'"
    )


def _table_in_sight(cwd: str | None) -> None:
    """A repository without the journal ref has never seen a lock table: a clone that
    never fetched the lock refs would call every range clean."""
    found = git_output(["for-each-ref", "--count=1", JOURNAL_REF], cwd)
    if found.strip():
        return
    raise UsageError(
        f"no lock table here ({JOURNAL_REF} is missing: this clone never fetched the lock "
        f"refs, or nobody ever claimed anything): run {fetch_command(cwd)} first, or pass "
        "--no-table-ok to check against no claims at all"
    )
