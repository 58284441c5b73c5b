"""The lock table read through the git command line, without pygit2: the fast path of
the git hooks, the agent guard and the remote's check (docs/design.md, section 6). One
``for-each-ref`` lists the lock refs; the records a question needs are read by the one
object reader, in the hook's own environment; the store's cache spares the rest.
"""

from __future__ import annotations

import os

from gitlocks.core.judging import Lost, Problem, ReadAgain
from gitlocks.core.table import Table, lazy_table
from gitlocks.git import cache, files
from gitlocks.git.changes import git_output
from gitlocks.git.objects import Objects
from gitlocks.git.run import Env
from gitlocks.layout import JOURNAL_REF, LOCK_PREFIX


def read_lock_table(common_dir: str, cwd: str | None, ignore_case: bool, skew: int = 0) -> Table:
    """The lock table of the repository whose common git directory is ``common_dir``."""
    # Where the records are, as loose objects, unless the environment puts them elsewhere.
    loose = None if "GIT_OBJECT_DIRECTORY" in os.environ else os.path.join(common_dir, "objects")

    def lost(absent: list[tuple[str, str]]) -> None:  # granted claims stop every reader
        from gitlocks.git.pruned import stop_if_lost  # a missing blob only

        stop_if_lost(absent, JOURNAL_REF, loose, cwd=cwd, env=Env.INHERIT)

    try:
        return _read_lock_table(common_dir, cwd, ignore_case, skew, lost)
    except ReadAgain:  # records a prune took, put back: once more
        return _read_lock_table(common_dir, cwd, ignore_case, skew, lost)


def _read_lock_table(
    common_dir: str, cwd: str | None, ignore_case: bool, skew: int, lost: Lost
) -> Table:
    objects = hook_objects(common_dir, cwd)
    return read_table(list_refs(cwd), objects, ignore_case, skew, common_dir, lost=lost)


def hook_objects(common_dir: str, cwd: str | None) -> Objects:
    """The objects a hook reads records from: git's, as the hook's environment names them
    (a pre-receive hook's quarantine, ``GIT_OBJECT_DIRECTORY``)."""
    return Objects(common_dir, common_dir, None, env=Env.INHERIT, cwd=cwd)


def list_refs(cwd: str | None) -> files.Scan:
    """The lock refs, as git lists them (every ref backend alike)."""
    out = git_output(["for-each-ref", files.REFS_FORMAT, LOCK_PREFIX], cwd)
    return files.parse_refs(out.decode("utf-8", "replace"))


def read_table(
    found: files.Scan,
    objects: Objects,
    ignore_case: bool,
    skew: int = 0,
    common_dir: str | None = None,
    *,
    lost: Lost | None = None,
) -> Table:
    """The lock table of ``found`` lock refs, through the one loader: records are read
    from ``objects`` only when a path can reach them and the cache of ``common_dir`` does
    not already say what a blob holds (a record that does not match it: cache forgotten)."""

    def read(oids: list[str]) -> dict[str, tuple[bytes | None, str]]:
        try:
            return objects.read_records(oids)
        finally:
            objects.close()  # a question reads once

    judged, refs, known = cache.judge(common_dir, found.refs)
    table, _ = lazy_table(
        sorted(refs.items()),
        known=known,
        read=read,
        version=None,
        ignore_case=ignore_case,
        skew=skew,
        judged=judged,
        distrust=None if common_dir is None else lambda: cache.forget(common_dir),
        lost=lost,
    )
    table.problems.extend(
        Problem(ref=name, oid="", reason=f"a symbolic ref to {target}; never followed")
        for name, target in sorted(found.symbolic.items())
    )
    return table
