"""``git alock whoami`` as text."""

from __future__ import annotations

from gitlocks.core.text import printable_lines
from gitlocks.identity import Identity


def whoami(ident: Identity) -> str:
    session = ident.session
    parent = f"{ident.parent} (from {ident.parent_source})" if ident.parent else "none"
    return printable_lines(
        [
            f"holder: {ident.holder} (from {ident.holder_source})",
            f"parent: {parent}",
            f"session: {session.name} pid {session.pid} on {session.host} ({ident.session_id})",
        ]
    )
