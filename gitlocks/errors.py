"""One error hierarchy for the whole project, each class with its exit code: 1 is "no"
(refused, held by someone else), 2 "could not run"; anything else is a bug, never 1."""

from __future__ import annotations

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130


class GitlocksError(Exception):
    """A failure the user can act on; the message is printed after ``error: ``."""

    exit_code = EXIT_ERROR

    def to_dict(self) -> dict[str, object]:
        """The error as a JSON document: what ``--json`` and MCP answer in its place."""
        return {"status": "error", "error": str(self), "exit_code": self.exit_code}


class UsageError(GitlocksError):
    """Bad input: a pattern, duration, holder id or option that cannot be used."""


class InvalidPattern(UsageError, ValueError):
    """A scope pattern refused by the rules (empty, negated, unterminated class, ...)."""

    def __init__(self, pattern: str, reason: str) -> None:
        self.pattern = pattern
        self.reason = reason
        super().__init__(f"invalid pattern {pattern!r}: {reason}")


class InvalidHolder(UsageError):
    """An agent id outside ``[A-Za-z0-9._-]{1,64}``."""


class NotARepository(GitlocksError):
    """Not inside a git repository, or inside a bare one."""


class StoreError(GitlocksError):
    """The lock store could not be read or written (busy, corrupt, permissions)."""


class RemoteError(GitlocksError):
    """The lock remote is unreachable, refused us, or cannot do what remote mode needs."""


class RemoteTimeout(RemoteError):
    """A command run against the lock remote took longer than its bound and was killed."""


class Refused(GitlocksError):
    """The answer is no: the action is not allowed for this holder."""

    exit_code = EXIT_REFUSED
