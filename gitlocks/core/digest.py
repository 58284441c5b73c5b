"""SHA-1 and SHA-256 as gitlocks uses them: git's object ids, and short hex spreads."""

from __future__ import annotations

import hashlib
from typing import Any


def hasher(sha256: bool) -> Any:
    """A new SHA-256 (or SHA-1) object to feed: git's object ids in either format."""
    return hashlib.sha256() if sha256 else hashlib.sha1()


def sha1_hex(data: bytes) -> str:
    """The SHA-1 of ``data`` in hex (no security rests on it: a spread, not a secret)."""
    return hashlib.sha1(data, usedforsecurity=False).hexdigest()


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data`` in hex."""
    return hashlib.sha256(data).hexdigest()
