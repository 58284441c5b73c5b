"""Glob machinery behind :mod:`gitlocks.core.scope`: parsing, case folding, exact overlap.

A segment is ``GLOBSTAR`` (``**``), a literal ``str`` (folded when asked) or a
:class:`GlobSeg` of tokens: ``STAR`` or a character set as sorted, disjoint code point
ranges. Negated classes are complemented against :data:`ALPHABET` when parsed, so two
sets always intersect as plain ranges, exactly. Compiled forms are cached.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import cache, lru_cache

from gitlocks.core.text import first_control
from gitlocks.errors import InvalidPattern

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any

Ranges = tuple[tuple[int, int], ...]

_MAX_CP = 0x10FFFF
_SLASH = ord("/")
_DOT = ord(".")
# What one character of a path segment can be: anything but NUL, "/" and the surrogate
# code points (which cannot be encoded in a file name).
ALPHABET: Ranges = ((1, _SLASH - 1), (_SLASH + 1, 0xD7FF), (0xE000, _MAX_CP))
# Every character with a case lies below this bound (the last one in Unicode 14 and 15
# is U+1E943, Adlam); scanning the planes above would cost 0.3 s for nothing.
_CASED_LIMIT = 0x20000


class BadGlob(Exception):
    """Raised with the reason a pattern is refused; callers wrap it in InvalidPattern."""


class _Sentinel:
    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


STAR = _Sentinel("STAR")
GLOBSTAR = _Sentinel("GLOBSTAR")

Token = Ranges | _Sentinel


class GlobSeg:
    """One segment with wildcards. Identity equality: instances are interned by the cache
    of :func:`parse_segment`, which makes pair caches keyed on them cheap to hash."""

    __slots__ = ("tokens",)

    def __init__(self, tokens: tuple[Token, ...]) -> None:
        self.tokens = tokens

    def matches(self, name: str) -> bool:
        """Whether the segment name ``name`` (folded as the tokens are) matches."""
        return _accepts(self.tokens, STAR, map(ord, name), _contains)


def _accepts(
    items: tuple[Any, ...],
    skippable: object,
    inputs: Iterable[Any],
    moves: Callable[[Any, Any], bool],
) -> bool:
    """Whether the automaton of ``items`` accepts ``inputs``: ``skippable`` items (``*``,
    ``**``) stay on any number of inputs, others take one that ``moves`` accepts. Every live
    state at once: linear, never a regex's backtracking on ``*a*a*a...b``."""
    end = len(items)
    states = _closure({0}, items, skippable)
    for x in inputs:
        step = set()
        for i in states:
            if i == end:
                continue
            item = items[i]
            if item is skippable:
                step.add(i)
            elif moves(item, x):
                step.add(i + 1)
        states = _closure(step, items, skippable)
        if not states:
            return False
    return end in states


def _segment_matches(seg: str | GlobSeg, name: str) -> bool:
    return seg == name if isinstance(seg, str) else seg.matches(name)


def _closure(states: set[int], items: tuple[object, ...], skippable: object) -> set[int]:
    """``states`` and every state reached from one by skipping ``skippable`` items (a
    ``*`` or ``**`` matching nothing)."""
    todo = list(states)
    while todo:
        i = todo.pop()
        if i < len(items) and items[i] is skippable and i + 1 not in states:
            states.add(i + 1)
            todo.append(i + 1)
    return states


Segment = str | GlobSeg | _Sentinel


# --- case folding --------------------------------------------------------------------
# Case-insensitive matching (core.ignoreCase) folds one character to one character:
# str.casefold() where that yields a single character, else str.lower(), else itself.
# Multi-character folds (German sharp s -> "ss") are therefore not equated.


def fold_char(ch: str) -> str:
    folded = ch.casefold()
    if len(folded) == 1:
        return folded
    lowered = ch.lower()
    return lowered if len(lowered) == 1 else ch


def fold_text(text: str) -> str:
    if text.isascii():
        return text.lower()
    return "".join(map(fold_char, text))


@cache
def _fold_groups() -> tuple[tuple[int, ...], ...]:
    """Every set of two or more code points that fold to the same character."""
    groups: dict[int, list[int]] = {}
    for cp in range(1, _CASED_LIMIT):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        folded = ord(fold_char(chr(cp)))
        if folded != cp:
            groups.setdefault(folded, [folded]).append(cp)
    return tuple(tuple(members) for members in groups.values())


def _case_closure(ranges: Ranges) -> Ranges:
    """Add every character that folds like one already in ``ranges``: closed sets match
    and intersect case-insensitively, and stay closed when negated."""
    extra = [
        (cp, cp)
        for group in _fold_groups()
        if any(_contains(ranges, member) for member in group)
        for cp in group
    ]
    return merge_ranges((*ranges, *extra)) if extra else ranges


# --- code point ranges -----------------------------------------------------------------


def merge_ranges(ranges: Iterable[tuple[int, int]]) -> Ranges:
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            if hi > merged[-1][1]:
                merged[-1] = (merged[-1][0], hi)
        else:
            merged.append((lo, hi))
    return tuple(merged)


def intersect_ranges(a: Ranges, b: Ranges) -> Ranges:
    out: list[tuple[int, int]] = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


def _complement(ranges: Ranges) -> Ranges:
    gaps: list[tuple[int, int]] = []
    start = 0
    for lo, hi in ranges:
        if lo > start:
            gaps.append((start, lo - 1))
        start = hi + 1
    if start <= _MAX_CP:
        gaps.append((start, _MAX_CP))
    return intersect_ranges(ALPHABET, tuple(gaps))


def _contains(ranges: Ranges, cp: int) -> bool:
    """Whether ``cp`` is in ``ranges`` (sorted, apart), by binary search: written out, as
    ``_bisect`` costs more to load than it saves (docs/design.md §9.14)."""
    lo, hi = 0, len(ranges)
    while lo < hi:
        mid = (lo + hi) // 2
        if ranges[mid][1] < cp:
            lo = mid + 1
        else:
            hi = mid
    return lo < len(ranges) and ranges[lo][0] <= cp


# --- parsing ---------------------------------------------------------------------------


def _class_char(text: str, i: int) -> tuple[str, int]:
    """The (possibly escaped) character at ``i`` inside a class, and the next index."""
    if text[i] == "\\":
        if i + 1 >= len(text):
            raise BadGlob("trailing lone '\\'")
        return text[i + 1], i + 2
    return text[i], i + 1


def _parse_class(text: str, i: int, ignore_case: bool) -> tuple[Ranges, int]:
    """Parse the class whose ``[`` is at ``i - 1``; return its set and the index after
    ``]``, by git's rules."""
    n = len(text)
    negated = i < n and text[i] in "!^"
    i += negated
    items: list[tuple[int, int]] = []
    first = True
    while True:
        if i >= n:
            raise BadGlob("unterminated '['")
        if text[i] == "]" and not first:
            break
        first = False
        if (
            text[i] == "["
            and i + 1 < n
            and text[i + 1] in ":=."
            and text.find(text[i + 1] + "]", i + 2) != -1
        ):
            # git reads "[[:alpha:]]" as a POSIX class: read as plain characters, it would
            # claim something else than the user meant.
            raise BadGlob("POSIX character classes are not supported (escape the '[')")
        lo, i = _class_char(text, i)
        hi = lo
        if i + 1 < n and text[i] == "-" and text[i + 1] != "]":
            hi, i = _class_char(text, i + 1)
            if hi < lo:
                raise BadGlob(f"reversed range '{lo}-{hi}'")
        items.append((ord(lo), ord(hi)))
    ranges = intersect_ranges(merge_ranges(items), ALPHABET)  # a class never matches "/"
    if ignore_case:
        ranges = _case_closure(ranges)
    return (_complement(ranges) if negated else ranges), i + 1


@lru_cache(maxsize=1 << 14)
def parse_segment(text: str, ignore_case: bool) -> Segment:
    """Parse one non-empty segment; literal segments come back as (folded) ``str``."""
    if text == "**":
        return GLOBSTAR
    if not _special(text):  # the common case: a plain name
        return fold_text(text) if ignore_case else text
    tokens: list[Token] = []
    chars: list[str] = []
    literal = True
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "*":
            literal = False
            if not tokens or tokens[-1] is not STAR:  # "a**b" is "a*b"
                tokens.append(STAR)
            i += 1
            continue
        if ch == "?":
            literal = False
            tokens.append(ALPHABET)
            i += 1
            continue
        if ch == "[":
            literal = False
            ranges, i = _parse_class(text, i + 1, ignore_case)
            tokens.append(ranges)
            continue
        ch, i = _class_char(text, i)
        if ignore_case:
            ch = fold_char(ch)
        chars.append(ch)
        tokens.append(((ord(ch), ord(ch)),))
    if literal:
        return "".join(chars)
    return GlobSeg(tuple(tokens))


def is_literal_segment(text: str) -> bool:
    """True when ``text`` has no unescaped ``*``, ``?`` or ``[`` (each ``\\`` escapes the
    next character; a lone trailing one is literal)."""
    return not _special(text) or re.fullmatch(r"(?:[^*?[\\]|\\.)*\\?", text, re.DOTALL) is not None


def unescape(text: str) -> str:
    """Drop the escaping backslashes of a literal pattern (a lone trailing one is kept)."""
    return re.sub(r"\\(.)", r"\1", text, flags=re.DOTALL) if "\\" in text else text


def split_segments(pattern: str) -> list[str]:
    """Split a root-relative pattern into segments, normalised lexically (rule 6): empty
    and ``.`` segments vanish, ``..`` removes the previous literal one, ``**`` runs collapse."""
    out: list[str] = []
    wild = False
    for seg in pattern.split("/"):
        if not seg:
            continue
        if is_literal_segment(seg):
            value = unescape(seg)
            if value == ".":
                continue
            if value == "..":
                if wild:
                    raise BadGlob("'..' after a wildcard")
                if not out:
                    raise BadGlob("it leads outside the repository")
                out.pop()
                continue
        else:
            wild = True
        if seg == "**" and out and out[-1] == "**":
            continue
        out.append(seg)
    return out


def _special(text: str) -> bool:
    """Whether ``text`` holds a glob character or a backslash."""
    return "*" in text or "?" in text or "[" in text or "\\" in text


def check_text(pattern: str) -> None:
    """The checks of rule 7 that look at the text as a whole."""
    if not pattern:
        raise BadGlob("empty pattern")
    bad = first_control(pattern)
    if bad is not None:
        raise BadGlob(f"control character {bad!r} (NUL, newline and the like)")
    if pattern.startswith("!"):
        raise BadGlob("a leading '!' (negation) is not supported; escape it as '\\!'")


# --- exact overlap of two segments -------------------------------------------------------

# Concrete segments are never "", "." or "..", so a witness must avoid them: the search
# tracks whether the characters chosen so far are "" (0), "." (1), ".." (2) or other (3).
_AFTER_DOT = (1, 2, 3, 3)


@lru_cache(maxsize=1 << 14)
def _meet(a: Ranges, b: Ranges) -> tuple[bool, bool]:
    """Whether the two sets share ``.``, and whether they share any other character."""
    common = intersect_ranges(a, b)
    return _contains(common, _DOT), any(r != (_DOT, _DOT) for r in common)


def _char_set(token: Token) -> Ranges:
    return ALPHABET if isinstance(token, _Sentinel) else token


def _tokens_meet(x: tuple[Token, ...], y: tuple[Token, ...]) -> bool:
    """Depth-first search of the product automaton of two token sequences: a state is
    (position in x, position in y, dot state); ``STAR`` may be skipped or consume a
    character the other side consumes too."""
    lx, ly = len(x), len(y)
    stack = [(0, 0, 0)]
    seen: set[tuple[int, int, int]] = set()
    while stack:
        state = stack.pop()
        if state in seen:
            continue
        seen.add(state)
        i, j, d = state
        if i == lx and j == ly:
            if d == 3:
                return True
            continue
        a = x[i] if i < lx else None
        b = y[j] if j < ly else None
        if a is STAR:
            stack.append((i + 1, j, d))
        if b is STAR:
            stack.append((i, j + 1, d))
        if a is None or b is None:
            continue
        ni, nj = (i if a is STAR else i + 1), (j if b is STAR else j + 1)
        dot, other = _meet(_char_set(a), _char_set(b))
        if dot:
            stack.append((ni, nj, _AFTER_DOT[d]))
        if other:
            stack.append((ni, nj, 3))
    return False


@lru_cache(maxsize=1 << 16)
def _globs_meet(x: GlobSeg, y: GlobSeg) -> bool:
    return _tokens_meet(x.tokens, y.tokens)


@lru_cache(maxsize=1 << 14)
def segment_satisfiable(seg: GlobSeg) -> bool:
    """Whether some real segment name matches (``[/]`` or ``[.]`` match none)."""
    return _tokens_meet(seg.tokens, (STAR,))


def segments_meet(x: str | GlobSeg, y: str | GlobSeg) -> bool:
    """Whether some segment name matches both (exact; literals are never "." or "..")."""
    if isinstance(x, str):
        if isinstance(y, str):
            return x == y
        return y.matches(x)
    if isinstance(y, str):
        return x.matches(y)
    return _globs_meet(x, y)


def _satisfiable(seg: str | GlobSeg) -> bool:
    return isinstance(seg, str) or segment_satisfiable(seg)


# --- whole patterns ----------------------------------------------------------------------


class CompiledPattern:
    """A validated pattern, ready for matching and overlap decisions."""

    __slots__ = ("literal", "prefix", "satisfiable", "segments", "text")

    def __init__(self, text: str, segments: tuple[Segment, ...]) -> None:
        self.text = text  # the normalised spelling
        prefix: list[str] = []
        for seg in segments:
            if not isinstance(seg, str):
                break
            prefix.append(seg)
        self.prefix = tuple(prefix)  # the leading literal segments (folded): index keys
        # The whole path (folded) when nothing is a wildcard.
        self.literal = "/".join(prefix) if segments and len(prefix) == len(segments) else None
        if not segments or segments[-1] is not GLOBSTAR:
            segments += (GLOBSTAR,)
        self.segments = segments  # always ends with GLOBSTAR: the subtree of rule 4
        # Whether it covers any path at all ("a/[.]" covers none).
        self.satisfiable = all(
            not isinstance(s, GlobSeg) or segment_satisfiable(s) for s in segments
        )

    def covers(self, path: str) -> bool:
        """``path`` normalised and folded by :func:`normalise_path` (docs/design.md, 2.2)."""
        names = path.split("/") if path else ()
        return _accepts(self.segments, GLOBSTAR, names, _segment_matches)


@lru_cache(maxsize=1 << 16)
def compile_pattern(pattern: str, ignore_case: bool) -> CompiledPattern:
    """Validate, normalise and compile a root-relative pattern (raises InvalidPattern)."""
    try:
        check_text(pattern)
        if pattern.startswith("/"):
            raise BadGlob("an absolute path; patterns here are relative to the repository root")
        raw = split_segments(pattern)
        segments = tuple(parse_segment(seg, ignore_case) for seg in raw)
    except BadGlob as exc:
        raise InvalidPattern(pattern, str(exc)) from None
    return CompiledPattern("/".join(raw) or "**", segments)


def normalise_path(path: str, ignore_case: bool) -> str:
    """A concrete root-relative path in the form the compiled regexes expect."""
    path = "/".join(seg for seg in path.split("/") if seg and seg != ".")
    return fold_text(path) if ignore_case else path


def patterns_meet(a: CompiledPattern, b: CompiledPattern) -> bool:
    """Whether some concrete path is covered by both (subtree semantics on both sides)."""
    start = 0
    for seg_a, seg_b in zip(a.prefix, b.prefix, strict=False):
        if seg_a != seg_b:  # two different names at the same depth, before any "**"
            return False
        start += 1
    return _sequences_meet(a.segments, b.segments, start)


def _sequences_meet(x: tuple[Segment, ...], y: tuple[Segment, ...], start: int) -> bool:
    """Search the product automaton over segments, from (start, start): ``**`` may be
    skipped, or consume one segment the other side's matches. Both end with ``**``."""
    lx, ly = len(x), len(y)
    stack = [(start, start)]
    seen: set[tuple[int, int]] = set()
    while stack:
        state = stack.pop()
        if state in seen:
            continue
        seen.add(state)
        i, j = state
        if i == lx and j == ly:
            return True
        a = x[i] if i < lx else None
        b = y[j] if j < ly else None
        if a is GLOBSTAR:
            stack.append((i + 1, j))
            if isinstance(b, (str, GlobSeg)) and _satisfiable(b):
                stack.append((i, j + 1))
        if b is GLOBSTAR:
            stack.append((i, j + 1))
            if isinstance(a, (str, GlobSeg)) and _satisfiable(a):
                stack.append((i + 1, j))
        if isinstance(a, (str, GlobSeg)) and isinstance(b, (str, GlobSeg)) and segments_meet(a, b):
            stack.append((i + 1, j + 1))
    return False
