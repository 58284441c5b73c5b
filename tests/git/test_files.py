"""gitlocks.git.files: reading refs from git's files."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git
from hypothesis import example, given
from hypothesis import strategies as st
from support.records import write_blob

from gitlocks.git import files

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


def test_a_file_git_packed_is_read_whole(repo: Path) -> None:
    """A packed-refs file git wrote is read in the few passes over its lock refs' lines,
    and finds what reading line by line finds."""
    from gitlocks.git.files import _regions, _whole_region, scan

    head = git(repo, "rev-parse", "HEAD").strip()
    for n in range(50):
        git(repo, "update-ref", f"refs/agent-locks/lock-{n:03}", head)
    git(repo, "update-ref", "refs/agent-locks/loose-one", head)
    git(repo, "pack-refs", "--all")
    git(
        repo,
        "update-ref",
        "refs/agent-locks/lock-007",
        git(repo, "rev-parse", "HEAD^{tree}").strip(),
    )
    packed = (repo / ".git" / "packed-refs").read_bytes()
    ((start, end),) = _regions(packed, (b"refs/agent-locks/",))
    whole = _whole_region(packed[start:end], ("refs/agent-locks/",))
    assert whole is not None and len(whole) == 51
    found = scan(str(repo / ".git"), ("refs/agent-locks/",)).refs
    listed = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/agent-locks/")
    assert found == dict(line.split(" ") for line in listed.splitlines())
    assert next(iter(found)) == "refs/agent-locks/lock-007"  # loose first, as before


@pytest.mark.parametrize(
    "region",
    [
        # a line of three words and a line of one: the words pair up, the lines do not
        f"{'a' * 40} refs/agent-locks/p {'b' * 40}\nrefs/agent-locks/q",
        f"{'a' * 39} refs/agent-locks/p\n{'b' * 41} refs/agent-locks/q",
        f"{'a' * 40}\trefs/agent-locks/p",
        f"{'a' * 40}  refs/agent-locks/p",
        f"{'a' * 40} refs/agent-locks/p\n^{'b' * 40}",
        f"{'A' * 40} refs/agent-locks/p",
        f"{'a' * 40} refs/heads/p",
        f"{'a' * 40} refs/agent-locks/p\x1crefs/agent-locks/q",
    ],
)
def test_a_region_of_other_lines_is_read_line_by_line(region: str) -> None:
    import re

    from gitlocks.git.files import _packed, _whole_region

    data = region.encode()
    assert _whole_region(data, ("refs/agent-locks/",)) is None
    pattern = rb"^([0-9a-f]{40}|[0-9a-f]{64}) (refs/agent-locks/[^\n]*)$"
    expected = [(m[2].decode(), m[1].decode()) for m in re.finditer(pattern, data, re.MULTILINE)]
    assert _packed(data, ("refs/agent-locks/",)) == expected


@given(
    st.lists(PACKED_LINE, max_size=8).map(b"\n".join),
    st.sampled_from(["refs/agent-locks/x", "refs/agent-locks/y", "refs/agent-locks/z",
                     "refs/agent-locks-meta/journal", "refs/heads/main"]),
    st.booleans(),
)  # fmt: skip
# A name on three lines, the first not a valid id: the lines are parsed, the first valid
# one wins (the parse once kept the last).
@example(
    b"\n".join(oid + b" refs/agent-locks/x" for oid in (b"A" * 40, b"0" * 40, b"a" * 64)),
    "refs/agent-locks/x",
    False,
)
def test_one_packed_ref_is_read_as_the_file_is(packed: bytes, name: str, header: bool) -> None:
    """A write reads a few refs of a large file by searching for their lines: the same
    value as parsing its lines, first line winning, whatever else the file holds."""
    from gitlocks.git.files import _packed_value, packed_refs

    if header:
        packed = b"# pack-refs with: peeled fully-peeled sorted \n" + packed
    namespace = name[: name.rfind("/") + 1]
    assert _packed_value(packed, name) == packed_refs(packed, (namespace,)).get(name)


def test_a_region_and_its_refs(repo: Path) -> None:
    """``packed_region`` is the text the lock refs are read from, nothing around it."""
    from gitlocks.git.files import packed_refs, packed_region

    blob = write_blob(repo, b"x")
    for name in ("refs/agent-locks/a", "refs/agent-locks/b", "refs/other/zz", "refs/tags/t"):
        git(repo, "update-ref", name, blob)
    git(repo, "pack-refs", "--all")
    packed = (repo / ".git" / "packed-refs").read_bytes()
    region = packed_region(packed, "refs/agent-locks/")
    assert region == f"{blob} refs/agent-locks/a\n{blob} refs/agent-locks/b".encode()
    locks = ("refs/agent-locks/",)
    assert packed_refs(region, locks) == packed_refs(packed, locks)
    assert packed_region(packed, "refs/agent-locks-meta/") == b""


def test_a_cache_larger_than_the_limit_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``CACHE_LIMIT`` a cache file reads as none (``OSError``), never whole."""
    monkeypatch.setattr(files, "CACHE_LIMIT", 10)
    path = tmp_path / "cache"
    path.write_bytes(b"0123456789")
    assert files.read_cache(str(path))[1] == b"0123456789"
    path.write_bytes(b"0123456789a")
    with pytest.raises(OSError, match="larger than any cache"):
        files.read_cache(str(path))


@pytest.mark.parametrize("cache", [False, True])
def test_a_file_is_replaced_whole(tmp_path: Path, cache: bool) -> None:
    """``write_atomic`` leaves the new contents and no temporary file; a cache's old file
    goes first (no rename over it), and a directory in its place is an error, not lost."""
    from gitlocks.git.files import write_atomic

    path = tmp_path / "cache"
    path.write_bytes(b"old" * 1000)
    write_atomic(path, b"new", cache=cache)
    assert path.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache"]
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "inside").write_bytes(b"kept")
    with pytest.raises(OSError):
        write_atomic(tmp_path / "dir", b"new", cache=cache)
    assert (tmp_path / "dir" / "inside").read_bytes() == b"kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "dir"]
