"""What was judged of lock records, kept in files of the common git directory
(docs/design.md, section 4.5): the verdict of each blob (``VERDICTS_FILE``), and the
judgement of the lock refs in ``packed-refs`` (``PACKED_TABLE_FILE``). Only gitlocks
writes either, whole (write, then rename); a lost or malformed one costs time, never an
answer.

In a table of thousands of locks most lock refs are packed (``git gc`` packs them), and
reading them is most of a command: parsing their lines, decoding the verdict of each blob,
and judging each ref. Which refs those lines name is a function of their text alone
(``files.packed_region``), and what a blob holds never changes, so the judgement of them
all (``core.table.Judged``) is kept in ``PACKED_TABLE_FILE`` beside a copy of that text.
A command that finds the same text in ``packed-refs`` takes the judgement and reads only
the loose refs, which win over packed lines as git reads them. Any change to the text (a
``pack-refs``, a packed lock deleted) and the judgement is made again the long way, then
kept anew. Comparing the text is exact: no time stamp is trusted.
"""

from __future__ import annotations

import os

from gitlocks.core.plain import Row
from gitlocks.core.summaries import Verdict
from gitlocks.core.table import Judged, judge
from gitlocks.core.verdicts import decode_judged, decode_verdicts, encode_judged, encode_verdicts
from gitlocks.git import files
from gitlocks.layout import LOCK_PREFIX, PACKED_TABLE_FILE, VERDICTS_FILE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

MIN_REFS = 1000  # fewer packed lock refs are read faster than the file is
# Beside packed lock refs judged already, up to this many loose records are read whole
# faster than the verdicts of thousands are decoded; more are not (300 loose records beside
# 10,000 judged cost the hooks 70 ms read whole, 57 through the verdicts).
FEW_LOOSE = 64
# Verdicts of blobs no table holds now are kept past twice the current ones only up to
# this many: the file is decoded by every command, and rewritten after every write (a
# thousand spare verdicts cost each command about a millisecond).
SPARE_VERDICTS = 200
# Then the length of the text judged and the CRC-32 of the judgement after it: a file
# damaged into another well-formed one (a digit of a blob id changed) would be believed,
# and a write would put that blob id in the journal's table tree.
_MAGIC = b"gitlocks packed lock refs 2 "


class Found(Row):
    """The lock refs of a repository whose refs are files, as the loader takes them."""

    refs: dict[str, str]  # name -> blob id: the loose ones only when ``judged`` is given
    symbolic: dict[str, str]  # name -> the ref it names (loose files only: never followed)
    judged: Judged | None  # the packed lock refs, judged already (none named in ``refs``)
    region: bytes  # the text of packed-refs the packed lock refs were read from
    packed: dict[str, str]  # when not judged: the packed lock refs, to keep their judgement


def scan(common_dir: str) -> Found:
    """The lock refs: the loose ones, and the packed ones as judged before when the text
    they are read from is the text that judgement was kept against; else every one, read
    from their files (``files.scan``)."""
    loose = files.scan_loose(common_dir, (LOCK_PREFIX,))
    text = files.read_packed(common_dir)
    if text is None:
        return Found(loose.refs, loose.symbolic, None, b"", {})
    region = files.packed_region(text, LOCK_PREFIX)
    judged = load(common_dir, region) if region else None
    if judged is None:
        packed = files.packed_refs(text, (LOCK_PREFIX,))
        merged = files.merge(loose, packed)
        return Found(merged.refs, merged.symbolic, None, region, packed)
    if loose.symbolic:  # a symbolic ref hides its packed line, as git reads them
        cut = len(LOCK_PREFIX)
        for name in loose.symbolic:
            judged.summaries.pop(name[cut:], None)
            judged.blobs.pop(name[cut:], None)
        kept = [p for p in judged.problems if p.ref not in loose.symbolic]
        judged = Judged(judged.summaries, judged.blobs, kept)
    return Found(loose.refs, loose.symbolic, judged, region, {})


def needs_verdicts(found: Found) -> bool:
    """Whether the loose lock refs beside ``found``'s judged ones are read through the kept
    verdicts rather than whole: always without a judgement, and past ``FEW_LOOSE`` of
    them (read whole, a few loose records cost less than decoding the verdicts)."""
    return found.judged is None or len(found.refs) > FEW_LOOSE


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


def load(common_dir: str, region: bytes) -> Judged | None:
    """The judgement kept for the packed lock refs read from ``region``; None when none is
    kept for that very text."""
    try:
        _, text = files.read_cache(os.path.join(common_dir, PACKED_TABLE_FILE))
    except OSError:
        return None
    head, _, rest = (text or b"").partition(b"\n")
    size, _, check = head[len(_MAGIC) :].partition(b" ")
    if not head.startswith(_MAGIC) or size != b"%d" % len(region):
        return None
    if rest[: len(region)] != region:
        return None
    raw = rest[len(region) :]
    import zlib  # only beside a judgement of this very text

    if check != b"%d" % zlib.crc32(raw):
        return None
    return decode_judged(raw)


def keep(
    common_dir: str,
    region: bytes,
    packed: Mapping[str, str],
    known: Mapping[str, Verdict],
    fresh: Mapping[str, Verdict],
) -> None:
    """Keep the judgement of the ``packed`` lock refs (name -> blob id) read from
    ``region``, from the ``known`` and ``fresh`` verdicts of their blobs; nothing when a
    blob has none (a missing object may yet arrive) or there are too few to be worth it."""
    if len(packed) < MIN_REFS:
        return
    judged = judge(packed, {**known, **fresh} if fresh else known)
    if judged is None:
        return
    import zlib  # a write loads it anyway (loose objects are deflated)

    document = encode_judged(judged)
    data = b"%s%d %d\n%s%s" % (_MAGIC, len(region), zlib.crc32(document), region, document)
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
