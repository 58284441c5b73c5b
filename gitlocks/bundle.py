"""gitlocks' compiled modules in one file, read in place of fifty ``.pyc`` files.

A command imports about fifty of gitlocks' modules, and Python spends about as long finding
and opening each one's ``.pyc`` as running it. The bundle holds the code of every module
that has a ``.pyc``: the finder installed by ``install()`` reads a module's code from it
with one ``pread`` (docs/design.md §9.12). It is the user's, in their cache directory
(``$XDG_CACHE_HOME/gitlocks/``, else ``~/.cache/gitlocks/``), one for each installed
package (named after its directory), Python and level of optimization: the package's own
directory is left as pip installed it, so uninstalling leaves nothing behind there.

The bundle changes nothing Python decides. Each entry keeps the source's modification
time and size from its ``.pyc``, and the finder compares them with the source file's, as
Python's own check of a ``.pyc`` does: a module edited since (an editable install) is
imported as usual. The modules are the package's own files, with the loader of any
``.py`` file (``SourceFileLoader``): tracebacks, ``inspect`` and package data see nothing
different.

The bundle is written by the command that found it missing or out of date, at its end,
from the ``.pyc`` files Python wrote (``refresh``), and replaced atomically, so commands
running at once read one whole version or none. Without a cache directory that can be
written, or without ``.pyc`` files, there is no bundle and modules import as usual. A
bundle is read only as a plain file of the user's, never through a link, in a directory
of the user's alone: others could put any file there, whose code would run.
"""

from __future__ import annotations

import _imp
import marshal
import os
import sys

_external = sys.modules["_frozen_importlib_external"]  # importlib's own, loaded at startup

TYPE_CHECKING = False
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import CodeType, ModuleType

    # A module's entry: whether it is a package (its file is then <name>/__init__.py, else
    # <name>.py, below the package), its source's modification time and size (as its .pyc
    # recorded them), where its code starts in the bundle's body and how long it is.
    Entry = tuple[bool, int, int, int, int]
    from importlib.machinery import SourceFileLoader
else:
    SourceFileLoader = _external.SourceFileLoader


FORMAT = b"gitlocks bundle 1\n"
_HEADER = len(FORMAT) + 4 + 4  # the format, importlib's MAGIC_NUMBER, the index's length


# A finder's ``fd`` when it has no bundle open: none could be opened (one is written at the
# end), or one was left unread this time (nothing is written).
_MISSING, _PASSED_OVER = -1, -2


def _bundle_path(root: str) -> str | None:
    """Where this user's bundle of the package at ``root`` lives, for this Python and its
    level of optimization (``-O`` and ``-OO`` have ``.pyc`` files of their own, so bundles
    too); None without a cache directory (no absolute ``$XDG_CACHE_HOME`` nor ``$HOME``)."""
    cache = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(cache):  # a relative one is to be ignored, as the spec says
        home = os.environ.get("HOME", "")
        if not os.path.isabs(home):
            return None
        cache = os.path.join(home, ".cache")
    name = root.replace("%", "%25").replace("/", "%2F")  # one file name, told apart
    if len(os.fsencode(name)) > 160:  # bytes: a file name holds at most 255
        name = f"{_fnv(root.encode('utf-8', 'surrogateescape')):016x}"
    level = sys.flags.optimize
    opt = f".opt-{level}" if level else ""
    tag = sys.implementation.cache_tag
    return os.path.join(cache, "gitlocks", f"bundle-{name}.{tag}{opt}.bin")


def _fnv(data: bytes) -> int:
    """FNV-1a, 64 bits: a name for a long path, with no hashing module to import."""
    value = 0xCBF29CE484222325
    for byte in data:
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return value


class _Loader(SourceFileLoader):
    """A ``.py`` file's loader whose code, when the bundle has it, comes from the bundle."""

    def __init__(self, finder: BundleFinder, fullname: str, path: str) -> None:
        super().__init__(fullname, path)
        self.finder = finder

    def get_code(self, fullname: str) -> CodeType | None:
        code = self.finder.code(fullname)
        if code is None:
            return super().get_code(fullname)
        # Compiled where the file was then (a package copied or moved since, with its
        # __pycache__): named after the file it is now, as Python names a .pyc's code.
        _imp._fix_co_filename(code, self.path)  # type: ignore[attr-defined]  # importlib's own
        return code


class BundleFinder:
    """The finder of ``gitlocks.*`` modules whose code the bundle holds, up to date."""

    def __init__(self, root: str, fd: int, index: dict[str, Entry], base: int) -> None:
        self.root = root
        self.fd = fd
        self.index = index
        self.base = base
        self.missed: list[str] = []  # modules not in the bundle, or edited since
        self.ready: dict[str, Entry] = {}  # found, their code not yet read
        self.served: list[str] = []  # modules whose code came from the bundle

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if not fullname.startswith("gitlocks."):
            return None
        entry = self.index.get(fullname)
        if entry is None:
            self.missed.append(fullname)
            return None
        try:
            package, mtime, size, _, _ = entry
            # Paths spelled as os.path.join would spell them, without its cost: this runs
            # for each of the fifty-odd modules a command imports (docs/design.md §9.14).
            base = self.root + os.sep + fullname[len("gitlocks.") :].replace(".", os.sep)
            source = base + os.sep + "__init__.py" if package else base + ".py"
            st = os.stat(source)
            stale = (int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF) != (mtime, size)
            if not (package or stale):  # a package of its name, made since, is what Python
                # imports (most often nothing is there: no exception is raised to say so)
                init = base + os.sep + "__init__.py"
                stale = os.access(init, os.F_OK) and os.path.isfile(init)
        except OSError:
            stale = True  # no such file now (a module made a package, or the reverse, or gone)
        except (TypeError, ValueError):
            stale = True  # an entry of another shape: the bundle is not one we wrote
        if stale:
            self.missed.append(fullname)  # edited since the bundle was written
            return None
        self.ready[fullname] = entry
        locations = [os.path.dirname(source)] if package else None
        return _external.spec_from_file_location(  # type: ignore[no-any-return]
            fullname,
            source,
            loader=_Loader(self, fullname, source),
            submodule_search_locations=locations,
        )

    def code(self, fullname: str) -> CodeType | None:
        entry = self.ready.pop(fullname, None)
        if entry is None:
            return None
        try:
            offset, length = entry[3:5]
            data = os.pread(self.fd, length, self.base + offset)
            code = marshal.loads(data) if len(data) == length else None
        except (OSError, ValueError, EOFError, TypeError, KeyError, OverflowError, MemoryError):
            code = None
        if type(code) is not _CODE:  # a damaged bundle: the .pyc now, a new one at the end
            self.missed.append(fullname)
            return None
        self.served.append(fullname)
        return code


_CODE = type(_bundle_path.__code__)  # types.CodeType, without importing types


def install() -> BundleFinder:
    """Put the bundle's finder first on ``sys.meta_path``, and return it (its index empty
    when there is no bundle it may read: every module then imports as usual)."""
    root = os.path.dirname(os.path.abspath(__file__))
    for finder in sys.meta_path:
        if isinstance(finder, BundleFinder):
            return finder
    path = _bundle_path(root)
    fd = _PASSED_OVER
    try:
        # Not blocking: a FIFO planted in its place must not hold the command up. Not
        # through a link: one planted there could name any file of the user's.
        flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOFOLLOW
        fd = os.open(path, flags) if path else _PASSED_OVER
    except FileNotFoundError:
        fd = _MISSING  # written at the end
    except OSError:
        pass  # a link, a directory that cannot be read or made (a file there): left alone
    if fd >= 0 and not (_ours(fd) and _private(os.path.dirname(path or ""))):
        # Not a file the user owns (a directory, a FIFO, someone else's), or in a
        # directory others may write in (they could put any of the user's files there):
        # neither read nor replaced. So too on a standard stream our caller closed: the
        # command opens the null device there (main.py), and the bundle must not take
        # its number.
        os.close(fd)
        fd = _PASSED_OVER
    finder = _open(root, fd) if fd >= 0 else BundleFinder(root, fd, {}, 0)
    sys.meta_path.insert(0, finder)
    return finder


def _ours(fd: int) -> bool:
    """Whether ``fd`` is a plain file of this user's, above the standard streams."""
    try:
        st = os.fstat(fd)
    except OSError:
        return False
    return fd > 2 and st.st_mode & 0o170000 == 0o100000 and st.st_uid == os.getuid()


def _private(directory: str) -> bool:
    """Whether ``directory`` is this user's, and nobody else may add or rename its files."""
    try:
        st = os.stat(directory)
    except OSError:
        return False
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def _open(root: str, fd: int) -> BundleFinder:
    try:
        head = os.pread(fd, 1 << 16, 0)
    except OSError:
        head = b""
    index: dict[str, Entry] = {}
    base = 0
    if head.startswith(FORMAT) and head[len(FORMAT) : len(FORMAT) + 4] == _external.MAGIC_NUMBER:
        size = int.from_bytes(head[len(FORMAT) + 4 : _HEADER], "little")
        raw = head[_HEADER : _HEADER + size]
        try:
            if len(raw) < size:
                raw += os.pread(fd, size - len(raw), _HEADER + len(raw))
            loaded = marshal.loads(raw)
        except (OSError, ValueError, EOFError, TypeError, MemoryError):
            loaded = None
        if isinstance(loaded, dict):
            index = loaded
            base = _HEADER + size
    return BundleFinder(root, fd, index, base)


def refresh() -> None:
    """Write the bundle again if this process found a module missing from it or out of
    date, and a ``.pyc`` now holds that module (so the next command finds it).

    The bundle is made of the ``.pyc`` files in the package's ``__pycache__`` directories
    (which pip writes at install, even where Python is told to write none on import).
    """
    finder = next((f for f in sys.meta_path if isinstance(f, BundleFinder)), None)
    if finder is None or finder.fd == _PASSED_OVER:
        return
    if not (finder.missed or finder.fd == _MISSING):
        return
    if _bundle_path(finder.root) is None:
        return
    # The first few missed are enough to tell: with none of them in a .pyc now (a module
    # that does not exist, .pyc files checked by hash), a new bundle would change nothing.
    wanted = finder.missed[:3] or ["gitlocks.main"]
    if not any(_read_pyc(finder.root, name) is not None for name in wanted):
        return
    try:
        write(finder.root)
    except OSError:
        pass  # a cache: without it, modules import as usual


def _read_pyc(
    root: str, fullname: str, package: bool | None = None
) -> tuple[int, int, bytes] | None:
    """``(mtime, size, code bytes)`` of a module's ``.pyc`` when it is current: of its
    ``__init__.py`` or its ``<name>.py`` as ``package`` says (None: either)."""
    relpath = _source_path(fullname)
    candidates: tuple[str, ...] = (os.path.join(relpath, "__init__.py"), relpath + ".py")
    if package is not None:
        candidates = candidates[:1] if package else candidates[1:]
    for candidate in candidates:  # in Python's order: a package before a module
        source = os.path.join(root, candidate)
        try:
            st = os.stat(source)
        except OSError:
            continue  # no such file: the next one is what Python imports
        try:
            with open(_external.cache_from_source(source), "rb") as f:
                data = f.read()
        except OSError:
            return None
        if data[:4] != _external.MAGIC_NUMBER or int.from_bytes(data[4:8], "little") != 0:
            return None  # another version's, or checked by hash: not ours to bundle
        mtime = int.from_bytes(data[8:12], "little")
        size = int.from_bytes(data[12:16], "little")
        if (mtime, size) != (int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF):
            return None
        return mtime, size, data[16:]
    return None


def _source_path(fullname: str) -> str:
    return os.path.join(*fullname.split(".")[1:]) if "." in fullname else ""


def write(root: str) -> None:
    """Write the bundle of every module under ``root`` with a current ``.pyc``."""
    path = _bundle_path(root)
    if path is None or not _make_private(os.path.dirname(path)):
        return
    tmp = f"{path}.{os.getpid()}.tmp"
    # The user's own, whatever the umask (0 where a shared repository asks for it): nobody
    # else may write code this user runs. Never through a planted link. Made before the
    # bundle is: where it cannot be, no command reads every .pyc for nothing.
    fd = -1
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        with open(fd, "wb") as f:
            f.write(_contents(root))
        os.replace(tmp, path)
    except BaseException:  # an error, or Ctrl-C: no temporary file of ours left behind
        if fd >= 0:  # only the file this command made: a process of the same pid in
            # another container, sharing the cache directory, may have made that name
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise


def _make_private(directory: str) -> bool:
    """Make ``directory`` and its missing parents, each ``0700`` whatever the umask (as the
    XDG spec asks), and only inside a directory of the user's (root run with another
    user's ``$HOME`` leaves it alone); True when it is then the user's alone
    (``_private``)."""
    missing = []
    head = directory
    while not os.path.lexists(head) and os.path.dirname(head) != head:
        missing.append(head)
        head = os.path.dirname(head)
    if missing and os.stat(head).st_uid != os.getuid():
        return False
    for made in reversed(missing):
        try:
            os.mkdir(made, 0o700)  # the umask can only take bits away from 0700
        except FileExistsError:
            pass  # made by a command running at once
    return _private(directory)


def _contents(root: str) -> bytes:
    """The bundle of every module under ``root`` with a current ``.pyc``."""
    index: dict[str, Entry] = {}
    chunks: list[bytes] = []
    offset = 0
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        rel = os.path.relpath(dirpath, root)
        parts = [] if rel == "." else rel.split(os.sep)
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            package = name == "__init__.py"
            module = parts if package else [*parts, name[:-3]]
            if not module:
                continue  # the package itself: imported before the finder exists
            fullname = ".".join(["gitlocks", *module])
            if not package and os.path.isfile(os.path.join(dirpath, name[:-3], "__init__.py")):
                continue  # a package of that name beside it is what Python imports
            found = _read_pyc(root, fullname, package)
            if found is None:
                continue
            mtime, size, code = found
            index[fullname] = (package, mtime, size, offset, len(code))
            chunks.append(code)
            offset += len(code)
    raw = marshal.dumps(index)
    return b"".join([FORMAT, _external.MAGIC_NUMBER, len(raw).to_bytes(4, "little"), raw, *chunks])
