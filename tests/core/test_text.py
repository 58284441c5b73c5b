"""gitlocks.core.text: the checks written with str methods agree with the regular
expressions they replace, on every text, the odd characters included."""

from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st

from gitlocks.core.text import (
    NAME_CHARS,
    canonical_number,
    first_control,
    is_digits,
    made_of,
    printable,
)

# Text any check may meet: the characters names are made of, the ones that end or split
# them, controls, separators, a lone surrogate, non-ASCII letters and digits.
ODD = "/.-_\n\r\t \\*?[]:\x00\x1f\x7f\x85\x9f\xa0\xad\u061c\u200b\u2028\u202e\ufeff\udc80é٣"
TEXT = st.text(st.sampled_from(list(NAME_CHARS + ODD)), max_size=30) | st.text(max_size=30)

UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\xa0\xad\u061c\u180e\u200b-\u200f\u2028-\u202f\u205f-\u206f"
    "\ufeff\ufff9-\ufffb\ud800-\udfff]"
)
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


@given(TEXT)
def test_printable_leaves_alone_exactly_what_has_nothing_to_escape(text: str) -> None:
    assert (printable(text) == text) == (UNSAFE.search(text) is None)


@given(TEXT)
@example("a\x85b")  # a C1 control: not printable, and a control
@example("a\xa0b")  # not printable, and no control
def test_first_control_is_the_pattern(text: str) -> None:
    found = CONTROL.search(text)
    assert first_control(text) == (found.group() if found else None)


@given(TEXT)
def test_made_of_is_a_character_class(text: str) -> None:
    assert made_of(text, NAME_CHARS) == bool(re.fullmatch(r"[A-Za-z0-9._-]*", text))
    assert made_of(text, "0123456789abcdef") == bool(re.fullmatch(r"[0-9a-f]*", text))


@given(st.text(alphabet="0123456789\u00b2\u0661\u0662 +-_x", max_size=6))  # ², Arabic-Indic 1, 2
def test_digits_are_ascii_digits_and_a_canonical_number_is_str_of_int(text: str) -> None:
    ascii_digits = text != "" and all("0" <= c <= "9" for c in text)
    assert is_digits(text) == ascii_digits
    expected = int(text) if ascii_digits and str(int(text)) == text else None
    assert canonical_number(text) == expected
