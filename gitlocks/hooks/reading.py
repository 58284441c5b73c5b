"""What every hook reads before it judges: its settings, the lock table, who commits, and
in remote mode a fresh view of the remote's table. Imports neither the command-line
framework nor pygit2 (docs/design.md, section 6).
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


class HookConfig(Value):
    """The hooks' settings, read from git config in one call."""

    __slots__ = ("ignore_case", "mode", "remote", "skew", "warning")

    def __init__(
        self,
        mode: str,
        ignore_case: bool,
        warning: str | None = None,
        skew: int = 0,
        remote: str | None = None,
    ) -> None:
        self.mode = mode  # warn or block
        self.ignore_case = ignore_case
        self.warning = warning
        # Seconds a lock outlives its expiry: remote mode's clock-skew allowance, else 0.
        self.skew = skew
        self.remote = remote  # alock.remote: the lock remote in remote mode


def hook_config(configured: Settings, *, receiving: bool = False) -> HookConfig:
    """The hooks' settings. ``receiving`` (the remote's pre-receive hook): ``block`` unless
    the repository says ``warn``, and remote mode's clock-skew allowance."""
    warnings = []
    ignore_case, case_warning = configured.lenient_flag("core.ignoreCase", False)
    skew, skew_warning = configured.clock_skew(remote=True if receiving else None)
    raw_mode = configured.get("alock.hookMode")
    mode = (raw_mode or "").strip().lower()
    if mode not in MODES:
        mode = "block" if receiving else "warn"
        if raw_mode is not None:
            said = "refusing" if receiving else "warning only"
            warnings.append(f"unknown alock.hookMode {raw_mode!r} (use warn or block): {said}")
    warnings += [w for w in (case_warning, skew_warning) if w]
    return HookConfig(
        mode,
        ignore_case,
        "; ".join(warnings) or None,
        skew,
        configured.get("alock.remote") or None,
    )


def committer(table: Table, identity: Identity, now: datetime) -> tuple[Identity, bool]:
    """Who commits, and whether that is an agent we know (docs/design.md, section 6.7):
    ``AGENT_ID`` (or ``--as``); else the holder of a live lock recorded with this very
    session process; else the derived holder, known only while it holds a live lock."""
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


# How long a hook waits at most for remote mode's refresh of its view (docs/design.md, 6).
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
    (or as ``bound`` bounds the remote store); None when done, else what the view is."""
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
