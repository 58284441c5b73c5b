"""``@plain`` behaves as ``@dataclass`` for what gitlocks declares with it, and ``Row`` as
``typing.NamedTuple``.

Each case declares one class twice, once with each decorator, and holds that both answer
alike: construction with defaults and factories, ``__post_init__``, repr, equality, hash,
frozen fields, ``replace`` and the order of the fields.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


@pytest.fixture(params=["bound", "compiled"])
def hot(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each class's arguments bound by ``plain.bind`` (its first instances), or by the
    compiled ``__init__``/``__new__`` (once the class is hot): both answer alike."""
    monkeypatch.setattr(p, "HOT", 1 if request.param == "compiled" else 10**9)
    return str(request.param)


@pytest.mark.parametrize("frozen", [False, True])
@pytest.mark.parametrize("eq", [False, True])
def test_plain_answers_as_dataclass_does(frozen: bool, eq: bool, hot: str) -> None:
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


def test_init_is_compiled_once_hot_and_stays_in_place() -> None:
    """The ``HOT``-th instance compiles ``__init__`` and puts it on the class; a subclass
    that is not itself ``@plain`` gets the same one, and a wrong call is told as before."""
    cls: Any = p.plain(type("Pair", (), {"__annotations__": {"a": "int", "b": "int"}}))
    sub: Any = type("Sub", (cls,), {})
    first = cls.__dict__["__init__"]
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'b'"):
        cls(1)
    for _ in range(p.HOT):
        assert sub(1, 2) == sub(1, 2)
        assert (sub(1, b=3).a, sub(1, b=3).b) == (1, 3)
    built = cls.__dict__["__init__"]
    assert built is not first
    assert built.__qualname__ == "Pair.__init__"
    assert cls(4, 5).b == 5
    assert cls.__dict__["__init__"] is built
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'b'"):
        cls(1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'c'"):
        cls(1, 2, c=3)


def test_row_is_a_named_tuple_as_typing_declares_one(hot: str) -> None:
    """A ``Row`` class and the same ``NamedTuple`` class answer alike: fields, defaults,
    methods, ``_replace``, ``_asdict``, equality with tuples, repr and the docstring."""
    import types
    import typing

    def body() -> dict[str, Any]:
        def doubled(self: Any) -> int:
            return int(self.size * 2)

        return {
            "__module__": __name__,
            "__qualname__": "Item",
            "__doc__": "One item.",
            "__annotations__": {"name": "str", "size": "int", "tags": "tuple[str, ...]"},
            "size": 1,
            "tags": (),
            "doubled": doubled,
            "unit": "kg",
        }

    theirs: Any = types.new_class(
        "Item", (typing.NamedTuple,), exec_body=lambda ns: ns.update(body())
    )
    ours: Any = types.new_class("Item", (p.Row,), exec_body=lambda ns: ns.update(body()))
    for cls in (theirs, ours):
        item = cls("a", tags=("x",))
        assert item == ("a", 1, ("x",))
        assert tuple(item) == ("a", 1, ("x",))
        assert cls._fields == ("name", "size", "tags")
        assert cls._field_defaults == {"size": 1, "tags": ()}
        assert item.doubled() == 2
        assert item._replace(size=4).doubled() == 8
        assert item._asdict() == {"name": "a", "size": 1, "tags": ("x",)}
        assert repr(item) == "Item(name='a', size=1, tags=('x',))"
        assert (cls.__doc__, cls.unit, cls.__module__) == ("One item.", "kg", __name__)
        assert cls.__annotations__["size"] in ("int", typing.ForwardRef("int"))
        with pytest.raises(AttributeError):
            item.name = "b"
        with pytest.raises(TypeError):
            cls()
        with pytest.raises(TypeError):
            cls("a", 1, (), "too many")
        with pytest.raises(TypeError):
            cls("a", name="twice")
        assert cls(name="b", size=2) == ("b", 2, ())
        assert cls._make(["c", 3, ()]) == ("c", 3, ())
        with pytest.raises(TypeError):
            cls._make(["c"])
        with pytest.raises(ValueError):
            item._replace(colour="red")
        assert cls.__match_args__ == ("name", "size", "tags")
        assert hash(item) == hash(("a", 1, ("x",)))
        assert item.__getnewargs__() == ("a", 1, ("x",))
        assert isinstance(item, tuple) and not hasattr(item, "__dict__")
        match item:
            case cls(name, size):
                assert (name, size) == ("a", 1)
        assert cls.name.__doc__ == "Alias for field number 0"


def test_row_refuses_what_named_tuple_refuses() -> None:
    row_meta: Any = type(p.Row)
    with pytest.raises(TypeError, match="without a default follows"):
        row_meta(
            "Bad",
            (p.Row,),
            {"__module__": __name__, "__annotations__": {"a": "int", "b": "int"}, "a": 1},
        )
    with pytest.raises(AttributeError, match="cannot overwrite"):
        row_meta(
            "Bad",
            (p.Row,),
            {"__module__": __name__, "__annotations__": {"a": "int"}, "_replace": None},
        )


def test_row_tells_a_field_without_a_default_first_as_named_tuple_does() -> None:
    """A class with an underscored field and a field without a default after one with a
    default: ``NamedTuple`` names the order of the defaults first, and so does ``Row``."""
    import types
    import typing

    def body(ns: dict[str, Any]) -> None:
        ns.update({"__annotations__": {"_a": "int", "b": "int", "c": "int"}, "b": 1})

    for base in (typing.NamedTuple, p.Row):
        with pytest.raises(TypeError, match="follow"):
            types.new_class("Bad", (base,), exec_body=body)


def test_row_refuses_another_base_as_named_tuple_does() -> None:
    """``class Name(Row, Mixin)`` would otherwise be a named tuple without the mixin: its
    methods missing at run time, though a type checker reads them as there."""

    class Mixin:
        def greet(self) -> str:
            return "hi"

    row_meta: Any = type(p.Row)
    with pytest.raises(TypeError, match="can only inherit from Row"):
        row_meta("Bad", (p.Row, Mixin), {"__module__": __name__, "__annotations__": {}})


class Pair(p.Row):
    left: int
    right: int = 0


class Empty(p.Row):
    pass


def test_a_row_pickles_and_its_new_is_compiled_once_hot() -> None:
    """``__new__`` is compiled on the ``HOT``-th instance and put in the class's place; a
    row pickles by its class's name, as a named tuple does; a row without fields is ()."""
    import pickle

    first = Pair.__dict__["__new__"]
    assert pickle.loads(pickle.dumps(Pair(1, 2))) == Pair(1, 2)
    assert Pair.__dict__["__new__"] is first  # bound, not compiled, while few
    for _ in range(p.HOT):
        Pair(1, 2)
    compiled = Pair.__dict__["__new__"]
    assert compiled is not first
    assert Pair(3) == (3, 0) and Pair.__dict__["__new__"] is compiled
    assert Pair.__new__.__qualname__ == "Pair.__new__"
    assert Empty() == () and repr(Empty()) == "Empty()"
    assert type(Pair(1)).__qualname__ == "Pair"


def test_a_row_field_name_may_not_start_with_an_underscore() -> None:
    row_meta: Any = type(p.Row)
    with pytest.raises(ValueError, match="underscore"):
        row_meta("Bad", (p.Row,), {"__module__": __name__, "__annotations__": {"_a": "int"}})


def test_memo_keeps_results_as_lru_cache_does_up_to_its_size() -> None:
    """Each result is computed once while kept; past ``maxsize`` the oldest is let go."""
    calls: list[tuple[int, int]] = []

    @p.memo(maxsize=2)
    def add(a: int, b: int) -> int:
        """Adds."""
        calls.append((a, b))
        return a + b

    assert (add(1, 2), add(1, 2), add(2, 2)) == (3, 3, 4)
    assert calls == [(1, 2), (2, 2)]
    assert add(3, 3) == 6  # a third: (1, 2) is let go
    assert (add(2, 2), add(1, 2)) == (4, 3)
    assert calls == [(1, 2), (2, 2), (3, 3), (1, 2)]
    assert (add.__name__, add.__doc__) == ("add", "Adds.")


def test_memo_is_thread_safe_as_lru_cache_is() -> None:
    """Threads that let the same oldest result go at once: none of them fails. (gitlocks
    runs threads, the UI's and a remote write's listing: a cached function must not have
    to ask which thread calls it.)"""
    import sys
    import threading

    @p.memo(maxsize=2)
    def same(a: int) -> int:
        return a

    failed: list[BaseException] = []

    def hammer(base: int) -> None:
        try:
            for i in range(50_000):
                assert same(base + i) == base + i
        except BaseException as exc:  # the failure is what is asserted
            failed.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as can be
    try:
        threads = [threading.Thread(target=hammer, args=(k << 20,)) for k in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not failed, failed


def test_a_row_pickles_and_is_made_as_a_named_tuple() -> None:
    import pickle

    from gitlocks.store.journal import JournalEntry

    assert JournalEntry._fields
    entry = JournalEntry._make(range(len(JournalEntry._fields)))
    assert pickle.loads(pickle.dumps(entry)) == entry
    with pytest.raises(TypeError, match="Expected"):
        JournalEntry._make(())


# The arguments of a call, right and wrong, bound as Python binds a function's.
CALLS = st.tuples(
    st.lists(st.integers(0, 9), max_size=6).map(tuple),
    st.dictionaries(st.sampled_from(["a", "b", "c", "d", "e"]), st.integers(0, 9), max_size=4),
)


@given(CALLS)
def test_bind_is_how_python_binds_a_call(call: tuple[tuple[int, ...], dict[str, int]]) -> None:
    given, by_name = call

    def f(self: object, a: int, b: int, c: int = 7, d: int = 8) -> list[int]:
        return [a, b, c, d]

    try:
        expected: object = f(None, *given, **by_name)
    except TypeError as exc:
        expected = str(exc).replace(f"{f.__qualname__}(", "X(")
    try:
        got: object = p.bind("X", ("a", "b", "c", "d"), {"c": 7, "d": 8}, given, by_name)
    except TypeError as exc:
        got = str(exc)
    assert got == expected


def test_bind_words_a_call_to_a_class_of_no_fields_as_python_does() -> None:
    def f(self: object) -> None:
        pass

    with pytest.raises(TypeError) as python:
        f(None, 1)  # type: ignore[call-arg]
    with pytest.raises(TypeError) as bound:
        p.bind("X", (), {}, (1,), {})
    assert str(bound.value) == str(python.value).replace(f"{f.__qualname__}(", "X(")
