"""Which shards of a sharded lock table a scope can touch (docs/design.md, section 5.10).

A pattern's key is its first path component when that component is literal (escapes
resolved, case folded where the table folds case); a pattern whose first component holds
a wildcard, or that covers the whole tree, has no key and touches every shard. Two
overlapping patterns always share a shard: a path both cover starts with a component
equal to each one's key, so keys that exist are equal, and a pattern without one has them
all. The property tests check that against the scope engine itself.

Pure: no git, no I/O, so every clone computes the same shards for the same scope.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from gitlocks.core.glob import fold_text, is_literal_segment, split_segments, unescape


def shard_key(pattern: str, *, ignore_case: bool = False) -> str | None:
    """The literal first component of root-relative ``pattern``, or None (every shard)."""
    segments = split_segments(pattern)
    if not segments or not is_literal_segment(segments[0]):
        return None
    name = unescape(segments[0])
    return fold_text(name) if ignore_case else name


def shard_of(key: str, count: int) -> int:
    """The shard of ``key`` among ``count``: the same on every machine and Python."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:8], "big") % count


def shards(patterns: Iterable[str], count: int, *, ignore_case: bool = False) -> frozenset[int]:
    """Every shard a scope of ``patterns`` can touch, among ``count``."""
    found: set[int] = set()
    for pattern in patterns:
        key = shard_key(pattern, ignore_case=ignore_case)
        if key is None:
            return frozenset(range(count))
        found.add(shard_of(key, count))
    return frozenset(found)
