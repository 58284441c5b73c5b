"""gitlocks.git.files: the files gitlocks keeps beside git's."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitlocks.git import files


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
