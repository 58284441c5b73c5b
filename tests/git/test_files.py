"""gitlocks.git.files: reading refs from git's files."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

# packed-refs lines are read with bytes methods; they agree with the pattern git's own
# format gives: "<40 or 64 hex> <name>", peeled ("^...") and header ("# ...") lines not.
PACKED_LINE = st.sampled_from(
    [b"0" * 40, b"a" * 64, b"A" * 40, b"0" * 39, b"^" + b"1" * 40, b"# pack-refs with: peeled", b""]
).flatmap(
    lambda oid: st.sampled_from(
        [b" refs/agent-locks/x", b" refs/agent-locks-meta/journal", b" refs/heads/main",
         b"  refs/agent-locks/y", b" refs/agent-locks/\xff", b"", b" refs/agent-locks/z\r"]
    ).map(lambda name: oid + name)
)  # fmt: skip


@given(st.lists(PACKED_LINE, max_size=8).map(b"\n".join))
def test_packed_lines_are_the_pattern(packed: bytes) -> None:
    import re

    from gitlocks.git.files import _packed

    prefixes = ("refs/agent-locks/", "refs/agent-locks-meta/")
    names = rb"(?:refs/agent-locks/|refs/agent-locks-meta/)"
    pattern = rb"^((?:[0-9a-f]{40}|[0-9a-f]{64})) (" + names + rb"[^\n]*)$"
    expected = [
        (m.group(2).decode("utf-8", "replace"), m.group(1).decode())
        for m in re.finditer(pattern, packed, re.MULTILINE)
    ]
    assert _packed(packed, prefixes) == expected
