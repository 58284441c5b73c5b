"""The lock table read through the git command line, without pygit2: the fast path of
the git hooks, the agent guard and the remote's check, which run before every edit and
in every commit (docs/design.md, section 6). One ``for-each-ref`` (or the ref files
themselves) lists the lock refs; the records a question needs are read from their loose
object files, or from one ``cat-file --batch`` when packed; the store's kept verdicts
spare the rest.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from gitlocks.core.record import MAX_RECORD_BYTES, is_object_id
from gitlocks.core.summaries import Verdict
from gitlocks.core.table import Judged, Lost, Problem, ReadAgain, Table, lazy_table
from gitlocks.errors import StoreError
from gitlocks.git import files, kept, run
from gitlocks.git.changes import (
    finish_git,
    start_git,
)
from gitlocks.layout import JOURNAL_REF, LOCK_PREFIX


def read_lock_table(
    common_dir: str, reftable: bool, cwd: str | None, ignore_case: bool, skew: int = 0
) -> Table:
    """The lock table of the repository whose common git directory is ``common_dir``,
    through the one loader: the store's kept verdicts and judgements spare reading the
    records no question needs (``gitlocks.git.kept``)."""

    # Where the records are, as loose objects, unless the environment puts them elsewhere:
    # read there, a record costs no process (only a packed one does).
    loose = None if "GIT_OBJECT_DIRECTORY" in os.environ else os.path.join(common_dir, "objects")

    def lost(absent: list[tuple[str, str]]) -> None:  # granted claims stop every reader
        from gitlocks.git.pruned import stop_if_lost  # a missing blob only

        stop_if_lost(absent, JOURNAL_REF, loose, cwd=cwd, env=run.Env.INHERIT)

    try:
        return _read_lock_table(common_dir, reftable, cwd, ignore_case, skew, loose, lost)
    except ReadAgain:  # records a prune took, put back: once more
        return _read_lock_table(common_dir, reftable, cwd, ignore_case, skew, loose, lost)


def _read_lock_table(
    common_dir: str,
    reftable: bool,
    cwd: str | None,
    ignore_case: bool,
    skew: int,
    loose: str | None,
    lost: Lost,
) -> Table:
    def distrust() -> None:
        kept.forget(common_dir)

    if reftable:
        found = list_refs(common_dir, reftable, cwd)
        verdicts = kept.verdicts(common_dir)
        return read_table(found, cwd, ignore_case, skew, verdicts, None, distrust, lost=lost)
    scanned = kept.scan(common_dir)
    verdicts = kept.verdicts(common_dir) if kept.needs_verdicts(scanned, loose is None) else {}
    found = files.Scan(scanned.refs, scanned.symbolic)
    return read_table(
        found, cwd, ignore_case, skew, verdicts, scanned.judged, distrust, loose, lost=lost
    )


def list_refs(common_dir: str, reftable: bool, cwd: str | None) -> files.Scan:
    """The lock refs: read from the files that hold them, or from git for other backends."""
    if not reftable:
        return files.scan(common_dir, (LOCK_PREFIX,))
    out = finish_git(start_git(["for-each-ref", files.REFS_FORMAT, LOCK_PREFIX], cwd))
    return files.parse_refs(out.decode("utf-8", "replace"))


def read_table(
    found: files.Scan,
    cwd: str | None,
    ignore_case: bool,
    skew: int = 0,
    verdicts: Mapping[str, Verdict] | None = None,
    judged: Judged | None = None,
    distrust: Callable[[], None] | None = None,
    loose: str | None = None,
    *,
    lost: Lost | None = None,
) -> Table:
    """The lock table of ``found`` lock refs (and the ``judged`` ones), through the one
    loader: records are read only when a path can reach them, and not at all where the
    store's kept ``verdicts`` already say what a blob holds: from their loose object files
    in the objects directory ``loose``, the rest (packed, or no ``loose``) from one
    ``cat-file`` batch. A record that does not match what was kept of it stops the
    command after ``distrust`` (which forgets what was kept, else every hook would stop on
    it again)."""

    def read(oids: list[str]) -> dict[str, tuple[bytes | None, str]]:
        found = read_loose(oids, loose) if oids and loose else {}
        rest = [oid for oid in oids if oid not in found]
        if rest:
            found.update(read_objects(rest, cwd))
        return found

    table, _ = lazy_table(
        sorted(found.refs.items()),
        known=verdicts or {},
        read=read,
        version=None,
        ignore_case=ignore_case,
        skew=skew,
        judged=judged,
        distrust=distrust,
        lost=lost,
    )
    table.problems.extend(
        Problem(ref=name, oid="", reason=f"a symbolic ref to {target}; never followed")
        for name, target in sorted(found.symbolic.items())
    )
    return table


def read_loose(oids: list[str], directory: str) -> dict[str, tuple[bytes | None, str]]:
    """(contents, type) by id of those of ``oids`` that are loose objects in ``directory``,
    read in-process (a process spared before every edit; the store reads them so too): as
    ``read_objects`` keeps them."""
    found: dict[str, tuple[bytes | None, str]] = {}
    for oid in oids:
        if not is_object_id(oid):
            continue  # no object id: never a path to open
        got = files.read_loose(f"{directory}/{oid[:2]}/{oid[2:]}", MAX_RECORD_BYTES)
        if got is False:
            found[oid] = (None, "blob")  # no object git would read: missing, git not asked
        elif got is not None:
            kind, body = got
            found[oid] = (body if kind == "blob" else None, kind)
    return found


def read_objects(oids: list[str], cwd: str | None) -> dict[str, tuple[bytes | None, str]]:
    """(contents, type) by id, from one ``cat-file --batch`` (``<oid> <type> <size>\\n``
    then the contents; ``<oid> missing`` for none). Only blobs are kept, and of a blob at
    most ``MAX_RECORD_BYTES + 1`` bytes: a bigger one is no record, and a planted blob of
    gigabytes must not cost a hook its size in memory (docs/design.md, section 3.7). The
    ids go in a few hundred at a time and each answer is read before the next, so neither
    pipe ever fills."""
    proc = run.start(["cat-file", "--batch"], cwd, env=run.Env.INHERIT, error=StoreError,
                     keep_stderr=False)  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    found: dict[str, tuple[bytes | None, str]] = {}
    try:
        for i in range(0, len(oids), 256):
            chunk = oids[i : i + 256]
            proc.stdin.write("".join(o + "\n" for o in chunk).encode())
            proc.stdin.flush()
            for _ in chunk:
                header = proc.stdout.readline().split()
                if len(header) != 3:  # "<oid> missing"
                    if not header:
                        raise StoreError("git cat-file ended early")
                    continue
                size, kind = int(header[2]), header[1].decode()
                keep = MAX_RECORD_BYTES + 1 if kind == "blob" else 0
                body = files.read_contents(proc.stdout, size, keep)
                found[header[0].decode()] = (body if kind == "blob" else None, kind)
    except OSError as exc:
        raise StoreError(f"cannot read the lock records: {exc}") from exc
    finally:
        # A cat-file that died leaves our unsent input unsendable: a BrokenPipeError here
        # would stand for the reason above (and read as a reader of our output gone away).
        for pipe in (proc.stdin, proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass
        proc.wait()
    return found
