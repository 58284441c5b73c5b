"""User text (reasons, notes, paths) on one line of human output, and the checks of names.

Printed raw, a newline in a reason would forge a line (``FREE src/x`` inside ``HELD``) and
an escape sequence would drive the terminal: :func:`printable` spells them as Python and
git do (``\\n``, ``\\x1b``). JSON output stays exact.
"""

from __future__ import annotations

import re

_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
# Controls, DEL, line and paragraph separators, bidirectional marks, invisible and format
# characters (two names that differ only by one would print alike), and lone surrogates
# (undecodable bytes of a file name). Compiled by ``re`` only when a text needs it.
_UNSAFE = (
    "[\x00-\x1f\x7f-\xa0\xad\u061c\u180e\u200b-\u200f\u2028-\u202f\u205f-\u206f"
    "\ufeff\ufff9-\ufffb\ud800-\udfff]"
)


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    code = ord(ch)
    if ch in _NAMED:
        return _NAMED[ch]
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: the original byte
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with control characters escaped, safe on one line of a terminal."""
    if text.isprintable():  # no character _UNSAFE names is printable: the common case
        return text
    return re.sub(_UNSAFE, _escape, text)


def printable_lines(lines: list[str]) -> str:
    """Lines of human output, each made :func:`printable`, joined by newlines."""
    return "\n".join(printable(line) for line in lines)


# The characters of the names gitlocks checks (holders, lock ids, object ids, ref
# components): a few ASCII ones.
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
NAME_CHARS = ALNUM + "._-"
DIGITS = "0123456789"


def made_of(text: str, chars: str) -> bool:
    """Whether every character of ``text`` is one of ``chars`` (so is the empty text)."""
    return not text.strip(chars)


def is_digits(text: str) -> bool:
    """Whether ``text`` is a number as git and gitlocks write one: ASCII digits, at least
    one. (``str.isdigit`` also takes "²", which ``int()`` refuses, and other scripts'
    digits, which it reads.)"""
    return bool(text) and made_of(text, DIGITS)


def canonical_number(text: str) -> int | None:
    """The number ``text`` is when spelled as ``str(int)`` spells it (no sign, no leading
    zero, ASCII digits: a shard's name), else None."""
    return int(text) if is_digits(text) and (text == "0" or text[0] != "0") else None


def all_text(values: list[object]) -> bool:
    """Whether every one of ``values`` is a ``str`` (joining them says so, in C)."""
    try:
        "".join(values)  # type: ignore[arg-type]
    except TypeError:
        return False
    return True


def first_control(text: str) -> str | None:
    """The first C0 or C1 control, DEL or lone surrogate in ``text``, if any."""
    if text.isprintable():  # none of them is printable: the common case
        return None
    for ch in text:
        code = ord(ch)
        if code < 0x20 or 0x7F <= code <= 0x9F or 0xD800 <= code <= 0xDFFF:
            return ch
    return None


MAX_REASON_CHARS = 1000  # a claim's reason: records stay small
MAX_NOTE_CHARS = 4000  # one progress note


def user_text(value: str, what: str, limit: int) -> str:
    """A reason or note as given: valid UTF-8 and of a sane size (records stay small).
    Too long is refused, never cut: an agent must know its words were not kept."""
    from gitlocks.errors import UsageError  # the error type only where one is raised

    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"the {what} is not valid UTF-8") from None
    if len(value) > limit:
        raise UsageError(f"the {what} is {len(value)} characters long; at most {limit}")
    return value


def shell_word(word: str) -> str:
    """``word`` quoted for a shell, for a command a hint spells out (``shlex.quote``)."""
    import shlex  # only for a hint: it compiles a pattern as it loads

    return shlex.quote(word)
