"""gitlocks: advisory path locks for coding agents, stored in git refs.

The public, pure API (no git needed) is the scope engine::

    >>> from gitlocks import patterns_overlap, pattern_covers
    >>> patterns_overlap("src/**/api", "src/api")
    True
"""

from __future__ import annotations

from gitlocks.errors import InvalidPattern

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"
__all__ = ["InvalidPattern", "__version__", "pattern_covers", "patterns_overlap"]


def __getattr__(name: str) -> Any:
    if name in ("pattern_covers", "patterns_overlap"):
        # On first use: the hooks import this package on every commit, and rarely need it.
        from gitlocks.core import scope

        return getattr(scope, name)
    raise AttributeError(f"module 'gitlocks' has no attribute {name!r}")
