"""The git hooks. Installed shims of every version run ``from gitlocks.hooks import main``:
keep that name here. Each hook's module is imported only when that hook runs."""

from __future__ import annotations

import sys
from collections.abc import Sequence

# hook -> the module under gitlocks.hooks whose ``main(argv)`` runs it (argv[0] is the hook).
HOOKS = {
    "pre-commit": "check",
    "pre-push": "check",
    "commit-msg": "trailer",
    "prepare-commit-msg": "trailer",
    "post-commit": "commit",
    "post-merge": "landed",
    "post-rewrite": "landed",
    "pre-receive": "receive",
}
# The hooks install-hooks puts into a working repository (pre-push only when asked);
# pre-receive belongs to a bare repository you host (install-remote-hook).
CLIENT_HOOKS = (
    "pre-commit",
    "commit-msg",
    "prepare-commit-msg",
    "post-commit",
    "post-merge",
    "post-rewrite",
    "pre-push",
)
# Hooks that read a list from git on standard input (refs, or rewritten commits).
STDIN_HOOKS = ("pre-push", "pre-receive", "post-rewrite")


def report_bug(exc: Exception) -> None:
    """Say on stderr that a hook met a bug in gitlocks (``exc``), with the traceback."""
    import traceback  # only on this path: a bug in a hook

    # Imported here too: every hook, and more, loads this module; few of them print.
    from gitlocks.core.text import printable
    from gitlocks.render.hooks import PREFIX

    sys.stderr.write(
        f"{PREFIX}error: internal error: {exc.__class__.__name__}: {printable(str(exc))}\n"
        "This is a bug in gitlocks; please report it with the traceback below.\n"
    )
    traceback.print_exc()


def main(argv: Sequence[str]) -> int:
    """``git-alock hook HOOK [ARGS...]``: run one hook, return its exit code."""
    if not argv or argv[0] not in HOOKS:
        sys.stderr.write(f"error: usage: git-alock hook {'|'.join(HOOKS)} [ARGS...]\n")
        return 2
    name = f"gitlocks.hooks.{HOOKS[argv[0]]}"
    __import__(name)  # not importlib.import_module: one module less to load
    code: int = sys.modules[name].main(argv)
    return code


__all__ = ["CLIENT_HOOKS", "HOOKS", "STDIN_HOOKS", "main", "report_bug"]
