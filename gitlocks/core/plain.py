"""Data classes without the ``dataclasses`` module: ``@plain``, ``field`` and ``replace``;
named tuples without typing's cost: ``Row``. Nothing here imports ``typing`` at run time.

Importing ``dataclasses`` loads ``inspect`` (and with it ``ast``, ``dis``, ``tokenize``),
and each ``@dataclass`` compiles its methods one by one: together about a fifth of a lock
command's own start-up. The classes every command loads are declared with ``@plain``
instead, which writes the same methods as ``@dataclass`` does for the features gitlocks
uses (defaults, ``field(default_factory=..., init=False, repr=False, compare=False,
hash=False)``, ``frozen``, ``eq``, ``__post_init__``), compiled together in one go:

- ``__init__`` takes the fields in order, defaults last, and calls ``__post_init__``;
- ``__repr__`` is ``Name(field=value, ...)``; ``__eq__`` compares the fields as a tuple
  with an instance of the same class only;
- ``frozen``: setting or deleting a field raises ``FrozenInstanceError`` (an
  ``AttributeError``), and ``__hash__`` hashes the compared fields; a mutable class with
  ``eq`` is unhashable, one with ``eq=False`` keeps identity equality and hash.

Type checkers read ``@plain`` as a data class (``dataclass_transform``); at run time that
mark and ``overload`` are stand-ins that change nothing (``typing`` costs 2-3 ms to import,
and no command needs it).

``Row`` builds the same class as ``collections.namedtuple``, and ``memo`` caches as
``functools.lru_cache`` does: neither package is imported by a command (together about
2 ms), and no command needs more than what these write.
"""

from __future__ import annotations

from _operator import attrgetter  # operator.py re-exports these: its import costs 0.2 ms

__all__ = ["FrozenInstanceError", "Row", "field", "field_names", "memo", "plain", "replace"]

TYPE_CHECKING = False
if TYPE_CHECKING:  # dataclass_transform is in typing from Python 3.11
    from collections.abc import Callable
    from typing import Any, TypeVar, overload
    from typing import NamedTuple as Row

    from typing_extensions import dataclass_transform

    T = TypeVar("T")
    F = TypeVar("F", bound=Callable[..., Any])
else:

    def dataclass_transform(**_: object) -> Callable[[T], T]:
        return lambda function: function

    def overload(function: T) -> T:
        return function  # each overload is replaced by the definition that follows

    class _RowMeta(type):
        """``class Name(Row)`` as ``class Name(NamedTuple)``, without what makes either
        slow to declare: typing turns each field's annotation into a ``ForwardRef``, which
        compiles it, and ``collections.namedtuple`` compiles ``__new__`` (and importing
        ``collections`` costs as much again). Here ``__new__`` is compiled on a class's
        first instance, as ``@plain`` does ``__init__``. Type checkers read ``Row`` as
        ``NamedTuple`` itself."""

        def __new__(mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> Any:
            if not bases:
                return super().__new__(mcls, name, bases, namespace)
            if bases != (Row,):  # as typing: the named tuple would be without the others
                raise TypeError(f"{name}: a named tuple can only inherit from Row")
            annotations = namespace.get("__annotations__", {})
            names = tuple(annotations)
            # One pass over the fields: a class is declared on every command's path, so
            # declaring one does as little as it can (docs/design.md §9.14).
            body = dict(namespace)
            defaults: dict[str, Any] = {}
            underscored = False
            for index, field_name in enumerate(names):
                if field_name in body:
                    defaults[field_name] = body.pop(field_name)
                elif defaults:
                    raise TypeError(f"{name}: a field without a default follows one with a default")
                underscored = underscored or field_name[:1] == "_"
                body[field_name] = _getter(index)
            if underscored:  # as namedtuple (they would clash), after the defaults' order
                raise ValueError(f"{name}: field names cannot start with an underscore")
            if not _ROW_OWN.isdisjoint(namespace):
                key = next(k for k in namespace if k in _ROW_OWN)
                raise AttributeError(f"cannot overwrite NamedTuple attribute {key}")
            body.setdefault("__repr__", _repr)
            body.update(
                __slots__=(),
                __annotations__=annotations,
                _fields=names,
                _field_defaults=dict(defaults),
                __match_args__=names,
                __new__=_first_new(names, defaults),
                __getnewargs__=_getnewargs,
                _make=_make,
                _replace=_replace,
                _asdict=_asdict,
            )
            return type(name, (tuple,), body)  # __qualname__ taken from the body

    def _first_new(names: tuple[str, ...], by_default: dict[str, Any]) -> Any:
        """A ``__new__`` that binds its arguments itself until the class has made ``HOT``
        instances, then compiles the real one (``namedtuple``'s: the fields by name and
        position, defaults last) and puts it in its place."""
        made = [0]

        def __new__(cls: Any, *given: Any, **by_name: Any) -> Any:
            made[0] += 1
            if made[0] < HOT:
                if by_name or len(given) != len(names):
                    qualname = f"{cls.__qualname__}.__new__"
                    given = tuple(bind(qualname, names, by_default, given, by_name))
                return tuple.__new__(cls, given)
            params = ", ".join(("_cls", *names))
            values = f"({', '.join(names)},)" if names else "()"
            scope = {"_tuple_new": tuple.__new__, "__builtins__": {}}
            real = eval(f"lambda {params}: _tuple_new(_cls, {values})", scope)
            real.__name__ = "__new__"
            real.__qualname__ = f"{cls.__qualname__}.__new__"
            real.__defaults__ = tuple(by_default.values()) or None
            for owner in cls.__mro__:
                if owner.__dict__.get("__new__") is staticmethod_new:
                    type.__setattr__(owner, "__new__", staticmethod(real))
                    break
            return real(cls, *given, **by_name)

        staticmethod_new = staticmethod(__new__)
        return staticmethod_new

    _GETTERS: list[Any] = []

    def _getter(index: int) -> Any:
        """namedtuple's reader of field ``index``, shared by every class (it is bound to
        no class, only to its position)."""
        while len(_GETTERS) <= index:
            at = len(_GETTERS)
            _GETTERS.append(_tuplegetter(at, f"Alias for field number {at}"))
        return _GETTERS[index]

    @classmethod  # type: ignore[misc]
    def _make(cls: Any, iterable: Any) -> Any:
        result = tuple.__new__(cls, iterable)
        if len(result) != len(cls._fields):
            raise TypeError(f"Expected {len(cls._fields)} arguments, got {len(result)}")
        return result

    def _replace(self: Any, /, **changes: Any) -> Any:
        result = self._make(map(changes.pop, self._fields, self))
        if changes:
            raise ValueError(f"Got unexpected field names: {list(changes)!r}")
        return result

    def _asdict(self: Any) -> dict[str, Any]:
        return dict(zip(self._fields, self, strict=True))

    def _getnewargs(self: Any) -> tuple[Any, ...]:
        return tuple(self)

    def _repr(self: Any) -> str:
        inner = ", ".join(f"{n}={v!r}" for n, v in zip(self._fields, self, strict=True))
        return f"{self.__class__.__name__}({inner})"

    try:
        from _collections import _tuplegetter  # namedtuple's own field reader, in C
    except ImportError:  # pragma: no cover - CPython always has it

        def _tuplegetter(index: int, doc: str) -> Any:
            return property(lambda self: self[index], doc=doc)

    _ROW_OWN = frozenset(
        ("__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_make", "_replace")
    ) | {"_asdict", "_source", "_field_defaults"}

    class Row(metaclass=_RowMeta):
        """The base of a named tuple declared as a class (see ``_RowMeta``)."""


def memo(maxsize: int) -> Callable[[F], F]:
    """``functools.lru_cache(maxsize)`` for a pure function of positional, hashable
    arguments: once ``maxsize`` results are kept, the oldest is let go for the next."""

    def wrap(function: F) -> F:
        cache: dict[tuple[Any, ...], Any] = {}

        def cached(*args: Any) -> Any:
            try:
                return cache[args]
            except KeyError:
                pass
            value = function(*args)
            if len(cache) >= maxsize:
                try:
                    del cache[next(iter(cache))]
                except (KeyError, RuntimeError, StopIteration):
                    pass  # another thread let one go meanwhile: as lru_cache, thread-safe
            cache[args] = value
            return value

        cached.__name__ = function.__name__
        cached.__qualname__ = function.__qualname__
        cached.__doc__ = function.__doc__
        cached.__module__ = function.__module__
        cached.__wrapped__ = function  # type: ignore[attr-defined]
        return cached  # type: ignore[return-value]

    return wrap


_MISSING: Any = object()


class FrozenInstanceError(AttributeError):
    """A field of a frozen instance was set or deleted."""


class Field:
    """What ``field()`` says of one field; replaced by its default on the class."""

    __slots__ = ("compare", "default", "default_factory", "hash", "init", "repr")

    def __init__(
        self,
        default: Any,
        default_factory: Any,
        init: bool,
        repr: bool,
        compare: bool,
        hash: bool | None,
    ) -> None:
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.compare = compare
        self.hash = compare if hash is None else hash


def field(
    *,
    default: Any = _MISSING,
    default_factory: Callable[[], Any] = _MISSING,
    init: bool = True,
    repr: bool = True,
    compare: bool = True,
    hash: bool | None = None,
) -> Any:
    """A field with more than a plain default (as ``dataclasses.field``)."""
    return Field(default, default_factory, init, repr, compare, hash)


def _fields(cls: type) -> dict[str, Field]:
    found: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        found.update(getattr(base, "__plain_fields__", {}))
    # The class's own annotations, in order (inspect.get_annotations is what we avoid).
    own = cls.__dict__
    for name, annotation in own.get("__annotations__", {}).items():
        kind = str(annotation).removeprefix("typing.").removeprefix("dataclasses.")
        if kind.startswith(("ClassVar", "InitVar", "KW_ONLY")):
            raise TypeError(f"@plain does not take {annotation} ({cls.__name__}.{name})")
        value = own.get(name, _MISSING)
        if not isinstance(value, Field):  # a plain default, or none
            found[name] = Field(value, _MISSING, True, True, True, None)
            continue
        if value.default is _MISSING:
            delattr(cls, name)  # a field() without a default: no class attribute
        else:
            setattr(cls, name, value.default)
        found[name] = value
    return found


def _build(cls: type[T], frozen: bool, eq: bool) -> type[T]:
    fields = _fields(cls)
    cls.__plain_fields__ = fields  # type: ignore[attr-defined]
    methods: dict[str, Any] = {
        "__init__": _first_init(cls, fields, frozen),
        **_methods(cls, fields, frozen, eq),
    }
    qualname = cls.__qualname__
    for name, function in methods.items():
        function.__qualname__ = f"{qualname}.{name}"
        setattr(cls, name, function)
    if eq and not frozen:
        cls.__hash__ = None  # type: ignore[assignment]
    type.__setattr__(cls, "__match_args__", tuple(n for n in fields if fields[n].init))
    return cls


def _init_source(
    fields: dict[str, Field], frozen: bool, post_init: bool
) -> tuple[str, dict[str, Any]]:
    """The source of the compiled ``__init__``, and the names it reads: written only when
    a class turns hot, as most never do (docs/design.md §9.14)."""
    scope: dict[str, Any] = {"_MISSING": _MISSING}
    params, body = [], []
    setter = "object.__setattr__(self, {0!r}, {1})" if frozen else "self.{0} = {1}"
    for name, spec in fields.items():
        if spec.default_factory is not _MISSING:
            scope[f"_factory_{name}"] = spec.default_factory
            if spec.init:
                params.append(f"{name}=_MISSING")
                value = f"_factory_{name}() if {name} is _MISSING else {name}"
            else:
                value = f"_factory_{name}()"
        elif not spec.init:
            if spec.default is _MISSING:
                continue  # set by __post_init__
            scope[f"_default_{name}"] = spec.default
            value = f"_default_{name}"
        else:
            if spec.default is _MISSING:
                params.append(name)
            else:
                scope[f"_default_{name}"] = spec.default
                params.append(f"{name}=_default_{name}")
            value = name
        body.append(setter.format(name, value))
    if post_init:
        body.append("self.__post_init__()")
    source = [
        f"def __init__(self, {', '.join(params)}):",
        *(f"    {line}" for line in body or ["pass"]),
    ]
    return "\n".join(source), scope


# Instances a class makes before its ``__init__`` (or a ``Row``'s ``__new__``) is compiled:
# until then its arguments are bound by ``bind``. A command makes a few instances of most
# classes, and compiling costs more than binding a few; a table of many records makes the
# record class hot at once.
HOT = 24


def bind(
    qualname: str,
    names: tuple[str, ...],
    defaults: dict[str, Any],
    given: tuple[Any, ...],
    by_name: dict[str, Any],
) -> list[Any]:
    """The values of ``names`` from a call's arguments, as Python binds a function's:
    positional first, then by name, then ``defaults``; a wrong call is the ``TypeError``
    Python would raise, checked in Python's order, the names first (``qualname`` is the
    function's; one more positional counts its first argument, ``self`` or ``cls``)."""
    for key in by_name:
        if key not in names:
            raise TypeError(f"{qualname}() got an unexpected keyword argument {key!r}")
        if names.index(key) < len(given):
            raise TypeError(f"{qualname}() got multiple values for argument {key!r}")
    if len(given) > len(names):
        least = len(names) - len(defaults)
        takes = f"from {least + 1} to {len(names) + 1}" if defaults else str(len(names) + 1)
        plural = "" if takes == "1" else "s"  # a class of no fields takes its self alone
        raise TypeError(
            f"{qualname}() takes {takes} positional argument{plural} but {len(given) + 1} "
            "were given"
        )
    values = list(given)
    missing = []
    for name in names[len(given) :]:
        if name in by_name:
            values.append(by_name[name])
        elif name in defaults:
            values.append(defaults[name])
        else:
            missing.append(name)
    if missing:
        spelled = [repr(name) for name in missing]
        listed = " and ".join(spelled)  # as Python writes them: 'a' and 'b'; 'a', 'b', and 'c'
        if len(spelled) > 2:
            listed = f"{', '.join(spelled[:-1])}, and {spelled[-1]}"
        plural = "s" if len(missing) > 1 else ""
        raise TypeError(
            f"{qualname}() missing {len(missing)} required positional argument{plural}: {listed}"
        )
    return values


def _first_init(cls: type, fields: dict[str, Field], frozen: bool) -> Callable[..., None]:
    """An ``__init__`` that binds its arguments itself until the class has made ``HOT``
    instances, then compiles the real one and puts it in its place."""
    names = tuple(n for n, spec in fields.items() if spec.init)
    defaults = {
        n: spec.default if spec.default_factory is _MISSING else _MISSING
        for n, spec in fields.items()
        if spec.init and (spec.default is not _MISSING or spec.default_factory is not _MISSING)
    }
    post_init = hasattr(cls, "__post_init__")
    made = [0]

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        made[0] += 1
        if made[0] < HOT:
            qualname = f"{cls.__qualname__}.__init__"
            given = dict(zip(names, bind(qualname, names, defaults, args, kwargs), strict=True))
            for name, spec in fields.items():
                if spec.default_factory is not _MISSING:
                    value = given.get(name, _MISSING)
                    value = spec.default_factory() if value is _MISSING else value
                elif not spec.init:
                    if spec.default is _MISSING:
                        continue  # set by __post_init__
                    value = spec.default
                else:
                    value = given[name]
                if frozen:
                    object.__setattr__(self, name, value)
                else:
                    setattr(self, name, value)
            if post_init:
                self.__post_init__()
            return
        made_now: dict[str, Any] = {}
        source, scope = _init_source(fields, frozen, post_init)
        exec(source, scope, made_now)  # only __init__ is compiled: it runs per instance
        real = made_now["__init__"]
        real.__qualname__ = f"{cls.__qualname__}.__init__"
        if cls.__dict__.get("__init__") is __init__:
            type.__setattr__(cls, "__init__", real)
        real(self, *args, **kwargs)

    return __init__


def _methods(cls: type, fields: dict[str, Field], frozen: bool, eq: bool) -> dict[str, Any]:
    """``__repr__``, and as asked ``__eq__``, ``__hash__``, ``__setattr__`` and
    ``__delattr__``: closures over the field names, no compiling."""
    names = tuple(fields)
    shown = tuple(n for n in names if fields[n].repr)

    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in shown)
        return f"{self.__class__.__qualname__}({inner})"

    found: dict[str, Any] = {"__repr__": __repr__}
    compared = tuple(n for n in names if fields[n].compare)
    hashed = tuple(n for n in names if fields[n].hash)

    def values(of: tuple[str, ...]) -> Callable[[Any], Any]:
        if len(of) > 1:
            return attrgetter(*of)  # a tuple of them, read in C
        return lambda obj: tuple(getattr(obj, n) for n in of)

    if eq:
        key = values(compared)

        def __eq__(self: Any, other: Any) -> Any:
            if other.__class__ is self.__class__:
                return key(self) == key(other)
            return NotImplemented

        found["__eq__"] = __eq__
    if frozen:
        owner: Any = cls

        def __setattr__(self: Any, name: str, value: Any) -> None:
            if type(self) is cls or name in names:
                raise FrozenInstanceError(f"cannot assign to field {name!r}")
            super(owner, self).__setattr__(name, value)

        def __delattr__(self: Any, name: str) -> None:
            if type(self) is cls or name in names:
                raise FrozenInstanceError(f"cannot delete field {name!r}")
            super(owner, self).__delattr__(name)

        found["__setattr__"] = __setattr__
        found["__delattr__"] = __delattr__
    if eq and frozen:
        hash_key = values(hashed)

        def __hash__(self: Any) -> int:
            return hash(hash_key(self))

        found["__hash__"] = __hash__
    return found


# ``overload`` is the stand-in above at run time, which ruff does not read as typing's.
@overload
def plain(cls: type[T], /) -> type[T]: ...


@overload
def plain(*, frozen: bool = False, eq: bool = True) -> Callable[[type[T]], type[T]]: ...  # noqa: F811


@dataclass_transform(field_specifiers=(field,))
def plain(  # noqa: F811
    cls: type[T] | None = None, /, *, frozen: bool = False, eq: bool = True
) -> type[T] | Callable[[type[T]], type[T]]:
    """The class with a data class's methods (see the module's notes)."""
    if cls is None:
        return lambda c: _build(c, frozen, eq)
    return _build(cls, frozen, eq)


def field_names(cls: type) -> tuple[str, ...]:
    """The names of the fields of a ``@plain`` class, in order."""
    return tuple(cls.__plain_fields__)  # type: ignore[attr-defined]


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of ``obj`` with ``changes`` (as ``dataclasses.replace``)."""
    fields: dict[str, Field] = type(obj).__plain_fields__  # type: ignore[attr-defined]
    for name, spec in fields.items():
        if spec.init and name not in changes:
            changes[name] = getattr(obj, name)
        elif not spec.init and name in changes:
            raise ValueError(f"field {name} cannot be given to replace()")
    return type(obj)(**changes)
