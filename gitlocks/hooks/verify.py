"""Commits already made, judged against the lock table: ``git alock verify`` and the
pre-receive hook (docs/hooks.md, "Verify commits already made" and "A remote that refuses").

A commit belongs to the agents its ``Agent-Id:`` trailers name (git's trailer syntax,
read by git itself). A path it changes is reported when it lies inside a live claim held
against every one of them, judged as the commit hooks judge a committer
(``gitlocks.hooks.check.find_held``: own, ancestors' and sub-agents' claims are theirs). A
commit naming no valid agent is nobody's: every live claim counts against it.

A commit changes what it changes against its first parent (a merge: everything it brings
into the line it was made on), a root commit against the empty tree. Whatever the number of
commits, the question costs a constant number of git processes: one ``git log`` lists them
with their parents, subjects and trailers, one ``git diff-tree --stdin`` reads the paths of
all of them and two ``cat-file`` calls the ``.alockignore`` each commit's parent committed
(only when some claim is live at all), besides the table's own reads. Part of the hook
path: imports neither typer nor pygit2.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from gitlocks.core.dates import datetime
from gitlocks.core.ignore import MAX_IGNORE_BYTES, IgnoreList
from gitlocks.core.record import LockRecord, format_time, utcnow, validate_holder
from gitlocks.core.table import Problem, Table
from gitlocks.errors import EXIT_OK, EXIT_REFUSED, InvalidHolder, StoreError, UsageError
from gitlocks.git import files, kept, settings
from gitlocks.git.changes import finish_git, start_git
from gitlocks.git.settings import Settings
from gitlocks.git.table import hook_objects, read_lock_table, read_table
from gitlocks.hooks.check import CommittedIgnores, exemptions_held, find_held
from gitlocks.hooks.reading import HookConfig, hook_config
from gitlocks.identity import Identity, SessionProcess
from gitlocks.layout import IGNORE_FILE, JOURNAL_REF

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TRAILER = "Agent-Id"
# The holder a commit without a valid Agent-Id is judged as: no holder id can contain a
# space or parentheses, so it is nobody's family and every live claim counts against it.
NOBODY = "(no agent)"
# One record per commit (-z): "<oid> <parents...>", the subject (git joins its lines, so it
# holds no newline), then one line per Agent-Id value (unfolded: no newline either).
_LOG_ARGS = (
    "log",
    "-z",
    "--no-show-signature",
    "--no-color",
    f"--format=%H %P%n%s%n%(trailers:key={TRAILER},valueonly)",
)
# Raw output, not --name-only: a header ("<oid>") can never be taken for a path, since a
# path always follows a ":<modes> <oids> <status>" entry. No rename detection: a rename
# changes both its paths. --always: a header even for a commit that changes nothing.
_DIFF_TREE_ARGS = (
    *("diff-tree", "--stdin", "-r", "-z", "--raw"),
    *("--root", "--always", "--no-renames"),
)


@dataclass(frozen=True)
class Commit:
    """One commit of the range: who made it, by its trailers, and what it says it is."""

    oid: str
    parents: tuple[str, ...]
    subject: str
    agents: tuple[str, ...]  # the valid Agent-Id values, each once, in order
    invalid: tuple[str, ...] = ()  # Agent-Id values that are no holder id

    @property
    def short(self) -> str:
        return self.oid[:12]

    @property
    def judged_as(self) -> tuple[str, ...]:
        return self.agents or (NOBODY,)


@dataclass(frozen=True)
class Finding:
    """A path one commit changed inside claims held against every agent of the commit."""

    commit: Commit
    path: str
    locks: tuple[LockRecord, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "commit": self.commit.oid,
            "subject": self.commit.subject,
            "agents": list(self.commit.agents),  # who made the commit (its trailers)
            "path": self.path,
            "holders": sorted({r.holder for r in self.locks}),  # whose claims it crossed
            "locks": [r.to_dict() for r in self.locks],
        }


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


# --- reading the commits -------------------------------------------------------------------


def parse_log(raw: bytes) -> list[Commit]:
    """``git log -z`` output in the format of ``_LOG_ARGS``."""
    commits = []
    for record in raw.split(b"\0"):
        lines = record.decode("utf-8", "replace").split("\n")
        if len(lines) < 2 or not lines[0]:
            continue
        oid, *parents = lines[0].split()
        agents: list[str] = []
        invalid: list[str] = []
        for value in (v.strip() for v in lines[2:]):
            if not value or value in agents or value in invalid:
                continue
            try:
                agents.append(validate_holder(value, what=f"{TRAILER} trailer"))
            except InvalidHolder:
                invalid.append(value)
        commits.append(Commit(oid, tuple(parents), lines[1], tuple(agents), tuple(invalid)))
    return commits


def parse_diff_tree(raw: bytes) -> dict[str, list[str]]:
    """Paths by commit from ``git diff-tree --stdin -z --raw --always`` output."""
    fields = raw.split(b"\0")
    found: dict[str, list[str]] = {}
    current: list[str] = []
    i = 0
    while i < len(fields):
        token = fields[i]
        i += 1
        if token.startswith(b":"):
            status = token.rsplit(b" ", 1)[-1]
            width = 2 if status[:1] in (b"R", b"C") else 1
            current.extend(os.fsdecode(name) for name in fields[i : i + width])
            i += width
        elif token:
            current = found.setdefault(token.decode("ascii", "replace"), [])
    return found


def _diff_feed(commits: Iterable[Commit]) -> bytes:
    """One line per commit: itself and its first parent; a root commit alone."""
    return "".join(
        f"{c.oid} {c.parents[0]}\n" if c.parents else f"{c.oid}\n" for c in commits
    ).encode()


def _shallow(common_dir: str) -> set[str]:
    """The commits a shallow clone cut the parents of (none in a full clone)."""
    try:
        with open(os.path.join(common_dir, "shallow"), "rb") as f:
            return set(f.read().decode("ascii", "replace").split())
    except OSError:
        return set()


@dataclass(frozen=True)
class Ignores:
    """The ``.alockignore`` each commit is judged under, and the one it commits.

    A commit is judged under the list its first parent committed (a root commit under
    none): the list is a decision made before the change, never by it. A commit that
    changes the list has it judged as a change of every path it newly exempts."""

    before: Mapping[str, IgnoreList] = field(default_factory=dict)  # by commit
    after: Mapping[str, IgnoreList] = field(default_factory=dict)  # commits changing it
    # The lists of where the work lands (the pushed branch's old tip, the range's base):
    # a path is exempt only where these exempt it too, so a list from any old commit in
    # the history cannot exempt work landing on a branch that dropped it.
    anchors: tuple[IgnoreList, ...] = ()

    def of(self, commit: Commit) -> IgnoreList:
        return self.before.get(commit.oid) or IgnoreList()

    def exempt(self, commit: Commit, path: str) -> bool:
        return self.of(commit).ignored(path) and all(a.ignored(path) for a in self.anchors)


def read_ignores(
    commits: Sequence[Commit], changed: Mapping[str, Sequence[str]], cwd: str | None
) -> Ignores:
    """The lists of ``commits``, in two git processes whatever their number: one
    ``cat-file --batch-check`` names each revision's blob, one ``--batch`` reads each
    distinct blob once."""
    revisions: dict[str, None] = {}
    for commit in commits:
        if commit.parents:
            revisions[commit.parents[0]] = None
        if IGNORE_FILE in changed.get(commit.oid, ()):
            revisions[commit.oid] = None
    if not revisions:
        return Ignores()
    feed = "".join(f"{rev}:{IGNORE_FILE}\n" for rev in revisions).encode()
    out = finish_git(start_git(["cat-file", "--batch-check"], cwd), feed).decode("ascii", "replace")
    blob_of: dict[str, str] = {}
    for rev, line in zip(revisions, out.splitlines(), strict=False):
        parts = line.split()  # "<oid> blob <size>", or "<name> missing"
        if len(parts) == 3 and parts[1] == "blob" and int(parts[2]) <= MAX_IGNORE_BYTES:
            blob_of[rev] = parts[0]
    blobs = list(dict.fromkeys(blob_of.values()))
    lists = dict(zip(blobs, CommittedIgnores(blobs, cwd, blobs=True).finish(), strict=True))
    by_rev = {rev: lists[blob] for rev, blob in blob_of.items()}
    empty = IgnoreList()
    before = {c.oid: by_rev.get(c.parents[0], empty) for c in commits if c.parents}
    after = {
        c.oid: by_rev.get(c.oid, empty) for c in commits if IGNORE_FILE in changed.get(c.oid, ())
    }
    return Ignores(before, after)


# --- judging ----------------------------------------------------------------------------------


def agent_identity(agent: str, table: Table) -> Identity:
    """The identity a commit's agent is judged as: its parent is the one its claims record
    (a commit names no parent), and no session (pid 0), as for an explicit id."""
    parent = table.parent_of(agent) if agent != NOBODY else None
    return Identity(
        holder=agent,
        holder_source=TRAILER,
        parent=parent,
        parent_source="lock table" if parent else None,
        session=SessionProcess(0, "", "", ""),
        session_id=agent,
        session_source="none",
    )


def judge(
    commits: Sequence[Commit],
    changed: Mapping[str, Sequence[str]],
    table: Table,
    now: datetime,
    ignores: Ignores,
) -> list[Finding]:
    """Every (commit, path) inside live claims held against all of the commit's agents,
    each commit's paths read under the list its parent committed, and a change of that
    list judged as a change of the paths it newly exempts.

    Each agent is asked once, for the union of its commits' paths, so the cost grows with
    the number of distinct agents and paths, not of commits.
    """
    kept: dict[str, list[str]] = {}
    wanted: dict[str, set[str]] = {}
    for commit in commits:
        kept[commit.oid] = [p for p in changed.get(commit.oid, ()) if not ignores.exempt(commit, p)]
        for agent in commit.judged_as:
            wanted.setdefault(agent, set()).update(kept[commit.oid])
    held: dict[str, dict[str, tuple[LockRecord, ...]]] = {}
    for agent, paths in wanted.items():
        identity = agent_identity(agent, table)
        found = find_held(table, identity, now, sorted(paths), committing=True) if paths else []
        held[agent] = {h.path: h.locks for h in found}
    findings = []
    for commit in commits:
        crossed = {path: [held[agent].get(path, ()) for agent in commit.judged_as]
                   for path in kept[commit.oid]}  # fmt: skip
        if commit.oid in ignores.after:
            old, new = ignores.of(commit), ignores.after[commit.oid]
            for agent in commit.judged_as:
                identity = agent_identity(agent, table)
                for h in exemptions_held(table, identity, now, old, new):
                    crossed.setdefault(h.path, [()] * len(commit.judged_as))
                    crossed[h.path][commit.judged_as.index(agent)] = h.locks
        for path, each in crossed.items():
            common = set.intersection(*({r.id for r in locks} for locks in each))
            locks = tuple(r for r in each[0] if r.id in common)
            if locks:
                findings.append(Finding(commit, path, locks))
    return findings


# --- the whole question -----------------------------------------------------------------------


ConfigReader = Callable[[Settings], HookConfig]
TableSource = Callable[[str | None], files.Scan | None]


# Replace refs (``refs/replace/*``) make git read one object as another: anyone who can
# push one could have a commit, a claim's record or .alockignore judged as something else.
# Every git the check starts reads the objects as stored.
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
    read_config: ConfigReader = hook_config,
    bad_range: Sequence[str] | None = None,
    feed: bytes = b"",
    table_source: TableSource | None = None,
    landing: Sequence[tuple[str, str]] = (),
    shallow_ok: bool = True,
    anchors: Sequence[str] = (),
) -> Verification:
    """The commits ``git log REV_ARGS`` lists, judged against the repository's lock table,
    every object read as stored (no replace refs).

    ``bad_range``: the revisions as the user typed them; a ``git log`` failure is then
    their mistake (exit 2, naming them), not a store problem. ``feed``: standard input for
    ``git log`` (revisions, one a line, with ``--stdin``). ``table_source``: the lock refs
    to judge on (a hosted repository's journal table); None, or its None: the lock refs.
    ``landing``: the (old, new) values of the refs a push moves (``landing.undone``).
    """
    # Independent git calls run side by side: each costs a process start.
    common = start_git(["rev-parse", "--git-common-dir"], cwd)
    log = start_git([*_LOG_ARGS, *rev_args], cwd)
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
        verdicts = kept.verdicts(common_dir)
        table = read_table(
            source, hook_objects(common_dir, cwd), hook_settings.ignore_case,
            hook_settings.skew, verdicts,
            distrust=lambda: kept.forget(common_dir),
        )  # fmt: skip
    else:
        table = read_lock_table(common_dir, cwd, hook_settings.ignore_case, hook_settings.skew)
    changed: dict[str, list[str]] = {}
    cutoff = table.cutoff(format_time(now))
    latest = table.summaries.latest()
    if latest is not None and latest > cutoff:
        # Without a live claim no commit can cross one: a push into a repository where
        # nobody claims anything (a first push of a long history) reads no paths at all.
        feed = _diff_feed(judged)
        changed = parse_diff_tree(finish_git(start_git(_DIFF_TREE_ARGS, cwd), feed))
    ignores = read_ignores(judged, changed, cwd) if changed else Ignores()
    if changed and anchors:
        lists = tuple(CommittedIgnores(list(anchors), cwd).finish())
        ignores = replace(ignores, anchors=lists)
    findings = judge(judged, changed, table, now, ignores)
    if landing and latest is not None and latest > cutoff:
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
    """``git alock verify RANGE...``: the commits ``git rev-list RANGE...`` names.

    Loud where a quiet answer would mislead: a revision that names no commit (a tree, a
    file), a repository with no lock table in sight (``no_table_ok`` allows it) and a
    commit where a shallow clone was cut (``shallow_ok`` skips it) are errors, exit 2,
    never ``CLEAN``.
    """
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
    """Where a range's work lands: ``A`` of ``A..B`` and of ``^A`` (``HEAD`` for ``..B``).
    Its ``.alockignore`` must exempt a path too (``Ignores.anchors``). A range with no
    base (a branch alone) has none: each commit's first parent's list decides."""
    bases = []
    for rev in revisions:
        if rev.startswith("^") and len(rev) > 1:
            bases.append(rev[1:])
        elif ".." in rev and "..." not in rev:
            bases.append(rev.split("..", 1)[0] or "HEAD")
    return list(dict.fromkeys(bases))


def _journal_table(cwd: str | None) -> files.Scan | None:
    """The table the journal commit carries, as clients decide (docs/design.md 5.4): a CI
    clone fetched the lock refs beside it from a host where anyone may delete or plant one.
    None (the lock refs decide) in remote mode, whose lock refs are the view mirrored from
    the remote's journal table, and where the journal carries no table."""
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
    oids = [
        line.lstrip("^")
        for line in out.decode("ascii", "replace").split()
        if line.lstrip("^") and all(c in "0123456789abcdef" for c in line.lstrip("^"))
    ]
    if not oids:
        return
    feed = "".join(f"{oid}\n{oid}^{{commit}}\n" for oid in oids).encode()
    answers = (
        finish_git(start_git(["cat-file", "--batch-check=%(objecttype)"], cwd), feed)
        .decode("ascii", "replace")
        .splitlines()
    )
    for kind, peeled in zip(answers[0::2], answers[1::2], strict=False):
        if peeled != "commit":
            raise UsageError(
                f"{named} names a {kind.split()[-1]}, not a commit: verify takes commits and "
                "ranges of them (e.g. git alock verify origin/main..HEAD)"
            )


def fetch_command(cwd: str | None) -> str:
    """How this clone gets the lock table: ``git alock sync`` in remote mode, else a fetch
    of the lock namespaces from its first remote (``origin`` where there is one)."""
    if settings.read(cwd).get("alock.remote"):
        return "git alock sync"
    names = finish_git(start_git(["remote"], cwd)).decode("utf-8", "replace").split()
    remote = "origin" if "origin" in names or not names else names[0]
    return (
        f"git fetch --no-tags {remote} '+refs/agent-locks/*:refs/agent-locks/*' "
        "'+refs/agent-locks-meta/*:refs/agent-locks-meta/*'"
    )


def _table_in_sight(cwd: str | None) -> None:
    """A repository without the journal ref has never seen a lock table: a clone that
    never fetched the lock refs would call every range clean."""
    found = finish_git(start_git(["for-each-ref", "--count=1", JOURNAL_REF], cwd))
    if found.strip():
        return
    raise UsageError(
        f"no lock table here ({JOURNAL_REF} is missing: this clone never fetched the lock "
        f"refs, or nobody ever claimed anything): run {fetch_command(cwd)} first, or pass "
        "--no-table-ok to check against no claims at all"
    )
