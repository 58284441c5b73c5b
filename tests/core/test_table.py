"""The table's groups (ids by holder, by bucket) are gathered on first use and kept right
through puts and removes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from support.records import summary_columns

from gitlocks.core.record import LockRecord
from gitlocks.core.summaries import Summaries, Summary
from gitlocks.core.table import LazyRecords, Table

HOLDERS = ("h0", "h1", "h2")
PATHS = ("a/**", "b/x", "**/c", "a/b", "*.py")
STAMPS = ("2030-01-01T00:00:00Z", "2030-01-01T01:00:00Z", "2030-01-01T02:00:00Z")


def record(
    n: int,
    holder: str,
    paths: tuple[str, ...],
    expires: str,
    parent: str | None,
    waits: bool = False,
) -> LockRecord:
    """A record; ``waits``: one waiting for its commits to land in main."""
    return LockRecord(
        id=f"l{n}",
        holder=holder,
        paths=paths,
        parent=parent,
        created_at="2029-12-31T00:00:00Z",
        renewed_at="2029-12-31T00:00:00Z",
        expires_at=expires,
        until_merged="main" if waits else None,
        awaiting=("0" * 40,) if waits else (),
    )


records = st.builds(
    record,
    st.integers(0, 6),
    st.sampled_from(HOLDERS),
    st.lists(st.sampled_from(PATHS), min_size=1, max_size=2, unique=True).map(tuple),
    st.sampled_from(STAMPS),
    st.sampled_from((None, "h0", "h1")),
)
# Each step: ask a question (which gathers a group), put a record, or remove one.
steps = st.lists(
    st.one_of(
        st.tuples(st.just("ask"), st.sampled_from(HOLDERS), st.sampled_from(PATHS)),
        st.tuples(st.just("put"), records),
        st.tuples(st.just("remove"), st.integers(0, 6)),
    ),
    max_size=12,
)


def lazy(found: dict[str, LockRecord]) -> Table:
    return Table(
        records=LazyRecords(found, lambda ids: {i: found[i] for i in ids}),
        summaries=Summaries({i: Summary.of(r) for i, r in found.items()}),
    )


def answers(table: Table) -> object:
    from gitlocks.core.scope import ScopeEntry

    return (
        sorted(table.holders()),
        {h: [r.id for r in table.held_by(h)] for h in HOLDERS},
        {h: table.parent_of(h) for h in HOLDERS},
        {h: sorted(table.descendants(h)) for h in HOLDERS},
        {p: sorted(table.candidates([ScopeEntry(p)])) for p in PATHS},
        {p: sorted(table.overlaps([ScopeEntry(p)])) for p in PATHS},
        {s: [r.id for r in table.expired(s)] for s in STAMPS},
    )


@settings(max_examples=150, deadline=None)
@given(st.lists(records, max_size=6), steps)
def test_groups_gathered_late_agree_with_a_table_built_afresh(
    start: list[LockRecord], ops: list[tuple[object, ...]]
) -> None:
    from gitlocks.core.scope import ScopeEntry

    found = {r.id: r for r in start}
    table = lazy(dict(found))
    for op in ops:
        if op[0] == "ask":
            holder, pattern = str(op[1]), str(op[2])
            table.held_by(holder)
            table.overlaps([ScopeEntry(pattern)])
        elif op[0] == "put":
            assert isinstance(op[1], LockRecord)
            table.put(op[1])
            found[op[1].id] = op[1]
        else:
            lock_id = f"l{op[1]}"
            table.remove(lock_id)
            found.pop(lock_id, None)
        assert answers(table) == answers(lazy(dict(found)))
    table.holders()  # every holder gathered: later changes keep them all
    for r in start:
        table.remove(r.id)
        found.pop(r.id, None)
        assert answers(table) == answers(lazy(dict(found)))


# --- a table of kept columns answers as one of records -------------------------------------

LANDING_PATHS = ("a/**", "b/x", "**/c", "A/q", "./b/y", "x/../a/z", "*.py")


full_records = st.builds(
    record,
    st.integers(0, 7),
    st.sampled_from((*HOLDERS, "p")),
    st.lists(st.sampled_from(LANDING_PATHS), min_size=1, max_size=3, unique=True).map(tuple),
    st.sampled_from(STAMPS),
    st.sampled_from((None, "h0", "h1", "p")),
    st.booleans(),
)


def of_columns(found: dict[str, LockRecord]) -> Table:
    """A lazily read table whose summaries are columns, as a kept judgement gives them."""
    columns = summary_columns([Summary.of(r) for r in found.values()])
    return Table(
        records=LazyRecords(found, lambda ids: {i: found[i] for i in ids}),
        summaries=Summaries.of_columns(columns),
    )


def every_answer(table: Table) -> object:
    from gitlocks.core.scope import ScopeEntry

    def ids(records: list[LockRecord]) -> list[str]:
        return [r.id for r in records]

    everyone = (*HOLDERS, "p")
    return (
        table.holders(),  # in the order they come, as a dict of the summaries gives them
        {h: ids(table.held_by(h)) for h in everyone},
        {h: table.parent_of(h) for h in everyone},
        {h: table.ancestors(h, "p") for h in everyone},
        {h: sorted(table.descendants(h)) for h in everyone},
        {p: sorted(table.candidates([ScopeEntry(p)])) for p in LANDING_PATHS},
        {p: sorted(table.overlaps([ScopeEntry(p)]).items()) for p in LANDING_PATHS},
        {s: ids(table.expired(s)) for s in STAMPS},
        {s: ids(table.live(s)) for s in STAMPS},
        ids(table.landing()),
        {h: sorted(r.id for r in table if r in table.family(h, None)) for h in everyone},
        {h: sorted(r.id for r in table if r in table.unblocking(h, "p")) for h in everyone},
        dict(table.summaries),
        sorted(r.id for r in table),
    )


@settings(max_examples=150, deadline=None)
@given(
    st.lists(full_records, max_size=7, unique_by=lambda r: r.id),
    st.lists(
        st.one_of(
            st.tuples(st.just("ask"), st.sampled_from(HOLDERS), st.sampled_from(LANDING_PATHS)),
            st.tuples(st.just("put"), full_records),
            st.tuples(st.just("remove"), st.integers(0, 7)),
        ),
        max_size=12,
    ),
)
def test_a_table_of_columns_answers_as_a_table_of_records(
    start: list[LockRecord], ops: list[tuple[object, ...]]
) -> None:
    """Every question, after any puts and removes, is answered from kept columns as from
    the records themselves (a table not read lazily makes a summary of each). Asked once,
    at the end: a question gathers groups the changes after it then keep, so asking all
    of them first would leave the columns' own answers untried."""
    from gitlocks.core.scope import ScopeEntry

    found = {r.id: r for r in start}
    columns, records = of_columns(dict(found)), Table(records=dict(found))
    for op in ops:
        for table in (columns, records):
            if op[0] == "ask":
                table.held_by(str(op[1]))
                table.overlaps([ScopeEntry(str(op[2]))])
            elif op[0] == "put":
                assert isinstance(op[1], LockRecord)
                table.put(op[1])
            else:
                table.remove(f"l{op[1]}")
    assert every_answer(columns) == every_answer(records)
