"""Commits already made, judged against the lock table (docs/design.md, section 6.9): who
made each (its ``Agent-Id:`` trailers), the paths it changes, the ``.alockignore`` it is
judged under, and the paths it changed inside claims held against every one of its agents
(as ``gitlocks.hooks.check.find_held`` judges a committer; a commit naming no valid agent
is nobody's). Asked by ``gitlocks.hooks.verify`` and ``gitlocks.hooks.landing``. Part of
the hook path: imports neither typer nor pygit2.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gitlocks.core.ignore import MAX_IGNORE_BYTES, IgnoreList
from gitlocks.core.record import LockRecord, validate_holder
from gitlocks.core.table import Table
from gitlocks.errors import InvalidHolder
from gitlocks.git.changes import finish_git, git_output, start_git
from gitlocks.git.objects import cat_file_check
from gitlocks.git.run import Env
from gitlocks.hooks.check import CommittedIgnores, exemptions_held, find_held
from gitlocks.identity import Identity, SessionProcess
from gitlocks.layout import IGNORE_FILE

TRAILER = "Agent-Id"
# The holder a commit without a valid Agent-Id is judged as: no holder id can be it, so
# every live claim counts against it.
NOBODY = "(no agent)"
# One record per commit (-z): "<oid> <parents...>", the subject (git joins its lines, so it
# holds no newline), then one line per Agent-Id value (unfolded: no newline either).
LOG_ARGS = (
    "log",
    "-z",
    "--no-show-signature",
    "--no-color",
    f"--format=%H %P%n%s%n%(trailers:key={TRAILER},valueonly)",
)
# Raw output: a header ("<oid>") is never taken for a path, which follows a ":..." entry.
# No rename detection: a rename changes both its paths. --always: a header for every commit.
DIFF_TREE_ARGS = (
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


def parse_log(raw: bytes) -> list[Commit]:
    """``git log -z`` output in the format of ``LOG_ARGS``."""
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


def log_commits(args: Sequence[str], cwd: str | None) -> list[Commit]:
    return parse_log(git_output([*LOG_ARGS, *args], cwd))


def changed_paths(commits: Iterable[Commit], cwd: str | None) -> dict[str, list[str]]:
    """Paths by commit: what each of ``commits`` changes against its first parent (a root
    commit: all), in one ``diff-tree``."""
    feed = "".join(f"{c.oid} {c.parents[0]}\n" if c.parents else f"{c.oid}\n" for c in commits)
    return parse_diff_tree(finish_git(start_git(DIFF_TREE_ARGS, cwd), feed.encode()))


@dataclass(frozen=True)
class Ignores:
    """The ``.alockignore`` each commit is judged under (its first parent's: a decision
    made before the change, never by it), and the one it commits (judged as a change of
    every path it newly exempts)."""

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
    """The lists of ``commits``, in two ``cat-file`` processes whatever their number (each
    distinct blob read once)."""
    revisions: dict[str, None] = {}
    for commit in commits:
        if commit.parents:
            revisions[commit.parents[0]] = None
        if IGNORE_FILE in changed.get(commit.oid, ()):
            revisions[commit.oid] = None
    if not revisions:
        return Ignores()
    names = [f"{rev}:{IGNORE_FILE}" for rev in revisions]
    found = cat_file_check(names, cwd, env=Env.INHERIT)
    blob_of = {
        rev: got[0]
        for rev, got in zip(revisions, found, strict=True)
        if got is not None and got[1] == "blob" and got[2] <= MAX_IGNORE_BYTES
    }
    blobs = list(dict.fromkeys(blob_of.values()))
    lists = dict(zip(blobs, CommittedIgnores(blobs, cwd, blobs=True).finish(), strict=True))
    by_rev = {rev: lists[blob] for rev, blob in blob_of.items()}
    empty = IgnoreList()
    before = {c.oid: by_rev.get(c.parents[0], empty) for c in commits if c.parents}
    after = {
        c.oid: by_rev.get(c.oid, empty) for c in commits if IGNORE_FILE in changed.get(c.oid, ())
    }
    return Ignores(before, after)


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
    under ``ignores``. Each agent is asked once, for the union of its commits' paths: the
    cost grows with the distinct agents and paths, not with the commits."""
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
            for i, agent in enumerate(commit.judged_as):
                for h in exemptions_held(table, agent_identity(agent, table), now, old, new):
                    crossed.setdefault(h.path, [()] * len(commit.judged_as))[i] = h.locks
        for path, each in crossed.items():
            common = set.intersection(*({r.id for r in locks} for locks in each))
            locks = tuple(r for r in each[0] if r.id in common)
            if locks:
                findings.append(Finding(commit, path, locks))
    return findings
