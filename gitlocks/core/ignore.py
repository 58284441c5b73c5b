"""``.alockignore``: paths nobody needs to claim, in gitignore syntax (docs/design.md,
section 6.4). Pure: callers read the file; this module matches.

git's rules (``dir.c``, ``wildmatch.c``) byte for byte, without git's backtracking: every
line is an automaton, and all the lines run together as one bit-parallel automaton (a bit
per state, a Python integer per set of states).
"""

from __future__ import annotations

import os
from functools import cache

from gitlocks.core.scope import WHOLE_TREE, ScopeEntry, normalize_pattern
from gitlocks.core.value import Value
from gitlocks.errors import InvalidPattern
from gitlocks.layout import IGNORE_FILE

MAX_IGNORE_BYTES = 64 * 1024  # a committed list of a few patterns; more is not read

_SLASH = 0x2F
_ALL = (1 << 256) - 2  # every byte but NUL, which no path holds
_NO_SLASH = _ALL & ~(1 << _SLASH)


def _bytes_of(chars: bytes | range) -> int:
    mask = 0
    for b in chars:
        mask |= 1 << b
    return mask


@cache
def _classes() -> dict[bytes, int]:
    """wildmatch's character classes, by git's ctype.c: built when a line first names one."""
    return {
        b"alnum": _bytes_of(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"),
        b"alpha": _bytes_of(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"),
        b"blank": _bytes_of(b" \t"),
        b"cntrl": _bytes_of(range(1, 0x20)) | 1 << 0x7F,
        b"digit": _bytes_of(b"0123456789"),
        b"graph": _bytes_of(range(0x21, 0x7F)),
        b"lower": _bytes_of(b"abcdefghijklmnopqrstuvwxyz"),
        b"print": _bytes_of(range(0x20, 0x7F)),
        b"punct": _bytes_of(b"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
        b"space": _bytes_of(b"\t\n\r "),
        b"upper": _bytes_of(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
        b"xdigit": _bytes_of(b"0123456789ABCDEFabcdef"),
    }


class _State(Value):
    """One state of a line's automaton, numbered by its place in the list."""

    __slots__ = ("loop", "skip1", "skip2", "step")

    def __init__(
        self,
        step: int = 0,
        loop: int = 0,
        skip1: bool = False,
        skip2: bool = False,
    ) -> None:
        self.step = step  # the bytes that move on to the next state
        self.loop = loop  # the bytes that stay here
        self.skip1 = skip1  # the next state is reached by reading nothing
        self.skip2 = skip2  # so is the one after it


class _Dead(Exception):
    """A line git reads but that can never match (an unterminated ``[``, a lone ``\\``)."""


def _parse_class(p: bytes, i: int) -> tuple[int, int]:
    """The bytes the class whose ``[`` is at ``i - 1`` matches, and the index after its
    ``]``; wildmatch's reading exactly (a leading ``]`` is literal, ``!`` or ``^`` negates,
    ``-`` between two characters is a range, ``[:name:]`` a named class)."""
    n = len(p)
    negated = i < n and p[i] in b"!^"
    i += negated
    members = 0
    prev = 0
    if i >= n:
        raise _Dead
    ch = p[i]
    while True:
        if ch == 0x5C:  # "\": the next byte, whatever it is
            i += 1
            if i >= n:
                raise _Dead
            ch = p[i]
            members |= 1 << ch
        elif ch == 0x2D and prev and i + 1 < n and p[i + 1] != 0x5D:  # a range
            i += 1
            ch = p[i]
            if ch == 0x5C:
                i += 1
                if i >= n:
                    raise _Dead
                ch = p[i]
            members |= _bytes_of(range(prev, ch + 1))
            ch = 0
        elif ch == 0x5B and i + 1 < n and p[i + 1] == 0x3A:  # "[:"
            end = p.find(b"]", i + 2)
            if end < 0:
                raise _Dead
            if end - (i + 2) - 1 < 0 or p[end - 1] != 0x3A:
                members |= 1 << ch  # no ":]": a plain "["
            else:
                named = _classes().get(p[i + 2 : end - 1])
                if named is None:
                    raise _Dead
                members |= named
                ch = 0
                i = end
        else:
            members |= 1 << ch
        prev = ch
        i += 1
        if i >= n:
            raise _Dead
        ch = p[i]
        if ch == 0x5D:
            break
    if negated:
        members = _ALL & ~members
    return members & _NO_SLASH, i + 1


def _states(p: bytes, start: int, pathname: bool) -> list[_State]:
    """wildmatch's reading of ``p`` as automaton states. ``start`` is where git starts
    wildmatch after comparing the literal prefix itself: a ``**`` there counts as
    standing at the start of the pattern."""
    out: list[_State] = []
    i, n = 0, len(p)
    while i < n:
        b = p[i]
        if b == 0x5C:  # "\x": x itself; a lone "\" at the end never matches
            if i + 1 >= n:
                raise _Dead
            out.append(_State(step=1 << p[i + 1]))
            i += 2
        elif b == 0x3F:  # "?"
            out.append(_State(step=_NO_SLASH))
            i += 1
        elif b == 0x5B:  # "["
            members, i = _parse_class(p, i + 1)
            out.append(_State(step=members))
        elif b == 0x2A:  # "*" or a run of them
            j = i
            while j < n and p[j] == 0x2A:
                j += 1
            whole = (i == start or p[i - 1] == _SLASH) and (
                j == n or p[j] == _SLASH or p[j : j + 2] == b"\\/"
            )
            if pathname and j - i >= 2 and whole and j < n and p[j] == _SLASH:
                # "**/": nothing, or anything that ends with "/" (a run of them is one).
                if out[-2:] != _ANY_DIRS:
                    out += _ANY_DIRS
                i = j + 1
            elif pathname and j - i >= 2 and whole:
                out.append(_State(loop=_ALL, skip1=True))  # "**" at the end: anything
                i = j
            else:
                out.append(_State(loop=_NO_SLASH, skip1=True))
                i = j
        else:
            out.append(_State(step=1 << b))
            i += 1
    return out


# "**/": an entry state that skips both, or a state that reads anything until a "/".
_ANY_DIRS = [_State(skip1=True, skip2=True), _State(step=1 << _SLASH, loop=_ALL)]


def _trim_trailing_spaces(line: bytes) -> bytes:
    """git's trim_trailing_spaces: trailing spaces go, but for one escaped by a backslash
    (the last of an odd run: each pair of backslashes is one escaped backslash)."""
    stripped = line.rstrip(b" ")
    escaped = (len(stripped) - len(stripped.rstrip(b"\\"))) % 2
    return stripped + b" " if escaped and len(stripped) < len(line) else stripped


# A line: (the pattern without "!" and leading or trailing "/", whether "!" re-includes,
# whether it has no "/" (matching a name at any depth), whether a trailing "/" made it
# match directories only), and its states (the accepting one follows the last).
_Line = tuple[tuple[bytes, bool, bool, bool], list[_State]]


def _parse_line(raw: bytes) -> _Line | None:
    """One line of the file, as git's add_patterns_from_buffer and parse_path_pattern read
    it; None for a comment, a blank line, or one that can never match."""
    if not raw or raw.startswith(b"#"):
        return None
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    p = _trim_trailing_spaces(raw.split(b"\0", 1)[0])  # git reads a line as a C string
    negative = p.startswith(b"!")
    p = p[1:] if negative else p
    dir_only = p.endswith(b"/")
    p = p[:-1] if dir_only else p
    basename = b"/" not in p
    if not basename and p.startswith(b"/"):
        p = p[1:]
    if not p:
        return None
    try:
        # where git starts wildmatch: after the bytes before the first glob special
        simple = next((i for i, b in enumerate(p) if b in b"*?[\\"), len(p))
        states = _states(p, simple, pathname=not basename)
    except _Dead:
        return None
    return (p, negative, basename, dir_only), states


class IgnoreList:
    """The patterns of one ``.alockignore``; an empty list ignores nothing."""

    def __init__(self, text: str | bytes = "") -> None:
        raw = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
        if raw.startswith(b"\xef\xbb\xbf"):  # git skips a UTF-8 byte order mark
            raw = raw[3:]
        lines = [line for line in map(_parse_line, raw.split(b"\n")) if line is not None]
        self._lines = len(lines)
        self.parsed = [key for key, _ in lines]
        step: dict[int, list[int]] = {}  # byte set -> the states that read it
        loop: dict[int, list[int]] = {}
        skip1: list[int] = []
        skip2: list[int] = []
        path_start: list[int] = []  # the first state of each line, by where it starts
        name_start: list[int] = []
        accept_dir: list[int] = []
        accept_file: list[int] = []
        negative: list[int] = []
        pos = 0
        for (_, negated, basename, dir_only), states in lines:
            (name_start if basename else path_start).append(pos)
            for state in states:
                if state.step:
                    step.setdefault(state.step, []).append(pos)
                if state.loop:
                    loop.setdefault(state.loop, []).append(pos)
                if state.skip1:
                    skip1.append(pos)
                if state.skip2:
                    skip2.append(pos)
                pos += 1
            # Accepting states are in line order: the highest one set is the last line
            # that matches, the one git lets decide.
            accept_dir.append(pos)
            if not dir_only:
                accept_file.append(pos)
            if negated:
                negative.append(pos)
            pos += 1
        self._step = [(m, _bits(ps, pos)) for m, ps in step.items()]
        self._loop = [(m, _bits(ps, pos)) for m, ps in loop.items()]
        self._skip1, self._skip2 = _bits(skip1, pos), _bits(skip2, pos)
        self._path_start, self._name_start = _bits(path_start, pos), _bits(name_start, pos)
        self._accept_dir, self._accept_file = _bits(accept_dir, pos), _bits(accept_file, pos)
        self._negative = _bits(negative, pos)
        self._by_byte: dict[int, tuple[int, int]] = {}

    def __bool__(self) -> bool:
        return self._lines > 0

    def _tables(self, b: int) -> tuple[int, int]:
        """The states that move on reading byte ``b``, and those that stay."""
        found = self._by_byte.get(b)
        if found is None:
            steps = loops = 0
            for mask, states in self._step:
                if mask >> b & 1:
                    steps |= states
            for mask, states in self._loop:
                if mask >> b & 1:
                    loops |= states
            found = self._by_byte[b] = (steps, loops)
        return found

    def _read(self, states: int, b: int) -> int:
        steps, loops = self._tables(b)
        return self._close(((states & steps) << 1) | (states & loops))

    def _close(self, states: int) -> int:
        """Add every state reached by reading nothing (a few rounds: runs of skips are
        short, since a run of ``**/`` is kept as one)."""
        skip1, skip2 = self._skip1, self._skip2
        while True:
            more = states | ((states & skip1) << 1) | ((states & skip2) << 2)
            if more == states:
                return states
            states = more

    def ignored(self, path: str) -> bool:
        """Whether the root-relative ``path`` is one nobody needs to claim (as ``git
        check-ignore`` answers for a file; a trailing ``/`` names a directory)."""
        if not self._lines:
            return False
        try:  # a file name's undecodable bytes come back as they were read
            raw = path.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raw = path.encode("utf-8", "surrogatepass")
        names = [n for n in raw.split(b"/") if n and n != b"."]
        states = 0
        for depth, name in enumerate(names):
            states = self._path_start if depth == 0 else self._read(states, _SLASH)
            states = self._close(states | self._name_start)
            for b in name:
                states = self._read(states, b)
            last = depth == len(names) - 1
            directory = not last or raw.endswith(b"/")
            matched = states & (self._accept_dir if directory else self._accept_file)
            if matched:
                excluded = not self._negative >> (matched.bit_length() - 1) & 1
                if excluded or last:
                    # An excluded directory excludes all below it: git never looks inside.
                    return excluded
        return False

    @classmethod
    def of_tree(cls, root: str) -> IgnoreList:
        """The list at the top of the working tree ``root``; empty when it has none (or it
        cannot be read, or is too big to be a list of patterns)."""
        path = os.path.join(root, IGNORE_FILE)
        try:
            if not os.path.isfile(path):  # a fifo or a device would block or never end
                return cls()
            with open(path, "rb") as f:
                raw = f.read(MAX_IGNORE_BYTES + 1)
        except OSError:
            return cls()
        if len(raw) > MAX_IGNORE_BYTES:
            return cls()
        return cls(raw)


def newly_exempt(old: IgnoreList, new: IgnoreList) -> list[tuple[str, ScopeEntry]]:
    """What ``new`` may exempt that ``old`` did not: each such line of ``new``, with the
    scope of every path it can match (wider than exact, never narrower; docs/design.md,
    section 6.4). The last matching line decides, so a line ``old`` has is known only where
    every negation that followed it in ``old`` still follows it in ``new``."""
    # Where each negation of ``new`` last stands; for each line of ``old``, at its last
    # place (the fewest negations follow it there), the earliest of those places over the
    # negations that follow it in ``old``: the line is known in ``new`` before that.
    last_in_new = {line: n for n, line in enumerate(new.parsed) if line[1]}
    known_before: dict[tuple[bytes, bool, bool, bool], float] = {}
    earliest = float("inf")
    for line in reversed(old.parsed):
        if line[1]:
            earliest = min(earliest, last_in_new.get(line, -1))
        known_before.setdefault(line, earliest)
    found = []
    for n, line in enumerate(new.parsed):
        text, negative, basename, _dir_only = line
        if negative or n < known_before.get(line, -1):
            continue
        shown = text.decode("utf-8", "replace")
        pattern = "**/" + shown if basename else shown
        try:
            entry = ScopeEntry(normalize_pattern(pattern))
        except (InvalidPattern, ValueError):
            entry = ScopeEntry(WHOLE_TREE)
        found.append((shown, entry))
    return found


def _bits(positions: list[int], size: int) -> int:
    """The set of states ``positions`` (all below ``size``) as one integer, in linear time."""
    buf = bytearray(size // 8 + 1)
    for p in positions:
        buf[p >> 3] |= 1 << (p & 7)
    return int.from_bytes(buf, "little")
