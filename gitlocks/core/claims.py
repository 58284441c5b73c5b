"""Whose live claims hold a path against one holder, for ``check``, the git hooks and the
agent guard alike (docs/design.md, sections 3.2-3.4): live, its session not known dead,
covering the path, and its holder no friend of the asker (when committing, a sub-agent is
one too).
"""

from __future__ import annotations

from datetime import datetime

from gitlocks.core.judging import record_entries
from gitlocks.core.liveness import Liveness
from gitlocks.core.record import LockRecord, format_time
from gitlocks.core.scope import ScopeEntry, entry_covers, path_entry
from gitlocks.core.table import Table, holding


class Claims:
    """The live claims of ``table`` as seen by ``holder`` (and ``parent``) at ``now``:
    computed once, asked about many paths."""

    def __init__(
        self,
        table: Table,
        holder: str,
        parent: str | None,
        now: datetime,
        life: Liveness,
        *,
        committing: bool,
    ) -> None:
        self.table = table
        self.stamp = format_time(now)
        self.cutoff = table.cutoff(self.stamp)
        self.life = life
        if committing:
            self.friends = table.family(holder, parent)
        else:
            self.friends = table.unblocking(holder, parent)
        self._everyone: list[LockRecord] | None = None

    def alive(self, record: LockRecord) -> bool:
        """Live, and its session not known to be gone."""
        return record.expires_at > self.cutoff and not self.life.dead(record)

    @property
    def everyone(self) -> list[LockRecord]:
        """Every live claim: read only for a path no pattern can spell."""
        if self._everyone is None:
            self._everyone = [r for r in self.table.live(self.stamp) if self.alive(r)]
        return self._everyone

    def covering(self, entry: ScopeEntry) -> list[LockRecord]:
        """Every live claim covering ``entry``'s paths, whoever holds it, by id."""
        ids = sorted(self.table.covering(entry))
        return [r for i in ids if self.alive(r := self.table.records[i])]

    def covering_path(self, path: str) -> list[LockRecord]:
        """Every live claim covering the concrete ``path``; a name no pattern can spell (a
        control character in it) is decided one claim at a time."""
        entry = path_entry(path)
        if entry is not None:
            return self.covering(entry)
        case = self.table.ignore_case
        return [
            r
            for r in self.everyone
            if any(entry_covers(e, path, ignore_case=case) for e in record_entries(r))
        ]

    def split(self, locks: list[LockRecord]) -> tuple[list[LockRecord], list[LockRecord]]:
        """(theirs that hold against the asker, the asker's own side's)."""
        return holding(locks, self.friends)

    def held(self, path: str) -> list[LockRecord]:
        """The claims that hold the concrete ``path`` against the asker."""
        return self.split(self.covering_path(path))[0]

    def crossing(self, entry: ScopeEntry) -> list[LockRecord]:
        """The claims held against the asker whose scope meets ``entry``'s, by id."""
        ids = sorted(self.table.overlaps([entry]))
        return self.split([r for i in ids if self.alive(r := self.table.records[i])])[0]
