"""What git's index holds, read from the index file itself, without a process: whether a
path may be staged, and (for the note on a claim that covers nothing) every path.

A plain path named in a claim is exact when it names a file: one in the working tree, or
one deleted from it but still in the index. The second question costs a ``git ls-files``
(a process, 2 to 3 ms) for every plain path that does not exist, a file about to be
written included. Most of the time the index file answers it for nothing: index versions
2 and 3 store every path whole, after flags holding its length, so a path whose bytes
appear nowhere in the file after such flags is in no entry. Whenever the file cannot say
so for certain, the answer is "maybe" and git is asked: version 4 (paths stored as
suffixes of the previous entry's), a split index (entries in another file), a sparse
index (directories standing for the files below them), an index that cannot be read, a
path that is not ASCII (git may spell it in another Unicode form). Listing every path
(``indexed_paths``) parses the entries of versions 2 and 3 and checks that they and the
extensions end exactly at the checksum; any other file is listed by ``git ls-files``.
"""

from __future__ import annotations

import os

# Extensions under which an entry's path may be absent from the file: ``link`` (split
# index: the shared index holds the entries) and ``sdir`` (sparse directory entries).
# Searched for anywhere in the file: a path spelling one only costs the git process.
_ELSEWHERE = (b"link", b"sdir")


def may_be_indexed(index: str | os.PathLike[str], path: str) -> bool:
    """False only when the index file shows that no entry is ``path`` (root-relative, as
    git spells it); True when it may be, or the file cannot tell."""
    if not path.isascii():
        return True  # git may recompose it (core.precomposeUnicode): its own rules decide
    try:
        with open(index, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return False  # no index at all: nothing is staged
    except OSError:
        return True
    if data[:4] != b"DIRC" or data[4:8] not in (b"\0\0\0\x02", b"\0\0\0\x03"):
        return True
    if any(marker in data for marker in _ELSEWHERE):
        return True
    name = path.encode()
    if len(name) >= 0xFFF:  # its length no longer fits the flags: git decides
        return True
    # In versions 2 and 3 an entry's path follows its flags (the low 12 bits: the path's
    # length; in version 3 an extended entry has 2 more bytes of flags between) and ends
    # with a NUL. Any place the bytes could be such a path is a "maybe".
    needle = name + b"\0"
    at = data.find(needle, 62)
    while at >= 0:
        last = int.from_bytes(data[at - 2 : at], "big")  # the flags, or the extended ones
        flags = int.from_bytes(data[at - 4 : at - 2], "big")  # the flags before those
        if last & 0xFFF == len(name) or (flags & 0x4000 and flags & 0xFFF == len(name)):
            return True
        at = data.find(needle, at + 1)
    return False


def indexed_paths(index: str | os.PathLike[str], hexlen: int) -> list[str] | None:
    """Every path of the index file (each stage of a conflicted one), as ``git ls-files
    --cached`` lists them; None when the file alone cannot say (see the module's
    docstring), and git must be asked. ``hexlen``: the repository's object id length in
    hex digits (40, or 64 for SHA-256)."""
    try:
        with open(index, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return []
    except OSError:
        return None
    if len(data) < 12 or data[:4] != b"DIRC" or data[4:8] not in (b"\0\0\0\x02", b"\0\0\0\x03"):
        return None
    count = int.from_bytes(data[8:12], "big")
    fixed = 40 + hexlen // 2  # stat data, then the object id
    at = 12
    paths: list[str] = []
    try:
        for _ in range(count):
            flags = int.from_bytes(data[at + fixed : at + fixed + 2], "big")
            start = at + fixed + (4 if flags & 0x4000 else 2)
            length = flags & 0xFFF
            end = data.index(b"\0", start) if length == 0xFFF else start + length
            if end > len(data) or data[end : end + 1] != b"\0":
                return None
            paths.append(os.fsdecode(data[start:end]))
            at += (end - at + 8) & ~7  # the entry padded with 1 to 8 NULs
    except ValueError:
        return None
    # Extensions follow the entries, up to the trailing checksum: a split index keeps its
    # entries elsewhere (``link``), a sparse one stands directories for files (``sdir``).
    trailer = len(data) - hexlen // 2
    while at + 8 <= trailer:
        signature = data[at : at + 4]
        if signature in _ELSEWHERE:
            return None
        at += 8 + int.from_bytes(data[at + 4 : at + 8], "big")
    # Read right, the entries and extensions end exactly at the checksum; anything else
    # (another hash length than asked for, a file cut short) is git's to read.
    return paths if at == trailer else None
