"""``git alock whoami`` as text."""

from __future__ import annotations

from gitlocks.core.text import printable_lines
from gitlocks.identity import SHELLS, Identity, started_just_before_us


def whoami(ident: Identity) -> str:
    session = ident.session
    parent = f"{ident.parent} (from {ident.parent_source})" if ident.parent else "none"
    lines = [
        f"holder: {ident.holder} (from {ident.holder_source})",
        f"parent: {parent}",
    ]
    if ident.session_source == "none":
        lines.append(
            "session: none (an explicit id lives by its TTL; set AGENT_SESSION_PID to the "
            "pid of the process whose exit should end its claims)"
        )
    else:
        where = f" in {session.terminal}" if session.terminal else ""
        lines.append(
            f"session: {session.name} pid {session.pid}{where} on {session.host} "
            f"(from {ident.session_source})"
        )
    if ident.holder_source == "harness":
        lines.append(
            "hint: this is your agent session's id, the one its guard, its shell, its MCP "
            "server and its commits all use: set no AGENT_ID unless you are a sub-agent"
        )
    if ident.holder_source == "session":
        lines.append(
            "hint: this id is derived from the session and ends with it; set AGENT_ID to "
            "a name of your own for an id others can recognise"
        )
    if short_lived(ident):
        lines.append(SHORT_LIVED)
    return printable_lines(lines)


SHORT_LIVED = (
    "warning: the session process started just before this command, so it may be a "
    "launcher that exits when the command does, ending your claims with it: set AGENT_ID "
    "(and AGENT_SESSION_PID to a long-lived process), or name the launcher in "
    "AGENT_SESSION_SKIP"
)


def short_lived(ident: Identity) -> bool:
    """A derived session that looks like a launcher about to exit (identity's heuristic)."""
    # A terminal's shell lives as long as its terminal, however recently it started; a
    # terminal whose command is git alock itself (or a runner) does not.
    session = ident.session
    shell = bool(session.terminal) and session.name in SHELLS
    return ident.session_source == "session" and not shell and started_just_before_us(session)
