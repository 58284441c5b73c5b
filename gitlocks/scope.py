"""Scopes: the patterns a lock claims, and exact decisions about them (DESIGN.md section 2).

Pure: stdlib only, no git. The glob machinery lives in :mod:`gitlocks._glob`.

The stored form of a pattern (what :func:`normalize_pattern` returns, and what users see)
is what they typed, made root-relative, modulo rule 6: ``./`` and empty segments
dropped, a trailing ``/`` dropped, ``..`` resolved, runs of ``**`` collapsed into one.
A trailing ``/**`` is kept as typed: ``src/api/**`` and ``src/api`` stay two spellings of
the same scope, and every decision here treats them alike. The whole tree is spelled
:data:`WHOLE_TREE`.

Case-insensitive decisions (``ignore_case=True``, rule 8) fold one character to one
character (``str.casefold`` where that gives one character), so a multi-character fold
such as ``ß`` -> ``ss`` is not equated; character classes are closed under that folding.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from itertools import count
from typing import Generic, TypeVar

from gitlocks._glob import (
    BadGlob,
    CompiledPattern,
    check_text,
    compile_pattern,
    is_literal_segment,
    normalise_path,
    patterns_meet,
    split_segments,
    unescape,
)
from gitlocks.errors import InvalidPattern

__all__ = [
    "WHOLE_TREE",
    "ScopeEntry",
    "ScopeIndex",
    "entries_overlap",
    "entry_covers",
    "has_wildcards",
    "literal_path",
    "make_entry",
    "normalize_pattern",
    "pattern_covers",
    "patterns_overlap",
    "validate_pattern",
]

WHOLE_TREE = "**"

K = TypeVar("K", bound=Hashable)


def validate_pattern(pattern: str) -> None:
    """Raise :class:`InvalidPattern` unless ``pattern`` (root-relative) obeys rule 7.

    Spellings that normalise cleanly (``./a``, ``a//b``, ``a/b/..``) are valid; a ``..``
    that climbs above the root or follows a wildcard is not, nor is an absolute path.
    """
    compile_pattern(pattern, False)


def has_wildcards(pattern: str) -> bool:
    """Whether ``pattern`` holds an unescaped ``*``, ``?`` or ``[``."""
    return not is_literal_segment(pattern)


def literal_path(pattern: str) -> str:
    """The path a wildcard-free pattern names: its escaping backslashes removed."""
    return unescape(pattern)


def normalize_pattern(typed: str, *, cwd: str = "", root: str | None = None) -> str:
    """Turn what the user typed into the stored, root-relative, validated pattern.

    ``cwd`` is the current directory relative to the worktree root ("" at the root);
    ``root`` the worktree's absolute path, needed only for absolute input.
    """
    try:
        check_text(typed)
        segments = split_segments(_root_relative(typed, cwd, root))
    except BadGlob as exc:
        raise InvalidPattern(typed, exc.reason) from None
    pattern = "/".join(segments) or WHOLE_TREE
    try:
        compile_pattern(pattern, False)
    except InvalidPattern as exc:  # name what the user typed, not our rewriting of it
        raise InvalidPattern(typed, exc.reason) from None
    return pattern


def _root_relative(typed: str, cwd: str, root: str | None) -> str:
    if typed.startswith(":/"):
        return typed[2:]
    if typed.startswith((":!", ":^")):
        raise BadGlob("git's ':!' exclusion (negation) is not supported")
    if typed.startswith(":("):
        raise BadGlob("git's ':(...)' pathspec magic is not supported")
    if typed.startswith("/"):
        return _inside_root(typed, root)
    # The current directory is a literal path: a directory named "[x]" must not turn
    # into a wildcard once joined.
    names = [name for name in cwd.split("/") if name and name != "."]
    prefix = "/".join(map(_escape_name, names))
    if prefix.startswith("!"):
        prefix = "\\" + prefix
    return f"{prefix}/{typed}" if prefix else typed


def _escape_name(name: str) -> str:
    return "".join("\\" + ch if ch in "\\*?[" else ch for ch in name)


def _inside_root(typed: str, root: str | None) -> str:
    """The root-relative pattern for an absolute one, or BadGlob if it lies outside."""
    if root is None:
        raise BadGlob("an absolute path, but the repository root is not known")
    segments = split_segments(typed)
    literal = 0
    while literal < len(segments) and is_literal_segment(segments[literal]):
        literal += 1
    names = [unescape(seg) for seg in segments[:literal]]
    root_names = [name for name in posixpath.normpath(root).split("/") if name]
    if names[: len(root_names)] == root_names:
        return "/".join(segments[len(root_names) :])
    # Lexically elsewhere; it may still reach the tree through a symbolic link.
    try:
        real_root = os.path.realpath(root)
        real = os.path.realpath("/" + "/".join(names))
    except (OSError, ValueError):
        raise BadGlob("it is outside the repository") from None
    if real != real_root and not real.startswith(real_root.rstrip("/") + "/"):
        raise BadGlob("it is outside the repository")
    tail = [name for name in real[len(real_root) :].split("/") if name]
    return "/".join([*map(_escape_name, tail), *segments[literal:]])


@dataclass(frozen=True)
class ScopeEntry:
    """One pattern of a lock's scope, as recorded.

    ``exact`` is decided when the lock is claimed (rule 4): a wildcard-free pattern that
    names an existing file covers that file only, not an imaginary subtree beneath it.
    """

    pattern: str  # normalised, root-relative
    exact: bool = False

    def __post_init__(self) -> None:
        compiled = compile_pattern(self.pattern, False)
        if self.exact and compiled.literal is None:
            reason = "an exact entry must name one file, without wildcards"
            raise InvalidPattern(self.pattern, reason)


def make_entry(
    typed: str,
    *,
    cwd: str = "",
    root: str | None = None,
    is_file: Callable[[str], bool] | None = None,
) -> ScopeEntry:
    """Normalise ``typed`` and decide exactness with ``is_file(root-relative literal path)``."""
    pattern = normalize_pattern(typed, cwd=cwd, root=root)
    exact = (
        pattern != WHOLE_TREE
        and not has_wildcards(pattern)
        and is_file is not None
        and is_file(unescape(pattern))
    )
    return ScopeEntry(pattern, exact)


def pattern_covers(pattern: str, path: str, *, ignore_case: bool = False) -> bool:
    """Whether ``pattern`` covers the concrete root-relative ``path`` (or a parent of it)."""
    compiled = compile_pattern(pattern, ignore_case)
    return compiled.covers(normalise_path(path, ignore_case))


def patterns_overlap(a: str, b: str, *, ignore_case: bool = False) -> bool:
    """Whether some concrete path is covered by both patterns (exact, rule 5)."""
    return patterns_meet(compile_pattern(a, ignore_case), compile_pattern(b, ignore_case))


def entry_covers(entry: ScopeEntry, path: str, *, ignore_case: bool = False) -> bool:
    """Like :func:`pattern_covers`, but an exact entry covers its own path only."""
    compiled = compile_pattern(entry.pattern, ignore_case)
    return _covers(compiled, entry.exact, normalise_path(path, ignore_case))


def entries_overlap(a: ScopeEntry, b: ScopeEntry, *, ignore_case: bool = False) -> bool:
    """Like :func:`patterns_overlap`, honouring exact entries on either side."""
    return _entries_meet(
        compile_pattern(a.pattern, ignore_case),
        a.exact,
        compile_pattern(b.pattern, ignore_case),
        b.exact,
    )


def _covers(compiled: CompiledPattern, exact: bool, path: str) -> bool:
    """``path`` already normalised and folded like ``compiled``."""
    if exact:
        return compiled.literal == path
    return compiled.covers(path)


def _entries_meet(a: CompiledPattern, a_exact: bool, b: CompiledPattern, b_exact: bool) -> bool:
    # An exact entry is a single path, so the question becomes whether the other covers it.
    if a_exact and a.literal is not None:
        return _covers(b, b_exact, a.literal)
    if b_exact and b.literal is not None:
        return _covers(a, a_exact, b.literal)
    return patterns_meet(a, b)


# --- the index ---------------------------------------------------------------------------


class _Node(Generic[K]):
    """A trie node for one literal segment; ``keys`` holds the entries whose literal
    leading segments end exactly here (insertion-ordered dict used as a set)."""

    __slots__ = ("children", "keys", "name", "parent")

    def __init__(self, parent: _Node[K] | None, name: str) -> None:
        self.parent = parent
        self.name = name
        self.children: dict[str, _Node[K]] = {}
        self.keys: dict[K, None] = {}


@dataclass(frozen=True, slots=True)
class _Item(Generic[K]):
    seq: int
    exact: bool
    compiled: CompiledPattern
    node: _Node[K]


class ScopeIndex(Generic[K]):
    """Live scope entries, keyed by the caller, for fast overlap and coverage queries.

    Entries sit in a trie keyed on their literal leading segments. Two patterns whose
    literal prefixes differ at some depth cannot overlap: before any wildcard, a path has
    one name per depth. A query therefore consults only the entries on the path of its
    own literal prefix (theirs is a prefix of its) and, unless it is exact, the subtree
    below where its prefix ends (its own is a prefix of theirs); patterns starting with a
    wildcard sit at the root and are always consulted. The exact pairwise decision then
    filters those candidates, so the index never changes an answer, only its cost.
    """

    def __init__(self, *, ignore_case: bool = False) -> None:
        self._ignore_case = ignore_case
        self._root: _Node[K] = _Node(None, "")
        self._items: dict[K, _Item[K]] = {}
        self._seq = count()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def add(self, key: K, entry: ScopeEntry) -> None:
        """Add ``entry`` under ``key``, replacing what ``key`` held before."""
        self.remove(key)
        compiled = compile_pattern(entry.pattern, self._ignore_case)
        node = self._root
        for name in compiled.prefix:
            child = node.children.get(name)
            if child is None:
                child = node.children[name] = _Node(node, name)
            node = child
        node.keys[key] = None
        self._items[key] = _Item(next(self._seq), entry.exact, compiled, node)

    def remove(self, key: K) -> None:
        """Forget ``key``; nothing happens if it is not there."""
        item = self._items.pop(key, None)
        if item is None:
            return
        node = item.node
        del node.keys[key]
        while node.parent is not None and not node.keys and not node.children:
            del node.parent.children[node.name]
            node = node.parent

    def overlapping(self, entry: ScopeEntry) -> list[K]:
        """Keys whose entry overlaps ``entry``, in the order they were added."""
        query = compile_pattern(entry.pattern, self._ignore_case)
        candidates, end = self._along(query.prefix)
        if end is not None and not entry.exact:
            candidates.extend(_below(end))
        items = self._items
        found = [
            key
            for key in candidates
            if _entries_meet(query, entry.exact, items[key].compiled, items[key].exact)
        ]
        return sorted(found, key=lambda key: items[key].seq)

    def covering(self, path: str) -> list[K]:
        """Keys whose entry covers the concrete ``path``, in the order they were added."""
        path = normalise_path(path, self._ignore_case)
        candidates, _ = self._along(path.split("/") if path else ())
        items = self._items
        found = [key for key in candidates if _covers(items[key].compiled, items[key].exact, path)]
        return sorted(found, key=lambda key: items[key].seq)

    def _along(self, names: Iterable[str]) -> tuple[list[K], _Node[K] | None]:
        """The keys on the trie path of ``names``, and the node where it ends (None when
        the trie has no node for the whole of ``names``)."""
        keys = list(self._root.keys)
        node = self._root
        for name in names:
            child = node.children.get(name)
            if child is None:
                return keys, None
            node = child
            keys.extend(node.keys)
        return keys, node


def _below(node: _Node[K]) -> list[K]:
    """The keys stored strictly beneath ``node``."""
    keys: list[K] = []
    stack = list(node.children.values())
    while stack:
        current = stack.pop()
        keys.extend(current.keys)
        stack.extend(current.children.values())
    return keys
