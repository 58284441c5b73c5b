"""Claims that cover nothing that exists: a typo (``srcc/**``, ``SRC/auth``) or a file
about to be written. Still claimed, but worth a note naming the closest existing path.
How it stays cheap at any size: docs/design.md, section 7.3.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence

from gitlocks.core.scope import ScopeEntry, literal_part
from gitlocks.core.value import Value
from gitlocks.git import run

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any

    from gitlocks.git.run import Process

# The names compared at one depth: beyond this many, only those that start like the name
# typed or are about as long, and of those this many.
MAX_NAMES = 5000
# Missing patterns of one claim given a closest path; the others are only named.
MAX_SUGGESTED = 20


class Uncovered(Value):
    """A claimed pattern that covers no existing path, and the closest path that exists."""

    __slots__ = ("closest", "pattern")

    def __init__(self, pattern: str, closest: str | None) -> None:
        self.pattern = pattern
        self.closest = closest

    def to_dict(self) -> dict[str, Any]:
        return {"pattern": self.pattern, "closest": self.closest}


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
    index = _Index(files, root)
    found: list[Uncovered] = []
    for pattern, parts in missing:
        if index.holds(fold("/".join(parts)), fold):
            continue  # in the index, deleted from the tree: it covers that
        # An agent may claim thousands of new files at once: the first few get a closest.
        closest = _closest(parts, index) if len(found) < MAX_SUGGESTED else None
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
    folded = {candidate.casefold(): candidate for candidate in reversed(names)}  # the first
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
    """The index's paths, sorted, read once however many patterns are asked about: what
    one question needs is a binary search away (a claim in a tree of 50,000 files asks
    about a few names of one directory)."""

    def __init__(self, files: list[str], root: str) -> None:
        self.root = root
        self.files = sorted(files)
        self.listed: dict[str, list[str]] = {}
        self.folded: set[str] | None = None  # every path and directory, folded (one fold)

    def holds(self, literal: str, fold: Callable[[str], str]) -> bool:
        """Whether the index has ``literal`` (``fold``-ed), or anything under it."""
        if fold is not str:  # no order to search by: the set of every folded name
            if self.folded is None:
                split = [fold(path).split("/") for path in self.files]
                self.folded = {"/".join(p[:d]) for p in split for d in range(1, len(p) + 1)}
            return literal in self.folded
        at = _first_from(self.files, literal)
        if at < len(self.files) and self.files[at] == literal:
            return True
        at = _first_from(self.files, literal + "/", at)
        return at < len(self.files) and self.files[at].startswith(literal + "/")

    def names_under(self, parent: list[str]) -> list[str]:
        """The names one level below ``parent``, in the index or on disk (one directory
        read)."""
        prefix = "/".join(parent)
        if prefix not in self.listed:
            lead = f"{prefix}/" if prefix else ""
            names: set[str] = set()
            files, at = self.files, _first_from(self.files, lead)
            while at < len(files) and files[at].startswith(lead):
                name, below, _ = files[at][len(lead) :].partition("/")
                names.add(name)
                # Past everything under that name at once: "name/..." sorts before "name0".
                at = _first_from(files, f"{lead}{name}0", at + 1) if below else at + 1
            try:
                names.update(os.listdir(os.path.join(self.root, *parent)))
            except OSError:
                pass
            names.discard(".git")
            self.listed[prefix] = sorted(names)
        return self.listed[prefix]


def _first_from(items: list[str], key: str, low: int = 0) -> int:
    """The first position from ``low`` in the sorted ``items`` whose item is not below
    ``key`` (``bisect.bisect_left``, whose C half costs a claim its loading)."""
    high = len(items)
    while low < high:
        middle = (low + high) // 2
        if items[middle] < key:
            low = middle + 1
        else:
            high = middle
    return low


def tracked_files(root: str) -> list[str]:
    """The index's paths, root-relative (one ``git ls-files``); none if git cannot tell."""
    return finish_listing(start_listing(root))


def start_listing(
    root: str,
    claim: Sequence[ScopeEntry] | None = None,
    *,
    ignore_case: bool = False,
    paths: Sequence[str] = (),
) -> Process | list[str] | None:
    """Start listing the index for ``uncovered``, to run while the claim is written; None
    when no pattern of ``claim`` can need it and no ``paths`` are asked, or git cannot be
    started. Finish it with ``finish_listing``, whatever the claim's fate. git lists only the
    directory the missing parts are under. ``paths``: root-relative paths the working tree has
    no file at, listed too, so that one ``git ls-files`` says which are files in the index."""
    missing = [e.pattern for e in claim if _missing(root, e.pattern)] if claim else []
    if claim is not None and not missing and not paths:
        return None
    # git's global pathspec settings (the caller's environment) would read ":(literal)"
    # as part of a path, or refuse it: the whole index is listed then, as before.
    magic = _PATHSPEC_VARS.isdisjoint(os.environ)
    whole = (claim is None or bool(missing)) and (ignore_case or not missing or not magic)
    where = "" if whole or not missing else _present_parent(root, missing)
    if whole or (missing and not where) or (paths and not magic):
        spec = []  # the whole index
    else:
        literal = [f"{where}/"] if where else []
        spec = ["--", *(f":(literal){p}" for p in [*literal, *paths])]
    try:
        return run.start(["ls-files", "-z", "--cached", *spec], root, env=run.Env.CLEAN,
                         error=OSError)  # fmt: skip
    except OSError:
        return None


_PATHSPEC_VARS = frozenset(
    f"GIT_{kind}_PATHSPECS" for kind in ("LITERAL", "GLOB", "NOGLOB", "ICASE")
)


def _present_parent(root: str, patterns: list[str]) -> str:
    """The deepest directory (not a link) of the working tree above every pattern's
    missing literal part: root-relative, "" for the root."""
    heres = []
    for pattern in patterns:
        parts, here = literal_part(pattern)[:-1], list[str]()
        for part in parts:
            path = os.path.join(root, *here, part)
            if os.path.islink(path) or not os.path.isdir(path):
                break
            here.append(part)
        heres.append(here)
    common = os.path.commonprefix(heres)  # noqa: RUF071 (lists: segment by segment)
    return "/".join(common or [])


def finish_listing(proc: Process | list[str] | None) -> list[str]:
    """The paths ``start_listing`` read (none if git could not tell)."""
    if proc is None or isinstance(proc, list):
        return proc or []
    try:
        raw = run.finish(proc, error=OSError)
    except OSError:
        return []
    # One decoding of the whole listing (os.fsdecode's own, on this system), not one a path.
    return [p for p in raw.decode("utf-8", "surrogateescape").split("\0") if p]


def _missing(root: str, pattern: str) -> bool:
    parts = literal_part(pattern)
    return bool(parts) and not os.path.lexists(os.path.join(root, *parts))


def _shared(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` share, counted as multisets."""
    return sum((Counter(a) & Counter(b)).values())
