"""The post-merge and post-rewrite hooks: a merge may land a claim's work
(docs/design.md, section 6.8). A claim made ``--until-merged BRANCH`` is released once its
commits are in BRANCH; these hooks ask right after a merge or a rewrite, the cheap question
first on the fast path (does a record of this machine wait at all?). In remote mode they
leave it to ``sync``. git ignores both hooks' exit codes; they never fail anyway.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from gitlocks.core.record import LockRecord
from gitlocks.core.text import printable
from gitlocks.hooks.commit import HEARTBEAT_TIMEOUT_SECONDS, quietly
from gitlocks.hooks.reading import TableReader, bound_mutex
from gitlocks.hooks.session import hook_session
from gitlocks.identity import host_identity, resolve_identity
from gitlocks.render.hooks import PREFIX


def run(cwd: str | None = None) -> list[LockRecord]:
    """Release this machine's claims whose work has landed; the claims released."""
    settings, table = TableReader(cwd).finish()
    if settings.remote:
        return []
    host = host_identity()
    if not any(r.host_id == host for r in table.landing()):
        return []
    # Imported here: the store brings in pygit2, which the hooks' fast path avoids.
    from gitlocks.service.context import open_context
    from gitlocks.service.remote import land_waiting

    ctx = open_context(cwd, lambda: resolve_identity(None, session=hook_session()))
    bound_mutex(ctx.store, HEARTBEAT_TIMEOUT_SECONDS)  # the merge is made: never wait long
    return land_waiting(ctx)


def main(argv: Sequence[str]) -> int:
    """``git-alock hook post-merge|post-rewrite``: say what landed; always exit 0."""
    hook = argv[0] if argv else "post-merge"
    if hook == "post-rewrite":
        sys.stdin.read()  # git's list of rewritten commits: read, so git never writes in vain
    for record in quietly(run, f"{hook} landing check skipped"):
        sys.stderr.write(
            printable(
                f"{PREFIX}LANDED {' '.join(record.paths)} of {record.holder}: its work is in "
                f"{record.until_merged}, claim released [lock {record.id}]"
            )
            + "\n"
        )
    return 0
