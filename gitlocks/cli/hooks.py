"""Command-line verbs for the hooks feature, registered on the main app by ``gitlocks.cli.locks``.

``gitlocks.hooks.install`` is imported inside the verbs: the other verbs need not pay for it.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gitlocks.cli.common import JsonOption
from gitlocks.errors import EXIT_OK

if TYPE_CHECKING:
    from gitlocks.hooks.install import HookChange


_WORDS = {
    "installed": "INSTALLED",
    "updated": "INSTALLED",
    "already_installed": "ALREADY INSTALLED",
    "uninstalled": "UNINSTALLED",
    "not_installed": "NOT INSTALLED",
}


def _reply(changes: list[HookChange], as_json: bool) -> None:
    if as_json:
        doc: dict[str, Any] = {"hooks": [c.to_dict() for c in changes]}
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        return
    lines = []
    for change in changes:
        line = f"{_WORDS[change.status]} {change.hook} ({change.path})"
        if change.chained is not None and change.status != "uninstalled":
            kept = f"{change.chained.parent.name}/{change.chained.name}"
            line += f"; runs your previous hook first, kept as {kept}"
        elif change.chained is not None:
            line += "; your previous hook is back in place"
        lines.append(line)
    sys.stdout.write("\n".join(lines) + "\n")


def register(app: typer.Typer) -> None:
    """Add this feature's verbs to ``app``."""

    @app.command("install-hooks")
    def install_hooks(
        pre_push: Annotated[
            bool, typer.Option("--pre-push", help="Also check the commits you push.")
        ] = False,
        as_json: JsonOption = False,
    ) -> None:
        """Install the pre-commit hook (and pre-push with --pre-push) into this repository.

        An existing hook is kept and still runs first. Warns by default;
        git config alock.hookMode block makes the hooks refuse.

        Example: git alock install-hooks --pre-push
        """
        from gitlocks.hooks import install as hooks

        wanted = ["pre-commit", "pre-push"] if pre_push else ["pre-commit"]
        _reply(hooks.install(hooks.hooks_dir(), wanted, sys.executable), as_json)
        raise typer.Exit(EXIT_OK)

    @app.command("uninstall-hooks")
    def uninstall_hooks(as_json: JsonOption = False) -> None:
        """Remove the bundled hooks and put back any hook they had chained.

        Example: git alock uninstall-hooks
        """
        from gitlocks.hooks import install as hooks

        _reply(hooks.uninstall(hooks.hooks_dir()), as_json)
        raise typer.Exit(EXIT_OK)
