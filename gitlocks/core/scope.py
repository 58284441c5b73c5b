"""Scopes: the patterns a lock claims, and exact decisions about them (docs/design.md, section 2).

Pure: stdlib only, no git; the glob machinery lives in :mod:`gitlocks.core.glob`. A stored
pattern is what the user typed, made root-relative and normalised by rule 6 (a trailing
``/**`` is kept as typed: ``src/api/**`` and ``src/api`` are decided alike).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Iterator

from gitlocks.core.glob import (
    GLOBSTAR,
    BadGlob,
    CompiledPattern,
    GlobSeg,
    check_text,
    compile_pattern,
    is_literal_segment,
    normalise_path,
    patterns_meet,
    segments_meet,
    split_segments,
    unescape,
)
from gitlocks.core.value import Value
from gitlocks.errors import InvalidPattern

# What the index keeps an entry under: (lock id, pattern), as the table indexes them.
Key = tuple[str, str]

WHOLE_TREE = "**"


def validate_pattern(pattern: str) -> None:
    """Raise :class:`InvalidPattern` unless ``pattern`` (root-relative) obeys rule 7."""
    compile_pattern(pattern, False)


def has_wildcards(pattern: str) -> bool:
    """Whether ``pattern`` holds an unescaped ``*``, ``?`` or ``[``."""
    return not is_literal_segment(pattern)


def literal_path(pattern: str) -> str:
    """The path a wildcard-free pattern names: its escaping backslashes removed."""
    return unescape(pattern)


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


def path_entry(path: str) -> ScopeEntry | None:
    """An exact entry naming one concrete root-relative path, its wildcard characters
    escaped, so that a file named ``a*b`` is that file only. None for a name no pattern
    can spell (control characters): callers decide those with ``entry_covers``."""
    escaped = _escape_name(path)
    if escaped.startswith("!"):
        escaped = "\\" + escaped
    try:
        return ScopeEntry(escaped, exact=True)
    except InvalidPattern:
        return None


def normalize_pattern(typed: str, *, cwd: str = "", root: str | None = None) -> str:
    """Turn what the user typed into the stored, root-relative, validated pattern; ``cwd``
    relative to the worktree root, whose absolute path ``root`` absolute input needs."""
    try:
        check_text(typed)
        segments = split_segments(_root_relative(typed, cwd, root))
    except BadGlob as exc:
        raise InvalidPattern(typed, str(exc)) from None
    pattern = "/".join(segments) or WHOLE_TREE
    if pattern.startswith((":/", ":!", ":^", ":(")):  # a name, not git's pathspec magic
        pattern = "\\" + pattern
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
    """The root-relative pattern for an absolute one, or BadGlob if it lies outside.

    The root's own part of the path is a literal path, never a pattern: a repository
    under ``/tmp/x[1]`` is not a character class. Only what follows it is pattern text.
    """
    if root is None:
        raise BadGlob("an absolute path, but the repository root is not known")
    root_path = posixpath.normpath(root)
    base = root_path.rstrip("/") + "/"
    # 1. The root, spelled literally as it is: the rest is the pattern, as typed.
    if typed == root_path or typed.startswith(base):
        return _below_root(typed[len(base) :])
    # 2. The root with its wildcard characters escaped (``/tmp/x\[1]/r/src``), or with
    #    redundant separators: compare the literal leading segments, unescaped.
    segments = typed.split("/")
    root_names = [name for name in root_path.split("/") if name]
    names: list[str] = []
    for i, seg in enumerate(segments):
        if len(names) == len(root_names):
            if names == root_names:
                return _below_root("/".join(segments[i:]))
            break
        if not seg or seg == ".":
            continue
        if not is_literal_segment(seg):
            break
        names.append(unescape(seg))
    else:
        if names == root_names:
            return ""
    # 3. Elsewhere lexically; it may still reach the tree through a symbolic link. The
    #    shortest leading run of the typed text that resolves into the tree is the
    #    literal part; the rest stays pattern text.
    try:
        real_root = os.path.realpath(root)
        for i in range(2, len(segments) + 1):
            real = os.path.realpath("/".join(segments[:i]) or "/")
            if real == real_root or real.startswith(real_root.rstrip("/") + "/"):
                tail = [_escape_name(name) for name in real[len(real_root) :].split("/") if name]
                return _below_root("/".join([*tail, *segments[i:]]))
    except (OSError, ValueError):
        pass
    raise BadGlob("it is outside the repository")


def _below_root(rest: str) -> str:
    """Pattern text below the root: ``..`` may not climb out of it; a leading ``!`` here is
    a file name, not a negation."""
    try:
        segments = split_segments(rest)
    except BadGlob as exc:
        if "outside" in str(exc):
            raise BadGlob("it is outside the repository") from None
        raise
    if segments and segments[0].startswith("!"):
        segments[0] = "\\" + segments[0]
    return "/".join(segments)


class ScopeEntry(Value):
    """One pattern of a lock's scope, as recorded; ``exact`` (rule 4, decided when claimed):
    it names an existing file, and covers that file only."""

    __slots__ = ("exact", "pattern")

    def __init__(self, pattern: str, exact: bool = False) -> None:
        compiled = compile_pattern(pattern, False)
        if exact and compiled.literal is None:
            reason = "an exact entry must name one file, without wildcards"
            raise InvalidPattern(pattern, reason)
        self.pattern = pattern  # normalised, root-relative
        self.exact = exact


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

# The keys of one compiled pattern at one node (a dict: an insertion-ordered set). Every
# decision is taken once per bundle: conventions such as "**/*.test.ts" recur.
_Bundles = dict[CompiledPattern, dict[Key, None]]

# How the entries of a node are grouped, and how a query decides each group: see _Node.
_EXACT = "exact"
_OPEN = "open"
_PAIRWISE = "pairwise"
_GLOB = "glob"
_IF_SATISFIABLE = "if satisfiable"  # its satisfiable patterns surely overlap the query


class _Node:
    """A trie node for one literal segment, holding the entries whose literal leading
    segments end exactly here, grouped by what follows:

    - ``exact``: exact files, this very path;
    - ``open``: ``**`` follows (or the implicit ``**`` of a literal pattern) and every
      segment is satisfiable, so any open query that reaches this node overlaps them;
    - ``globs``: keyed by the wildcard segment that follows, which the query must meet;
    - ``pairwise``: the rest (patterns that cover nothing), decided one by one.
    """

    __slots__ = ("_named", "children", "exact", "globs", "name", "open", "pairwise", "parent")

    def __init__(self, parent: _Node | None, name: str) -> None:
        self.parent = parent
        self.name = name
        self.children: dict[str, _Node] = {}
        self.exact: _Bundles = {}
        self.open: _Bundles = {}
        self.pairwise: _Bundles = {}
        self.globs: dict[GlobSeg, _Bundles] = {}
        # For a name, the globs groups whose segment matches it. Every query from one
        # directory goes through the same few names, and the wildcard patterns at the
        # root would otherwise cost every query one regular expression each.
        self._named: dict[str, list[_Bundles]] = {}

    def bundles(self, group: str | GlobSeg) -> _Bundles:
        if isinstance(group, GlobSeg):
            if group not in self.globs:
                self._named.clear()
            return self.globs.setdefault(group, {})
        return {_EXACT: self.exact, _OPEN: self.open}.get(group, self.pairwise)

    def drop_glob(self, group: GlobSeg) -> None:
        del self.globs[group]
        self._named.clear()

    def globs_matching(self, name: str) -> list[_Bundles]:
        found = self._named.get(name)
        if found is None:
            if len(self._named) >= 256:  # bound the memory for many distinct names
                self._named.clear()
            found = [b for g, b in self.globs.items() if g.matches(name)]
            self._named[name] = found
        return found

    def is_empty(self) -> bool:
        return not (self.children or self.exact or self.open or self.pairwise or self.globs)

    def groups(
        self, open_query: bool = False, whole: bool = False
    ) -> Iterator[tuple[str | None, _Bundles]]:
        """The non-empty groups, marked for a query that reads on below here through
        ``**`` (``whole``: and then ends, covering everything below)."""
        if self.exact:
            yield (None if whole else _EXACT), self.exact
        if self.open:
            yield (None if open_query else _OPEN), self.open
        if self.pairwise:
            yield _PAIRWISE, self.pairwise
        mark = _IF_SATISFIABLE if open_query else _GLOB
        for bundles in self.globs.values():
            yield mark, bundles


class ScopeIndex:
    """Live scope entries, keyed by the caller, for fast overlap and coverage queries.

    Entries sit in a trie keyed on their literal leading segments; a query runs its own
    segments down it (a wildcard segment follows the edges it matches, ``**`` takes the
    subtree) and meets only the groups its next segment can meet, which then get the exact
    pairwise decision: the index changes the cost of an answer, never the answer.
    """

    def __init__(self, *, ignore_case: bool = False) -> None:
        self._ignore_case = ignore_case
        self._root: _Node = _Node(None, "")
        # key -> (compiled pattern, its node, its group there)
        self._items: dict[Key, tuple[CompiledPattern, _Node, str | GlobSeg]] = {}

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def add(self, key: Key, entry: ScopeEntry) -> None:
        """Add ``entry`` under ``key``, replacing what ``key`` held before."""
        self.remove(key)
        compiled = compile_pattern(entry.pattern, self._ignore_case)
        node = self._root
        for name in compiled.prefix:
            child = node.children.get(name)
            if child is None:
                child = node.children[name] = _Node(node, name)
            node = child
        group = _group(compiled, entry.exact)
        node.bundles(group).setdefault(compiled, {})[key] = None
        self._items[key] = (compiled, node, group)

    def remove(self, key: Key) -> None:
        """Forget ``key``; nothing happens if it is not there."""
        item = self._items.pop(key, None)
        if item is None:
            return
        compiled, node, group = item
        bundles = node.bundles(group)
        keys = bundles[compiled]
        del keys[key]
        if not keys:
            del bundles[compiled]
        if isinstance(group, GlobSeg) and not bundles:
            node.drop_glob(group)
        while node.parent is not None and node.is_empty():
            del node.parent.children[node.name]
            node = node.parent

    def overlapping(self, entry: ScopeEntry) -> list[Key]:
        """Keys whose entry overlaps ``entry``, each once, in no particular order."""
        query = compile_pattern(entry.pattern, self._ignore_case)
        found: list[Key] = []
        for mark, bundles in self._reached(query, entry.exact):
            if mark is None:  # sure to overlap
                for keys in bundles.values():
                    found.extend(keys)
                continue
            for compiled, keys in bundles.items():
                if (mark is _IF_SATISFIABLE and compiled.satisfiable) or _entries_meet(
                    query, entry.exact, compiled, mark is _EXACT
                ):
                    found.extend(keys)
        return found

    def _reached(self, query: CompiledPattern, exact: bool) -> list[tuple[str | None, _Bundles]]:
        """The groups ``query`` may overlap, marked None where it surely does."""
        out: list[tuple[str | None, _Bundles]] = []
        segments = query.segments
        # An exact query is one path: it stops where its names do, without a subtree.
        end = len(segments) - 1 if exact else len(segments)
        # An open entry at a node the query reaches overlaps it if the query, too, can go
        # on to cover something: "a/**/x" and "a/*.py" share "a/b.py/x".
        open_query = not exact and query.satisfiable
        stack = [(self._root, 0)]
        while stack:
            node, i = stack.pop()
            current = segments[i] if i < end else None
            if current is GLOBSTAR:
                # If open, the query overlaps every entry below that covers something
                # ("src/**/x" meets "src/a/*.py"); ending in "**", every exact file too.
                whole = i == len(segments) - 1
                out.extend(
                    group
                    for below in _subtree(node)
                    for group in below.groups(open_query, whole and open_query)
                )
                continue
            if node.open:
                out.append((None if open_query else _OPEN, node.open))
            if node.exact and current is None:  # the very path of the exact query
                out.append((None, node.exact))
            if node.pairwise:
                out.append((_PAIRWISE, node.pairwise))
            if isinstance(current, str):
                if node.globs:  # entries whose next segment must match this name
                    out.extend((_GLOB, bundles) for bundles in node.globs_matching(current))
                child = node.children.get(current)
                if child is not None:
                    stack.append((child, i + 1))
            elif isinstance(current, GlobSeg):
                out.extend((_GLOB, b) for g, b in node.globs.items() if segments_meet(current, g))
                match = current.matches
                stack.extend((c, i + 1) for name, c in node.children.items() if match(name))
        return out

    def covering(self, path: str) -> list[Key]:
        """Keys whose entry covers the concrete ``path``, each once, in no particular order."""
        path = normalise_path(path, self._ignore_case)
        nodes = [self._root]
        for name in path.split("/") if path else ():
            child = nodes[-1].children.get(name)
            if child is None:
                break
            nodes.append(child)
        found: list[Key] = []
        for node in nodes:
            for mark, bundles in node.groups():
                for compiled, keys in bundles.items():
                    if _covers(compiled, mark is _EXACT, path):
                        found.extend(keys)
        return found


def _group(compiled: CompiledPattern, exact: bool) -> str | GlobSeg:
    if exact:
        return _EXACT
    following = compiled.segments[len(compiled.prefix)]  # segments end with GLOBSTAR
    if isinstance(following, GlobSeg):
        return following
    return _OPEN if compiled.satisfiable else _PAIRWISE


def _subtree(node: _Node) -> list[_Node]:
    """``node`` and every node beneath it."""
    nodes = [node]
    stack = list(node.children.values())
    while stack:
        current = stack.pop()
        nodes.append(current)
        stack.extend(current.children.values())
    return nodes
