"""gitlocks.core.jsontext against the standard json module: the same text, value and error."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gitlocks.core import jsontext

# Every kind of value json writes, with the awkward ones: lone surrogates, controls,
# non-ASCII, NaN and the infinities, huge integers, tuples, non-string keys.
TEXT = st.text(st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF), max_size=12)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | TEXT
)
KEYS = TEXT | st.integers(-5, 5) | st.floats(allow_nan=False) | st.booleans() | st.none()
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(TEXT, inner, max_size=4)
        | st.dictionaries(KEYS, inner, max_size=3)
    ),
    max_leaves=25,
)
OPTIONS = st.fixed_dictionaries(
    {
        "ensure_ascii": st.booleans(),
        "indent": st.none() | st.integers(0, 4),
        "sort_keys": st.booleans(),
        "separators": st.none() | st.sampled_from([(",", ":"), (", ", ": "), (",", ": ")]),
        "allow_nan": st.booleans(),
    }
)


def outcome(call: Any, *args: Any, **kwargs: Any) -> tuple[str, str]:
    """A call's result or error, comparable (NaN equals itself in its repr)."""
    try:
        return "value", repr(call(*args, **kwargs))
    except Exception as exc:  # the same error is part of the contract
        return type(exc).__name__, str(exc)


@settings(max_examples=400)
@given(VALUES, OPTIONS)
def test_dumps_is_json_dumps(value: Any, options: dict[str, Any]) -> None:
    assert outcome(jsontext.dumps, value, **options) == outcome(json.dumps, value, **options)


@settings(max_examples=300)
@given(VALUES)
def test_loads_reads_what_json_writes(value: Any) -> None:
    for ensure_ascii in (True, False):
        text = json.dumps(value, ensure_ascii=ensure_ascii)
        assert outcome(jsontext.loads, text) == outcome(json.loads, text)
        data = text.encode("utf-8", "surrogatepass")
        assert outcome(jsontext.loads, data) == outcome(json.loads, data)


# Text made of JSON's own characters, so that most of it is nearly JSON: every error
# json reports (and where) must come back the same.
NEARLY = st.text(st.sampled_from(list(' \t\n\r{}[]:,"\\/0123456789.eE+-truefalsnNIiyu\ufeff\x00')))


@settings(max_examples=600)
@given(NEARLY)
def test_loads_refuses_what_json_refuses(text: str) -> None:
    assert outcome(jsontext.loads, text) == outcome(json.loads, text)
    data = text.encode("utf-8", "surrogatepass")
    assert outcome(jsontext.loads, data) == outcome(json.loads, data)


@pytest.mark.parametrize(
    "data",
    [
        b"\xef\xbb\xbf{}",  # a UTF-8 byte-order mark: json reads it from bytes
        '{"a": 1}'.encode("utf-16"),
        '["x"]'.encode("utf-32-le"),
        b'"\xed\xa0\x80"',  # an encoded lone surrogate
        b"",
        b"   ",
    ],
)
def test_loads_bytes_as_json_does(data: bytes) -> None:
    assert outcome(jsontext.loads, data) == outcome(json.loads, data)
    assert outcome(jsontext.loads, bytearray(data)) == outcome(json.loads, bytearray(data))


def test_special_floats_read_back() -> None:
    assert math.isnan(jsontext.loads("NaN"))
    assert jsontext.loads("[-Infinity, Infinity]") == [-math.inf, math.inf]


def test_not_serializable_is_json_error() -> None:
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        jsontext.dumps({"a": {1}})
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        jsontext.dumps({"a": {1}}, indent=2)


def test_loads_and_dumps_load_no_json_module() -> None:
    """The point of the module: reading and writing JSON loads neither json nor re (an
    editable install's finder may have loaded re already: only what this adds counts)."""
    probe = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "from gitlocks.core import jsontext\n"
        'doc = jsontext.loads(\'{"a": [1, 2.5, null, "\\\\u00e9"]}\')\n'
        "jsontext.dumps(doc, sort_keys=True); jsontext.dumps(doc, indent=2)\n"
        "new = set(sys.modules) - before\n"
        "print(' '.join(sorted(m for m in new if m.split('.')[0] in ('json', 're'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize("text", ['{"a": tru}', "[1, 2", '"\\x"', "{} x", "", "\ufeff{}"])
def test_an_error_is_json_error_where_json_was_never_loaded(text: str) -> None:
    """The C scanner reports errors through json's own module: a process that never
    imported json still gets json's error, not a SystemError."""
    probe = (
        "import sys\n"
        "from gitlocks.core import jsontext\n"
        "try:\n"
        "    jsontext.loads(sys.argv[1])\n"
        "except ValueError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, text], capture_output=True, text=True, check=True
    )
    try:
        json.loads(text)
    except ValueError as exc:
        assert out.stdout.strip() == f"{type(exc).__name__} {exc}"
    else:
        raise AssertionError("json took it")


@settings(max_examples=300)
@given(VALUES, OPTIONS)
@example({0: None, math.inf: None}, {"sort_keys": True, "allow_nan": False})
def test_dumps_finite_is_strict_json_with_null_for_what_json_cannot_spell(
    value: Any, options: dict[str, Any]
) -> None:
    options.pop("allow_nan")
    try:
        text = jsontext.dumps_finite(value, **options)
    except (TypeError, ValueError) as exc:  # what json refuses besides (keys, cycles)
        # ... of the value, or of it with null for what JSON cannot spell: keys 0 and inf
        # sort, 0 and null do not.
        refused = {outcome(json.dumps, v, **options)[0] for v in (value, jsontext.finite(value))}
        assert type(exc).__name__ in refused
        return

    def refuse(constant: str) -> object:
        raise ValueError(constant)

    assert json.loads(text, parse_constant=refuse) == json.loads(
        json.dumps(jsontext.finite(value), **options)
    )
