"""The hooks as text: the commit or push check's report, and what install-hooks did.

Pure, and free of pygit2 and typer: the git hooks import it on every commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from gitlocks.core.judging import Problem
from gitlocks.core.record import LockRecord
from gitlocks.core.text import printable, printable_lines
from gitlocks.render.locks import path_held

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Protocol

    class HookChange(Protocol):
        """What install or uninstall did to one hook (``hooks/install.py``'s)."""

        @property
        def hook(self) -> str: ...
        @property
        def path(self) -> Path: ...
        @property
        def status(self) -> str: ...
        @property
        def chained(self) -> Path | None: ...


PREFIX = "alock: "

# The one word for each outcome of installing hooks, git's or an agent harness's.
INSTALL_WORDS = {
    "installed": "INSTALLED",
    "updated": "INSTALLED",
    "already_installed": "ALREADY INSTALLED",
    "uninstalled": "UNINSTALLED",
    "not_installed": "NOT INSTALLED",
}


def report(
    hook: str,
    mode: str,
    warning: str | None,
    problems: Sequence[Problem],
    held: Sequence[tuple[str, Sequence[LockRecord]]],
    now: datetime,
    unnamed: bool = False,
) -> str:
    """The hook's lines on stderr, each prefixed so it stands out in git's output.
    ``unnamed``: the commit names no agent, so even its holder's own claims count as
    another's; said, with how to name one."""
    lines = [warning] if warning else []
    lines += [f"warning: {p.ref} is not a usable lock ({p.reason}); ignored" for p in problems]
    for path, locks in held:
        lines += [path_held(path, record, now) for record in locks]
    if held and unnamed:
        lines.append(UNNAMED)
    if held:
        lines.append(advice(hook, mode, len(held)))
    return "".join(f"{PREFIX}{printable(line)}\n" for line in lines)


UNNAMED = (
    "this commit names no agent: if these claims are yours, set AGENT_ID (or commit from "
    "the agent session that holds them) and install the commit-msg hook (git alock "
    "install-hooks)"
)


def advice(hook: str, mode: str, count: int) -> str:
    what = "commit" if hook == "pre-commit" else "push"
    paths = f"{count} path{'s' if count != 1 else ''} inside another holder's lock"
    if mode == "block":
        leave = (
            "unstage them (git restore --staged PATH)"
            if what == "commit"
            else "push without those commits"
        )
        return (
            f"REFUSED {what}: {paths}: {leave}, ask the holder to release, "
            f"or bypass with git {what} --no-verify"
        )
    return (
        f"WARNING: {paths}; the {what} goes on. Ask the holder before changing their "
        f"paths (git alock list shows every claim); alock.hookMode=block refuses instead"
    )


def installed(changes: Sequence[HookChange]) -> str:
    """One line per hook: the word, the hook, its path, and any chained hook."""
    lines = []
    for change in changes:
        line = f"{INSTALL_WORDS[change.status]} {change.hook} ({change.path})"
        if change.chained is not None and change.status != "uninstalled":
            kept = f"{change.chained.parent.name}/{change.chained.name}"
            line += f"; runs your previous hook first, kept as {kept}"
        elif change.chained is not None:
            line += "; your previous hook is back in place"
        lines.append(line)
    return printable_lines(lines)
