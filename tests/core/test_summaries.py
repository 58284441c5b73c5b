"""``Summaries``: columns as decoded and summaries put since, against a plain dict."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from support.records import summary_columns

from gitlocks.core.summaries import Summaries, Summary

IDS = [f"l{n}" for n in range(8)]
HOLDERS = ("h0", "h1", "h2")
STAMPS = ("2030-01-01T00:00:00Z", "2030-01-01T01:00:00Z", "2030-01-01T02:00:00Z")
BUCKETS = ("", "src", "lib", "docs")

SUMMARY = st.builds(
    Summary,
    st.sampled_from(IDS),
    st.sampled_from(HOLDERS),
    st.sampled_from([None, "h0", "p"]),
    st.sampled_from(STAMPS),
    st.lists(st.sampled_from(BUCKETS), min_size=1, max_size=3, unique=True).map(
        lambda b: tuple(sorted(b))
    ),
    st.booleans(),
)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("set"), SUMMARY),
        st.tuples(st.just("del"), st.sampled_from(IDS)),
        st.tuples(st.just("pop"), st.sampled_from(IDS)),
        st.tuples(st.just("many"), st.lists(SUMMARY, max_size=4)),
    ),
    max_size=10,
)


def _replaced(summary: Summary, **changes: Any) -> Summary:
    """``summary`` with ``changes``: a tuple of its fields, made again."""
    names = ("id", "holder", "parent", "expires_at", "buckets", "landing")
    fields = dict(zip(names, summary, strict=True))
    return Summary(**{**fields, **changes})


def check(found: Summaries, expected: dict[str, Summary]) -> None:
    """Every answer ``found`` gives is the one a dict of the same summaries gives."""
    assert dict(found.items()) == expected
    # Each held summary as it is, then each changed in one field or unknown: told apart.
    made = dict(expected)
    for n, (lock_id, s) in enumerate(expected.items()):
        field = n % 6
        if field == 0:
            made[lock_id] = _replaced(s, holder=s.holder + "x")
        elif field == 1:
            made[lock_id] = _replaced(s, parent=None if s.parent else "q")
        elif field == 2:
            made[lock_id] = _replaced(s, expires_at=s.expires_at + "x")
        elif field == 3:
            made[lock_id] = _replaced(s, buckets=(*s.buckets, "zz"))
        elif field == 4:
            made[lock_id] = _replaced(s, landing=not s.landing)
    made["other"] = Summary("other", "h0", None, STAMPS[0], ("",), False)
    assert found.differing(expected) == []
    assert found.differing(made) == [i for i, s in made.items() if expected.get(i) != s]
    assert sorted(found) == sorted(expected)
    assert len(found) == len(expected)
    assert found.ids() == set(expected)
    assert found.has_ids(set(expected))
    assert not found.has_ids(set(expected) | {"other"})
    assert not found.has_ids({*list(expected)[1:], "other"})
    for lock_id in IDS:
        assert (lock_id in found) == (lock_id in expected)
        assert found.get(lock_id) == expected.get(lock_id)
        if lock_id in expected:
            assert found.parent(lock_id) == expected[lock_id].parent
    groups: dict[str, set[str]] = {}
    for lock_id, s in expected.items():
        groups.setdefault(s.holder, set()).add(lock_id)
    assert found.by_holder() == groups
    for holder in HOLDERS:
        assert found.held_by(holder) == groups.get(holder, set())
    for wanted in ({"src"}, {"", "lib"}, set(BUCKETS), {"none"}):
        assert found.in_buckets(wanted) == {
            b: {i for i, s in expected.items() if b in s.buckets} for b in wanted
        }
    assert sorted(found.landing()) == sorted(i for i, s in expected.items() if s.landing)
    for cutoff in STAMPS:
        after = {i for i, s in expected.items() if s.expires_at > cutoff}
        assert sorted(found.expiring(cutoff, after=True)) == sorted(after)
        assert set(found.expiring(cutoff, after=False)) == set(expected) - after
    stamps = [s.expires_at for s in expected.values()]
    assert found.earliest() == min(stamps, default=None)
    assert found.latest() == max(stamps, default=None)


@settings(max_examples=300)
@given(st.lists(SUMMARY, max_size=8, unique_by=lambda s: s.id), OPS, st.booleans())
def test_summaries_answer_as_a_dict_does(
    rows: list[Summary], ops: list[tuple[str, object]], as_columns: bool
) -> None:
    found = Summaries.of_columns(summary_columns(rows)) if as_columns else Summaries()
    if not as_columns:
        found.put_many({s.id: s for s in rows})
    expected = {s.id: s for s in rows}
    check(found, expected)
    for op, arg in ops:
        if op == "set":
            assert isinstance(arg, Summary)
            found[arg.id] = expected[arg.id] = arg
        elif op == "many":
            assert isinstance(arg, list)
            batch = {s.id: s for s in arg}
            found.put_many(batch)
            expected.update(batch)
        elif op == "del":
            assert isinstance(arg, str)
            if arg in expected:
                del found[arg], expected[arg]
            else:
                try:
                    del found[arg]
                except KeyError:
                    pass
                else:
                    raise AssertionError(f"deleted {arg}, which was not there")
        else:
            assert isinstance(arg, str)
            assert found.pop(arg, None) == expected.pop(arg, None)
        check(found, expected)


def test_a_summary_of_the_columns_is_made_when_asked_for() -> None:
    rows = [
        Summary("a", "h", None, STAMPS[0], ("", "src"), False),
        Summary("b", "k", "h", STAMPS[1], ("lib",), True),
    ]
    found = Summaries.of_columns(summary_columns(rows))
    assert found["a"] == rows[0] and found["b"] == rows[1]
    assert found["a"].buckets == ("", "src")
    assert found != Summaries({"a": rows[0]})
    assert found == {"a": rows[0], "b": rows[1]}


@settings(max_examples=200)
@given(
    st.lists(SUMMARY, max_size=8, unique_by=lambda s: s.id),
    st.lists(SUMMARY, max_size=4, unique_by=lambda s: s.id),
    st.lists(st.tuples(st.sampled_from(IDS), st.sampled_from(["del", "put", "many"])), max_size=6),
)
def test_changes_while_iterating_never_yield_an_id_twice_or_one_gone(
    rows: list[Summary], put: list[Summary], changes: list[tuple[str, str]]
) -> None:
    """Each id there when iteration starts is yielded once, while it is still there: one
    deleted meanwhile is passed over (reading its summary would raise ``KeyError``), one
    put again is not yielded twice."""
    found = Summaries.of_columns(summary_columns(rows))
    found.put_many({s.id: s for s in put if s.id not in {r.id for r in rows}})
    start = list(found)
    seen: list[str] = []
    pending = list(changes)
    for lock_id, summary in found.items():
        assert summary == found[lock_id]
        seen.append(lock_id)
        if pending:
            other, change = pending.pop(0)
            if change == "del":
                found.pop(other, None)
            elif other in found and change == "put":
                found[other] = _replaced(found[other], holder="again")
            elif other in found:
                found.put_many({other: _replaced(found[other], holder="again")})
    assert len(seen) == len(set(seen))
    assert set(seen) <= set(start)
    assert set(start) - set(seen) <= set(start) - set(found)


def near(s: Summary, other: str) -> list[Summary]:
    """``s``, and ``s`` changed in one field each: a record that differs from its kept
    summary in that field only (filed under ``other`` lock's id, a parent of "" for none)."""
    return [
        s,
        _replaced(s, id=other),
        _replaced(s, holder=s.holder + "x"),
        _replaced(s, parent="" if s.parent is None else None),
        _replaced(s, expires_at=s.expires_at + "x"),
        _replaced(s, buckets=(*s.buckets, "zz")),
        _replaced(s, buckets=("\n".join(s.buckets),)),
        _replaced(s, landing=not s.landing),
    ]


@settings(max_examples=300)
@given(st.lists(SUMMARY, max_size=8, unique_by=lambda s: s.id), OPS, st.data())
def test_differing_finds_what_comparing_each_summary_found(
    rows: list[Summary], ops: list[tuple[str, object]], data: st.DataObject
) -> None:
    """``differing`` names exactly the ids the check it replaced stopped at: no summary
    held under the id, or one that is not the record's (``Summary.of(record) !=
    summaries[lock_id]``), whether held in the columns, put since, or gone from them."""
    found = Summaries.of_columns(summary_columns(rows))
    for op, arg in ops:
        if op == "set":
            assert isinstance(arg, Summary)
            found[arg.id] = arg
        elif op == "many":
            assert isinstance(arg, list)
            found.put_many({s.id: s for s in arg})
        else:
            assert isinstance(arg, str)
            found.pop(arg, None)
    # Each id's record as it was kept, as it was put since, as the columns had it before
    # (gone or put again since), or one of those changed in one field.
    made: dict[str, Summary] = {}
    for lock_id in IDS:
        options = [s for s in rows if s.id == lock_id]
        if lock_id in found:
            options.append(found[lock_id])
        candidates = [c for s in options for c in near(s, "l0" if lock_id != "l0" else "l1")]
        taken: bool = data.draw(st.booleans())
        if candidates and taken:
            made[lock_id] = data.draw(st.sampled_from(candidates))
    old = [i for i, s in made.items() if i not in found or s != found[i]]
    assert found.differing(made) == old
