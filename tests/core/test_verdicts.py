"""The verdicts document and the judged lock refs' document round-trip, refuse bad shapes,
and ``judge`` says what ``lazy_table`` says of the same refs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from gitlocks.core import verdicts as verdicts_module
from gitlocks.core.judging import Judged, Problem, judge
from gitlocks.core.summaries import Summaries, Summary, Verdict
from gitlocks.core.table import lazy_table
from gitlocks.core.verdicts import (
    decode_judged,
    decode_verdicts,
    encode_judged,
    encode_verdicts,
    judging_code,
)
from gitlocks.layout import LOCK_PREFIX

STAMPS = ("2030-01-01T00:00:00Z", "2030-01-01T01:00:00Z", "2030-01-01T02:00:00Z")

summaries = st.builds(
    Summary,
    st.text(min_size=1, max_size=8),
    st.text(max_size=8),
    st.one_of(st.none(), st.text(max_size=8)),
    st.sampled_from(STAMPS),
    st.lists(st.text(alphabet="abc.", max_size=3), min_size=1, max_size=3, unique=True).map(
        lambda b: tuple(sorted(b))
    ),
    st.booleans(),
)
oids = st.text(alphabet="0123456789abcdef", min_size=40, max_size=40)
verdicts = st.dictionaries(oids, st.one_of(summaries, st.text(max_size=20)), max_size=8)


@settings(max_examples=200, deadline=None)
@given(verdicts)
def test_verdicts_round_trip(kept: dict[str, Verdict]) -> None:
    assert decode_verdicts(encode_verdicts(kept)) == kept


def test_verdicts_of_a_bad_shape_are_none() -> None:
    kept: dict[str, Verdict] = {
        "a" * 40: Summary("l1", "h", None, STAMPS[0], ("a",), False),
        "b" * 40: "no record",
    }
    good = json.loads(encode_verdicts(kept))
    assert decode_verdicts(json.dumps(good).encode()) == kept
    bad: list[object] = []
    for column, value in (
        ("holder", [7]),
        ("parent", [1]),
        ("landing", ["yes"]),
        ("oid", []),  # one column shorter than the others
        ("buckets", None),
    ):
        doc = json.loads(json.dumps(good))
        doc["summaries"][column] = value
        bad.append(doc)
    doc = json.loads(json.dumps(good))
    doc["reasons"] = {"c" * 40: 3}
    bad += [doc, {**good, "format": 3}, {**good, "summaries": []}, [], "x"]
    bad += [{k: v for k, v in good.items() if k != "reasons"}, {**good, "summaries": None}]
    for doc in bad:
        assert decode_verdicts(json.dumps(doc).encode()) == {}, doc
    assert decode_verdicts(b"{") == {} and decode_verdicts(b"") == {}


# Lock refs as packed-refs names them: ids that match their records' and ids that do not.
names = st.dictionaries(
    st.sampled_from([f"{LOCK_PREFIX}l{i}" for i in range(6)] + [f"{LOCK_PREFIX}x/y"]),
    oids,
    max_size=6,
)


@settings(max_examples=200, deadline=None)
@given(names, verdicts, st.data())
def test_judge_says_what_the_loader_says(
    refs: dict[str, str], kept: dict[str, Verdict], data: st.DataObject
) -> None:
    """Every ref with a verdict is judged as ``lazy_table`` judges it from the verdicts;
    one blob without a verdict and nothing is judged; a judgement round-trips."""
    for ref in refs:  # most refs point at a blob with a verdict, some at a record of theirs
        if data.draw(st.booleans()):
            oid = refs[ref]
            lock_id = ref[len(LOCK_PREFIX) :]
            kept[oid] = Summary(lock_id, "h", None, STAMPS[0], ("a",), data.draw(st.booleans()))
    judged = judge(refs, kept)
    if any(oid not in kept for oid in refs.values()):
        assert judged is None
        return
    assert judged is not None

    def unread(oids: list[str]) -> dict[str, tuple[bytes | None, str]]:
        raise AssertionError(f"read {oids}")

    table, _ = lazy_table(refs.items(), known=kept, read=unread, version=None, ignore_case=False)
    assert judged.summaries == table.summaries
    assert judged.blobs == table.refs
    assert sorted(judged.problems) == table.problems
    assert decode_judged(encode_judged(judged)) == judged


@settings(max_examples=200, deadline=None)
@given(names, names, verdicts, st.data())
def test_a_kept_judgement_under_loose_refs_reads_as_the_refs_read_whole(
    packed: dict[str, str], loose: dict[str, str], kept: dict[str, Verdict], data: st.DataObject
) -> None:
    """The packed refs' judgement, kept and decoded as columns, with loose refs over some
    of its lines, gives the table the refs give read without it: the same summaries, blobs
    and problems, and the same answer to every question asked of the summaries."""
    from gitlocks.core.scope import ScopeEntry

    for ref, oid in [*packed.items(), *loose.items()]:
        if oid not in kept or data.draw(st.booleans()):
            lock_id = ref[len(LOCK_PREFIX) :]
            holder = data.draw(st.sampled_from(["h", "k"]))
            buckets = data.draw(st.sampled_from([("a",), ("",), ("", "b"), ("a", "b")]))
            kept[oid] = Summary(lock_id, holder, "h", STAMPS[0], buckets, data.draw(st.booleans()))
    judged = judge(packed, kept)
    assert judged is not None
    columns = decode_judged(encode_judged(judged))
    assert columns is not None

    def unread(oids: list[str]) -> dict[str, tuple[bytes | None, str]]:
        raise AssertionError(f"read {oids}")

    read = {"known": kept, "read": unread, "version": None, "ignore_case": False}
    found, _ = lazy_table(loose.items(), judged=columns, **read)  # type: ignore[arg-type]
    whole, _ = lazy_table({**packed, **loose}.items(), **read)  # type: ignore[arg-type]
    assert found.summaries == whole.summaries
    assert found.refs == whole.refs and found.problems == whole.problems
    assert sorted(found.holders()) == sorted(whole.holders())
    for table in (found, whole):
        assert table.summaries.has_ids(set(table.records))
    for question in (
        lambda t: {h: sorted(t._holder_ids(h)) for h in ("h", "k")},
        lambda t: {p: sorted(t.candidates([ScopeEntry(p)])) for p in ("a/x", "b/x", "c/x", "*")},
        lambda t: sorted(t.summaries.landing()),
        lambda t: [t.summaries.earliest(), t.summaries.latest()],
        lambda t: sorted(t.summaries.expiring(STAMPS[0], after=False)),
    ):
        assert question(found) == question(whole)


def test_judged_refs_give_way_to_the_refs_read_again() -> None:
    """A ref named to the loader again (a loose ref over its packed line) is judged from
    what it names now, whatever the judgement said of it."""
    a = Summary("a", "h", None, STAMPS[0], ("src",), False)
    b = Summary("b", "h", None, STAMPS[0], ("lib",), False)
    judged = Judged(
        Summaries({"a": a}),
        {"a": "1" * 40, "b": "2" * 40},
        [Problem(LOCK_PREFIX + "b", "2" * 40, "not JSON")],
    )
    known: dict[str, Verdict] = {"3" * 40: b, "4" * 40: "not a record"}
    refs = [(LOCK_PREFIX + "b", "3" * 40), (LOCK_PREFIX + "a", "4" * 40)]
    table, _ = lazy_table(
        refs, known=known, read=lambda o: {}, version=None, ignore_case=False, judged=judged
    )
    assert table.summaries == {"b": b}
    assert table.refs == {"a": "4" * 40, "b": "3" * 40}
    assert table.problems == [Problem(LOCK_PREFIX + "a", "4" * 40, "not a record")]


def test_judged_of_a_bad_shape_are_none() -> None:
    judged = Judged(
        Summaries({"a": Summary("a", "h", None, STAMPS[0], ("src",), False)}),
        {"a": "1" * 40, "b": "2" * 40},
        [Problem(LOCK_PREFIX + "b", "2" * 40, "not JSON")],
    )
    good = json.loads(encode_judged(judged))
    assert decode_judged(json.dumps(good).encode()) == judged
    bad: list[object] = [
        {**good, "problems": [["r", "o"]]},
        {**good, "problems": [["r", "o", 3]]},
        {**good, "problems": {}},
        {**good, "format": 3},
        {k: v for k, v in good.items() if k != "summaries"},
        {**good, "summaries": {**good["summaries"], "id": []}},
        # One id on two rows: gitlocks never writes it, and the columns are asked of as
        # rows of distinct ids (a dict of them kept the last row only).
        {**good, "summaries": {k: v * 2 for k, v in good["summaries"].items()}},
        # A blob id no git names: a write would put it in the journal's tree.
        *(
            {**good, "summaries": {**good["summaries"], "oid": [oid]}}
            for oid in ("1" * 39, "1" * 41, "1" * 39 + " ", " " + "1" * 39, "1" * 38 + "\n\n")
        ),
        *(
            {**good, "summaries": {**good["summaries"], "oid": [oid]}}
            for oid in ("g" * 40, "1" * 20 + "\u00e9" * 20, "1" * 40 + "\n" + "1" * 23)
        ),
        {**good, "problems": [[LOCK_PREFIX + "b", "2" * 39, "not JSON"]]},
        {  # one repository, one length of id
            **good,
            "summaries": {k: v * 2 for k, v in good["summaries"].items()}
            | {"id": ["a", "c"], "oid": ["1" * 40, "3" * 64]},
        },
        # A ref judged twice: usable and not, or unusable twice.
        {**good, "problems": [*good["problems"], [LOCK_PREFIX + "a", "1" * 40, "x"]]},
        {**good, "problems": good["problems"] * 2},
        [],
    ]
    for doc in bad:
        assert decode_judged(json.dumps(doc).encode()) is None, doc
    sha256 = {**good, "summaries": {**good["summaries"], "oid": ["1" * 64]}}
    sha256["problems"] = [[LOCK_PREFIX + "b", "2" * 64, "not JSON"]]
    assert decode_judged(json.dumps(sha256).encode()) is not None
    assert decode_judged(b"\xff") is None and decode_judged(b"") is None


def test_a_document_other_code_judged_is_not_read(tmp_path: Path) -> None:
    """Each document names the code that judged it: a copy of ``gitlocks.core`` with one
    line changed (as any change to how a record is judged) names other code, so what the
    current code kept is not believed there, and no number was raised by hand."""
    kept: dict[str, Verdict] = {"a" * 40: "why not"}
    document = encode_verdicts(kept)
    assert json.loads(document)["format"] == judging_code()
    package = Path(verdicts_module.__file__).parent.parent
    copy = tmp_path / "gitlocks"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    script = (
        "import sys; from gitlocks.core.verdicts import decode_verdicts;"
        "print(len(decode_verdicts(sys.stdin.buffer.read())))"
    )

    def kept_there() -> str:
        argv = [sys.executable, "-c", script]
        env = {**os.environ, "PYTHONPATH": str(tmp_path)}
        got = subprocess.run(argv, input=document, capture_output=True, env=env, cwd=tmp_path)
        return got.stdout.decode().strip()

    assert kept_there() == "1"  # the same code: believed
    scope = copy / "core" / "scope.py"
    scope.write_text(scope.read_text() + "\n# judged otherwise\n")
    assert kept_there() == "0"
