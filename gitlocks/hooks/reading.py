"""What every hook reads before it judges: its settings, the lock table, who commits, and
in remote mode a fresh view of the remote's table.

The commit hooks, the trailer, the heartbeat and the agent guard all read these; the
check of a commit's or a push's paths (``gitlocks.hooks.check``) is one of them. Like it,
this module imports neither the command-line framework nor pygit2 (design §6).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime

from gitlocks.core.record import format_duration, format_time
from gitlocks.core.table import Table
from gitlocks.core.value import Value
from gitlocks.errors import GitlocksError
from gitlocks.git import settings
from gitlocks.git.changes import finish_git, start_git
from gitlocks.git.settings import Settings
from gitlocks.git.table import read_lock_table
from gitlocks.identity import Identity, host_identity

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any

MODES = ("warn", "block")


# --- the lock table and the configuration, through git ------------------------------------


class HookConfig(Value):
    """The hooks' settings, read from git config in one call."""

    __slots__ = ("ignore_case", "mode", "reftable", "remote", "skew", "warning")

    def __init__(
        self,
        mode: str,
        ignore_case: bool,
        warning: str | None = None,
        skew: int = 0,
        reftable: bool = False,
        remote: str | None = None,
    ) -> None:
        self.mode = mode  # warn or block
        self.ignore_case = ignore_case
        self.warning = warning
        # Seconds a lock outlives its expiry: remote mode's clock-skew allowance, else 0.
        self.skew = skew
        self.reftable = reftable  # refs not in files: list them through git
        self.remote = remote  # alock.remote: the lock remote in remote mode


def hook_config(configured: Settings, *, receiving: bool = False) -> HookConfig:
    """The hooks' settings, from the repository's one settings reading. ``receiving``
    (the remote's pre-receive hook): ``block`` unless the repository says ``warn`` (an
    installed remote hook is there to refuse), and the clock-skew allowance of remote
    mode, since every lock there was written by some client's clock."""
    warnings = []
    ignore_case, case_warning = configured.lenient_flag("core.ignoreCase", False)
    skew, skew_warning = configured.clock_skew(remote=True if receiving else None)
    fallback = "block" if receiving else "warn"
    raw_mode = configured.get("alock.hookMode")
    if raw_mode is None:
        mode = fallback
    elif raw_mode.strip().lower() in MODES:
        mode = raw_mode.strip().lower()
    else:
        mode = fallback
        said = "refusing" if receiving else "warning only"
        warnings.append(f"unknown alock.hookMode {raw_mode!r} (use warn or block): {said}")
    warnings += [w for w in (case_warning, skew_warning) if w]
    return HookConfig(
        mode,
        ignore_case,
        "; ".join(warnings) or None,
        skew,
        configured.reftable,
        configured.get("alock.remote") or None,
    )


def committer(table: Table, identity: Identity, now: datetime) -> tuple[Identity, bool]:
    """Who commits, and whether that is an agent we know: ``AGENT_ID`` (or ``--as``); else
    the holder of a live lock recorded with this very session process (an agent whose id
    the guard derived from its harness's session, design §6.5); else the derived holder,
    known only while it holds a live lock. Unknown: no trailer is written for it."""
    if not identity.derived:
        return identity, True
    session = identity.session
    stamp = format_time(now)
    if session.pid and session.start_time and session.name:
        # Only the holders named after this session's program are read (the guard names
        # them so: ``claude-3f2a9c1e``): a commit never costs a read of the whole table.
        here = (session.pid, session.start_time, host_identity())
        prefix = session.name + "-"
        for holder in sorted(h for h in table.holders() if h.startswith(prefix)):
            for record in table.held_by(holder):
                if table.is_live(record, stamp) and (
                    (record.pid, record.pid_start, record.host_id) == here
                ):
                    return Identity(
                        record.holder,
                        identity.holder_source,
                        record.parent,
                        identity.parent_source,
                        identity.session,
                        identity.session_id,
                        identity.session_source,
                    ), True
    known = any(table.is_live(r, stamp) for r in table.held_by(identity.holder))
    return identity, known


class TableReader:
    """The configuration and the lock table, as a hook reads them through git: started at
    once, so that other git calls of the hook run meanwhile, and finished when needed."""

    def __init__(self, cwd: str | None) -> None:
        self.cwd = cwd
        self._config = settings.start(cwd)
        self._common = start_git(["rev-parse", "--git-common-dir"], cwd)

    def finish(self) -> tuple[HookConfig, Table]:
        configured = hook_config(settings.finish(self._config))
        common_dir = os.fsdecode(finish_git(self._common).strip())
        if self.cwd is not None:
            common_dir = os.path.join(self.cwd, common_dir)
        table = read_lock_table(common_dir, self.cwd, configured.ignore_case, configured.skew)
        return configured, table


# A push is about to reach a remote anyway: in remote mode pre-push first fetches the lock
# table, so that it never warns from a view older than the claims (a claim released from
# another clone); pre-commit does the same once its view says a path is held, so that a
# commit is never refused for a claim released elsewhere. It waits this long at most (less
# if alock.remoteTimeout says less), then says how old the view it judged by is.
PRE_PUSH_FETCH_SECONDS = 3


def bound_mutex(store: object, seconds: float) -> None:
    """Make ``store`` wait at most ``seconds`` for its mutex, whatever its callers ask: a
    hook never waits long on a store another process holds (the commit is made already)."""
    mutex: Callable[..., AbstractContextManager[None]] = getattr(store, "mutex")  # noqa: B009

    def bounded(timeout: float = seconds) -> AbstractContextManager[None]:
        return mutex(min(timeout, seconds))

    setattr(store, "mutex", bounded)  # noqa: B010


def refresh_view(
    cwd: str | None, remote: str, bound: Callable[[Any], None] | None = None
) -> str | None:
    """Fetch the lock remote's table into the local view, within PRE_PUSH_FETCH_SECONDS
    (``bound``: what bounds the wait instead, given the remote store); None when done,
    else the line saying how old the view is and why it stayed so."""
    # Imported here: only remote mode's refresh pays for pygit2 and the remote protocol.
    from gitlocks.store.local import Store
    from gitlocks.store.remote import RemoteStore

    store = Store.discover(cwd)
    try:
        view = RemoteStore(store.repo)
        if bound is None:
            view.timeout = min(view.timeout, PRE_PUSH_FETCH_SECONDS)
            bound_mutex(view, PRE_PUSH_FETCH_SECONDS)
        else:
            bound(view)
        view.sync()
        return None
    except GitlocksError as exc:
        return f"lock view {view_age(store, remote)}; could not reach {remote} ({exc})"


def view_age(store: Any, remote: str) -> str:
    """``from 12s ago``, or ``never fetched``: how old this clone's view of ``remote`` is."""
    from gitlocks.store.remote import read_sync_times  # remote mode only

    synced = read_sync_times(store).get(remote)
    if synced is None:
        return "never fetched"
    return f"from {format_duration(max(0.0, time.time() - synced))} ago"
