"""Which shards of a sharded lock table a scope can touch (docs/design.md, section 5.10).

Two overlapping patterns always share a shard: a path both cover starts with each one's
key, and a pattern without a key has every shard (the property tests check it). Pure, so
every clone computes the same shards for the same scope.
"""

from __future__ import annotations

from collections.abc import Iterable

from gitlocks.core.digest import sha256_hex
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
    digest = sha256_hex(key.encode("utf-8", "surrogateescape"))
    return int(digest[:16], 16) % count


def shards(patterns: Iterable[str], count: int, *, ignore_case: bool = False) -> frozenset[int]:
    """Every shard a scope of ``patterns`` can touch, among ``count``."""
    found: set[int] = set()
    for pattern in patterns:
        key = shard_key(pattern, ignore_case=ignore_case)
        if key is None:
            return frozenset(range(count))
        found.add(shard_of(key, count))
    return frozenset(found)


# The format ref's blob, ``refs/agent-locks-meta/format``: a remote holding it keeps its
# table in that many shard journals, and its single journal ref holds a commit that is no
# journal commit (``SHARDED_NOTICE``), which every earlier version refuses to write over.
SHARDED_NOTICE = (
    "this lock table is sharded: upgrade gitlocks\n\n"
    "The lock table of this remote is kept in refs/agent-locks-meta/shards/*, as\n"
    "refs/agent-locks-meta/format says. A gitlocks that reads only this journal ref\n"
    "would miss it: it must not write here. Deleting this ref does not help.\n"
)


def format_blob(count: int) -> bytes:
    return b"shards %d\n" % count


def parse_format(data: bytes, limit: int) -> int | None:
    """The shard count a format blob states; None when it states none in 1..``limit``."""
    digits = data.removeprefix(b"shards ").removesuffix(b"\n")
    if not data.startswith(b"shards ") or not 0 < len(digits) <= 4 or not digits.isdigit():
        return None  # "shards N": N of at most four digits, the first not 0
    count = int(digits)
    return count if 1 <= count <= limit and digits[:1] != b"0" else None


def record_shards(paths: Iterable[str], count: int) -> frozenset[int]:
    """The shards a record of ``paths`` is held in: keys always case folded, so that clones
    whose case rules differ agree."""
    return shards(paths, count, ignore_case=True)
