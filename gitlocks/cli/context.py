"""What the verbs that touch the lock table share: the store and identity, typed input
(imported only by verb modules that need the store, and so pygit2)."""

from __future__ import annotations

import os
import sys

from gitlocks.core.scope import ScopeEntry, make_entry
from gitlocks.core.text import first_control
from gitlocks.errors import GitlocksError, UsageError
from gitlocks.identity import resolve_identity
from gitlocks.layout import JOURNAL_REF
from gitlocks.render.locks import problems
from gitlocks.service.context import Context, open_context

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from collections.abc import Callable


def context(
    as_id: str | None,
    *,
    fresh: bool = False,
    land: bool = False,
    clear: bool = False,
    writes: bool = False,
) -> Context:
    """The store of the current repository (the remote's in remote mode) and who asks.

    ``land`` (reading verbs), in local mode: release this machine's claims whose work has
    landed (writes ask anyway; remote mode: ``sync``), then with ``clear`` the dead ones; in
    remote mode: say how old the view is (unless ``fresh``). ``writes``: warn of a symbolic
    journal ref in the write's own listing, under the mutex.
    """
    ctx = open_context(None, lambda: resolve_identity(as_id))
    if fresh:
        ctx.store.sync()
    # A reading verb answers from one listing of the refs (the warning's too), read once.
    ctx.store.snapshot = land
    if writes:
        ctx.store.on_journal_symref = _warn_journal_symref
    else:
        target = ctx.store.journal_symref()
        if target is not None:
            _warn_journal_symref(target)
    remote = ctx.store.config_get("alock.remote") if land else None
    if land and not remote:
        _land(ctx)
        if clear:
            from gitlocks.service import lifecycle  # the store's layer, for a write

            lifecycle.clear_dead_before_listing(ctx)
    elif remote and not fresh:
        # Imported here: only remote mode has a view to age.
        from gitlocks.render.remote import staleness
        from gitlocks.service.remote import view_age

        sys.stderr.write(staleness(remote, view_age(ctx.store, remote)) + "\n")
    return ctx


def _warn_journal_symref(target: str) -> None:
    sys.stderr.write(
        f"warning: {JOURNAL_REF} is a symbolic ref to {target}: never followed; "
        "the next write replaces it with a fresh journal\n"
    )


def _land(ctx: Context) -> None:
    """Release landed claims before a read; a read still answers if that write fails."""
    table = ctx.store.read_table()
    if not table.landing():
        return  # the cheap question: no claim waits on a merge (summaries only)
    from gitlocks.service import landing  # only when some claim waits

    if not landing.waiting_branches(table, ctx.host_id):
        return  # none of this machine's
    from gitlocks.service.remote import land_waiting  # only when some claim waits

    try:
        land_waiting(ctx)
    except GitlocksError as exc:
        ctx.warnings.append(f"claims whose work landed were not released: {exc}")


def entries(
    ctx: Context,
    patterns: list[str],
    is_file: Callable[[str], bool] | None = None,
    *,
    exact: bool = True,
) -> list[ScopeEntry]:
    """Typed patterns as scope entries, relative to the current directory, without repeats.

    ``is_file`` says whether a root-relative path is a file (then its pattern is exact):
    the store's by default; with ``exact`` False nothing is asked and no entry is exact."""
    store = ctx.store
    asked = (is_file or store.is_file) if exact else None
    here = os.path.realpath(os.getcwd())
    top = store.root.rstrip("/") + "/"  # "/" for a tree at the file system's root
    cwd = here[len(top) :] if here.startswith(top) else ""
    found: dict[ScopeEntry, None] = {}  # in order, without repeats
    bad = first_control(cwd)
    for typed in patterns:
        if bad is not None and not typed.startswith((":/", "/")):
            raise UsageError(
                f"the current directory's name holds a control character ({bad!r}), so no "
                f"pattern can be relative to it: anchor {typed!r} at the top of the working "
                "tree with ':/', or run git alock from another directory"
            )
        found[make_entry(typed, cwd=cwd, root=store.root, is_file=asked)] = None
    return list(found)


def warn_problems(ctx: Context) -> None:
    """Report refs under the lock namespace that hold no usable record, on stderr."""
    for warning in ctx.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    found = ctx.store.problems()
    if found:
        sys.stderr.write(problems(found) + "\n")


def require(patterns: list[str] | None, what: str) -> list[str]:
    if not patterns:
        raise UsageError(f"name at least one {what}")
    return patterns
