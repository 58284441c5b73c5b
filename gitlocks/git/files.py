"""Files gitlocks keeps beside git's (its caches, settings it writes), and the refs as
``git for-each-ref`` lists them: refs are always read through git, never from its files.
"""

from __future__ import annotations

import os
from stat import S_ISREG  # os has loaded it

from gitlocks.core.value import Value


class Scan(Value):
    __slots__ = ("refs", "symbolic")

    def __init__(
        self,
        refs: dict[str, str],
        symbolic: dict[str, str],
    ) -> None:
        self.refs = refs  # name -> object id
        self.symbolic = symbolic  # name -> the ref it names (never followed)


Stamp = tuple[int, int, int]  # a file's inode, size and modification time (ns)


# The largest cache file read (bytes): about 200 bytes a lock, so some 600,000 locks. One
# larger is no cache gitlocks wrote: passed over as a missing one, never read whole.
CACHE_LIMIT = 128 << 20


def read_cache(path: str, unchanged: Stamp | None = None) -> tuple[Stamp, bytes | None]:
    """The stamp and contents of ``path``, a cache file gitlocks keeps; the contents None
    when its stamp is still ``unchanged``. ``OSError`` when there is none, or it is no
    regular file (a pipe there never hangs a command), or larger than ``CACHE_LIMIT``."""
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


def in_working_tree(root: str, path: str) -> bool:
    """Whether the root-relative ``path`` names a file (or a link to none, or to a file)
    in the working tree at ``root``; the index is git's to answer (``git ls-files``)."""
    full = os.path.join(root, path)
    try:
        return os.path.isfile(full) or (os.path.islink(full) and not os.path.isdir(full))
    except OSError:  # a name too long for the file system, a permission: not a file here
        return False


def discard(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def write_atomic(
    path: str | os.PathLike[str], data: bytes, mode: int | None = None, *, cache: bool = False
) -> None:
    """Replace ``path`` with ``data`` whole or not at all (a temporary file beside it, then
    a rename), with ``mode`` (else the umask decides). Raises ``OSError``.

    ``cache``: a file whose absence costs time only. The old one is removed first: renamed
    over an existing file, ext4 first writes the new one's data out (``auto_da_alloc``),
    about 0.4 ms for half a megabyte."""
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


# ``git for-each-ref`` lines: id, name, and the target of a symbolic ref (empty for any
# other). A ref git finds broken (an empty loose file, say) it leaves out, with a warning.
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
