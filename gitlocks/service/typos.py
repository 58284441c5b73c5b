"""Claims that cover nothing that exists: a typo (``srcc/**``, ``SRC/auth``), or a file
about to be written. Still claimed (an agent claims a file before writing it), but worth a
note naming the closest existing path.

Cheap at any size: a pattern whose literal part (the segments before its first wildcard)
exists in the working tree is taken to cover something, without listing anything; only
when some pattern's literal part is missing is the index listed, once
(``git ls-files``), and each missing segment compared (``difflib``) with the names at its
depth under the part that does exist. ``acquire`` starts that listing before it writes
the claim (``start_listing``), so the two run at once.
"""

from __future__ import annotations

import os

from gitlocks.core.plain import plain
from gitlocks.core.scope import WHOLE_TREE, ScopeEntry, has_wildcards, literal_path
from gitlocks.git import run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from gitlocks.git.spawn import Process

# The names compared at one depth: beyond this many, only those that start like the name
# typed or are about as long, and of those this many.
MAX_NAMES = 5000
# Missing patterns of one claim given a closest path; the others are only named.
MAX_SUGGESTED = 20


@plain(frozen=True)
class Uncovered:
    """A claimed pattern that covers no existing path, and the closest path that exists."""

    pattern: str
    closest: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"pattern": self.pattern, "closest": self.closest}


def literal_part(pattern: str) -> list[str]:
    """The segments of ``pattern`` before its first wildcard, unescaped."""
    if pattern == WHOLE_TREE:
        return []
    found = []
    for segment in pattern.split("/"):
        if has_wildcards(segment):
            break
        found.append(literal_path(segment))
    return found


def uncovered(
    root: str,
    claim: Sequence[ScopeEntry],
    *,
    ignore_case: bool = False,
    list_files: Callable[[], list[str]] | None = None,
) -> list[Uncovered]:
    """The patterns of ``claim`` whose literal part exists neither in the working tree
    nor in the index, each with the closest existing path (None when nothing is close)."""
    missing = [
        (entry.pattern, literal_part(entry.pattern))
        for entry in claim
        if _missing(root, entry.pattern)
    ]
    if not missing:
        return []
    files = (list_files or (lambda: tracked_files(root)))()
    fold = str.casefold if ignore_case else str
    tracked = {fold(p) for p in files}
    index = _Index(files, root)
    found = []
    suggested = 0
    for pattern, parts in missing:
        literal = fold("/".join(parts))
        if literal in tracked or literal in index.dirs(fold):
            continue  # in the index, deleted from the tree: it covers that
        closest = None
        if suggested < MAX_SUGGESTED:  # an agent may claim thousands of new files at once
            suggested += 1
            closest = _closest(parts, index)
        found.append(Uncovered(pattern, closest))
    return found


def _closest(parts: list[str], index: _Index) -> str | None:
    """Walk ``parts`` down the tree, replacing each missing name by the closest one at its
    depth; the path reached, if any name was replaced and every one was found."""
    reached: list[str] = []
    replaced = False
    for part in parts:
        names = index.names_under(reached)
        if part in names:
            reached.append(part)
            continue
        close = _close_name(part, names)
        if close is None:
            return None
        reached.append(close)
        replaced = True
    return "/".join(reached) if replaced else None


CUTOFF = 0.6  # how close a name must be to be suggested (difflib's ratio)


def _close_name(name: str, names: list[str]) -> str | None:
    """The name in ``names`` closest to ``name``: a case-only difference first, then
    difflib's best match, compared without case (``SRC`` is ``src``)."""
    if len(names) > MAX_NAMES:
        first, size = name[:1].casefold(), len(name)
        names = [n for n in names if n[:1].casefold() == first or abs(len(n) - size) <= 1][
            :MAX_NAMES
        ]
    folded: dict[str, str] = {}
    for candidate in names:
        folded.setdefault(candidate.casefold(), candidate)
    key = name.casefold()
    if key in folded:
        return folded[key]
    # difflib's ratio is 2*M/T for M matching characters of T in all: never above what
    # the two share as multisets of characters. Names that cannot reach the cutoff are
    # dropped first, and most often none is left to import difflib for.
    candidates = [c for c in folded if 2 * _shared(key, c) >= CUTOFF * (len(key) + len(c))]
    if not candidates:
        return None
    import difflib  # only when a name could be close

    close = difflib.get_close_matches(key, candidates, n=1, cutoff=CUTOFF)
    return folded[close[0]] if close else None


class _Index:
    """The index's paths by directory, read once however many patterns are asked about."""

    def __init__(self, files: list[str], root: str) -> None:
        self.root = root
        self.children: dict[str, set[str]] = {}
        for path in files:
            parts = path.split("/")
            for depth in range(len(parts)):
                prefix = "/".join(parts[:depth])
                self.children.setdefault(prefix, set()).add(parts[depth])
        self.listed: dict[str, list[str]] = {}
        self.folded: dict[Callable[[str], str], set[str]] = {}

    def dirs(self, fold: Callable[[str], str]) -> set[str]:
        """The directories of the index, ``fold``-ed."""
        if fold not in self.folded:
            self.folded[fold] = {fold(d) for d in self.children if d}
        return self.folded[fold]

    def names_under(self, parent: list[str]) -> list[str]:
        """The names one level below ``parent``, in the index or on disk (one directory
        read)."""
        prefix = "/".join(parent)
        if prefix not in self.listed:
            names = set(self.children.get(prefix, ()))
            try:
                names.update(os.listdir(os.path.join(self.root, *parent)))
            except OSError:
                pass
            names.discard(".git")
            self.listed[prefix] = sorted(names)
        return self.listed[prefix]


def tracked_files(root: str) -> list[str]:
    """The index's paths, root-relative (one ``git ls-files``); none if git cannot tell."""
    return finish_listing(start_listing(root))


def start_listing(
    root: str,
    claim: Sequence[ScopeEntry] | None = None,
    *,
    index: str | None = None,
    hexlen: int = 40,
) -> Process | list[str] | None:
    """Start listing the index for ``uncovered``, to run while the claim is written; None
    when no pattern of ``claim`` can need it (every literal part exists), or git cannot be
    started. Finish it with ``finish_listing``, whatever the claim's fate. ``index``: the
    index file, read directly when it can be (``gitlocks.git.index``), git's listing
    started only when it cannot."""
    if claim is not None and not any(_missing(root, entry.pattern) for entry in claim):
        return None
    if index is not None:
        from gitlocks.git.index import indexed_paths  # only when a pattern covers nothing

        found = indexed_paths(index, hexlen)
        if found is not None:
            return found
    try:
        return run.start(["ls-files", "-z", "--cached"], root, env=run.Env.CLEAN, error=OSError)
    except OSError:
        return None


def finish_listing(proc: Process | list[str] | None) -> list[str]:
    """The paths ``start_listing`` read (none if git could not tell)."""
    if proc is None or isinstance(proc, list):
        return proc or []
    try:
        raw = run.finish(proc, error=OSError)
    except OSError:
        return []
    return [os.fsdecode(p) for p in raw.split(b"\0") if p]


def _missing(root: str, pattern: str) -> bool:
    parts = literal_part(pattern)
    return bool(parts) and not os.path.lexists(os.path.join(root, *parts))


def _shared(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` share, counted as multisets (each character as
    often as it is in both)."""
    left: dict[str, int] = {}
    for ch in a:
        left[ch] = left.get(ch, 0) + 1
    shared = 0
    for ch in b:
        if left.get(ch):
            left[ch] -= 1
            shared += 1
    return shared
