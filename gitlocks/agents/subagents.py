"""Sub-agents as the harness names them (Claude Code's ``agent_id`` on a sub-agent's
events): each is a sub-holder of its session (docs/design.md, section 6.5), whose
siblings block it and whose session's claims never do."""

from __future__ import annotations

import hashlib
from datetime import datetime

from gitlocks.core.record import format_time
from gitlocks.core.table import Table
from gitlocks.identity import Identity

# A sub-agent's holder: its session's, this, then 8 hex of the harness's agent id.
SUB = ".sub-"
HOLDER_MAX = 64


def elder_holds_exactly(table: Table, identity: Identity, now: datetime, rel: str) -> bool:
    """Whether an ancestor of the holder (a sub-agent's session) holds exactly ``rel`` and
    nothing else: ``acquire`` refuses a child its parent's whole scope (docs/design.md §3.4), so
    the sub-agent edits under its session's claim instead of claiming for itself."""
    stamp = table.cutoff(format_time(now))
    wanted = table.keys([rel])
    for elder in table.ancestors(identity.holder, identity.parent):
        for record in table.held_by(elder):
            if record.expires_at > stamp and table.keys(record.paths) == wanted:
                return True
    return False


def sub_holder(session: Identity, agent: str) -> Identity:
    """The holder of the session's sub-agent ``agent``: ``<session holder>.sub-<8 hex>``,
    a child of the session holder (docs/design.md §3.2), embodied by the same process."""

    def hexed(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]

    base = session.holder
    if len(base) > HOLDER_MAX - len(SUB) - 8:  # a long AGENT_ID: cut, kept distinct
        base = f"{base[: HOLDER_MAX - len(SUB) - 17]}-{hexed(base)}"
    return Identity(
        f"{base}{SUB}{hexed(agent)}",
        "harness",
        session.holder,
        "harness",
        session.session,
        session.session_id,
        session.session_source,
    )
