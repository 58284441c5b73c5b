"""Settings given on git's command line: ``git -c key=value alock ...``.

git hands them to its subcommands in ``GIT_CONFIG_PARAMETERS`` (each ``'key'='value'``,
shell-quoted, ``'key'`` alone for a bare boolean) and in ``GIT_CONFIG_COUNT`` /
``GIT_CONFIG_KEY_<n>`` / ``GIT_CONFIG_VALUE_<n>``. They win over every config file, as
in git itself. The hooks get them through ``git config``, which reads them already.
"""

from __future__ import annotations

from collections.abc import Mapping

from gitlocks.errors import UsageError

TRUE = ("true", "yes", "on", "1")
FALSE = ("false", "no", "off", "0", "")


def normalise_key(key: str) -> str:
    """Section and name case-folded, a subsection (``remote.<name>.url``) kept as it is."""
    section, _, rest = key.partition(".")
    middle, _, name = rest.rpartition(".")
    return ".".join([section.lower(), *([middle] if middle else []), name.lower()])


def command_line(env: Mapping[str, str]) -> dict[str, str | None]:
    """Every ``-c`` setting, by normalised key; None for a bare ``-c key`` (true)."""
    found: dict[str, str | None] = {}
    for key, value in _parameters(env.get("GIT_CONFIG_PARAMETERS", "")):
        found[normalise_key(key)] = value
    try:
        count = int(env.get("GIT_CONFIG_COUNT", "0"))
    except ValueError:
        count = 0
    for i in range(max(0, min(count, 10_000))):
        name = env.get(f"GIT_CONFIG_KEY_{i}")
        if name:
            found[normalise_key(name)] = env.get(f"GIT_CONFIG_VALUE_{i}", "")
    return found


def _parameters(raw: str) -> list[tuple[str, str | None]]:
    """Split git's shell-quoted list: words of quoted runs and backslash escapes."""
    pairs: list[tuple[str, str | None]] = []
    word: list[str] = []
    key: str | None = None
    i, quoted, started = 0, False, False
    while i < len(raw):
        ch = raw[i]
        if quoted:
            if ch == "'":
                quoted = False
            else:
                word.append(ch)
        elif ch == "'":
            quoted = started = True
        elif ch == "\\" and i + 1 < len(raw):
            i += 1
            word.append(raw[i])
            started = True
        elif ch == "=" and key is None:
            key, word, started = "".join(word), [], True
        elif ch.isspace():
            if started:
                pairs.append((key, "".join(word)) if key is not None else ("".join(word), None))
            word, key, started = [], None, False
        else:
            word.append(ch)
            started = True
        i += 1
    if started:
        pairs.append((key, "".join(word)) if key is not None else ("".join(word), None))
    return pairs


def as_bool(value: str | None) -> bool | None:
    """git's reading of a boolean: None (bare key) is true; None back for a bad one."""
    if value is None:
        return True
    text = value.strip().lower()
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    return None


def shared_umask(value: str | None, current: int) -> int:
    """The umask that gives new files and directories the modes git gives them under
    ``core.sharedRepository`` = ``value`` (``current`` when the repository is not shared).

    ``group`` (``true``, ``1``): group may read and write; ``all`` (``world``,
    ``everybody``, ``2``): others may read too; an octal mode (``0660``): files get exactly
    that, directories the same with ``x`` wherever ``r`` is. Directories inherit the
    set-group-id bit from git's own shared directories.
    """
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
        shared = as_bool(word)
        if shared is None:
            raise UsageError(f"bad boolean config value {value!r} for 'core.sharedRepository'")
        return current & ~0o070 if shared else current
    return ~(mode | (mode & 0o444) >> 2) & 0o777
