"""What an edit writes when its tool does not name its files plainly: a patch whose files
are only candidates (``Candidates``), or one that cannot be judged at all
(``Unjudgeable``), which the guard denies, saying what to do instead.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any


class Unjudgeable(Exception):
    """A patch is applied from a directory that cannot be known for certain."""

    # The product whose call it is (a ``gitlocks.agents.harnesses.Harness``), once known.
    harness: Any = None


class Candidates(tuple[str, ...]):
    """Files a patch may write, from more than one directory it may run in (a ``cd`` that
    may fail before ``;``): each is judged, none is claimed on the guess."""


# What the guard's denial of an ``Unjudgeable`` patch tells the agent to do instead.
USE_INSTEAD = (
    "use the apply_patch tool (its paths are read from the session's directory), or "
    "cd to an absolute directory first in the same command "
    "(cd /abs/dir && apply_patch <<'EOF')"
)
