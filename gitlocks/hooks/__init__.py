"""The git hooks: what a commit or a push touches, whose claims it crosses, and installing them.

Installed shims run ``from gitlocks.hooks import main``: keep that name here, for hooks
installed by every version.
"""

from gitlocks.hooks.check import main

__all__ = ["main"]
