"""``Value``: the base of the plain classes a command builds (docs/design.md, section 8)."""

from __future__ import annotations


class Value:
    """A value whose fields are its ``__slots__``: two are equal when they are of one class
    and their fields are, with a hash and a repr to match: what ``@dataclass(slots=True)``
    would write, without loading ``dataclasses`` on a hot path. A class that compares by
    other than every field, or in another order, says so by overriding ``_key``."""

    __slots__: tuple[str, ...] = ()

    def _key(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return other.__class__ is self.__class__ and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}{self._key()!r}"
