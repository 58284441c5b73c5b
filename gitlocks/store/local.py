"""The local lock store: reading the table, and deciding and applying a write as one step.

Lock records are blobs at ``refs/agent-locks/<id>``; every write also moves the journal
ref ``refs/agent-locks-meta/journal`` to a new commit carrying the table
(``gitlocks.store.journal``), under ``flock`` on the mutex file, through
``gitlocks.store.refs`` (docs/design.md, sections 4.1 to 4.3).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping

from gitlocks.core.judging import Problem, ReadAgain, read_record, verdict_of
from gitlocks.core.record import LockRecord, format_time, utcnow
from gitlocks.core.table import Table, lazy_table
from gitlocks.errors import NotARepository, StoreError
from gitlocks.git import cache, files, pruned, settings
from gitlocks.git.objects import Objects
from gitlocks.git.run import Env, finish, start
from gitlocks.layout import JOURNAL_REF, LOCK_PREFIX, MUTEX_NAME, MUTEX_TIMEOUT_SECONDS
from gitlocks.store.journal import Journal, JournalEntry
from gitlocks.store.location import (
    Location,
    common_dir_of,
    current_directory,
    discover_location,
    location_from_environment,
)

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")

    import pygit2

    from gitlocks.core.change import Change
    from gitlocks.core.summaries import Verdict
    from gitlocks.store.mutex import Mutex
    from gitlocks.store.refs import RefWriter


class _Conflict(Exception):
    """The store moved between our read and our write: re-read and decide again."""


KEEP_VERDICTS_AFTER = 32  # new verdicts worth rewriting the verdicts file of a large table


class Store:
    """A repository's lock refs, with a table cached by the journal ref's value."""

    remote: str | None = None  # the lock remote's name: set by a remote store

    def __init__(
        self, repo: Location | pygit2.Repository, configured: settings.Settings | None = None
    ) -> None:
        if isinstance(repo, Location):
            where, self._repo = repo, None
        else:  # an open libgit2 repository: kept, for what still asks for one
            where, self._repo = Location(repo.path, repo.workdir, repo.is_bare), repo
        if where.bare:
            raise NotARepository("this is a bare repository: run git alock inside a working tree")
        self.where = where  # a remote store opens the same repository from it
        self.git_dir = where.git_dir
        # Every setting, read once (git -c included), unless already read.
        self.settings = configured or settings.read(git_dir=self.git_dir)
        self.common_dir = common_dir_of(self.git_dir)
        self.root = os.path.realpath(where.workdir) if where.workdir else os.getcwd()
        self.ignore_case = self.settings.flag("core.ignoreCase", False)
        # What we create gets the modes git gives it in a shared repository.
        shared_value = self.config_get("core.sharedRepository")
        current = os.umask(0)
        os.umask(current)  # read, and put back before a bad value can raise
        os.umask(settings.shared_umask(shared_value, current))
        # Shared when it opens any permission (a value meaning "umask" opens none).
        shared = settings.shared_umask(shared_value, 0o777) != 0o777
        # As git reads it: the repository's own config only (docs/design.md, section 4.2).
        object_format = where.object_format or self.config_get("extensions.objectFormat")
        self.objects = Objects(self.git_dir, self.common_dir, object_format, shared=shared)
        self.skew = 0  # clock-skew allowance in seconds; remote mode sets its own
        self._cache: Table | None = None
        self._cache_listing: files.Scan | None = None  # the refs the cached table was read from
        self.reftable = self.settings.reftable  # refs not in files (``Watch`` asks git)
        self.snapshot = False  # one command, one reading (docs/design.md 4.5)
        self._scanned: files.Scan | None = None  # listed under the mutex, for the next read
        self._decided: Table | None = None  # the table the last write was decided on
        self._mutex_fd: int | None = None  # the open mutex file, while we hold it
        # Within a write: the verdicts judged anew, kept once after it (4.5).
        self._keep_after = False
        self._unkept: dict[str, Verdict] | None = None
        self.journal_store = Journal(self.objects, self.config_get)
        self.symrefs: dict[str, str] = {}  # symbolic lock refs at the last scan: never followed
        self.journal_reset: str | None = None  # a symbolic journal ref replaced: say so
        # Told the target of a symbolic journal ref a write finds (and replaces).
        self.on_journal_symref: Callable[[str], None] | None = None
        self.breaking = False  # a break reads a lost record as unusable, to remove it (4.6)

    @classmethod
    def discover(cls, start: str | os.PathLike[str] | None = None) -> Store:
        if start is None and os.environ.get("GIT_DIR"):
            found = location_from_environment(
                os.environ["GIT_DIR"], os.environ.get("GIT_WORK_TREE")
            )
            return cls(found[0], configured=found[1])
        start = os.fspath(start) if start is not None else current_directory()
        config = settings.start(start, clean=True)  # both at once: each a process start
        try:
            where = discover_location(start)
        except BaseException:
            config.kill()
            config.communicate()
            raise
        return cls(where, configured=settings.finish(config))

    @property
    def repo(self) -> pygit2.Repository:
        """The repository opened with libgit2, on first use (remote mode, history)."""
        if self._repo is None:
            import pygit2  # costs more than the rest of a command: only when asked for

            try:
                repo = pygit2.Repository(self.git_dir)
            except pygit2.GitError as exc:  # a SHA-256 repository, with libgit2 1.x
                raise StoreError(
                    f"libgit2 cannot open this repository ({exc}); remote mode and "
                    "--until-merged need it, everything else works in local mode "
                    "(git alock remote --off)"
                ) from exc
            if repo.workdir is None or os.path.realpath(repo.workdir) != self.root:
                repo.workdir = self.root
            self._repo = repo
        return self._repo

    def config_get(self, key: str) -> str | None:
        return self.settings.get(key)

    def config_set(self, key: str, value: str) -> None:
        settings.write(self.git_dir, key, value)
        self.settings = settings.read(git_dir=self.git_dir)

    def config_unset(self, key: str) -> None:
        settings.unset(self.git_dir, key)
        self.settings = settings.read(git_dir=self.git_dir)

    def is_file(self, path: str) -> bool:
        """Whether a root-relative path names a file in the working tree or the index."""
        if files.in_working_tree(self.root, path):
            return True
        # Not in the working tree: is it in the index (deleted, not yet committed)?
        proc = start(
            ["--git-dir", self.git_dir, "--work-tree", self.root,
             "ls-files", "-z", "--", f":(literal){path}"],
            env=Env.CLEAN,
            error=StoreError,
        )  # fmt: skip
        out, _ = proc.communicate()
        return proc.returncode == 0 and path.encode() in out.split(b"\0")

    def head_info(self) -> tuple[str | None, str | None]:
        """(branch or None when detached, head commit or None when unborn): one ``git
        rev-parse``, and for an unborn branch, which it cannot resolve, ``symbolic-ref``."""
        asked = ["rev-parse", "HEAD^{commit}", "--symbolic-full-name", "HEAD", "--"]
        found = self._lines(asked)
        if len(found) >= 2:
            name = found[1]
            return (None if name == "HEAD" else name.removeprefix("refs/heads/"), found[0])
        names = self._lines(["symbolic-ref", "-q", "HEAD"])
        return (names[0].removeprefix("refs/heads/") if names else None, None)

    def _lines(self, args: list[str]) -> list[str]:
        """The lines git printed; none when it failed (a question git answers no)."""
        proc = start(["--git-dir", self.git_dir, *args], env=Env.CLEAN, error=StoreError)
        out, _ = proc.communicate()
        return out.decode("utf-8", "replace").splitlines() if proc.returncode == 0 else []

    def ref_value(self, name: str) -> str | None:
        """The object id the ref ``name`` holds, as git lists it; None when absent, broken
        or symbolic (never followed)."""
        return self.ref_values((name,))[name]

    def ref_values(self, names: Collection[str]) -> dict[str, str | None]:
        """``ref_value`` of each of ``names``, with one ``for-each-ref`` for them all."""
        if not names:
            return {}  # (git lists every ref for no pattern)
        found = self._scan_with_git(tuple(names))
        return {n: None if n in found.symbolic else found.refs.get(n) for n in names}

    def sync(self) -> bool:
        """Refresh the view of the lock remote (``RemoteStore``); True when it moved."""
        return False

    def fetch_branches(self, branches: list[str]) -> None:
        """Refresh the branches claims wait on (local ones need no fetch)."""

    def landing_ref(self, branch: str) -> str:
        """The ref a claim ``--until-merged branch`` waits on."""
        return f"refs/heads/{branch}"

    def commit_of(self, ref: str) -> str | None:
        from gitlocks.store import history  # claims that wait on a merge only

        return history.commit_of(self.objects, self.ref_value(ref))

    def contains(self, tip: str, commit: str) -> bool:
        from gitlocks.store import history  # claims that wait on a merge only

        return history.contains(self.git_dir, tip, commit)

    def paths_changed_since(self, head: str, base: str, limit: int) -> set[str] | None:
        from gitlocks.store import history  # claims that wait on a merge only

        return history.paths_changed_since(self.repo, head, base, limit)

    def version(self) -> str | None:
        """The journal ref's value, changed by every write (a symbolic one reads as none)."""
        return self.ref_value(JOURNAL_REF)

    def decided_version(self) -> str | None:
        """The journal commit this command's last write was decided on, or wrote."""
        return self._decided.version if self._decided is not None else self.version()

    def journal_symref(self) -> str | None:
        """Where a symbolic journal ref points (a planted one), else None."""
        if self.snapshot:  # listed with the table, which the command reads next
            self.read_table()
            assert self._cache_listing is not None
            return self._cache_listing.symbolic.get(JOURNAL_REF)
        return self.symref_target(JOURNAL_REF)

    def symref_target(self, name: str) -> str | None:
        """Where the symbolic ref ``name`` points, else None (none, or not symbolic)."""
        return self._scan_with_git((name,)).symbolic.get(name)

    def read_table(self) -> Table:
        """The current lock table; the cached one while git lists the same refs, and in
        a ``snapshot`` the one read first or left by its own write."""
        if self.snapshot and self._cache is not None:
            return self._cache
        return self._read_current()

    def _read_current(self) -> Table:
        listed, self._scanned = (
            self._scanned or self._scan_with_git((LOCK_PREFIX, JOURNAL_REF)),
            None,
        )
        if self._cache is not None and listed == self._cache_listing:
            return self._cache
        try:
            table = self._load(listed)
        except ReadAgain:  # records a prune took, put back: read once more
            table = self._load(listed)
        self._cache, self._cache_listing = table, listed
        return table

    def problems(self) -> list[Problem]:
        """Refs holding no usable record, in the table a write was decided on, else now."""
        table = self._decided if self._decided is not None else self.read_table()
        return table.problems

    def _load(self, listed: files.Scan) -> Table:
        refs = {n: o for n, o in listed.refs.items() if n.startswith(LOCK_PREFIX)}
        symbolic = {n: t for n, t in listed.symbolic.items() if n.startswith(LOCK_PREFIX)}
        self.symrefs = symbolic
        version = listed.refs.get(JOURNAL_REF)
        table = self.load(refs.items(), version)
        table.problems.extend(
            Problem(ref=name, oid="", reason=f"a symbolic ref to {target}; never followed")
            for name, target in sorted(symbolic.items())
        )
        target = listed.symbolic.get(JOURNAL_REF)
        if target is not None:
            reason = f"a symbolic ref to {target}; never followed, the next write replaces it"
            table.problems.append(Problem(ref=JOURNAL_REF, oid="", reason=reason))
        return table

    def load(self, refs: Iterable[tuple[str, str]], version: str | None) -> Table:
        """The table of ``(ref, oid)`` lock refs; only blobs not judged before are read now
        (docs/design.md, section 4.5), every one in a break (4.6)."""
        common_dir = None if self.breaking else self.common_dir
        judged, rest, known = cache.judge(common_dir, dict(refs))
        table, fresh = lazy_table(
            rest.items(),
            known=known,
            read=self.objects.read_records,
            version=version,
            ignore_case=self.ignore_case,
            skew=self.skew,
            distrust=self.distrust,
            judged=judged,
            lost=None if self.breaking else lambda absent: self._lost(version, absent),
        )
        # In a large table, rewriting the file costs more than reading a few blobs again.
        large = len(table.refs) >= 1000
        keep = not self.breaking and (len(fresh) >= KEEP_VERDICTS_AFTER or not large)
        if keep and self._keep_after:  # kept after the write, with the verdicts of what it wrote
            self._unkept = fresh
        elif keep and fresh:
            cache.keep_verdicts(self.common_dir, fresh, set(table.refs.values()))
        return table

    def _lost(self, version: str | None, absent: list[tuple[str, str]]) -> None:
        if version is not None:  # no journal names any: none was granted
            git = ["--git-dir", self.git_dir]
            pruned.stop_if_lost(absent, version, self.objects.directory, git)

    def distrust(self) -> None:
        """A record did not match what was kept of it: forget the cache and the table read
        with it, so a process that lives on (the live page) reads them again."""
        cache.forget(self.common_dir)
        self._cache = None

    def scan_refs(self, prefixes: tuple[str, ...]) -> dict[str, str]:
        """Every ref under ``prefixes`` (each ending in ``/``) with its value, by name, as
        ``git for-each-ref`` lists them; symbolic ones are never followed."""
        found = self._scan_with_git(prefixes)
        if LOCK_PREFIX in prefixes:
            self.symrefs = {n: t for n, t in found.symbolic.items() if n.startswith(LOCK_PREFIX)}
        return found.refs

    def _scan_with_git(self, patterns: tuple[str, ...]) -> files.Scan:
        """The refs ``git for-each-ref`` lists; a git that cannot (a damaged packed-refs)
        is a ``StoreError``, never an empty table."""
        args = ["--git-dir", self.git_dir, "for-each-ref", files.REFS_FORMAT, *patterns]
        out = finish(start(args, env=Env.CLEAN, error=StoreError), error=StoreError)
        return files.parse_refs(out.decode("utf-8", "replace"))

    def read_record(self, name: str, oid: str) -> LockRecord | Problem:
        kind, data = self.objects.read(oid) or ("blob", None)
        return read_record(name, oid, data if kind == "blob" else None, kind)

    def transact(self, decide: Callable[[Table], tuple[Change, T]], *, tries: int = 5) -> T:
        """Decide against the current table and apply the change, as one atomic step
        (docs/design.md, section 4.2): ``decide`` may run more than once."""
        with self.mutex():
            self._replace_symbolic_journal()
            self._keep_after = True
            # What this write stores over every try, kept with it (docs/design.md 4.6).
            self.objects.written = {}
            try:
                for _ in range(tries):
                    table = self._read_current()
                    listed = self._cache_listing  # what git listed, under the mutex
                    assert listed is not None  # set by the read
                    change, result = decide(table)
                    self._decided = table
                    if not change:
                        return result
                    try:
                        self._apply(table, change, listed)
                    except _Conflict:
                        self._cache = None
                        # A failed write whose undo did not finish left its log: finished
                        # first, so the next try decides on the table as it was (4.3).
                        self.ref_writer().recover()
                        continue
                    return result
            finally:
                self._scanned = None
                self._keep_after = False
                self.objects.written = None
                self._keep_unkept()
        raise StoreError("the lock store kept changing under us; try again")

    def _keep_unkept(self) -> None:
        """Keep the verdicts a write judged: of what it read anew, and of what it wrote."""
        if self._unkept:
            fresh, self._unkept = self._unkept, None
            table = self._cache if self._cache is not None else self._decided  # else as read
            current = set(table.refs.values()) if table is not None else None
            cache.keep_verdicts(self.common_dir, fresh, current)
        self._unkept = None

    def mutex(self, timeout: float = MUTEX_TIMEOUT_SECONDS) -> Mutex:
        from gitlocks.store.mutex import Mutex  # a write's: reads take no mutex

        return Mutex(lambda: self._take_mutex(timeout), self._drop_mutex)

    def _take_mutex(self, timeout: float) -> None:
        path = os.path.join(self.common_dir, MUTEX_NAME)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            said = f"cannot open the store mutex {path}: {exc.strerror}"
            if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):  # docs/agents.md
                said += (
                    ". The git directory cannot be written from here (a sandbox such as "
                    "Codex's keeps .git read-only): claim through the MCP server "
                    "(git alock mcp) or the harness's hooks, which run outside it"
                )
            raise StoreError(said) from exc
        try:
            from gitlocks.store.mutex import wait_for_flock  # writes only: reads take no mutex

            wait_for_flock(fd, timeout)
            self._mutex_fd = fd
            # A dead writer's half-done update is finished before anything is read (4.3).
            self.ref_writer().recover()
            pruned.put_back(self.objects.directory, within=pruned.RECHECK_SECONDS)
            self._cache = None
        except BaseException:
            self._drop_mutex(fd)
            raise

    def _drop_mutex(self, fd: int | None = None) -> None:
        fd = self._mutex_fd if fd is None else fd
        self._mutex_fd = None
        if fd is not None:
            os.close(fd)  # closing releases the flock

    def _apply(self, table: Table, change: Change, scan: files.Scan) -> None:
        from gitlocks.core.change import check_sizes  # the writing half: reads need none of it
        from gitlocks.git.transaction import RefsRefused  # a write's: reads refuse nothing

        check_sizes(change)
        if self.objects.written is None:  # what this write stores: seen again once the refs moved
            self.objects.written = {}
        refs = dict(table.refs)
        updates: dict[str, str | None] = {}
        for lock_id in change.delete:
            refs.pop(lock_id, None)
            updates[LOCK_PREFIX + lock_id] = None
        written: dict[str, bytes] = {}
        for record in change.put:
            data = record.to_json()
            refs[record.id] = self.objects.write_blob(data, fresh=True)
            updates[LOCK_PREFIX + record.id] = refs[record.id]
            written[refs[record.id]] = data
        events = list(change.events)
        if self.journal_reset is not None:
            reason = f"the journal ref was a symbolic ref to {self.journal_reset}; replaced"
            events.insert(
                0, {"event": "journal_reset", "at": format_time(utcnow()), "reason": reason}
            )
        commit = self.journal_store.write(table.version, events, refs)
        updates[JOURNAL_REF] = str(commit)

        def expect(now: Mapping[str, str | None]) -> None:
            # Every ref locked: still what the table says, or someone wrote without the
            # mutex: re-read and decide again.
            if now[JOURNAL_REF] != table.version:  # None for a symbolic one, too
                raise _Conflict
            unusable = {p.ref for p in table.problems}
            for name in updates.keys() - {JOURNAL_REF}:
                moved = now[name] != table.refs.get(name[len(LOCK_PREFIX) :])
                if moved and name not in unusable:
                    raise _Conflict

        # git compares under each ref's lock the values listed under the mutex.
        old = {n: None if n in scan.symbolic else scan.refs.get(n) for n in updates}
        writer = self.ref_writer()
        self._cache = None  # until the refs moved: what they hold then is cached below
        for again in range(pruned.WRITE_AGAIN_TIMES, -1, -1):
            try:
                writer.write(updates, old=old, expect=expect)
                break
            except StoreError as exc:
                if self.ref_values(old) != old:
                    raise _Conflict from None  # a ref moved outside the mutex
                if not isinstance(exc, RefsRefused) or not pruned.taken(self.objects):
                    raise  # only git's refusal can be for a missing object (4.6)
                if not again:
                    raise StoreError(
                        "a git prune beside us kept deleting what this write stored; try again"
                    ) from exc
                # A prune took what they would name: written again, the decision stands,
                # however often a prune loop beside us does it (docs/design.md, 4.6).
                pruned.keep_written(self.objects, self.objects.written or {})
        for lock_id in change.delete:
            table.remove(lock_id)
        for record in change.put:
            table.put(record)
        table.refs = refs
        table.version = str(commit)
        self.journal_reset = None
        # What git lists now, without asking it.
        listed = {LOCK_PREFIX + lock_id: oid for lock_id, oid in refs.items()}
        listed[JOURNAL_REF] = str(commit)
        self._cache, self._cache_listing = table, files.Scan(listed, dict(self.symrefs))
        if self._unkept is not None:  # judged from its bytes, as any reader judges a blob
            self._unkept.update((oid, verdict_of(data)) for oid, data in written.items())
        # Every object this write stored is kept, written again if a prune took it (4.6).
        stored, self.objects.written = self.objects.written or {}, None
        pruned.keep_written(self.objects, stored)

    def _replace_symbolic_journal(self) -> None:
        """A symbolic journal ref (planted) is deleted, never followed: the write starts a
        fresh journal (docs/design.md, section 4.1)."""
        listed = self._scan_with_git((LOCK_PREFIX, JOURNAL_REF))
        target = listed.symbolic.get(JOURNAL_REF)
        if target is not None:
            if self.on_journal_symref is not None:
                self.on_journal_symref(target)
            self.ref_writer().write({JOURNAL_REF: None})
            self._cache = None
            self.journal_reset = target
        else:  # under the mutex: what the first read of the write would list again
            self._scanned = listed

    def ref_writer(self) -> RefWriter:
        """The writer of our refs; only while we hold the mutex."""
        if self._mutex_fd is None:
            raise StoreError("internal: refs are written only under the store mutex")
        from gitlocks.store.refs import RefWriter  # writes only: a read moves no ref

        return RefWriter(
            self.git_dir,
            self.common_dir,
            self._mutex_fd,
            self.ref_values,
            hexlen=self.objects.hexlen,
            separate=not self.reftable,
        )

    def journal(
        self, limit: int | None = None, *, start: str | None = None
    ) -> Iterator[JournalEntry]:
        """Journal entries (commits), newest first, from ``start`` or the journal ref."""
        return self.journal_store.walk(self.version() if start is None else start, limit)
