"""SHA-1 and SHA-256 of short strings, without loading OpenSSL.

``hashlib`` loads OpenSSL to learn its algorithms, which costs every command about 2 ms
(a tenth of gitlocks' own start-up); CPython's built-in ``_sha1`` and ``_sha2``
(``_sha256`` before Python 3.12) give the same digests for the short ids gitlocks hashes.
``hashlib`` is the fallback on an interpreter without them. Each is loaded when first used.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def _builtin(name: str, module: str) -> Callable[..., Any]:
    try:
        found: Callable[..., Any] = getattr(__import__(module), name)  # no importlib
    except (ImportError, AttributeError):
        import hashlib  # an interpreter without the built-in modules: OpenSSL's, then

        found = getattr(hashlib, name)
    _loaded[name] = found
    return found


# Each built-in digest is a shared library to load (0.1 to 0.15 ms): loaded when first
# used, so a command that hashes with one of them never loads the other (docs/design.md
# §9.14). SHA-256 is in ``_sha2`` from Python 3.12, in ``_sha256`` before.
_loaded: dict[str, Callable[..., Any]] = {}
_SHA256_MODULE = "_sha2" if sys.version_info >= (3, 12) else "_sha256"


def _sha1(data: bytes = b"") -> Any:
    found = _loaded.get("sha1") or _builtin("sha1", "_sha1")
    return found(data)


def _sha256(data: bytes = b"") -> Any:
    found = _loaded.get("sha256") or _builtin("sha256", _SHA256_MODULE)
    return found(data)


def hasher(sha256: bool) -> Any:
    """A new SHA-256 (or SHA-1) object to feed: git's object ids in either format."""
    return _sha256() if sha256 else _sha1()


def sha1_hex(data: bytes) -> str:
    """The SHA-1 of ``data`` in hex (no security rests on it: a spread, not a secret)."""
    return str(_sha1(data).hexdigest())


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data`` in hex."""
    return str(_sha256(data).hexdigest())
