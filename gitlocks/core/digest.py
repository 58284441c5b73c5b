"""SHA-1 and SHA-256 of short strings, without loading OpenSSL.

``hashlib`` loads OpenSSL to learn its algorithms, which costs every command about 2 ms
(a tenth of gitlocks' own start-up); CPython's built-in ``_sha1`` and ``_sha2``
(``_sha256`` before Python 3.12) give the same digests for the short ids gitlocks hashes.
``hashlib`` is the fallback on an interpreter without them.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def _builtin(name: str, modules: tuple[str, ...]) -> Callable[..., Any]:
    for module in modules:
        try:
            found: Callable[..., Any] = getattr(__import__(module), name)  # no importlib
        except (ImportError, AttributeError):
            continue
        return found
    import hashlib  # an interpreter without the built-in modules: OpenSSL's, then

    hashed: Callable[..., Any] = getattr(hashlib, name)
    return hashed


_sha1 = _builtin("sha1", ("_sha1",))
_sha256 = _builtin("sha256", ("_sha2", "_sha256"))  # _sha2 from Python 3.12


def hasher(sha256: bool) -> Any:
    """A new SHA-256 (or SHA-1) object to feed: git's object ids in either format."""
    return _sha256() if sha256 else _sha1()


def sha1_hex(data: bytes) -> str:
    """The SHA-1 of ``data`` in hex (no security rests on it: a spread, not a secret)."""
    return str(_sha1(data).hexdigest())


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data`` in hex."""
    return str(_sha256(data).hexdigest())
