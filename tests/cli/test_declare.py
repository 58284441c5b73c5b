"""A verb's declaration is read from its annotations as written: the small parser and the
tool table never evaluate them (only typer's bridge does, for help and errors)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from gitlocks.cli import declare

if TYPE_CHECKING:
    from decimal import Decimal  # a name the declaring module never binds at run time


def test_the_parser_reads_types_as_written_without_evaluating_them() -> None:
    """An annotation that names what is never bound at run time: the parser still reads the
    declaration, takes the plain parameters, and leaves the other to click."""
    app = declare.Verbs()

    @app.command()
    def weigh(
        paths: list[str] | None = declare.Argument(default=None, help="Paths."),
        dry: bool = declare.Option("--dry", default=False, help="Weigh nothing."),
        unit: str = declare.Option("--unit", default="kg", help="The unit."),
    ) -> None:
        """Weigh PATH...."""

    @app.command()
    def scale(factor: Decimal = declare.Option("--factor", help="How much.")) -> None:
        """Scale."""

    found = [(p.name, p.kind, p.required, p.default, p.plain) for p in declare.params(weigh)]
    assert found == [
        ("paths", "many", False, None, True),
        ("dry", "flag", False, False, True),
        ("unit", "value", False, "kg", True),
    ]
    assert declare.parse(weigh, ["a", "b", "--dry"]) == {
        "paths": ["a", "b"],
        "dry": True,
        "unit": "kg",
    }
    [factor] = declare.params(scale)
    assert (factor.kind, factor.required, factor.plain) == ("value", True, False)
    assert declare.parse(scale, ["--factor", "2"]) is None  # converted and checked by click


def test_a_parameter_declared_by_no_option_or_argument_is_refused_by_name() -> None:
    def loose(paths: list[str], dry: bool = declare.Option("--dry", default=False)) -> None:
        """Loose."""

    with pytest.raises(TypeError, match=r"loose: declare 'paths' as `paths: TYPE = Option"):
        declare.params(loose)
