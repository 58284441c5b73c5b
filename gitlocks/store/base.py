"""What the services ask of a lock store: the contract every store keeps (the local refs,
a shared remote, and the tests' in-memory store), checked by ``tests/store/test_contract.py``:
``read_table()`` is the table as of one moment (docs/design.md, section 5.4);
``transact(decide)`` is one compare-and-swap step (4.2; an empty change writes nothing);
every applied change is one journal entry; a blob that is no record is a ``Problem``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

from gitlocks.core.change import Change
from gitlocks.core.judging import Problem
from gitlocks.core.table import Table
from gitlocks.git.settings import Settings

T = TypeVar("T")


class Entry(Protocol):
    """One journal entry: the commit (or the twin's id for it) and its events."""

    @property
    def commit(self) -> str: ...

    @property
    def events(self) -> tuple[dict[str, Any], ...]: ...


class LockStore(Protocol):
    """The lock table of one repository, as the services use it."""

    root: str  # the working tree the command runs in
    common_dir: str  # where per-repository files live (refusal log, mutex)
    git_dir: str
    settings: Settings
    ignore_case: bool
    skew: int  # seconds a lock outlives its expiry (remote mode's clock-skew allowance)
    breaking: bool  # a break under way: a granted claim whose record is lost is unusable
    snapshot: bool  # one reading command: the table as first read (docs/design.md 4.5)
    # Told where a symbolic journal ref points when a write finds one (it replaces it).
    on_journal_symref: Callable[[str], None] | None

    @property
    def remote(self) -> str | None:
        """The lock remote's name in remote mode; None when the table is the local refs."""

    @property
    def reftable(self) -> bool:
        """Whether refs are no files to look at (reftable, or a store of no repository)."""

    def config_get(self, key: str) -> str | None: ...

    def is_file(self, path: str) -> bool: ...

    def head_info(self) -> tuple[str | None, str | None]: ...

    def version(self) -> str | None: ...

    def decided_version(self) -> str | None: ...

    def symref_target(self, name: str) -> str | None: ...

    def journal_symref(self) -> str | None: ...

    def read_table(self) -> Table: ...

    def problems(self) -> list[Problem]: ...

    def transact(self, decide: Callable[[Table], tuple[Change, T]], *, tries: int = 5) -> T: ...

    def journal(self, limit: int | None = None, *, start: str | None = None) -> Iterator[Entry]: ...

    # Landing (docs/design.md, section 6.8): where branches are, and what they hold.
    def sync(self) -> bool: ...

    def fetch_branches(self, branches: list[str]) -> None: ...

    def landing_ref(self, branch: str) -> str: ...

    def commit_of(self, ref: str) -> str | None: ...

    def contains(self, tip: str, commit: str) -> bool: ...

    def paths_changed_since(self, head: str, base: str, limit: int) -> set[str] | None: ...
