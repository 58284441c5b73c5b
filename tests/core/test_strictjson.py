"""gitlocks.core.strictjson: strict JSON, with null for what JSON cannot spell."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from gitlocks.core import strictjson

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


@settings(max_examples=300)
@given(VALUES, OPTIONS)
@example({0: None, math.inf: None}, {"sort_keys": True, "allow_nan": False})
def test_dumps_finite_is_strict_json_with_null_for_what_json_cannot_spell(
    value: Any, options: dict[str, Any]
) -> None:
    options.pop("allow_nan")
    try:
        text = strictjson.dumps_finite(value, **options)
    except (TypeError, ValueError) as exc:  # what json refuses besides (keys, cycles)
        # ... of the value, or of it with null for what JSON cannot spell: keys 0 and inf
        # sort, 0 and null do not.
        refused = {outcome(json.dumps, v, **options)[0] for v in (value, strictjson.finite(value))}
        assert type(exc).__name__ in refused
        return

    def refuse(constant: str) -> object:
        raise ValueError(constant)

    assert json.loads(text, parse_constant=refuse) == json.loads(
        json.dumps(strictjson.finite(value), **options)
    )
