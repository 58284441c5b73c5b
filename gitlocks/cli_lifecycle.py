"""Command-line verbs for the lifecycle feature, registered on the main app by ``gitlocks.cli``."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this feature's verbs to ``app``."""
