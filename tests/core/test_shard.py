"""The sharded table's lemma, checked against the scope engine: two overlapping scopes
always share a shard (docs/design.md, section 5.10)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from test_scope_properties import SEGMENTS, UPPER_SEGMENTS, patterns

from gitlocks.core.scope import patterns_overlap
from gitlocks.core.shard import parse_format, shard_key, shards

# Literal first components that differ, so that disjoint scopes land in many shards.
TOPS = ("src", "lib", "docs", "a", "b", "ab", "A", "SRC", "x\\*y", "x*y")


def scopes(segments: tuple[str, ...]) -> st.SearchStrategy[list[str]]:
    prefixed = st.tuples(st.sampled_from(TOPS), patterns(segments)).map("/".join)
    return st.lists(st.one_of(prefixed, patterns(segments)), min_size=1, max_size=3)


@settings(max_examples=5_000)
@given(scopes(SEGMENTS), scopes(SEGMENTS), st.sampled_from([1, 2, 7, 64]))
def test_overlapping_scopes_share_a_shard(a: list[str], b: list[str], count: int) -> None:
    if any(patterns_overlap(p, q) for p in a for q in b):
        assert shards(a, count) & shards(b, count), (a, b)


@settings(max_examples=3_000)
@given(scopes(UPPER_SEGMENTS), scopes(SEGMENTS), st.sampled_from([2, 64]))
def test_overlapping_scopes_share_a_shard_ignoring_case(
    a: list[str], b: list[str], count: int
) -> None:
    if any(patterns_overlap(p, q, ignore_case=True) for p in a for q in b):
        assert shards(a, count, ignore_case=True) & shards(b, count, ignore_case=True), (a, b)


def test_keys() -> None:
    assert shard_key("src/**") == "src"
    assert shard_key("./src//api/") == "src"
    assert shard_key("src") == "src"
    assert shard_key("x\\*y/z") == "x*y"
    assert shard_key("SRC/a", ignore_case=True) == "src"
    for everything in ("**", "*.md", "[sl]rc/**", "?/x", ".", "a/..", "**/api"):
        assert shard_key(everything) is None, everything
    assert shards(["**"], 8) == frozenset(range(8))
    assert len(shards(["src/**", "lib/x.py"], 1024)) == 2
    assert shards(["src/a.py"], 64) == shards(["src/**"], 64)  # one key, one shard


def test_disjoint_scopes_spread_over_shards() -> None:
    tops = [f"pkg{i}/**" for i in range(256)]
    used = {next(iter(shards([t], 64))) for t in tops}
    assert len(used) > 48  # 256 keys over 64 shards leave few empty


FORMATS = st.sampled_from([b"shards 4", b"shards 4\n", b"shards 0400\n", b"shards 99999"])
ODD_DIGIT = "\u0664".encode()  # ARABIC-INDIC DIGIT FOUR


@given(
    st.binary(max_size=12)
    | FORMATS.flatmap(
        lambda b: st.sampled_from([b, b + b"\n", b"x" + b, b.replace(b"4", ODD_DIGIT)])
    )
)
def test_the_format_blob_is_read_as_its_pattern(data: bytes) -> None:
    """``shards N``, N of one to four digits not starting with 0, one newline at most."""
    import re

    found = re.fullmatch(rb"shards ([1-9][0-9]{0,3})\n?", data)
    expected = int(found.group(1)) if found and 1 <= int(found.group(1)) <= 64 else None
    assert parse_format(data, 64) == expected
