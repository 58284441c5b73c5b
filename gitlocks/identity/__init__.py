"""Who is asking: the holder id, its parent, and the session process behind them
(docs/design.md, section 3.2).

The process facts it rests on are ``gitlocks.identity.processes``'s, named here too for
the modules that ask who is asking. Stdlib only: every command imports this module.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from gitlocks.core.record import validate_holder
from gitlocks.core.value import Value
from gitlocks.errors import InvalidHolder
from gitlocks.identity.processes import (
    HARNESS_PROCESSES,
    HOLDER_ENV,
    HOLDER_SCOPE_ENV,
    SHELLS,
    SessionProcess,
    declared_session,
    holder_scope,
    host_identity,
    name_part,
    parent_pid,
    process_alive,
    process_start_time,
    register_dir,
    session_holder_id,
    session_process,
    started_just_before_us,
    trusted,
)

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any


class Identity(Value):
    """The holder and parent for this invocation, and where each came from: ``--as``,
    ``AGENT_ID``, ``AGENT_PARENT_ID``, ``harness`` or ``session`` (derived). ``session``: the
    process whose life is the holder's; pid 0 when none embodies it, its locks then living by
    their TTL alone. ``session_id``: the id derived from the session found, holder or not."""

    __slots__ = (
        "holder",
        "holder_source",
        "parent",
        "parent_source",
        "session",
        "session_id",
        "session_source",
    )

    def __init__(
        self,
        holder: str,
        holder_source: str,
        parent: str | None,
        parent_source: str | None,
        session: SessionProcess,
        session_id: str,
        session_source: str = "session",
    ) -> None:
        self.holder = holder
        self.holder_source = holder_source
        self.parent = parent
        self.parent_source = parent_source
        self.session = session
        self.session_id = session_id
        self.session_source = session_source

    @property
    def derived(self) -> bool:
        """Whether the holder was derived from the process tree alone (no id was given and
        no harness session named one): such a holder is known only by its locks."""
        return self.holder_source == "session"

    def to_dict(self) -> dict[str, Any]:
        session = self.session
        return {
            "holder": self.holder,
            "holder_source": self.holder_source,
            "parent": self.parent,
            "parent_source": self.parent_source,
            "session": {
                "id": self.session_id,
                "pid": session.pid,
                "start_time": session.start_time,
                "name": session.name,
                "host": session.host,
                "source": self.session_source,
            },
        }


def resolve_identity(
    as_id: str | None = None,
    env: Mapping[str, str] | None = None,
    session: SessionProcess | None = None,
    *,
    harness: bool = True,
) -> Identity:
    """Holder: ``--as``, else ``AGENT_ID``, else the harness session this process runs under,
    else the session's derived id. Parent: ``AGENT_PARENT_ID``, else the one the harness
    declared; a parent equal to the holder is dropped. The session, whose death ends the
    holder's claims, is the process that embodies the holder (docs/design.md, sections 3.2
    and 3.3): an explicit id with none has none, as a wrapper that ran ``git alock`` and exited
    must not take the claim with it. ``session``: the one found by a caller. An empty variable
    counts as unset. ``harness=False`` skips the register (the guard is the harness's voice)."""
    env = os.environ if env is None else env
    declared = declared_session(env)

    if as_id is not None and as_id.startswith("--"):
        # ``--as --json``: the next option was taken as the id, the id itself forgotten.
        raise InvalidHolder(f"--as needs an agent id before the next option, not {as_id!r}")
    if as_id is not None:
        holder, holder_source = validate_holder(as_id, what="--as id"), "--as"
    elif env.get("AGENT_ID"):
        holder, holder_source = validate_holder(env["AGENT_ID"], what="AGENT_ID"), "AGENT_ID"
    else:
        holder, holder_source = "", "session"

    registered = None
    where = register_dir(env) if harness else None
    if where is not None and trusted(where):
        # The register, where there is one to read (it reads this module's facts): without
        # one, the answer costs a stat, not the import (docs/design.md §9.14).
        from gitlocks.identity.sessions import lookup

        registered = lookup(env)
        if registered is not None and holder and registered.holder != holder:
            registered = None  # an explicit id of its own: a sub-agent, not the harness

    parent: str | None = None
    parent_source: str | None = None
    if env.get("AGENT_PARENT_ID"):
        parent = validate_holder(env["AGENT_PARENT_ID"], what="AGENT_PARENT_ID")
        parent_source = "AGENT_PARENT_ID"
    elif registered is not None and registered.parent:
        parent, parent_source = registered.parent, "harness"

    if registered is not None:
        if not holder:
            holder, holder_source = registered.holder, "harness"
        embodied = declared if declared is not None else registered.session
        source = "AGENT_SESSION_PID" if declared is not None else "harness"
        session_id = registered.holder
    else:
        given = session if session is not None else declared
        found = given if given is not None else session_process(env=env)
        session_id = session_holder_id(found)
        nobody = SessionProcess(0, "", found.name, found.host)
        exported = ""
        if harness and not holder and found.name not in HARNESS_PROCESSES:
            exported = env.get(HOLDER_ENV, "")
        if exported:
            from gitlocks.identity.sessions import left_the_session  # it imports this module

            exported = "" if left_the_session(env) else exported
        if exported:
            holder, holder_source = validate_holder(exported, what=HOLDER_ENV), "harness"
            source, embodied = "none", nobody
        elif given is not None:
            holder = holder or session_id
            source, embodied = ("AGENT_SESSION_PID" if declared is given else "session"), given
        elif not holder:
            holder, source, embodied = session_id, "session", found
        else:
            source, embodied = "none", nobody
    if parent == holder:
        parent, parent_source = None, None
    return Identity(holder, holder_source, parent, parent_source, embodied, session_id, source)


# The process facts named here for the modules that ask who is asking.
__all__ = [
    "HOLDER_ENV",
    "HOLDER_SCOPE_ENV",
    "SHELLS",
    "Identity",
    "SessionProcess",
    "holder_scope",
    "host_identity",
    "name_part",
    "parent_pid",
    "process_alive",
    "process_start_time",
    "register_dir",
    "resolve_identity",
    "session_holder_id",
    "session_process",
    "started_just_before_us",
]
