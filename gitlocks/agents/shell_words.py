"""A shell script as words, as far as the Codex patch reader reads one: each word says
whether an expansion makes it unknowable here, and whether it reads the shell's
directory; what cannot be read for certain raises ``Unjudgeable``.
"""

from __future__ import annotations

import re

from gitlocks.agents.edits import Unjudgeable
from gitlocks.core.text import ALNUM
from gitlocks.core.value import Value


class Word(Value):
    """One shell word: its text with quotes removed, and whether the shell decides it only
    when it runs (an expansion: ``$``, a command substitution, ``~``, a glob)."""

    __slots__ = ("dynamic", "pwd", "text")

    def __init__(
        self,
        text: str,
        dynamic: bool = False,
        pwd: bool = False,
    ) -> None:
        self.text = text
        self.dynamic = dynamic
        self.pwd = pwd  # it starts with $PWD (or ${PWD}), then only literal text


_OPERATORS = ("&&", "||", ";;", "|&", ";", "&", "|", "(", ")", "<", ">")
_BREAK = " \t\n;&|()<>"
_NAME_CHARS = ALNUM + "_"  # what a shell variable's name is made of
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def words(script: str) -> list[Word | str]:
    """``script`` as shell words and operators (``;`` for a newline); ``Unjudgeable``
    where it cannot be split for certain (an unterminated quote)."""
    out: list[Word | str] = []
    i, n = 0, len(script)
    while i < n:
        c = script[i]
        if c in " \t":
            i += 1
        elif script.startswith("\\\n", i):  # a line continued
            i += 2
        elif c == "\n":
            out.append(";")
            i += 1
        elif c == "#":  # a comment, to the end of the line
            end = script.find("\n", i)
            i = n if end < 0 else end
        elif op := next((op for op in _OPERATORS if script.startswith(op, i)), None):
            out.append(op)
            i += len(op)
        else:
            word, i = word_at(script, i)
            out.append(word)
    return out


def word_at(script: str, i: int) -> tuple[Word, int]:
    """The word starting at ``i``, and where it ends."""
    text: list[str] = []
    dynamic = pwd = False
    n = len(script)
    start = i
    while i < n and script[i] not in _BREAK:
        c = script[i]
        if c == "\\":
            if script.startswith("\\\n", i):
                i += 2
                continue
            text.append(script[i + 1 : i + 2])
            i += 2
        elif c == "'":
            end = script.find("'", i + 1)
            if end < 0:
                raise Unjudgeable("an unterminated quote before apply_patch")
            text.append(script[i + 1 : end])
            i = end + 1
        elif c == '"':
            i += 1
            while i < n and script[i] != '"':
                if script[i] == "\\" and i + 1 < n:
                    text.append(script[i + 1])
                    i += 2
                    continue
                if script[i] in "$`":
                    if i == start + 1 and not text and _pwd_at(script, i):
                        pwd = True
                        i += _pwd_at(script, i)
                        continue
                    dynamic = True
                text.append(script[i])
                i += 1
            if i >= n:
                raise Unjudgeable("an unterminated quote before apply_patch")
            i += 1
        elif c in "$`":
            if script.startswith("$(", i):
                raise Unjudgeable("a command substitution before apply_patch")
            if i == start and _pwd_at(script, i):
                pwd = True
                i += _pwd_at(script, i)
                continue
            dynamic = True
            text.append(c)
            i += 1
        else:
            if c in "*?[{}" or (c == "~" and i == start):
                dynamic = True
            text.append(c)
            i += 1
    found = "".join(text)
    if found in ("{", "}") and script[start] in "{}":
        dynamic = False  # a group's braces, not an expansion
    return Word(found, dynamic, pwd), i


def _pwd_at(script: str, i: int) -> int:
    """The length of a ``$PWD`` or ``${PWD}`` at ``i`` (not ``$PWDX``); 0 for none."""
    if script.startswith("${PWD}", i):
        return 6
    after = script[i + 4 : i + 5]
    if script.startswith("$PWD", i) and not (after and after in _NAME_CHARS):
        return 4
    return 0
