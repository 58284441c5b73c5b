"""Property tests of the scope engine against an independent brute-force oracle.

The oracle knows nothing of automata: it enumerates every concrete path up to depth 4
over a small set of segment names, decides coverage per segment with ``fnmatch``, and
calls two patterns overlapping when their enumerated covered sets intersect.

Why the enumeration is enough to *find* a witness: in a shortest common path every
segment is consumed by a non-``**`` segment of one of the patterns (a segment that both
sides swallow with ``**`` or their implicit subtree can be deleted), so it has at most
``n(a) + n(b)`` segments, where ``n`` counts non-``**`` segments; each of its names only
has to match at most one segment pattern from each side, and ``NAMES`` holds a witness
for every such pair in the grammar (``c`` lies outside every class, ``.b`` starts with
a dot, ``ab`` joins a prefix and a suffix). So whenever ``n(a) + n(b) <= DEPTH`` the
oracle's answer is the truth; beyond that it can only under-report, and the check is
one-sided: the engine must never miss an overlap the oracle found.
"""

from __future__ import annotations

import itertools
from fnmatch import fnmatchcase
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitlocks.core.scope import (
    ScopeEntry,
    ScopeIndex,
    entries_overlap,
    entry_covers,
    normalize_pattern,
    pattern_covers,
    patterns_overlap,
    validate_pattern,
)
from gitlocks.errors import InvalidPattern

NAMES = ("a", "b", "c", "ab", ".b")
DEPTH = 4
SEGMENTS = ("a", "b", "ab", "*", "?", "[ab]", "[!a]", "[^ab]", "a*", "*b", "a?", ".*", "**")
UPPER_SEGMENTS = ("A", "B", "[A-B]", "[!A]", "A*", "*B", "?", "*", "**", "a")

Path = tuple[str, ...]
ALL_PATHS: list[Path] = [
    path for depth in range(1, DEPTH + 1) for path in itertools.product(NAMES, repeat=depth)
]


def _fnmatch_spelling(segment: str) -> str:
    # fnmatch negates classes with "!" only; its "[^" is a class holding "^".
    return segment.replace("[^", "[!")


@cache
def _names_matching(segment: str, fold: bool) -> frozenset[str]:
    segment = _fnmatch_spelling(segment)
    if fold:
        return frozenset(n for n in NAMES if fnmatchcase(n.lower(), segment.lower()))
    return frozenset(n for n in NAMES if fnmatchcase(n, segment))


@cache
def _paths_upto(depth: int) -> frozenset[Path]:
    """Every path of 0..depth segments (the empty one included, for subtrees)."""
    return frozenset(p for d in range(depth + 1) for p in itertools.product(NAMES, repeat=d))


@cache
def _generate(segments: tuple[str, ...], depth: int, fold: bool) -> frozenset[Path]:
    """All paths of at most ``depth`` segments that ``segments`` (plus subtree) covers."""
    if not segments:
        return _paths_upto(depth)
    head, rest = segments[0], segments[1:]
    out: set[Path] = set()
    if head == "**":
        out |= _generate(rest, depth, fold)
        if depth:
            out |= {(n, *tail) for n in NAMES for tail in _generate(segments, depth - 1, fold)}
    elif depth:
        tails = _generate(rest, depth - 1, fold)
        out |= {(n, *tail) for n in _names_matching(head, fold) for tail in tails}
    return frozenset(out)


def oracle_covered(pattern: str, *, fold: bool = False) -> frozenset[Path]:
    return _generate(tuple(pattern.split("/")), DEPTH, fold) - {()}


def nonglobstar(pattern: str) -> int:
    return sum(seg != "**" for seg in pattern.split("/"))


def patterns(segments: tuple[str, ...] = SEGMENTS, max_size: int = 3) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(segments), min_size=1, max_size=max_size).map("/".join)


@settings(max_examples=10_000)
@given(patterns(), patterns())
def test_overlap_agrees_with_oracle(a: str, b: str) -> None:
    ours = patterns_overlap(a, b)
    assert ours is patterns_overlap(b, a)  # symmetric
    witnessed = bool(oracle_covered(a) & oracle_covered(b))
    if witnessed:
        assert ours, f"missed overlap: {a!r} and {b!r}"
    elif nonglobstar(a) + nonglobstar(b) <= DEPTH:
        assert not ours, f"false overlap: {a!r} and {b!r}"


@settings(max_examples=1_000)
@given(patterns(UPPER_SEGMENTS), patterns(UPPER_SEGMENTS))
def test_overlap_ignoring_case_agrees_with_oracle(a: str, b: str) -> None:
    # A common path in any case has a lower-case twin, so lower-case NAMES still suffice.
    ours = patterns_overlap(a, b, ignore_case=True)
    assert ours is patterns_overlap(b, a, ignore_case=True)
    witnessed = bool(oracle_covered(a, fold=True) & oracle_covered(b, fold=True))
    if witnessed or nonglobstar(a) + nonglobstar(b) <= DEPTH:
        assert ours is witnessed, (a, b)


@settings(max_examples=200)
@given(patterns())
def test_covers_agrees_with_oracle(pattern: str) -> None:
    covered = oracle_covered(pattern)
    for path in ALL_PATHS:
        assert pattern_covers(pattern, "/".join(path)) is (path in covered), (pattern, path)


@settings(max_examples=500)
@given(patterns())
def test_overlap_is_reflexive(pattern: str) -> None:
    assert patterns_overlap(pattern, pattern)
    assert patterns_overlap(pattern, "**")


def literal_paths() -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(NAMES), min_size=1, max_size=3).map("/".join)


def entries() -> st.SearchStrategy[ScopeEntry]:
    exact = literal_paths().map(lambda p: ScopeEntry(p, exact=True))
    return st.one_of(patterns().map(ScopeEntry), exact)


def entry_oracle(entry: ScopeEntry) -> frozenset[Path]:
    if entry.exact:
        return frozenset({tuple(entry.pattern.split("/"))})
    return oracle_covered(entry.pattern)


@settings(max_examples=1_000)
@given(entries(), entries())
def test_entries_overlap_agrees_with_oracle(a: ScopeEntry, b: ScopeEntry) -> None:
    ours = entries_overlap(a, b)
    assert ours is entries_overlap(b, a)
    witnessed = bool(entry_oracle(a) & entry_oracle(b))
    if witnessed or nonglobstar(a.pattern) + nonglobstar(b.pattern) <= DEPTH:
        assert ours is witnessed, (a, b)
    for path in ALL_PATHS[:: len(ALL_PATHS) // 50]:
        assert entry_covers(a, "/".join(path)) is (path in entry_oracle(a))


# The index also sees patterns that cover nothing ("[.]") and upper case (for its
# case-insensitive mode); brute force over entries_overlap is its oracle.
INDEX_SEGMENTS = (*SEGMENTS, "[.]", "A", "B*")


def index_entries() -> st.SearchStrategy[ScopeEntry]:
    exact = literal_paths().map(lambda p: ScopeEntry(p, exact=True))
    return st.one_of(patterns(INDEX_SEGMENTS).map(ScopeEntry), exact)


@settings(max_examples=400)
@given(
    st.lists(
        st.tuples(st.sampled_from(["add", "add", "remove", "query"]), st.integers(0, 15)),
        max_size=50,
    ),
    st.data(),
    st.booleans(),
)
def test_index_equals_brute_force(
    ops: list[tuple[str, int]], data: st.DataObject, ignore_case: bool
) -> None:
    # Operations interleave, so caches inside the index meet adds and removes.
    index = ScopeIndex(ignore_case=ignore_case)
    live: dict[tuple[str, str], ScopeEntry] = {}
    for op, number in ops:
        key = (str(number), "")  # (lock id, pattern), as the table keys its entries
        if op == "remove":
            index.remove(key)
            live.pop(key, None)
            continue
        entry = data.draw(index_entries())
        if op == "add":
            index.add(key, entry)
            live[key] = entry
            continue
        expected = [
            k for k, e in live.items() if entries_overlap(e, entry, ignore_case=ignore_case)
        ]
        assert sorted(index.overlapping(entry)) == sorted(expected), (entry, live)
        for path in ("a", "A/b", "ab/.b/c", "b/a/ab/c", "c"):
            expected = [
                k for k, e in live.items() if entry_covers(e, path, ignore_case=ignore_case)
            ]
            assert sorted(index.covering(path)) == sorted(expected), (path, live)
    assert len(index) == len(live)


@settings(max_examples=300)
@given(entries(), st.sampled_from(ALL_PATHS[:200]))
def test_index_matches_exact_witness(entry: ScopeEntry, path: Path) -> None:
    index = ScopeIndex()
    index.add(("k", ""), entry)
    probe = ScopeEntry("/".join(path), exact=True)
    assert (index.overlapping(probe) == [("k", "")]) is (path in entry_oracle(entry))


# --- segment level, with a richer character grammar -------------------------------------

CHAR_TOKENS = ("a", "b", ".", "*", "?", "[ab]", "[!a]", "[a-b]", "[!.]", "[^ab.]")
CHARS = "abc."
SEGMENT_NAMES = [
    "".join(chars)
    for length in range(1, 6)
    for chars in itertools.product(CHARS, repeat=length)
    if "".join(chars) not in (".", "..")  # no path segment is called that
]


@cache
def _segment_names(segment: str) -> frozenset[str]:
    return frozenset(n for n in SEGMENT_NAMES if fnmatchcase(n, _fnmatch_spelling(segment)))


@settings(max_examples=1_000)
@given(
    st.lists(st.sampled_from(CHAR_TOKENS), min_size=1, max_size=2).map("".join),
    st.lists(st.sampled_from(CHAR_TOKENS), min_size=1, max_size=2).map("".join),
)
def test_segment_overlap_agrees_with_oracle(a: str, b: str) -> None:
    # Two tokens a side: a shortest common name has at most 4 characters, or 5 when
    # "..x" is needed to get past the forbidden names; SEGMENT_NAMES goes up to 5.
    if a in (".", "..") or b in (".", ".."):
        return  # "." and ".." are path navigation, not names
    witnessed = bool(_segment_names(a) & _segment_names(b))
    assert patterns_overlap(a, b) is witnessed, (a, b)
    assert patterns_overlap(f"x/{a}/y", f"x/{b}") is witnessed, (a, b)


# --- arbitrary input ----------------------------------------------------------------------

SPECIAL = st.text(alphabet="*?[]!^\\/-.:a\n", max_size=12)
ANY_TEXT = st.one_of(st.text(max_size=20), SPECIAL)


@settings(max_examples=1_000)
@given(ANY_TEXT, ANY_TEXT)
def test_any_text_is_valid_or_invalid_pattern(text: str, other: str) -> None:
    try:
        validate_pattern(text)
    except InvalidPattern:
        valid = False
    else:
        valid = True
    try:
        stored = normalize_pattern(text, cwd="src")
    except InvalidPattern:
        stored = None
    else:
        assert stored is not None
        assert normalize_pattern(stored) == stored  # stored forms are fixed points
        validate_pattern(stored)
    try:
        assert pattern_covers(text, other) in (True, False)
        assert patterns_overlap(text, "**") in (True, False)
        assert valid
    except InvalidPattern as exc:
        assert not valid
        assert exc.pattern == text


@settings(max_examples=500)
@given(SPECIAL, st.text(alphabet="ab[*/", max_size=8))
def test_normalize_with_odd_cwd(text: str, cwd: str) -> None:
    try:
        stored = normalize_pattern(text, cwd=cwd)
    except InvalidPattern:
        return
    assert normalize_pattern(stored) == stored


@settings(max_examples=200)
@given(
    st.lists(st.lists(index_entries(), min_size=1, max_size=3), min_size=1, max_size=12),
    st.lists(index_entries(), min_size=1, max_size=3),
    st.booleans(),
)
def test_lazy_table_overlaps_equal_brute_force(
    scopes: list[list[ScopeEntry]], claim: list[ScopeEntry], ignore_case: bool
) -> None:
    """The table reads (and indexes) only the buckets a claim can reach: never an answer lost."""
    from gitlocks.core.record import LockRecord
    from gitlocks.core.summaries import Summaries, Summary
    from gitlocks.core.table import LazyRecords, Table

    # A record names each pattern once (exact or not), as acquire writes it.
    scopes = [list({e.pattern: e for e in scope}.values()) for scope in scopes]
    records = {
        f"l{i}": LockRecord(
            id=f"l{i}",
            holder="h",
            paths=tuple(e.pattern for e in scope),
            exact=tuple(e.pattern for e in scope if e.exact),
            created_at="2030-01-01T00:00:00Z",
            renewed_at="2030-01-01T00:00:00Z",
            expires_at="2030-01-01T01:00:00Z",
        )
        for i, scope in enumerate(scopes)
    }
    read: list[str] = []

    def load_many(ids: list[str]) -> dict[str, LockRecord]:
        read.extend(ids)
        return {i: records[i] for i in ids}

    table = Table(
        ignore_case=ignore_case,
        records=LazyRecords(records, load_many),
        summaries=Summaries({i: Summary.of(r) for i, r in records.items()}),
    )
    expected = {
        lock_id
        for lock_id, scope in zip(records, scopes, strict=True)
        if any(entries_overlap(a, b, ignore_case=ignore_case) for a in claim for b in scope)
    }
    assert set(table.overlaps(claim)) == expected
    assert expected <= set(read) <= set(records)


@pytest.mark.parametrize(
    ("pattern", "path", "covered"),
    [
        ("*a" * 14 + "*b", "a" * 30, False),
        ("*a" * 14 + "*b", "a" * 30 + "b", True),
        ("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", "a" * 36, False),
        ("**/" * 20 + "x", "/".join(["a"] * 200), False),
        ("**/" * 20 + "x", "/".join(["a"] * 200) + "/x", True),
        ("[!b]*" * 10 + "c", "a" * 40 + "c", True),
    ],
)
def test_pathological_patterns_decide_without_backtracking(
    pattern: str, path: str, covered: bool
) -> None:
    """Many stars against a long name: a backtracking matcher took seconds (8 s for the
    first); the automaton answers at once, and rightly (bench/scope_bench.py measures)."""
    assert pattern_covers(pattern, path) is covered
    assert pattern_covers(pattern, path, ignore_case=True) is covered
    assert patterns_overlap(pattern, pattern) is True


# Escapes are dropped and glob characters found without a regular expression.
ESCAPED = st.text(st.sampled_from(list("ab\\*?[]/\n")), max_size=12)


@given(ESCAPED)
def test_unescape_is_the_pattern(text: str) -> None:
    import re

    from gitlocks.core.glob import is_literal_segment, unescape

    assert unescape(text) == re.sub(r"\\(.)", r"\1", text, flags=re.DOTALL)
    if re.search(r"[*?\[\\]", text) is None:
        assert is_literal_segment(text)
