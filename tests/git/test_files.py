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


REF_LINE = st.tuples(
    st.sampled_from(["0" * 40, "a" * 64, "1" * 40]),
    st.sampled_from(
        ["refs/agent-locks/", "refs/agent-locks-meta/", "refs/heads/", "refs/agent-locks/probe/"]
    ),
    st.text(st.sampled_from(list("abz09-._")), min_size=1, max_size=6),
)


@given(st.lists(REF_LINE, max_size=12), st.booleans())
def test_a_sorted_file_is_read_as_a_whole_one(refs: list[tuple[str, str, str]], peel: bool) -> None:
    """git writes packed-refs sorted by name and says so: the lines under a prefix are
    then found as one run, and read as the whole file would be."""
    import re

    from gitlocks.git.files import _packed

    lines = sorted(
        {f"{prefix}{name}": f"{oid} {prefix}{name}" for oid, prefix, name in refs}.items()
    )
    body = "".join(line + "\n" + (f"^{'2' * 40}\n" if peel else "") for _, line in lines)
    packed = ("# pack-refs with: peeled fully-peeled sorted \n" + body).encode()
    for prefixes in [("refs/agent-locks/",), ("refs/agent-locks-meta/",),
                     ("refs/agent-locks/", "refs/agent-locks-meta/"),
                     ("refs/agent-locks/probe/", "refs/agent-locks/")]:  # fmt: skip
        names = b"|".join(re.escape(p.encode()) for p in prefixes)
        pattern = rb"^((?:[0-9a-f]{40}|[0-9a-f]{64})) ((?:" + names + rb")[^\n]*)$"
        expected = [
            (m.group(2).decode(), m.group(1).decode())
            for m in re.finditer(pattern, packed, re.MULTILINE)
        ]
        assert _packed(packed, prefixes) == expected
