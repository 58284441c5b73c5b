"""What a remote write compares, 10,000 refs at a time: the shortcuts taken where the
tables are equal against the comparison of every ref they stand for (``store/push.py``'s
``differing``, ``store/mirror.py``'s ``view_moves``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gitlocks.core.record import is_lock_id
from gitlocks.layout import LOCK_PREFIX
from gitlocks.store.mirror import view_moves
from gitlocks.store.push import differing

IDS = st.sampled_from(
    ["1a2355e1ab1-3921c6695e", "1a2355e1ab2-0000000000", "1a2355e1ab3-ffffffffff",
     "1a2355e1ab4-0123456789", "not-a-lock-id", "x/y"]
)  # fmt: skip
BLOBS = st.sampled_from(["a" * 40, "b" * 40, "c" * 40])
TABLES = st.dictionaries(IDS, BLOBS, max_size=6)


def every_ref_differing(leases: dict[str, str], new: dict[str, str]) -> list[str]:
    """The comparison of every ref, as a write made it before the shortcut."""
    return [
        i
        for i in sorted(leases.keys() | new.keys())
        if leases.get(i) != new.get(i) and is_lock_id(i)
    ]


@settings(max_examples=500, deadline=None)
@given(refs=TABLES, changed=TABLES, deleted=st.sets(IDS), out_of_step=TABLES, same=st.booleans())
def test_the_refs_a_push_leases_are_every_one_that_differs(
    refs: dict[str, str],
    changed: dict[str, str],
    deleted: set[str],
    out_of_step: dict[str, str],
    same: bool,
) -> None:
    leases = dict(refs) if same else {**refs, **out_of_step}
    new = {i: v for i, v in refs.items() if i not in deleted} | changed
    touched = deleted | changed.keys()
    assert differing(leases, refs, new, touched) == every_ref_differing(leases, new)


def every_ref_moved(
    basis: dict[str, str], new: dict[str, str], local: dict[str, str]
) -> dict[str, str | None]:
    """The view's moves over every lock either table or the view holds."""
    updates: dict[str, str | None] = {}
    for lock_id in sorted(basis.keys() | new.keys() | local.keys()):
        mine = local.get(lock_id)
        if mine is not None and mine not in (basis.get(lock_id), new.get(lock_id)):
            continue
        if mine != new.get(lock_id):
            updates[LOCK_PREFIX + lock_id] = new.get(lock_id)
    return updates


@settings(max_examples=500, deadline=None)
@given(basis=TABLES, new=TABLES, extra=TABLES, dropped=st.sets(IDS), as_mirrored=st.booleans())
def test_the_view_moves_as_it_would_lock_by_lock(
    basis: dict[str, str],
    new: dict[str, str],
    extra: dict[str, str],
    dropped: set[str],
    as_mirrored: bool,
) -> None:
    """A view as last mirrored, or with locks never pushed, changed or gone by hand."""
    changed = {i: v for i, v in basis.items() if i not in dropped} | extra
    local = dict(basis) if as_mirrored else changed
    got = view_moves(basis, new, local)
    assert got == every_ref_moved(basis, new, local)
    assert list(got) == sorted(got)
