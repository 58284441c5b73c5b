"""gitlocks.core.journal: reading a journal commit's ``Journal-Seq`` trailer."""

from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st

from gitlocks.core.journal import is_journal_commit, parse_seq

SEQ = re.compile(r"^Journal-Seq: (\d{1,18})$", re.MULTILINE)
LINES = st.lists(
    st.sampled_from(
        ["Journal-Seq: 12", "Journal-Seq: ", "Journal-Seq: 1x", "Journal-Seq: ٣", "journal-seq: 4",
         " Journal-Seq: 5", "Journal-Seq: 7 ", "Journal-Seq: 1234567890123456789",
         "Journal-Seq: 123456789012345678", "gitlocks acquire", "", "\r", "Journal-Seq: 9\r"]
    ),
    max_size=5,
).map("\n".join)  # fmt: skip


@given(LINES | st.text(st.sampled_from(list("Journal-Seq: 0123\n\r")), max_size=40))
@example("Journal-Seq: 3\n")  # the $ before a final newline
def test_the_trailer_is_read_as_the_pattern_reads_it(message: str) -> None:
    found = SEQ.search(message)
    assert parse_seq(message) == (int(found.group(1)) if found else 0)
    assert is_journal_commit(1, 0, message) == (found is not None)
