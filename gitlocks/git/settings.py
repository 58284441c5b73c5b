"""Settings: the one reader (and writer) of git config for every process of the package.

One ``git config -z --list`` per repository: git itself resolves every file, include and
``git -c`` setting, so no two readers can see two values. Values are read with git's own
rules (``parse_bool``, ``parse_int``); a duration is ``gitlocks.core.record.parse_duration``'s.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

from gitlocks.core.record import parse_duration
from gitlocks.errors import GitlocksError, StoreError, UsageError
from gitlocks.git import run
from gitlocks.git.run import Process
from gitlocks.layout import DEFAULT_SKEW_SECONDS

LIST_ARGS = ("config", "-z", "--list")
TRUE = ("true", "yes", "on")
FALSE = ("false", "no", "off", "")
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def normalise_key(key: str) -> str:
    """Section and name case-folded, a subsection (``remote.<name>.url``) kept as it is:
    the spelling ``git config --list`` prints."""
    section, _, rest = key.partition(".")
    middle, _, name = rest.rpartition(".")
    return ".".join([section.lower(), *([middle] if middle else []), name.lower()])


def parse_int(value: str) -> int | None:
    """git's ``git_parse_signed``: a number in C's base 0 with an optional sign and unit
    (``k``, ``m``, ``g``), within a C ``int``; None when it is none."""
    text = value.lstrip(" \t\n\v\f\r")
    sign = -1 if text[:1] == "-" else 1
    text = text[1:] if text[:1] in "+-" and text else text
    if text[:2].lower() == "0x" and len(text) > 2:
        base, digits = 16, "0123456789abcdef"
        text = text[2:]
    elif text[:1] == "0":
        base, digits = 8, "01234567"
    else:
        base, digits = 10, "0123456789"
    end = 0
    while end < len(text) and text[end].lower() in digits:
        end += 1
    unit = text[end:].lower()
    if not end or unit not in _UNITS:
        return None
    number = sign * int(text[:end], base) * _UNITS[unit]
    limit = 1 << 31
    return number if -limit <= number < limit else None


def parse_bool(value: str | None) -> bool | None:
    """git's ``git_parse_maybe_bool``: None (a key with no ``=``) is true; None back when
    ``value`` is no boolean."""
    if value is None:
        return True
    word = value.lower()
    if word in TRUE:
        return True
    if word in FALSE:
        return False
    number = parse_int(value)
    return None if number is None else number != 0


class Settings:
    """Every setting of one repository, as ``git config --list`` gave them (the last
    value of a key wins, as ``git config --get`` answers)."""

    def __init__(self, values: Mapping[str, str | None] | None = None) -> None:
        self._values = {normalise_key(k): v for k, v in (values or {}).items()}

    @classmethod
    def parse(cls, raw: bytes) -> Settings:
        """``git config -z --list`` output: ``key\\nvalue\\0``, or ``key\\0`` when the key
        has no ``=``."""
        values: dict[str, str | None] = {}
        for item in raw.split(b"\0"):
            if item:
                key, sep, value = os.fsdecode(item).partition("\n")
                values[key] = value if sep else None
        return cls(values)

    def __contains__(self, key: str) -> bool:
        return normalise_key(key) in self._values

    def raw(self, key: str) -> str | None:
        """The value as written; None when unset or when the key has no ``=``."""
        return self._values.get(normalise_key(key))

    def get(self, key: str) -> str | None:
        """A string setting; None when unset (a key with no ``=`` reads ``true``)."""
        key = normalise_key(key)
        if key not in self._values:
            return None
        value = self._values[key]
        return "true" if value is None else value

    def flag(self, key: str, default: bool) -> bool:
        """A boolean setting (``default`` when unset); a bad value is an error."""
        if key not in self:
            return default
        value = parse_bool(self._values[normalise_key(key)])
        if value is None:
            raise UsageError(f"bad boolean config value {self.raw(key)!r} for {key!r}")
        return value

    def lenient_flag(self, key: str, default: bool) -> tuple[bool, str | None]:
        """A boolean setting for a check that must not stop on it: a bad value is
        ``default``, with a warning."""
        try:
            return self.flag(key, default), None
        except UsageError as exc:
            return default, f"{exc}; reading it as {str(default).lower()}"

    def duration(self, key: str, default: int, *, zero: bool = False) -> int:
        """A duration setting in seconds (``default`` when unset); ``0`` (any unit) only
        where ``zero`` allows it. Errors name the key and how to fix it."""
        value = self.get(key)
        if value is None:
            return default
        fix = f"(fix it with git config {key} 30s, or unset it with git config --unset {key})"
        if _is_zero(value):
            if zero:
                return 0
            raise UsageError(f"invalid {key} {value!r}: must be longer than zero {fix}")
        try:
            return parse_duration(value, what=key)
        except GitlocksError as exc:
            raise UsageError(f"{exc} {fix}") from None

    def clock_skew(self, *, remote: bool | None = None) -> tuple[int, str | None]:
        """Seconds a lock outlives its expiry: ``alock.clockSkew`` (default 30s, ``0`` for
        none) where locks come from other machines' clocks (remote mode, or ``remote``),
        else 0. A bad value is the default, with a warning: a check never stops on it."""
        if not (self.get("alock.remote") if remote is None else remote):
            return 0, None
        try:
            return self.duration("alock.clockSkew", DEFAULT_SKEW_SECONDS, zero=True), None
        except UsageError as exc:
            return DEFAULT_SKEW_SECONDS, f"{exc}; allowing {DEFAULT_SKEW_SECONDS}s"

    @property
    def reftable(self) -> bool:
        """Whether refs are kept elsewhere than in files (read through git, then)."""
        storage = (self.get("extensions.refStorage") or "files").strip().lower()
        return storage not in ("", "files")


def _is_zero(value: str) -> bool:
    """``0``, ``00``, ``0s``, ``0 m``: a duration of nothing, in any unit."""
    text = value.strip()
    if text[-1:] in ("s", "m", "h", "d"):
        text = text[:-1].rstrip()
    return bool(text) and text.strip("0") == ""


def start(cwd: str | None = None, *, git_dir: str | None = None, clean: bool = False) -> Process:
    """Start reading the settings, for another git call to run meanwhile: of the
    repository ``git_dir`` (``Env.CLEAN``), else the one git finds from ``cwd`` and the
    environment (from ``cwd`` alone when ``clean``)."""
    env = run.Env.CLEAN if git_dir or clean else run.Env.INHERIT
    args = [*(["--git-dir", git_dir] if git_dir else []), *LIST_ARGS]
    return run.start(args, cwd, env=env, error=StoreError)


def finish(proc: Process) -> Settings:
    """The settings ``start`` began reading (exit 1: none at all)."""
    return Settings.parse(run.finish(proc, ok=(0, 1), error=StoreError))


def read(cwd: str | None = None, *, git_dir: str | None = None) -> Settings:
    """Every setting, in one ``git config`` process."""
    return finish(start(cwd, git_dir=git_dir))


def unset(git_dir: str, key: str) -> None:
    """Remove every value of ``key`` from the repository's own config file (exit 5: it
    had none)."""
    proc = run.start(
        ["--git-dir", git_dir, "config", "--local", "--unset-all", key],
        None,
        env=run.Env.CLEAN,
        error=StoreError,
    )
    run.finish(proc, ok=(0, 5), error=StoreError)


# git takes the config file's lock once and fails at once when another git holds it
# (two installs at the same moment): a change is tried again for this long.
CONFIG_LOCK_SECONDS = 5.0


def write(git_dir: str, key: str, value: str) -> None:
    """Set ``key`` in the repository's own config file."""
    deadline = time.monotonic() + CONFIG_LOCK_SECONDS
    pause = 0.01
    while True:
        proc = run.start(
            ["--git-dir", git_dir, "config", "--local", key, value],
            None,
            env=run.Env.CLEAN,
            error=StoreError,
        )
        try:
            run.finish(proc, error=StoreError)
            return
        except StoreError as exc:
            if "could not lock config file" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


def shared_umask(value: str | None, current: int) -> int:
    """The umask that gives new files and directories the modes git gives them under
    ``core.sharedRepository`` = ``value`` (``current`` when the repository is not shared):
    ``group``, ``all`` or an octal mode (files get exactly that, directories ``x`` too
    wherever ``r`` is)."""
    if value is None:
        return current
    word = value.strip()  # parsed as git parses it: exact words, octal, else a boolean
    if word in ("group",):
        return current & ~0o070
    if word in ("all", "world", "everybody"):
        return current & ~0o075
    if word == "umask":
        return current
    if word and all(c in "01234567" for c in word) and len(word) <= 6:
        mode = int(word, 8) & 0o777
        if mode in (0, 1, 2):  # git's old spellings: umask, group, everybody
            return (current, current & ~0o070, current & ~0o075)[mode]
        if mode & 0o600 != 0o600:
            raise UsageError(
                f"core.sharedRepository {value!r}: the owner of files must always have read "
                "and write permissions (as git says)"
            )
    else:
        shared = parse_bool(word)
        if shared is None:
            raise UsageError(f"bad boolean config value {value!r} for 'core.sharedRepository'")
        return current & ~0o070 if shared else current
    return ~(mode | (mode & 0o444) >> 2) & 0o777
