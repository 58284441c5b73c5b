"""What was judged of lock records, kept in files of the common git directory
(docs/design.md, section 4.5): the verdict of each blob (``VERDICTS_FILE``), and the
judgement of the whole lock table (``PACKED_TABLE_FILE``). Only gitlocks writes either,
whole (write, then rename); a lost or malformed one costs time, never an answer.

In a table of thousands of locks, judging every ref (decoding the verdict of each blob,
checking its id) is most of a command. What a blob holds never changes, so the judgement
of each lock ref stands for as long as the ref names the same blob: a command lists the
lock refs through git (``for-each-ref``), takes the judgement of every ref still naming
the blob it was judged with, and judges only the others. Each document names the code
that judged it (``gitlocks.core.verdicts.judging_code``): no time stamp, no format number
and no copy of git's files is trusted.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from gitlocks.core.judging import Judged, judge
from gitlocks.core.summaries import Verdict
from gitlocks.core.value import Value
from gitlocks.core.verdicts import decode_judged, decode_verdicts, encode_judged, encode_verdicts
from gitlocks.git import files
from gitlocks.git.files import Scan
from gitlocks.layout import LOCK_PREFIX, PACKED_TABLE_FILE, VERDICTS_FILE

MIN_REFS = 1000  # a table of fewer refs is judged faster than the judgement is read
# Beside refs judged already, up to this many others are read whole faster than the
# verdicts of thousands are decoded; more are not (300 loose records beside 10,000 judged
# cost the hooks 70 ms read whole, 57 through the verdicts).
FEW_LOOSE = 64
# Verdicts of blobs no table holds now are kept past twice the current ones only up to
# this many: the file is decoded by every command, and rewritten after every write (a
# thousand spare verdicts cost each command about a millisecond).
SPARE_VERDICTS = 200
# Then the CRC-32 of the judgement after it: a file damaged into another well-formed one
# (a holder or an expiry changed) would be believed.
_MAGIC = b"gitlocks judged lock refs "


class Found(Value):
    """The lock refs as git lists them, and what the loader takes of them."""

    __slots__ = ("judged", "listed", "refs", "symbolic")

    def __init__(
        self,
        refs: dict[str, str],
        symbolic: dict[str, str],
        judged: Judged | None,
        listed: dict[str, str],
    ) -> None:
        self.refs = refs  # name -> blob id: those ``judged`` does not stand for
        self.symbolic = symbolic  # name -> the ref it names (never followed)
        self.judged = judged  # the refs judged already, each still naming the blob judged
        self.listed = listed  # every lock ref listed, to keep their judgement


def scan(common_dir: str, listed: Scan) -> Found:
    """The lock refs ``listed`` (git's listing), with the kept judgement of each one that
    still names the blob it was judged with; the others to be read or judged now."""
    judged = load(common_dir)
    if judged is None:
        return Found(listed.refs, listed.symbolic, None, listed.refs)
    refs, cut = listed.refs, len(LOCK_PREFIX)
    summaries, blobs = judged.summaries, judged.blobs
    for lock_id in [i for i, oid in blobs.items() if refs.get(LOCK_PREFIX + i) != oid]:
        summaries.pop(lock_id, None)  # moved or deleted since: judged again, or gone
        del blobs[lock_id]
    problems = [p for p in judged.problems if refs.get(p.ref) == p.oid]
    rest = {name: oid for name, oid in refs.items() if blobs.get(name[cut:]) != oid}
    return Found(rest, listed.symbolic, Judged(summaries, blobs, problems), refs)


def needs_verdicts(found: Found) -> bool:
    """Whether the lock refs beside ``found``'s judged ones are read through the kept
    verdicts rather than whole: always without a judgement, and past ``FEW_LOOSE`` of
    them (read whole, a few records cost less than decoding the verdicts)."""
    return found.judged is None or len(found.refs) > FEW_LOOSE


def worth_keeping(found: Found) -> bool:
    """Whether the table's judgement is kept anew: a table of ``MIN_REFS`` refs or more
    with none kept, or with more than ``FEW_LOOSE`` refs it did not stand for."""
    return len(found.listed) >= MIN_REFS and (found.judged is None or len(found.refs) > FEW_LOOSE)


# Each verdicts file's stamp and verdicts, as last read or written by this process: one
# command loads the local table and the remote's, which share it.
_verdicts: dict[str, tuple[files.Stamp, dict[str, Verdict]]] = {}


def verdicts(common_dir: str) -> dict[str, Verdict]:
    """The kept verdicts, by blob id (callers never change the dict they get)."""
    path = os.path.join(common_dir, VERDICTS_FILE)
    last = _verdicts.get(path)
    try:
        stamp, raw = files.read_cache(path, last[0] if last else None)
    except OSError:
        return {}
    if raw is None and last is not None:
        return last[1]
    found = decode_verdicts(raw or b"")
    _verdicts[path] = (stamp, found)
    return found


def keep_verdicts(
    common_dir: str, known: Mapping[str, Verdict], fresh: Mapping[str, Verdict], current: set[str]
) -> None:
    """Keep ``known`` and ``fresh`` verdicts; old ones only while the file stays small (it
    is shared by the local table and the remote's, which hold mostly the same blobs)."""
    kept = {**known, **fresh}
    if len(kept) > 2 * len(current) + SPARE_VERDICTS:
        kept = {oid: v for oid, v in kept.items() if oid in current or oid in fresh}
    path = os.path.join(common_dir, VERDICTS_FILE)
    try:
        files.write_atomic(path, encode_verdicts(kept), cache=True)
        _verdicts[path] = (files.stamp_of(path), kept)
    except OSError:
        pass  # a cache: losing it costs time, never an answer


def load(common_dir: str) -> Judged | None:
    """The kept judgement of the lock refs; None when there is none this code can read."""
    try:
        _, text = files.read_cache(os.path.join(common_dir, PACKED_TABLE_FILE))
    except OSError:
        return None
    head, _, raw = (text or b"").partition(b"\n")
    if not head.startswith(_MAGIC):
        return None
    import zlib  # only beside a kept judgement

    if head[len(_MAGIC) :] != b"%d" % zlib.crc32(raw):
        return None
    return decode_judged(raw)


def keep(
    common_dir: str,
    listed: Mapping[str, str],
    known: Mapping[str, Verdict],
    fresh: Mapping[str, Verdict],
) -> None:
    """Keep the judgement of the ``listed`` lock refs (name -> blob id), from the
    ``known`` and ``fresh`` verdicts of their blobs; nothing when a blob has none (a
    missing object may yet arrive)."""
    judged = judge(listed, {**known, **fresh} if fresh else known)
    if judged is None:
        return
    import zlib  # a write loads it anyway (loose objects are deflated)

    document = encode_judged(judged)
    data = b"%s%d\n%s" % (_MAGIC, zlib.crc32(document), document)
    try:
        files.write_atomic(os.path.join(common_dir, PACKED_TABLE_FILE), data, cache=True)
    except OSError:
        pass  # a cache: losing it costs time, never an answer


def forget(common_dir: str) -> None:
    """Drop every kept verdict and judgement: a record did not match what was kept of it.
    Best effort: the caller stops with "try again" whether or not a file would go."""
    _verdicts.pop(os.path.join(common_dir, VERDICTS_FILE), None)
    for name in (VERDICTS_FILE, PACKED_TABLE_FILE):
        try:
            files.discard(os.path.join(common_dir, name))
        except OSError:
            pass  # a directory in its place, a read-only directory: nothing more to do
