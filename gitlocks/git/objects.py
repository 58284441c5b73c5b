"""git's object store, read and written without a library (docs/design.md, section 9).

Objects are written as loose objects exactly as git writes them (temporary file, then a
link: never half an object, never one overwritten). Loose objects are read from their
files, anything else from one ``git cat-file --batch`` (``CatFile``, the one reader of
its output). The objects directory is ``GIT_OBJECT_DIRECTORY`` under ``Env.INHERIT``,
else the common directory's ``objects``.
"""

from __future__ import annotations

import os
import stat
import zlib
from collections.abc import Iterable, Sequence

from gitlocks.core.digest import hasher
from gitlocks.core.record import MAX_RECORD_BYTES, is_object_id
from gitlocks.core.value import Value
from gitlocks.errors import StoreError
from gitlocks.git.run import Env, Process, close_pipes, start

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import IO, Literal

MODE_TREE = 0o040000
MODE_BLOB = 0o100644
MODE_EXECUTABLE = 0o100755
BLOB_MODES = (MODE_BLOB, MODE_EXECUTABLE)


class Entry(Value):
    __slots__ = ("id", "mode", "name")

    def __init__(
        self,
        mode: int,
        name: str,
        id: str,
    ) -> None:
        self.mode = mode
        self.name = name
        self.id = id


class Commit(Value):
    """The parts of a commit gitlocks reads."""

    __slots__ = ("id", "message", "parent_ids", "tree")

    def __init__(
        self,
        id: str,
        tree: str,
        parent_ids: tuple[str, ...],
        message: str,
    ) -> None:
        self.id = id
        self.tree = tree
        self.parent_ids = parent_ids
        self.message = message


class Objects:
    """The object database of the repository whose git directory is ``git_dir``."""

    def __init__(
        self,
        git_dir: str,
        common_dir: str,
        object_format: str | None,
        *,
        shared: bool = False,
        env: Env = Env.CLEAN,
        cwd: str | None = None,
    ) -> None:
        self.git_dir = git_dir
        named = os.environ.get("GIT_OBJECT_DIRECTORY") if env is Env.INHERIT else None
        if named:
            self.directory = os.path.join(cwd or os.getcwd(), named)
        else:
            self.directory = os.path.join(common_dir, "objects")
        self._prefix = f"{self.directory}{os.sep}"
        self.sha256 = (object_format or "sha1").strip().lower() == "sha256"
        self.hexlen = 64 if self.sha256 else 40
        self._shared = shared
        self._batch = CatFile(cwd, env=env, git_dir=git_dir)
        self._seen: dict[str, tuple[str, bytes]] = {}  # objects never change
        # While a write is under way (``Store``), every object it stores (not those found
        # there already), so that it can see them all still there once its refs moved.
        self.written: dict[str, tuple[str, bytes]] | None = None

    def close(self) -> None:
        self._batch.close()

    # --- reading ------------------------------------------------------------------------

    def read(self, oid: str) -> tuple[str, bytes] | None:
        """``(type, contents)`` of object ``oid``, or None when there is none."""
        return self.read_many([oid]).get(oid)

    def read_many(
        self, oids: Iterable[str], *, limit: int | None = None
    ) -> dict[str, tuple[str, bytes]]:
        """``(type, contents)`` by id of those of ``oids`` that exist: loose ones from
        their files, the rest from one ``cat-file --batch``. ``limit``: an object larger
        than this is never held whole; its first ``limit + 1`` bytes stand for it (a
        hostile blob costs no reader its size: docs/design.md, section 3.7)."""
        found: dict[str, tuple[str, bytes]] = {}
        rest: list[str] = []
        cut: set[str] = set()
        for oid in dict.fromkeys(oids):
            if not is_object_id(oid):
                continue  # no object id: never a path to open
            loose = self._seen.get(oid) or read_loose(f"{self._prefix}{oid[:2]}/{oid[2:]}", limit)
            if loose is None:
                rest.append(oid)
            elif loose:
                found[oid] = loose  # (False: there, but no object git would read)
        if rest:
            got = self._batch.read(rest, limit)
            found.update((oid, (g[1], g[2])) for oid, g in zip(rest, got, strict=True) if g)
        if limit is not None:
            cut = {oid for oid, (_, body) in found.items() if len(body) > limit}
        if len(self._seen) < 100_000:  # a cut-short object is never remembered as whole
            self._seen.update((o, v) for o, v in found.items() if o not in cut)
        return found

    def read_records(self, oids: list[str]) -> dict[str, tuple[bytes | None, str]]:
        """Each of ``oids`` as a lock record is read: its contents if a blob (else None), its
        type. A record is at most MAX_RECORD_BYTES: a bigger blob is read only that far."""
        read = self.read_many(oids, limit=MAX_RECORD_BYTES)
        found: dict[str, tuple[bytes | None, str]] = {}
        for oid in oids:
            kind, data = read.get(oid, ("blob", None))
            found[oid] = (data if kind == "blob" else None, kind)
        return found

    def parse_tree(self, raw: bytes) -> list[Entry]:
        """The entries of a tree's contents, in this repository's hash size."""
        return parse_tree(raw, self.hexlen // 2)

    def commit(self, oid: str | None) -> Commit | None:
        """The commit ``oid`` names, or None (absent, or not a commit)."""
        found = self.read(oid) if oid else None
        if oid is None or found is None or found[0] != "commit":
            return None
        return parse_commit(oid, found[1])

    def tree(self, oid: str) -> list[Entry] | None:
        """The entries of the tree ``oid``, or None (absent, or not a tree)."""
        found = self.read(oid)
        if found is None or found[0] != "tree":
            return None
        return self.parse_tree(found[1])

    # --- writing ------------------------------------------------------------------------

    def hash(self, kind: str, data: bytes) -> str:
        """The id ``data`` has as an object of type ``kind``."""
        digest = hasher(self.sha256)  # the built-in digests: hashlib would load OpenSSL
        digest.update(b"%s %d\0" % (kind.encode(), len(data)))
        digest.update(data)
        return str(digest.hexdigest())

    def write(self, kind: str, data: bytes, *, fresh: bool = False) -> str:
        """Store ``data`` as an object of type ``kind``; its id. ``fresh``: most likely a
        new object, written without looking for it first (an existing one stays as it is)."""
        oid = self.hash(kind, data)
        fanout = os.path.join(self.directory, oid[:2])
        path = os.path.join(fanout, oid[2:])
        if not fresh and _freshen(path):
            return oid  # the same name is the same contents: never rewritten
        if self.written is not None:
            self.written[oid] = (kind, data)
        payload = zlib.compress(b"%s %d\0" % (kind.encode(), len(data)) + data, 1)
        # A concurrent ``git prune --expire=now`` removes temporary files and empty fan-out
        # directories as it goes: the object is written again when it took ours.
        for _ in range(4):
            try:
                self._write_file(fanout, path, payload)
                return oid
            except FileNotFoundError:
                continue
        raise StoreError(f"cannot write an object to {fanout}: it keeps vanishing")

    def _write_file(self, fanout: str, path: str, payload: bytes) -> None:
        """Link ``payload`` into place at ``path`` through a temporary file in ``fanout``;
        FileNotFoundError when a prune took the file or the directory."""
        tmp = os.path.join(fanout, f"tmp_obj_{os.getpid()}_{os.urandom(4).hex()}")
        made = False  # the temporary file: only one that was made is removed
        try:
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
            except FileNotFoundError:  # the fan-out directory is made on first use
                self._make_fanout(fanout)
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
            made = True
            with open(fd, "wb") as f:
                f.write(payload)
            try:
                os.link(tmp, path)  # never replaces: an existing object stays as it is
            except FileExistsError:
                _freshen(path)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise StoreError(f"cannot write an object to {fanout}: {exc.strerror}") from exc
        finally:
            if made:
                try:
                    os.unlink(tmp)
                except OSError:  # the error already raised, if any, is the one to say
                    pass

    def _make_fanout(self, fanout: str) -> None:
        try:
            try:
                os.mkdir(fanout)
            except FileExistsError:
                return  # made meanwhile, by git or another writer
            # New fan-out directories keep the group, as git's: in a shared repository
            # whenever the group may enter (git sets the bit on each directory it makes
            # then, whatever objects/ has), else as objects/ does.
            mode = _mode_of(fanout)
            if self._shared:
                keep = bool(mode & 0o060)
            else:
                keep = bool(_mode_of(self.directory) & stat.S_ISGID)
            if keep:
                os.chmod(fanout, mode | stat.S_ISGID)
        except OSError as exc:
            raise StoreError(f"cannot write to {fanout}: {exc.strerror}") from exc

    def write_blob(self, data: bytes, *, fresh: bool = False) -> str:
        return self.write("blob", data, fresh=fresh)

    def write_tree(self, entries: Iterable[Entry]) -> str:
        """A tree of ``entries``, in git's order (a tree's name sorts as ``name/``)."""
        raw = bytearray()
        for e in sorted(entries, key=_tree_key):
            raw += b"%o %s\0" % (e.mode, e.name.encode()) + bytes.fromhex(e.id)
        return self.write("tree", bytes(raw))

    def write_commit(self, tree: str, parents: Sequence[str], message: str, when: int) -> str:
        """A commit by gitlocks (author and committer alike) at ``when`` (seconds, UTC)."""
        person = f"gitlocks <gitlocks@localhost> {when} +0000"
        lines = [f"tree {tree}", *(f"parent {p}" for p in parents)]
        lines += [f"author {person}", f"committer {person}", "", message]
        return self.write("commit", "\n".join(lines).encode(), fresh=True)


def parse_tree(raw: bytes, size: int) -> list[Entry]:
    """The entries of a tree's contents (``<mode> <name>\\0<raw id>`` each)."""
    entries: list[Entry] = []
    pos = 0
    while pos < len(raw):
        space = raw.index(b" ", pos)
        nul = raw.index(b"\0", space)
        mode = int(raw[pos:space], 8)
        name = raw[space + 1 : nul].decode("utf-8", "surrogateescape")
        entries.append(Entry(mode, name, raw[nul + 1 : nul + 1 + size].hex()))
        pos = nul + 1 + size
    return entries


def parse_commit(oid: str, raw: bytes) -> Commit:
    """The tree, parents and message of a commit's contents."""
    head, _, message = raw.partition(b"\n\n")
    tree = ""
    parents: list[str] = []
    for line in head.split(b"\n"):
        key, _, value = line.partition(b" ")
        if key == b"tree":
            tree = value.decode("ascii", "replace")
        elif key == b"parent":
            parents.append(value.decode("ascii", "replace"))
    return Commit(oid, tree, tuple(parents), message.decode("utf-8", "replace"))


def _tree_key(entry: Entry) -> bytes:
    name = entry.name.encode()
    return name + b"/" if entry.mode == MODE_TREE else name


def _freshen(path: str) -> bool:
    """Whether the loose object at ``path`` is there, its modification time now, as git's
    ``freshen_loose_object`` does (a prune's grace period runs from this use)."""
    try:
        os.utime(path)
    except OSError:
        return False
    return True


def _mode_of(path: str) -> int:
    try:
        return os.stat(path).st_mode
    except OSError:
        return 0


# --- git cat-file -----------------------------------------------------------------------------

Found = tuple[str, str, bytes]  # (id, type, contents) of an object git names
_FEED = 16 * 1024  # bytes of names written at once: well under a pipe's buffer


class CatFile:
    """``git cat-file --batch`` (``check``: ``--batch-check``), started when first asked
    (or at ``start``) and asked until ``close``, a few names at a time so that neither side
    waits on a full pipe; its stderr goes nowhere (a pipe nobody reads would stop it)."""

    def __init__(
        self,
        cwd: str | None = None,
        *,
        env: Env,
        check: bool = False,
        git_dir: str | None = None,
    ) -> None:
        where = ["--git-dir", git_dir] if git_dir else []
        self.args = [*where, "cat-file", "--batch-check" if check else "--batch"]
        self.cwd = cwd
        self.env = env
        self.check = check
        self.proc: Process | None = None

    def start(self) -> Process:
        if self.proc is None:
            self.proc = start(
                self.args, self.cwd, env=self.env, error=StoreError, keep_stderr=False
            )
        return self.proc

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            close_pipes(proc)
            proc.wait()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def read(self, names: Sequence[str], limit: int | None = None) -> list[Found | None]:
        """``(id, type, contents)`` of the object each of ``names`` names, in order; None
        where there is none, the name is ambiguous, or it cannot be asked (a newline, a NUL
        or a final carriage return would ask for another). ``limit``: as for ``read_many``."""
        return [None if a is None else (a[0], a[1], a[3]) for a in self._ask(names, limit)]

    def _ask(
        self, names: Sequence[str], limit: int | None
    ) -> list[tuple[str, str, int, bytes] | None]:
        found: list[tuple[str, str, int, bytes] | None] = [None] * len(names)
        asked = [i for i, name in enumerate(names) if _askable(name)]
        if not asked:
            return found
        proc = self.start()
        assert proc.stdin is not None and proc.stdout is not None
        keep = None if limit is None else limit + 1
        try:
            lines = [names[i].encode("utf-8", "surrogateescape") + b"\n" for i in asked]
            first = 0
            while first < len(asked):  # a name longer than _FEED goes alone
                end, size = first + 1, len(lines[first])
                while end < len(asked) and size + len(lines[end]) <= _FEED:
                    size += len(lines[end])
                    end += 1
                proc.stdin.write(b"".join(lines[first:end]))
                proc.stdin.flush()
                for i in asked[first:end]:
                    found[i] = self._answer(proc.stdout, keep)
                first = end
        except (OSError, ValueError) as exc:
            self.close()
            raise StoreError(f"cannot read the object database: {exc}") from exc
        return found

    def _answer(self, stream: IO[bytes], keep: int | None) -> tuple[str, str, int, bytes] | None:
        """One answer: ``<id> <type> <size>`` and (``--batch``) the contents and a newline,
        or ``<name> missing`` (``ambiguous``), whatever spaces the name holds."""
        line = stream.readline()
        if not line.endswith(b"\n"):
            raise OSError("git cat-file ended early")
        header = line[:-1].rsplit(b" ", 2)
        if len(header) != 3 or not header[2].isdigit():
            return None
        size = int(header[2])
        body = b"" if self.check else read_contents(stream, size, keep)
        return header[0].decode(), header[1].decode(), size, body


def _askable(name: str) -> bool:
    return bool(name) and "\n" not in name and "\0" not in name and not name.endswith("\r")


def cat_file(
    names: Sequence[str], cwd: str | None = None, *, env: Env, limit: int | None = None
) -> list[Found | None]:
    """``CatFile.read`` of ``names``, by a ``cat-file --batch`` started for them alone."""
    batch = CatFile(cwd, env=env)
    try:
        return batch.read(names, limit)
    finally:
        batch.close()


def cat_file_check(
    names: Sequence[str], cwd: str | None = None, *, env: Env
) -> list[tuple[str, str, int] | None]:
    """``(id, type, size)`` of each of ``names``, from a ``cat-file --batch-check``."""
    batch = CatFile(cwd, env=env, check=True)
    try:
        return [None if a is None else a[:3] for a in batch._ask(names, None)]
    finally:
        batch.close()


def read_contents(stream: IO[bytes], size: int, keep: int | None = None) -> bytes:
    """One object's contents from ``cat-file --batch`` output (``size`` bytes, then a
    newline): the first ``keep`` bytes at most, the rest skipped a piece at a time."""
    body = stream.read(size if keep is None else min(size, keep))
    left = size - len(body) + 1  # what is not kept, and the newline after it
    while left > 0:
        piece = stream.read(min(left, 1 << 20))
        if not piece:
            raise OSError("git cat-file ended early")
        left -= len(piece)
    return body


# The object types git reads (a loose object of any other is one it refuses).
_KINDS = (b"blob", b"tree", b"commit", b"tag")


def read_loose(path: str, limit: int | None = None) -> tuple[str, bytes] | Literal[False] | None:
    """``(type, contents)`` of the loose object file at ``path``; None when there is none
    (packed, in an alternate) or it cannot be read: ask git. False when it is no object git
    would read, and git must not be asked either: a FIFO or a device (git would wait on it),
    an unknown type, contents not as long as the header says (cat-file would hang on it).
    ``limit``: as for ``Objects.read_many``."""
    try:  # os.open and one read: a table of 10,000 reads that many files
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opens, and is no file
        try:
            found = os.fstat(fd)
            if not stat.S_ISREG(found.st_mode):
                return False
            # With a limit: the header and limit + 1 bytes of contents, read no further.
            if limit is None:
                raw = zlib.decompress(_read_all(fd, found.st_size))
            else:
                raw = _inflate_head(fd, limit + 64)
        finally:
            os.close(fd)
    except (OSError, zlib.error):
        return None  # not loose (packed, or in an alternate), or unreadable: ask git
    header, nul, body = raw.partition(b"\0")
    kind, _, size = header.partition(b" ")
    if not nul or not size.isdigit() or size[:1] == b"0" != size:
        return None  # git reads a size in decimal, with no leading zero: ask git
    if kind not in _KINDS:
        return False
    if limit is not None and int(size) > limit:
        # Its first limit + 1 bytes stand for it (git's header says it is too large).
        return (kind.decode(), body[: limit + 1]) if len(body) > limit else False
    if int(size) != len(body):
        return False
    return kind.decode(), body


def _inflate_head(fd: int, size: int) -> bytes:
    """The first ``size`` bytes the deflated stream at ``fd`` inflates to (fewer when it
    ends first), read a piece at a time: a huge blob is never read or inflated whole."""
    inflater = zlib.decompressobj()
    raw = b""
    while len(raw) < size and not inflater.eof:
        piece = os.read(fd, 1 << 16)
        if not piece:
            break
        raw += inflater.decompress(piece, size - len(raw))
    return raw


def _read_all(fd: int, size: int) -> bytes:
    """The rest of the file at ``fd``, ``size`` bytes long when it was looked at."""
    data = os.read(fd, size + 1)
    while len(data) <= size:  # a short read: keep reading to the end
        more = os.read(fd, size + 1 - len(data))
        if not more:
            break
        data += more
    return data
