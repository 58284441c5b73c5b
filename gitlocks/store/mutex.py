"""The store's mutex: an exclusive ``flock`` on ``<common dir>/agent-locks.mutex``, waited
for with jittered backoff (docs/design.md, section 4.3)."""

from __future__ import annotations

import fcntl
import os
import time

from gitlocks.errors import StoreError

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from collections.abc import Callable


def jitter() -> float:
    """A random fraction in [0, 1) for spreading retries (the ``random`` module would cost
    every command its import; only a contended write waits)."""
    return int.from_bytes(os.urandom(2), "big") / 65536


def wait_for_flock(fd: int, timeout: float) -> None:
    """Take the exclusive lock on ``fd``, waiting at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    delay = 0.0005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except (BlockingIOError, PermissionError):  # EAGAIN, EWOULDBLOCK, EACCES: held
            pass  # (their classes say so: errno is one module more to load)
        except OSError as exc:
            raise StoreError(f"cannot lock the store mutex: {exc.strerror}") from exc
        if time.monotonic() > deadline:
            raise StoreError(
                f"the lock store is busy: another gitlocks process held it for {timeout:.0f}s"
            )
        time.sleep(delay * (1 + jitter()))
        delay = min(delay * 2, 0.02)


class Mutex:
    """``with store.mutex(timeout):`` the store's flock, held for the block (a class, not
    a ``contextmanager``: contextlib is not worth its import to a lock command)."""

    def __init__(self, take: Callable[[], None], drop: Callable[[], None]) -> None:
        self.take = take
        self.drop = drop

    def __enter__(self) -> None:
        self.take()

    def __exit__(self, *exc: object) -> None:
        self.drop()
