"""The one cache of gitlocks (docs/design.md, section 4.5): ``agent-locks-cache`` in the
common git directory, written only by gitlocks, whole (write, then rename). A lost,
garbled or foreign file costs time, never an answer. Its sections, each filed under
content ids and with a CRC-32: the **verdicts** by blob id (what a record blob holds), and
the **shards** of the last large journal table tree written (``gitlocks.store.journal``).
A section is decoded only by the reader that needs it.
"""

from __future__ import annotations

import json
import os
import zlib  # loaded by the object reader anyway
from collections.abc import Mapping
from itertools import compress
from operator import eq

from gitlocks.core.digest import hasher
from gitlocks.core.judging import Judged
from gitlocks.core.summaries import Columns, Summaries, Summary, Verdict
from gitlocks.core.text import all_text
from gitlocks.git import files
from gitlocks.layout import CACHE_FILE, LOCK_PREFIX

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any

    Verdicts = tuple[list[str], Columns, dict[str, str]]  # blob ids, their summaries, reasons
    Shards = tuple[str, dict[str, dict[str, str]], dict[str, str]]  # locks tree, shards, ids

# Verdicts of blobs no table holds now are kept past twice the current ones only up to this
# many: every command decodes them (a thousand spare verdicts cost each about a millisecond).
SPARE_VERDICTS = 200
# The files earlier versions kept: a write removes them.
OLD_FILES = ("agent-locks-verdicts.json", "agent-locks-packed-table", "agent-locks-tree-cache")
VERDICTS, SHARDS = 0, 1  # the sections, one line each after the file's first
COLUMNS = ("oid", "id", "holder", "parent", "expires_at", "buckets", "landing")  # verdicts


class _Read:
    """The cache file as this process last read or wrote it: its stamp, each section's
    line, and the sections decoded so far."""

    __slots__ = ("decoded", "lines", "stamp")

    def __init__(self, stamp: files.Stamp, lines: list[bytes]) -> None:
        self.stamp = stamp
        self.lines = lines
        self.decoded: dict[int, object] = {}


_read: dict[str, _Read] = {}  # by path: one command reads the local table and the remote's
_judging_code: list[str] = []  # computed once a process, when the file is first read


def judging_code() -> str:
    """What judges records and writes this file: a digest of the source of
    ``gitlocks.core`` (where records are read and judged), ``errors``, ``layout``, the
    package's ``__init__`` and this module; a value of this process alone when unreadable."""
    if not _judging_code:
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        core = os.path.join(package, "core")
        digest = hasher(True)  # SHA-256: the digest a command loads anyway
        try:
            paths = [os.path.join(core, n) for n in sorted(os.listdir(core)) if n.endswith(".py")]
            paths += [os.path.join(package, n) for n in ("__init__.py", "errors.py", "layout.py")]
            for path in [*paths, os.path.abspath(__file__)]:
                with open(path, "rb") as fh:
                    source = fh.read()
                name = os.path.basename(path).encode()
                digest.update(b"%s %d\0%s" % (name, len(source), source))
            code = f"sha256 {digest.hexdigest()}"
        except OSError:
            code = f"unread {os.urandom(8).hex()}"
        _judging_code.append(code)
    return _judging_code[0]


def _head() -> bytes:
    return b"gitlocks cache " + judging_code().encode()


def _file(common_dir: str) -> _Read | None:
    """The cache file, as read now (or before, when it has not changed since)."""
    path = os.path.join(common_dir, CACHE_FILE)
    last = _read.get(path)
    try:
        stamp, raw = files.read_cache(path, last.stamp if last else None)
    except OSError:
        return None
    if raw is None and last is not None:
        return last
    lines = (raw or b"").split(b"\n")
    if len(lines) != 3 or lines[0] != _head():
        lines = [b"", b"", b""]  # another code's, or no file of ours: no section
    found = _read[path] = _Read(stamp, lines[1:])
    return found


def _section(common_dir: str, index: int) -> Any:
    """Section ``index`` decoded, or None when the file holds none this code can read."""
    found = _file(common_dir)
    if found is None:
        return None
    if index not in found.decoded:
        crc, _, body = found.lines[index].partition(b" ")
        value = None
        if body and crc == b"%d" % zlib.crc32(body):
            try:
                value = (_verdicts, _shards)[index](json.loads(body))
            except (ValueError, RecursionError):
                pass
        found.decoded[index] = value
    return found.decoded[index]


def _keep(common_dir: str, index: int, value: object, document: object) -> None:
    """Write section ``index`` (``value``, as ``document``), the other as it was read."""
    path = os.path.join(common_dir, CACHE_FILE)
    found = _file(common_dir)
    lines = list(found.lines) if found is not None else [b"", b""]
    body = json.dumps(document, separators=(",", ":")).encode()
    lines[index] = b"%d %s" % (zlib.crc32(body), body)
    try:
        files.write_atomic(path, b"\n".join([_head(), *lines]), cache=True)
        kept = _read[path] = _Read(files.stamp_of(path), lines)
    except OSError:
        return  # a cache: losing it costs time, never an answer
    kept.decoded = dict(found.decoded) if found is not None else {}
    kept.decoded[index] = value
    for name in [*OLD_FILES, *_dead_writers(common_dir)]:
        try:
            files.discard(os.path.join(common_dir, name))
        except OSError:
            pass


def _dead_writers(common_dir: str) -> list[str]:
    """The temporary files of writers of this file that died before their rename (killed):
    named by their process id, which no longer runs."""
    prefix = f".{CACHE_FILE}."
    try:
        names = [n for n in os.listdir(common_dir) if n.startswith(prefix) and n.endswith(".tmp")]
    except OSError:
        return []
    dead = []
    for name in names:
        pid = name[len(prefix) : -len(".tmp")]
        if not pid.isdigit() or int(pid) <= 1 or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            dead.append(name)
        except (OSError, OverflowError):  # another user's, alive; no process id at all
            pass
    return dead


def forget(common_dir: str) -> None:
    """Drop the cache: a record did not match what was kept of it. Best effort: the caller
    stops with "try again" whether or not the file would go."""
    path = os.path.join(common_dir, CACHE_FILE)
    _read.pop(path, None)
    try:
        files.discard(path)
    except OSError:
        pass  # a directory in its place, a read-only directory: nothing more to do


def verdicts(common_dir: str) -> Verdicts | None:
    """The kept blob ids, the summaries of those that are records (by column) and the
    reasons of those that are none; None when none is kept. Callers never change them."""
    found: Verdicts | None = _section(common_dir, VERDICTS)
    return found


def judge(
    common_dir: str | None, refs: Mapping[str, str]
) -> tuple[Judged | None, dict[str, str], dict[str, Verdict]]:
    """The lock ``refs`` (name -> blob id) through the kept verdicts: those still naming
    the blob of a kept record of their own id, judged (its summary, a column at a time);
    the others, with the kept verdicts of their blobs (by blob id: a reason, or a summary
    of another id), for the one loader to judge and read the rest."""
    kept = verdicts(common_dir) if common_dir else None
    if kept is None:
        return None, dict(refs), {}
    oids, columns, reasons = kept
    names = list(map(LOCK_PREFIX.__add__, columns[0]))
    mask = list(map(eq, map(refs.get, names), oids))  # each row: its ref names its blob
    if False in mask:
        columns = tuple(list(compress(c, mask)) for c in columns)  # type: ignore[assignment]
        names, oids = list(compress(names, mask)), list(compress(oids, mask))
    judged = set(names)
    if len(judged) != len(names):
        return None, dict(refs), {}  # a row twice: gitlocks never writes one
    rest = {n: refs[n] for n in sorted(refs.keys() - judged)}  # as git lists them
    known: dict[str, Verdict] = {}
    if rest:  # moved by hand, or written since the verdicts were kept
        rows = dict(zip(kept[0], range(len(kept[0])), strict=True))
        ids, holders, parents, expiries, buckets, landing = kept[1]
        for oid in rest.values():
            row = rows.get(oid)
            if oid in reasons:
                known[oid] = reasons[oid]
            elif row is not None:
                split = tuple(buckets[row].split("\n"))
                known[oid] = Summary(
                    ids[row], holders[row], parents[row], expiries[row], split, landing[row]
                )
    blobs = dict(zip(columns[0], oids, strict=True))
    return Judged(Summaries.of_columns(columns), blobs, []), rest, known


def keep_verdicts(common_dir: str, fresh: Mapping[str, Verdict], current: set[str] | None) -> None:
    """Keep the ``fresh`` verdicts beside those kept; of blobs not ``current`` (None: drop
    none), only while the file stays small."""
    kept = verdicts(common_dir) or ([], ([], [], [], [], [], []), {})
    oids, columns, reasons = kept
    reasons = {o: r for o, r in reasons.items() if o not in fresh}
    count = len(oids) + len(reasons) + len(fresh)
    if current is not None and count > 2 * len(current) + SPARE_VERDICTS:
        reasons = {o: r for o, r in reasons.items() if o in current}
        mask = [o in current and o not in fresh for o in oids]
    else:
        mask = [o not in fresh for o in oids]
    rows = [(o, v) for o, v in fresh.items() if not isinstance(v, str)]
    reasons.update((o, v) for o, v in fresh.items() if isinstance(v, str))
    new: list[list[Any]] = [
        [o for o, _ in rows],
        [v.id for _, v in rows],
        [v.holder for _, v in rows],
        [v.parent for _, v in rows],
        [v.expires_at for _, v in rows],
        ["\n".join(v.buckets) for _, v in rows],
        [v.landing for _, v in rows],
    ]
    old: list[list[Any]] = [oids, *columns]
    made = [list(compress(c, mask)) + n for c, n in zip(old, new, strict=True)]
    value = (made[0], tuple(made[1:]), reasons)
    document = {"reasons": reasons, "summaries": dict(zip(COLUMNS, made, strict=True))}
    _keep(common_dir, VERDICTS, value, document)


def _verdicts(document: object) -> Verdicts | None:
    """The blob ids, summary columns and reasons of a verdicts section; None when it is
    not of their shape."""
    try:
        reasons, columns = document["reasons"], document["summaries"]  # type: ignore[index]
        oids, ids, holders, parents, expiries, buckets, landing = (columns[n] for n in COLUMNS)
    except (TypeError, KeyError):
        return None
    strings = (oids, ids, holders, expiries, buckets)
    if not (
        type(reasons) is dict
        and all_text(list(reasons.values()))
        and all(type(c) is list and len(c) == len(oids) for c in (*strings, parents, landing))
        and all(map(all_text, (*strings, [p for p in parents if p is not None])))
        and set(map(type, landing)) <= {bool}
    ):
        return None
    return oids, (ids, holders, parents, expiries, buckets, landing), reasons


def shards(common_dir: str) -> Shards | None:
    """The kept ``locks`` tree id, its shards (shard -> lock id -> blob) and their subtree
    ids; None when none is kept. The caller checks that the ids make that tree."""
    found: Shards | None = _section(common_dir, SHARDS)
    return found


def keep_shards(
    common_dir: str, locks: str, members: dict[str, dict[str, str]], subtrees: dict[str, str]
) -> None:
    listed = {shard: [*found, *found.values()] for shard, found in members.items()}
    document = {"locks": locks, "subtrees": subtrees, "members": listed}
    _keep(common_dir, SHARDS, (locks, members, subtrees), document)


def _shards(document: object) -> Shards | None:
    """A shards section: each shard's lock ids, then their blobs, in one list."""
    try:
        locks, subtrees, listed = document["locks"], document["subtrees"], document["members"]  # type: ignore[index]
    except (TypeError, KeyError):
        return None
    if not (type(locks) is str and type(subtrees) is dict and type(listed) is dict):
        return None
    if subtrees.keys() != listed.keys() or not all(
        type(subtrees[k]) is str and type(listed[k]) is list and len(listed[k]) % 2 == 0
        for k in subtrees
    ):
        return None
    if not all(map(all_text, listed.values())):
        return None
    members = {}
    for shard, found in listed.items():
        cut = len(found) // 2
        members[shard] = dict(zip(found[:cut], found[cut:], strict=True))
    return locks, members, subtrees
