"""The documents what was judged of record blobs is kept in (docs/design.md, section 4.5):
the verdicts by blob id, and the judgement of the lock refs in ``packed-refs``.

Summaries are kept by column (every id, then every holder, ...): a column of 10,000
strings is checked and decoded at once, where 10,000 entries of six fields each would be
one by one. Each document is checked for shape when read: a hand-edited or half-written
file costs a re-read of the records, never a wrong answer about their shape.

Each document names the code that judged it (``judging_code``): a digest of the source of
``gitlocks.core``, where a record is read, validated and summarised, and of the package's
``__init__`` (its version).
A document any other code wrote is not read at all, so a change to how records are judged
makes every kept verdict void by itself: no format number to remember to raise.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping

from gitlocks.core.digest import hasher
from gitlocks.core.judging import Judged, Problem
from gitlocks.core.summaries import Columns, Summaries, Summary, Verdict
from gitlocks.core.text import all_text
from gitlocks.layout import LOCK_PREFIX

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any

_judging_code: list[str] = []  # computed once a process, when a document is first read


def judging_code() -> str:
    """What judges records, as a document names it: a digest of the source of every module
    of ``gitlocks.core`` (the reading, validation and summaries of a record live there,
    and nothing they depend on lives elsewhere but ``errors`` and ``layout``, digested
    too) and of the package's ``__init__``, which holds its version. When the source
    cannot be read (an installation without it), a value of this process alone: nothing
    kept is trusted."""
    if not _judging_code:
        core = os.path.dirname(os.path.abspath(__file__))
        package = os.path.dirname(core)
        digest = hasher(True)  # SHA-256: the digest a command loads anyway
        try:
            names = sorted(n for n in os.listdir(core) if n.endswith(".py"))
            paths = [os.path.join(core, n) for n in names]
            paths += [os.path.join(package, n) for n in ("__init__.py", "errors.py", "layout.py")]
            for path in paths:
                with open(path, "rb") as fh:
                    source = fh.read()
                name = os.path.basename(path).encode()
                digest.update(b"%s %d\0%s" % (name, len(source), source))
            code = f"sha256 {digest.hexdigest()}"
        except OSError:
            code = f"unread {os.urandom(8).hex()}"
        _judging_code.append(code)
    return _judging_code[0]


def encode_verdicts(verdicts: Mapping[str, Verdict]) -> bytes:
    """The document a store keeps its verdicts in: the reasons by blob id, and the
    summaries by column."""
    reasons = {oid: v for oid, v in verdicts.items() if isinstance(v, str)}
    summaries = [(oid, v) for oid, v in verdicts.items() if not isinstance(v, str)]
    document = {"format": judging_code(), "reasons": reasons, "summaries": _columns(summaries)}
    return json.dumps(document, separators=(",", ":")).encode()


def decode_verdicts(raw: bytes) -> dict[str, Verdict]:
    """Verdicts from ``encode_verdicts``; none at all from a document that is not one. (A
    command that reads the file twice decodes it once: ``git.kept.verdicts``.)"""
    data = _document(raw)
    reasons = data.get("reasons") if data is not None else None
    if type(reasons) is dict and all_text(list(reasons.values())):
        summaries = _summaries(data.get("summaries"))  # type: ignore[union-attr]
        if summaries is not None:
            oids, columns = summaries
            return {**reasons, **dict(zip(oids, _made(columns), strict=True))}
    return {}


def encode_judged(judged: Judged) -> bytes:
    """The document ``Judged`` lock refs are kept in: their summaries by column (each
    record's lock id names its ref), and the refs that hold no usable record."""
    rows = [(judged.blobs[lock_id], s) for lock_id, s in judged.summaries.items()]
    problems = [[p.ref, p.oid, p.reason] for p in judged.problems]
    document = {"format": judging_code(), "summaries": _columns(rows), "problems": problems}
    return json.dumps(document, separators=(",", ":")).encode()


def decode_judged(raw: bytes) -> Judged | None:
    """The ``Judged`` lock refs of ``encode_judged``; None from a document that is not one."""
    data = _document(raw)
    if data is None:
        return None
    summaries, problems = _summaries(data.get("summaries")), data.get("problems")
    if summaries is None or type(problems) is not list:
        return None
    if not all(
        type(p) is list and len(p) == 3 and all_text(p) and p[0].startswith(LOCK_PREFIX)
        for p in problems
    ):
        return None
    oids, columns = summaries
    if not _object_ids([*oids, *(p[1] for p in problems)]):
        return None  # a blob id no git names: a write would put it in the journal's tree
    ids = columns[0]
    blobs = dict(zip(ids, oids, strict=True))
    if len(blobs) != len(ids):
        return None  # an id twice: gitlocks never writes one
    cut = len(LOCK_PREFIX)
    blobs.update((ref[cut:], oid) for ref, oid, _ in problems)  # every blob, usable or not
    if len(blobs) != len(ids) + len(problems):
        return None  # a ref judged twice (usable and not, or unusable twice): never written
    return Judged(
        Summaries.of_columns(columns),  # a summary is made only for an id asked for
        blobs,
        [Problem(ref, oid, reason) for ref, oid, reason in problems],
    )


def _object_ids(oids: list[str]) -> bool:
    """Whether every one of ``oids`` is an object id as git spells one: 40 hex digits, or
    64 in a repository of SHA-256 ids (one length for all). Checked at C speed, all at
    once (10,000 ids in 0.2 ms): joined by newlines, each newline where one id of that
    length ends; ``fromhex`` takes hex digits and passes over whitespace, so whitespace
    anywhere else makes fewer bytes than the digits."""
    if not oids:
        return True
    width, count = len(oids[0]), len(oids)
    joined = "\n".join(oids)
    if width not in (40, 64) or len(joined) != (width + 1) * count - 1:
        return False
    if joined[width :: width + 1] != "\n" * (count - 1):
        return False
    try:
        return len(bytes.fromhex(joined)) * 2 == width * count
    except ValueError:  # a character that is neither
        return False


def _document(raw: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if type(data) is not dict or data.get("format") != judging_code():
        return None
    return data


def _columns(rows: list[tuple[str, Summary]]) -> dict[str, list[object]]:
    """``(blob id, summary)`` rows as columns."""
    return {
        "oid": [oid for oid, _ in rows],
        "id": [v.id for _, v in rows],
        "holder": [v.holder for _, v in rows],
        "parent": [v.parent for _, v in rows],
        "expires_at": [v.expires_at for _, v in rows],
        "buckets": ["\n".join(v.buckets) for _, v in rows],
        "landing": [v.landing for _, v in rows],
    }


def _summaries(columns: object) -> tuple[list[str], Columns] | None:
    """The blob ids and the summaries' columns of ``_columns``; None when not of its
    shape."""
    try:
        oids, ids, holders = columns["oid"], columns["id"], columns["holder"]  # type: ignore[index]
        parents, expiries = columns["parent"], columns["expires_at"]  # type: ignore[index]
        buckets, landing = columns["buckets"], columns["landing"]  # type: ignore[index]
    except (TypeError, KeyError):
        return None
    strings = (oids, ids, holders, expiries, buckets)
    if not (
        all(type(c) is list and len(c) == len(oids) for c in (*strings, parents, landing))
        and all(map(all_text, (*strings, [p for p in parents if p is not None])))
        and set(map(type, landing)) <= {bool}
    ):
        return None
    return oids, (ids, holders, parents, expiries, buckets, landing)


def _made(columns: Columns) -> Iterator[Summary]:
    """The summary of each row of ``columns``."""
    ids, holders, parents, expiries, buckets, landing = columns
    # Lists of one value repeated, where itertools.repeat would be one module more to load.
    split = map(tuple, map(str.split, buckets, ["\n"] * len(buckets)))  # patterns: no newline
    fields = zip(ids, holders, parents, expiries, split, landing, strict=True)
    return map(tuple.__new__, [Summary] * len(ids), fields)  # a named tuple is a tuple
