"""``@plain`` behaves as ``@dataclass`` for what gitlocks declares with it.

Each case declares one class twice, once with each decorator, and holds that both answer
alike: construction with defaults and factories, ``__post_init__``, repr, equality, hash,
frozen fields, ``replace`` and the order of the fields.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from gitlocks.core import plain as p


def twins(frozen: bool = False, eq: bool = True) -> tuple[Any, Any]:
    def body(field: Any) -> dict[str, Any]:
        def __post_init__(self: Any) -> None:
            if self.size < 0:
                raise ValueError("negative")
            object.__setattr__(self, "_seen", len(self.tags))

        return {
            "__annotations__": {
                "name": "str",
                "size": "int",
                "tags": "list[str]",
                "note": "str | None",
                "extra": "dict[str, Any]",
                "_seen": "int",
            },
            "size": 0,
            "tags": field(default_factory=list),
            "note": None,
            "extra": field(default_factory=dict, compare=False, hash=False),
            "_seen": field(init=False, repr=False),
            "__post_init__": __post_init__,
        }

    theirs: Any = dataclasses.dataclass(frozen=frozen, eq=eq)(
        type("Thing", (), body(dataclasses.field))
    )
    ours: Any = p.plain(frozen=frozen, eq=eq)(type("Thing", (), body(p.field)))
    return theirs, ours


@pytest.mark.parametrize("frozen", [False, True])
@pytest.mark.parametrize("eq", [False, True])
def test_plain_answers_as_dataclass_does(frozen: bool, eq: bool) -> None:
    theirs, ours = twins(frozen, eq)
    for cls in (theirs, ours):
        a = cls("a", 2, ["x"], extra={"k": 1})
        b = cls("a", 2, ["x"])
        c = cls(name="a")
        assert (a.name, a.size, a.tags, a.note, a._seen) == ("a", 2, ["x"], None, 1)
        assert c.tags == [] and c.tags is not cls("z").tags  # a new list each time
        assert repr(a) == "Thing(name='a', size=2, tags=['x'], note=None, extra={'k': 1})"
        assert (a == b) is eq  # extra is not compared
        assert a != c
        assert (a == "a") is False
        with pytest.raises(ValueError, match="negative"):
            cls("a", -1)
        with pytest.raises(TypeError):
            cls()
        with pytest.raises(TypeError):
            cls("a", _seen=3)
        if frozen:
            with pytest.raises(AttributeError):
                a.size = 3
            with pytest.raises(AttributeError):
                del a.name
        else:
            a.size = 3
            assert a.size == 3
        if eq and frozen:
            assert hash(cls("a", 2, ("x",))) == hash(cls("a", 2, ("x",), extra={"z": 2}))
        elif eq:
            assert cls.__hash__ is None
        else:
            assert hash(a) == object.__hash__(a)
    assert ours.__match_args__ == theirs.__match_args__


def test_replace_and_the_field_names() -> None:
    theirs, ours = twins(frozen=True)
    for cls, replace in ((theirs, dataclasses.replace), (ours, p.replace)):
        a = cls("a", 2, ["x"])
        b = replace(a, size=5)
        assert (b.name, b.size, b.tags, b._seen) == ("a", 5, ["x"], 1)
        assert a.size == 2
        with pytest.raises(ValueError):
            replace(a, _seen=2)
    assert p.field_names(ours) == tuple(f.name for f in dataclasses.fields(theirs))


def test_what_plain_does_not_take_is_refused_not_misread() -> None:
    for annotation in ("ClassVar[int]", "InitVar[int]", "KW_ONLY"):
        cls = type("Thing", (), {"__annotations__": {"x": annotation}})
        with pytest.raises(TypeError, match="does not take"):
            p.plain(cls)
