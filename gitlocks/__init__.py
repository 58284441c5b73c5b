"""gitlocks: advisory path locks for coding agents, stored in git refs.

The public, pure API (no git needed) is the scope engine::

    >>> from gitlocks import patterns_overlap, pattern_covers
    >>> patterns_overlap("src/**/api", "src/api")
    True
"""

from gitlocks.core.scope import pattern_covers, patterns_overlap
from gitlocks.errors import InvalidPattern

__version__ = "0.1.0"
__all__ = ["InvalidPattern", "__version__", "pattern_covers", "patterns_overlap"]
