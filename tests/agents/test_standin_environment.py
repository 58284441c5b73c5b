"""The stand-in harness runs inside the test's own Python environment, whatever the
machine's base interpreter carries: a harness process that imported the base's packages
would test the machine, not gitlocks."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.harness import StandIn
from support.interpreter import in_virtual_environment

# Modules the stand-in needs that the base interpreter may carry in other versions.
SHADOWED = ("anyio", "typing_extensions", "mcp")


@pytest.fixture
def standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[StandIn]:
    # A base-like path: the user's site-packages, which a base interpreter puts before its
    # own and a virtual environment leaves out. Every module planted there fails loudly.
    user_base = tmp_path / "userbase"
    monkeypatch.setenv("PYTHONUSERBASE", str(user_base))
    site = user_base / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    site = site / "site-packages"
    site.mkdir(parents=True)
    for name in SHADOWED:
        (site / f"{name}.py").write_text(f"raise ImportError('the base {name} was imported')\n")
    proc = StandIn(tmp_path / "harness", "claude")
    yield proc
    proc.close()


@pytest.mark.skipif(not in_virtual_environment(), reason="the tests run outside a venv")
def test_the_standin_imports_the_environments_packages_not_the_bases(standin: StandIn) -> None:
    for name in SHADOWED:
        mine = __import__(name).__file__
        assert mine is not None
        got = standin.imports_from(name)
        assert os.path.realpath(got) == os.path.realpath(mine), name


def test_the_standin_is_named_like_the_harness(standin: StandIn) -> None:
    standin.imports_from("os")  # up: past its exec
    comm = Path(f"/proc/{standin.pid}/comm")
    if not comm.exists():
        pytest.skip("no /proc")
    assert comm.read_text().strip() == "claude"
