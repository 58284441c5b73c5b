"""SHA-1 and SHA-256 as gitlocks uses them: git's object ids, and short hex spreads."""

from __future__ import annotations

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any

# hashlib is imported where a digest is made: loading OpenSSL costs milliseconds.


def hasher(sha256: bool) -> Any:
    """A new SHA-256 (or SHA-1) object to feed: git's object ids in either format."""
    import hashlib  # where a digest is made: see above

    return hashlib.sha256() if sha256 else hashlib.sha1()


def sha1_hex(data: bytes) -> str:
    """The SHA-1 of ``data`` in hex (no security rests on it: a spread, not a secret)."""
    import hashlib  # where a digest is made: see above

    return hashlib.sha1(data, usedforsecurity=False).hexdigest()


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data`` in hex."""
    import hashlib  # where a digest is made: see above

    return hashlib.sha256(data).hexdigest()
