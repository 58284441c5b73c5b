"""Reading refs from a repository's files: only the namespaces asked for, no process.

libgit2's iterator and ``git for-each-ref`` list every branch, tag and remote-tracking
ref, or cost a process; gitlocks reads its own namespaces as git stores them (the files
backend): the loose refs below them, then their lines of ``packed-refs`` (one
regular-expression pass). Loose refs are read first, and win, so a concurrent
``pack-refs`` loses nothing. Callers fall back to git itself for other ref backends.
"""

from __future__ import annotations

import os
from stat import S_ISREG  # os has loaded it

from gitlocks.core.plain import Row
from gitlocks.core.record import is_object_id


class Scan(Row):
    refs: dict[str, str]  # name -> object id
    symbolic: dict[str, str]  # name -> the ref it names (loose files only: never followed)


def scan(common_dir: str, prefixes: tuple[str, ...]) -> Scan:
    """Every ref under ``prefixes`` (each ending in ``/``), by name."""
    loose = scan_loose(common_dir, prefixes)
    packed = read_packed(common_dir)
    return loose if packed is None else merge(loose, packed_refs(packed, prefixes))


def scan_loose(common_dir: str, prefixes: tuple[str, ...]) -> Scan:
    """The loose refs under ``prefixes``: the files below them, ``.lock`` files aside."""
    found: dict[str, str] = {}
    symbolic: dict[str, str] = {}
    for prefix in prefixes:
        for dirpath, _dirs, files in os.walk(os.path.join(common_dir, prefix)):
            rel = os.path.relpath(dirpath, common_dir).replace(os.sep, "/")
            for filename in files:
                if filename.endswith(".lock"):
                    continue
                try:
                    with open(os.path.join(dirpath, filename), "rb") as fh:
                        value = fh.read(256).strip().decode("ascii", "replace")
                except OSError:
                    continue  # deleted while we looked: gone
                if is_object_id(value):
                    found[f"{rel}/{filename}"] = value
                elif value.startswith("ref:"):
                    symbolic[f"{rel}/{filename}"] = value[4:].strip()
    return Scan(found, symbolic)


def read_packed(common_dir: str) -> bytes | None:
    """The text of ``packed-refs``; None when there is none (or it cannot be read)."""
    try:
        with open(os.path.join(common_dir, "packed-refs"), "rb") as fh:
            return fh.read()
    except OSError:
        return None


def packed_refs(packed: bytes, prefixes: tuple[str, ...]) -> dict[str, str]:
    """The ids of the refs under ``prefixes`` in ``packed``, by name, in file order; a name
    on two lines is the first, as git reads the file."""
    pairs = _packed(packed, prefixes)
    found = dict(pairs)
    if len(found) != len(pairs):
        found = {}
        for name, oid in pairs:
            found.setdefault(name, oid)
    return found


def merge(loose: Scan, packed: dict[str, str]) -> Scan:
    """The ``loose`` refs over the ``packed`` ones: loose refs come first and win, then the
    packed ones in the file's order; a symbolic ref is never read through its packed
    line."""
    merged = dict(loose.refs)
    merged.update(packed)
    merged.update(loose.refs)
    for name in loose.symbolic:
        merged.pop(name, None)
    return Scan(merged, loose.symbolic)


def packed_region(packed: bytes, prefix: str) -> bytes:
    """The text of ``packed`` the lines under ``prefix`` are read from (b"" when it has
    none): ``packed_refs`` is a function of it alone, so what was judged of those refs
    can be kept against it (``gitlocks.git.kept``)."""
    regions = _regions(packed, _encoded((prefix,)))
    return packed[regions[0][0] : regions[0][1]] if regions else b""


def _encoded(prefixes: tuple[str, ...]) -> tuple[bytes, ...]:
    return tuple(p.encode() for p in prefixes)


# The last packed-refs text read and its lines under each set of prefixes: a command reads
# the table more than once (the agent guard's question, then the store's write), and with
# 10,000 locks parsing the file costs more than comparing it.
_HEX = b"0123456789abcdef"
_last_packed: dict[tuple[str, ...], tuple[bytes, list[tuple[str, str]]]] = {}


def _packed(packed: bytes, prefixes: tuple[str, ...]) -> list[tuple[str, str]]:
    """(name, id) of the lines of ``packed`` under ``prefixes``, in file order."""
    known = _last_packed.get(prefixes)
    if known is not None and known[0] == packed:
        return known[1]
    wanted = _encoded(prefixes)
    lines = []
    for start, end in _regions(packed, wanted):
        whole = _whole_region(packed[start:end], prefixes)
        if whole is not None:
            lines += whole
            continue
        # "<id> <name>"; the header and peeled lines ("^<id>") are not
        for line in packed[start:end].split(b"\n"):
            oid, _, name = line.partition(b" ")
            if name.startswith(wanted) and len(oid) in (40, 64) and not oid.strip(_HEX):
                lines.append((name.decode("utf-8", "replace"), oid.decode()))
    _last_packed[prefixes] = (packed, lines)
    return lines


def _whole_region(region: bytes, prefixes: tuple[str, ...]) -> list[tuple[str, str]] | None:
    """The lines of a region that is nothing but ``<id> <name>`` lines under ``prefixes``
    (as git writes them), read in a few passes over all of it: 10,000 lines in a new
    process in about 6 ms against 7 line by line. None for any other region, which is read
    line by line: what both find is the same, since text rebuilt from the pairs is the
    region itself."""
    if not region.isascii():
        return None
    text = region.decode("ascii")
    parts = text.split()
    ids, names = parts[0::2], parts[1::2]
    if (
        len(ids) == len(names)
        and "\n".join(map(" ".join, zip(ids, names, strict=True))) == text
        and set(map(len, ids)) <= {40, 64}
        and not "".join(ids).encode().translate(None, _HEX)
        and all(map(str.startswith, names, [prefixes] * len(names)))
    ):
        return list(zip(names, ids, strict=True))
    return None


def _regions(packed: bytes, wanted: tuple[bytes, ...]) -> list[tuple[int, int]]:
    """Where in ``packed`` the lines under ``wanted`` can be, in file order. git writes
    packed-refs sorted by name (its header says ``sorted``) and reads it so, so the refs
    under a prefix are one run of lines, found from the first and last `` <prefix>`` (a
    ref name holds no space): a namespace of a few refs costs little in a file of many. A
    file that does not say it is sorted is read whole."""
    header = packed[: packed.find(b"\n") + 1]
    if not header.startswith(b"# pack-refs with:") or b" sorted" not in header:
        return [(0, len(packed))]
    found = []
    for prefix in wanted:
        first = packed.find(b" " + prefix)
        if first >= 0:
            last = packed.rfind(b" " + prefix)
            end = packed.find(b"\n", last)
            found.append((packed.rfind(b"\n", 0, first) + 1, len(packed) if end < 0 else end))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(found):  # overlapping prefixes: each line once, in order
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def read(common_dir: str, name: str) -> tuple[str | None, str | None]:
    """``(object id, symbolic target)`` of the ref ``name``: the loose file, else its line
    of ``packed-refs``; ``(None, None)`` when there is no such ref."""
    try:
        with open(os.path.join(common_dir, name), "rb") as fh:
            value = fh.read(256).strip().decode("ascii", "replace")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        value = ""
    except OSError:
        return None, None
    if is_object_id(value):
        return value, None
    if value.startswith("ref:"):
        return None, value[4:].strip()
    try:
        with open(os.path.join(common_dir, "packed-refs"), "rb") as fh:
            packed = fh.read()
    except OSError:
        return None, None
    return _packed_value(packed, name), None


def _packed_value(packed: bytes, name: str) -> str | None:
    """The id on the first line of ``packed`` naming ``name``, as ``packed_refs`` reads it:
    that one line, found by a search of the text (a write reads a few refs of a file of
    10,000 lines); the namespace's lines parsed, for a line of any other shape."""
    wanted = b" " + name.encode() + b"\n"
    at = (packed if packed.endswith(b"\n") else packed + b"\n").find(wanted)
    if at < 0:
        if b" " + name.encode() not in packed:
            return None
    else:
        start = packed.rfind(b"\n", 0, at) + 1
        oid = packed[start:at]
        if len(oid) in (40, 64) and not oid.strip(_HEX):
            return oid.decode()
    namespace = name[: name.rfind("/") + 1]
    return _packed_by_name(packed, namespace).get(name)


def _packed_by_name(packed: bytes, namespace: str) -> dict[str, str]:
    """The lines of ``packed`` under ``namespace``, by name (parsed once per content)."""
    found = _packed_dicts.get(namespace)
    if found is None or found[0] != packed:
        found = (packed, packed_refs(packed, (namespace,)))  # a name twice: its first line
        _packed_dicts[namespace] = found
    return found[1]


_packed_dicts: dict[str, tuple[bytes, dict[str, str]]] = {}


Stamp = tuple[int, int, int]  # a file's inode, size and modification time (ns)


# The largest cache file read (bytes): about 200 bytes a lock, so some 600,000 locks.
# One larger is no cache gitlocks wrote (a damaged or planted file, sparse perhaps): it is
# passed over, as a missing one is (the store writes it again when it next keeps it),
# rather than read whole by every command and hook.
CACHE_LIMIT = 128 << 20


def read_cache(path: str, unchanged: Stamp | None = None) -> tuple[Stamp, bytes | None]:
    """The stamp and contents of ``path``, a cache file gitlocks keeps; the contents None
    when its stamp is still ``unchanged`` (as read before). ``OSError`` when there is none,
    or it is no regular file (a pipe put in a cache's place costs time, never hangs every
    command that opens it), or it is larger than ``CACHE_LIMIT``."""
    with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as f:
        st = os.fstat(f.fileno())
        if not S_ISREG(st.st_mode):
            raise OSError(f"{path}: not a regular file")
        if st.st_size > CACHE_LIMIT:
            raise OSError(f"{path}: larger than any cache gitlocks writes")
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        return stamp, None if stamp == unchanged else f.read(st.st_size)  # not what is added


def stamp_of(path: str) -> Stamp:
    """``path``'s stamp, as ``read_cache`` gives it (``OSError`` when there is none)."""
    st = os.stat(path)
    return st.st_ino, st.st_size, st.st_mtime_ns


def discard(path: str) -> None:
    """Remove the file ``path``, if it is there."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def write_atomic(
    path: str | os.PathLike[str], data: bytes, mode: int | None = None, *, cache: bool = False
) -> None:
    """Replace ``path`` with ``data`` whole or not at all: a temporary file beside it, then
    a rename, so a reader never sees half a file and a crash leaves the old one. ``mode``
    is given to the new file (else the umask decides). Raises ``OSError``; callers say in
    their own words what could not be written.

    ``cache``: a file whose absence costs time only. The old one is removed just before
    the rename: renamed over an existing file, ext4 first starts writing the new one's data
    out (its ``auto_da_alloc``), about 0.4 ms for half a megabyte. A reader in between, or
    after a crash there, finds no file."""
    path = os.fspath(path)
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        if cache:
            discard(path)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ``git for-each-ref`` lines for ref backends other than files (reftable): id, name, and
# the target of a symbolic ref (empty for any other).
REFS_FORMAT = "--format=%(objectname) %(refname) %(symref)"


def parse_refs(out: str) -> Scan:
    """The refs of ``for-each-ref REFS_FORMAT`` output, symbolic ones apart."""
    refs, symbolic = {}, {}
    for line in out.splitlines():
        oid, _, rest = line.partition(" ")
        name, _, target = rest.partition(" ")
        if target:
            symbolic[name] = target
        else:
            refs[name] = oid
    return Scan(refs, symbolic)
