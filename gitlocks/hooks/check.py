"""The git hooks' check: which paths a commit or a push touches, and whose locks they cross.

The hook path runs on every commit, so it imports neither the command-line framework nor
pygit2 (tests assert it): it asks the git command line, in concurrent calls, for the
staged paths, the config and the lock refs, then the blobs of those refs. docs/design.md,
section 6.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime

from gitlocks.core.claims import Claims
from gitlocks.core.ignore import MAX_IGNORE_BYTES, IgnoreList, newly_exempt
from gitlocks.core.judging import Problem
from gitlocks.core.liveness import Liveness
from gitlocks.core.record import (
    LockRecord,
    utcnow,
)
from gitlocks.core.scope import path_entry
from gitlocks.core.table import Table
from gitlocks.core.text import printable
from gitlocks.core.value import Value
from gitlocks.errors import EXIT_ERROR, EXIT_OK, EXIT_REFUSED, GitlocksError
from gitlocks.git import settings
from gitlocks.git.changes import (
    RefUpdate,
    Staged,
    commits_among,
    git_output,
    push_updates,
    pushed_paths,
)
from gitlocks.git.objects import CatFile
from gitlocks.git.run import Env
from gitlocks.hooks import report_bug
from gitlocks.hooks.reading import HookConfig, TableReader, committer, hook_config, refresh_view
from gitlocks.hooks.session import hook_session
from gitlocks.identity import (
    Identity,
    host_identity,
    process_alive,
    resolve_identity,
)
from gitlocks.layout import (
    DEFAULT_STALE_SECONDS,
    IGNORE_FILE,
    OWN_REF_PREFIXES,
)
from gitlocks.render import hooks as render_hooks
from gitlocks.render.hooks import PREFIX

HOOK_NAMES = ("pre-commit", "pre-push")


class CommittedIgnores:
    """``.alockignore`` as committed at some revisions (``HEAD``, ``""`` for the index,
    a commit id; ``blobs``: the lists' blob ids), from one ``cat-file --batch`` started
    now (``later``: when first asked). Never read from the working tree, where the change
    it would exempt is being made."""

    def __init__(
        self,
        revisions: Sequence[str],
        cwd: str | None,
        *,
        blobs: bool = False,
        later: bool = False,
    ) -> None:
        self.names = list(revisions) if blobs else [f"{rev}:{IGNORE_FILE}" for rev in revisions]
        self.batch = CatFile(cwd, env=Env.INHERIT)
        if not later:
            self.batch.start()
        self.lists: list[IgnoreList] | None = None

    def finish(self) -> list[IgnoreList]:
        """One list for each revision, in order (empty where it has none, or one too
        large to be a list: only its first bytes are read)."""
        if self.lists is None:
            try:
                got = self.batch.read(self.names, MAX_IGNORE_BYTES)
            finally:
                self.batch.close()
            self.lists = [
                IgnoreList(g[2] if g and g[1] == "blob" and len(g[2]) <= MAX_IGNORE_BYTES else b"")
                for g in got
            ]
        return self.lists

    def drop(self) -> None:
        """End the ``cat-file`` started for lists nobody will read."""
        self.batch.close()


class Held(Value):
    """A path of the commit or push inside other holders' live locks."""

    __slots__ = ("locks", "path")

    def __init__(
        self,
        path: str,
        locks: tuple[LockRecord, ...],
    ) -> None:
        self.path = path
        self.locks = locks


def find_held(
    table: Table,
    identity: Identity,
    now: datetime,
    paths: Sequence[str],
    *,
    committing: bool = True,
) -> list[Held]:
    """The paths inside a live lock (clock skew allowed) of a holder who is not a friend,
    in order. ``committing`` (the hooks): a sub-agent's locks are its parent's to commit;
    before an edit (the agent guard) they block the parent, as ``acquire`` decides."""
    if not len(table):
        return []
    theirs = _claims(table, identity, now, committing=committing)
    table.prepare([e for e in map(path_entry, paths) if e is not None])  # one batch read
    held = []
    for path in paths:
        locks = theirs.held(path)
        if locks:
            held.append(Held(path, tuple(locks)))
    return held


def _claims(table: Table, identity: Identity, now: datetime, *, committing: bool) -> Claims:
    """The live claims as ``identity`` sees them, its sessions judged from this process."""
    life = Liveness(host_identity(), process_alive, now, DEFAULT_STALE_SECONDS)
    return Claims(table, identity.holder, identity.parent, now, life, committing=committing)


def exemptions_held(
    table: Table,
    identity: Identity,
    now: datetime,
    old: IgnoreList,
    new: IgnoreList,
    *,
    committing: bool = True,
) -> list[Held]:
    """A change of ``.alockignore`` from ``old`` to ``new``, judged as a change of every
    path it newly exempts: each new line whose scope meets another's live claim is held
    by it (else one commit could exempt a claimed directory for the next)."""
    if not len(table):
        return []
    found = newly_exempt(old, new)
    if not found:
        return []
    theirs = _claims(table, identity, now, committing=committing)
    held = []
    for line, entry in found:
        locks = theirs.crossing(entry)
        if locks:
            held.append(Held(f"{IGNORE_FILE} (newly exempts {line})", tuple(locks)))
    return held


class HookReport:
    """A hook's answer: the paths held, the problems seen, and its exit code."""

    __slots__ = ("config", "held", "hook", "now", "problems", "unnamed")

    def __init__(
        self,
        hook: str,
        config: HookConfig,
        held: list[Held],
        problems: list[Problem],
        now: datetime,
        unnamed: bool = False,
    ) -> None:
        self.hook = hook
        self.config = config
        self.held = held
        self.problems = problems
        self.now = now
        self.unnamed = unnamed  # the commit names no agent (no trailer will say who made it)

    @property
    def exit_code(self) -> int:
        return EXIT_REFUSED if self.held and self.config.mode == "block" else EXIT_OK

    def render(self) -> str:
        held = [(h.path, h.locks) for h in self.held]
        return render_hooks.report(
            self.hook, self.config.mode, self.config.warning, self.problems, held, self.now,
            self.unnamed,
        )  # fmt: skip


def _before_pushed(updates: Sequence[RefUpdate], cwd: str | None) -> str:
    """The revision whose ``.alockignore`` decides for a push of new refs (not the pushed
    tip's own): the first parent of the oldest commit it brings that no remote has."""
    shas = [u.local_sha for u in updates if u.local_sha.strip("0")]
    known = commits_among(shas, cwd)  # a tag of a tree or a blob brings no commit
    tips = [sha for sha in shas if sha in known]
    if not tips:
        return "HEAD"
    args = ["rev-list", "--topo-order", "--reverse", *tips, "--not", "--remotes", "--"]
    oldest = git_output(args, cwd).split(b"\n", 1)[0].decode("ascii", "replace").strip()
    return f"{oldest}^" if oldest else tips[0]


def _apart(updates: list[RefUpdate]) -> list[list[RefUpdate]]:
    """The refs of a push, each judged under its own lists: one ref's committed
    ``.alockignore`` exempts nothing another ref brings."""
    bringing = [
        u
        for u in updates
        if u.local_sha.strip("0") and not u.remote_ref.startswith(OWN_REF_PREFIXES)
    ]
    return [[u] for u in bringing] if len(bringing) > 1 else [updates]


def _ignore_revisions(updates: Sequence[RefUpdate], cwd: str | None) -> list[str]:
    """The revision whose ``.alockignore`` decides for these updates, and the pushed tip."""
    tip = next((u.local_sha for u in updates if u.local_sha.strip("0")), "HEAD")
    base = next((u.remote_sha for u in updates if u.remote_sha.strip("0")), None)
    if base is None:  # a new ref: the list before the first commit it brings
        base = _before_pushed(updates, cwd)
    return [base, tip]


def run_check(hook: str, stdin: Iterable[str], cwd: str | None = None) -> HookReport:
    """The hook's question, answered: every path of the commit or push, checked."""
    # Independent git calls run side by side: each costs a process start.
    reading = TableReader(cwd)
    staged = Staged(cwd) if hook == "pre-commit" else None
    groups: list[list[RefUpdate]] = []
    if staged is not None:  # the list committed at HEAD decides; the staged one is judged
        # Read only when a staged path is held or is the list itself (_judge): most
        # commits (and pushes) cross no claim, and then no list can change the answer.
        judged = [CommittedIgnores(["HEAD", ""], cwd, later=True)]
    else:  # each ref: the remote's last known value decides; the pushed tip's is judged
        groups = _apart(push_updates(os.environ, stdin))
        judged = [CommittedIgnores(_ignore_revisions(g, cwd), cwd, later=True) for g in groups]
    configured, table = reading.finish()
    if hook == "pre-push" and configured.remote:
        configured, table = _refreshed(configured, table, cwd)
    # What each group judges: its paths, and the ``.alockignore`` lists that decide them.
    asked = [
        (staged.paths() if staged is not None else pushed_paths(groups[i], cwd), ignores)
        for i, ignores in enumerate(judged)
    ]
    any_paths = any(paths for paths, _ in asked)
    now = utcnow()
    known, held = _judge(table, now, asked)
    if held and hook == "pre-commit" and configured.remote:
        # The view says someone holds a staged path: make sure before saying so.
        configured, table = _refreshed(configured, table, cwd)
        now = utcnow()
        known, held = _judge(table, now, asked)
    problems = table.problems if any_paths else []
    return HookReport(hook, configured, held, problems, now, not known and hook == "pre-commit")


def _refreshed(configured: HookConfig, table: Table, cwd: str | None) -> tuple[HookConfig, Table]:
    """The settings and the table after refreshing remote mode's view; when that fails,
    the ones given, with a warning saying how old the view is."""
    assert configured.remote is not None
    stale = refresh_view(cwd, configured.remote)
    if stale is None:
        return TableReader(cwd).finish()  # the view just fetched
    configured.warning = "; ".join(w for w in (configured.warning, stale) if w)
    return configured, table


def _judge(
    table: Table,
    now: datetime,
    asked: Sequence[tuple[list[str], CommittedIgnores]],
) -> tuple[bool, list[Held]]:
    """Whether the committer is a known agent (as the commit-msg hook names it), and the
    paths of ``asked`` inside others' live locks, each once. The lists are read only where
    they can change the answer: a path held, or the list itself changed."""
    identity, known = committer(table, resolve_identity(None, session=hook_session()), now)
    held: list[Held] = []
    for paths, ignores in asked:
        changes_ignore = IGNORE_FILE in paths
        found = find_held(table, identity, now, paths) if paths else []
        if found or changes_ignore:  # fewer paths never hold more
            old, new = ignores.finish()
            if old:
                paths = [p for p in paths if not old.ignored(p)]
                found = find_held(table, identity, now, paths) if paths else []
            if changes_ignore:
                found += exemptions_held(table, identity, now, old, new)
        seen = {h.path for h in held}
        held += [h for h in found if h.path not in seen]
    return known, held


def main(argv: Sequence[str]) -> int:
    """``git-alock hook pre-commit|pre-push`` (``gitlocks.hooks.main`` checked the name):
    print the report on stderr, return the exit code. In warn mode nothing stops the
    commit, not even a bug; in block mode both do."""
    hook = argv[0]
    try:
        report = run_check(hook, sys.stdin if hook == "pre-push" else ())
    except GitlocksError as exc:
        sys.stderr.write(f"{PREFIX}error: {printable(str(exc))}; {hook} lock check skipped\n")
        return exc.exit_code if _configured_mode() == "block" else EXIT_OK
    except Exception as exc:  # a bug: say so loudly, but a warn-mode hook lets the commit on
        report_bug(exc)
        return EXIT_ERROR if _configured_mode() == "block" else EXIT_OK
    sys.stderr.write(report.render())
    return report.exit_code


def _configured_mode() -> str:
    try:
        return hook_config(settings.read()).mode
    except GitlocksError:
        return "warn"
