"""gitlocks.store.refs: which ref names gitlocks may write."""

from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st

from gitlocks.layout import OWN_REF_PREFIXES, STAGING_PREFIX
from gitlocks.store.refs import is_own_ref

OWN = re.compile(
    "^(?:"
    + "|".join(re.escape(p) for p in (*OWN_REF_PREFIXES, STAGING_PREFIX))
    + r")[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)*\Z"
)
PARTS = ["refs/", "agent-locks/", "agent-locks-meta/", "agent-locks-remote/", "heads/", "a",
         "b.lock", ".", "..", "/", "x y", "\n", "é", "-", "_"]  # fmt: skip


@given(st.lists(st.sampled_from(PARTS), max_size=6).map("".join))
@example("refs/agent-locks/abc")
@example("refs/agent-locks/abc\n")
@example("refs/agent-locks/")
@example("refs/agent-locks-meta/journal")
def test_own_refs_are_the_pattern(name: str) -> None:
    expected = OWN.match(name) is not None and not any(
        part in ("", ".", "..") or part.endswith(".lock") for part in name.split("/")
    )
    assert is_own_ref(name) == expected


def test_only_text_names_a_ref() -> None:
    assert not is_own_ref(None)
    assert not is_own_ref(b"refs/agent-locks/abc")
