"""Reading a record's times: every spelling a record may hold comes out in the one
spelling ``format_time`` writes, or is refused, whichever way it is read."""

from __future__ import annotations

import re
from datetime import timedelta

from hypothesis import example, given
from hypothesis import strategies as st

from gitlocks.core.record import (
    MAX_YEAR,
    RecordError,
    canonical_time,
    format_time,
    is_lock_id,
    lock_ids_only,
    new_lock_id,
    parse_time,
)


def by_parsing(text: str, round_up: bool) -> str:
    """What ``canonical_time`` answers, the long way: parse, round a fraction up, write."""
    moment = parse_time(text)
    if round_up and moment.microsecond:
        moment = moment.replace(microsecond=0) + timedelta(seconds=1)
        if moment.year > MAX_YEAR:
            raise RecordError("past the last year")
    return format_time(moment)


def two(low: int, high: int) -> st.SearchStrategy[str]:
    return st.integers(low, high).map(lambda n: f"{n:02d}")


# Near-canonical spellings: any year, month, day and time fields (out of range too),
# with the separators and the ends varied, so both the quick path and the long one run.
TIMES = st.builds(
    lambda y, mo, d, sep, h, mi, s, frac, end: f"{y}-{mo}-{d}{sep}{h}:{mi}:{s}{frac}{end}",
    st.one_of(st.integers(1960, 9010).map(str), st.sampled_from(["0999", "+2026", "٢٠٢٦"])),
    two(0, 13),
    two(0, 32),
    st.sampled_from(["T", " ", "t"]),
    two(0, 24),
    two(0, 60),
    two(0, 61),
    st.sampled_from(["", ".5", ".000001", ".999999"]),
    st.sampled_from(["Z", "z", "+00:00", ""]),
)


@given(TIMES, st.booleans())
def test_a_time_reads_as_parsing_it_would_read_it(text: str, round_up: bool) -> None:
    try:
        expected: str | RecordError = by_parsing(text, round_up)
    except RecordError as exc:
        expected = exc
    try:
        got: str | RecordError = canonical_time(text, round_up=round_up)
    except RecordError as exc:
        got = exc
    if isinstance(expected, RecordError):
        assert isinstance(got, RecordError), (text, got)
    else:
        assert got == expected


def test_the_written_spelling_is_kept_and_an_impossible_day_refused() -> None:
    assert canonical_time("2026-12-01T19:13:00Z") == "2026-12-01T19:13:00Z"
    assert canonical_time("2026-12-01T19:13:00.2Z", round_up=True) == "2026-12-01T19:13:01Z"
    for bad in ("2026-02-30T00:00:00Z", "2026-12-01T24:00:00Z", "1969-12-31T23:59:59Z"):
        try:
            canonical_time(bad)
        except RecordError:
            continue
        raise AssertionError(f"{bad} was read")


# The names a record holds are checked with str methods; each agrees with the regular
# expression its docstring gives, ``\Z`` included (a trailing newline is no name).
NAMES = st.lists(st.sampled_from([*"aZ09._-/@{\n", "HEAD", ".lock", "é", "٣"]), max_size=10).map(
    "".join
) | st.text(st.sampled_from(list("0123456789abcdefA-\n")), max_size=70)


@given(NAMES)
@example("a" * 64)
@example("a" * 65)
@example("0" * 40)
@example("0" * 64 + "\n")
@example("0123456789a-0123456789")
@example("a" * 200)
@example("a/" * 100)
def test_name_checks_are_their_patterns(text: str) -> None:
    from gitlocks.core.record import (
        is_branch,
        is_generated_id,
        is_holder,
        is_lock_id,
        is_object_id,
    )

    assert is_lock_id(text) == bool(re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z", text))
    assert is_generated_id(text) == bool(re.match(r"^[0-9a-f]{11}-[0-9a-f]{10}\Z", text))
    assert is_object_id(text) == bool(re.match(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})\Z", text))
    assert is_holder(text) == bool(re.match(r"^[A-Za-z0-9._-]{1,64}\Z", text))
    branch = (
        r"^(?![-.])(?!HEAD\Z)(?!.*(?:\.\.|@\{|//|/\.|\.lock/|\.lock\Z|/HEAD\Z))"
        r"[A-Za-z0-9._/-]{1,200}(?<![./])\Z"
    )
    assert is_branch(text) == bool(re.match(branch, text))


def test_a_lock_id_with_a_trailing_newline_is_refused() -> None:
    """``$`` once let ``abc\\n`` pass as a lock id, which names no ref."""
    from gitlocks.core.record import is_lock_id

    assert not is_lock_id("abc\n")


# Keys near and far from lock ids: every rule of ``is_lock_id`` broken alone, and any text.
KEYS = st.one_of(
    st.text(alphabet="aZ09._-/é\n ", max_size=70),
    st.text(max_size=5),
    st.sampled_from(["", "a" * 64, "a" * 65, ".a", "-a", "_a", "a.", "A-b_c.d", "a\n", "\uff41"]),
)


@given(st.dictionaries(KEYS, st.integers(), max_size=8))
@example({"a" * 64: 1, "b": 2})
@example({"a" * 65: 1, "b": 2})
@example({"": 1, "b": 2})
@example({".a": 1, "b": 2})
def test_lock_ids_only_keeps_what_is_lock_id_keeps(table: dict[str, int]) -> None:
    """The whole-table check answers as ``is_lock_id`` asked of each key, in order."""
    kept = lock_ids_only(table)
    expected = {k: v for k, v in table.items() if is_lock_id(k)}
    assert kept == expected and list(kept) == list(expected)


def test_ids_one_process_makes_sort_in_the_order_it_made_them() -> None:
    """Many ids fall in one millisecond: each still sorts after the one made before it
    (the youngest waiter of a cycle is the greatest id, and is the one told)."""
    made = [new_lock_id() for _ in range(2000)]
    assert made == sorted(made)
    assert len(set(made)) == len(made)
