"""Agreement with pathspec's ``GitIgnoreSpec`` on concrete paths, and where we differ.

The rest of the project may match concrete paths with pathspec, so the two must agree
wherever the contract allows. pathspec reads gitignore syntax: a pattern is anchored only
with a leading ``/``, and (like our rule 4) a matched directory matches its contents.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pathspec import GitIgnoreSpec

from gitlocks.core.scope import normalize_pattern, pattern_covers, validate_pattern
from gitlocks.errors import InvalidPattern

NAMES = ("a", "b", "c", "ab", ".b", "a.b")
PATHS = ["/".join(path) for depth in range(1, 4) for path in itertools.product(NAMES, repeat=depth)]
SEGMENTS = (
    "a", "b", "ab", "*", "?", "[ab]", "[a-b]", "[]a]", "a*", "*b", "a?", ".*", "*.*",
    "a**b", "**b", "**", "\\*", "a\\?", "[!a]", "[^ab]",
)  # fmt: skip
# A negated class stands alone in its segment here: pathspec lets it match "/", which
# only shows between other characters of a segment (see below).


def pathspec_covers(pattern: str, path: str) -> bool:
    """pathspec's answer for our root-relative ``pattern``.

    Anchored with "/" so it is not matched at any depth; a trailing "/**" is dropped
    because gitignore's "x/**" leaves "x" itself out, while rule 4 makes "x/**" and "x"
    the same scope (see test_trailing_globstar_covers_the_directory_itself).
    """
    while pattern.endswith("/**"):
        pattern = pattern[: -len("/**")]
    return bool(GitIgnoreSpec.from_lines(["/" + pattern]).match_file(path))


@pytest.mark.parametrize(
    "pattern", ["/".join(segs) for n in (1, 2) for segs in itertools.product(SEGMENTS, repeat=n)]
)
def test_agrees_with_pathspec_on_short_patterns(pattern: str) -> None:
    for path in PATHS:
        assert pattern_covers(pattern, path) is pathspec_covers(pattern, path), path


@settings(max_examples=200)
@given(st.lists(st.sampled_from(SEGMENTS), min_size=3, max_size=4).map("/".join))
def test_agrees_with_pathspec_on_longer_patterns(pattern: str) -> None:
    for path in PATHS:
        assert pattern_covers(pattern, path) is pathspec_covers(pattern, path), path


def test_negated_class_never_matches_slash() -> None:
    # pathspec translates "[!x]" to a regex class that also matches "/"; rule 2 says a
    # class never matches "/", so "a[!x]b" cannot reach into a directory "a".
    assert GitIgnoreSpec.from_lines(["/a[!x]b"]).match_file("a/b")
    assert not pattern_covers("a[!x]b", "a/b")
    assert pattern_covers("a[!x]b", "ayb")


def test_trailing_globstar_covers_the_directory_itself() -> None:
    assert not GitIgnoreSpec.from_lines(["/src/**"]).match_file("src")
    assert pattern_covers("src/**", "src")
    assert pattern_covers("src/**", "src/x")


def test_patterns_are_anchored() -> None:
    # gitignore matches a slash-less pattern at any depth; rule 3 anchors it.
    assert GitIgnoreSpec.from_lines(["*.py"]).match_file("src/a.py")
    assert not pattern_covers("*.py", "src/a.py")
    assert pattern_covers("**/*.py", "src/a.py")


def test_trailing_slash_is_not_directory_only() -> None:
    # gitignore's "src/" matches only a directory; rule 6 drops the slash, and a lock
    # cannot know whether "src" will be a file or a directory.
    assert not GitIgnoreSpec.from_lines(["/src/"]).match_file("src")
    assert pattern_covers("src/", "src")
    assert normalize_pattern("src/") == "src"


@pytest.mark.parametrize("pattern", ["[a-", "[z-a]", "a\\", "[[:alpha:]]", "!a"])
def test_patterns_pathspec_drops_or_reads_otherwise_are_refused(pattern: str) -> None:
    # pathspec silently drops "[a-", raises its own errors for others, reads "[[:alpha:]]"
    # as a POSIX class and "!a" as a negation; we refuse them all, by name.
    with pytest.raises(InvalidPattern):
        validate_pattern(pattern)
