"""JSON for readers of strict JSON (an agent, an MCP client, a ``--json`` document): a NaN
or an infinity (a hostile journal event can hold them) is written as ``null``."""

from __future__ import annotations

import json

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any


def dumps_finite(value: object, **options: Any) -> str:
    """``json.dumps(value, **options)``, with each float JSON cannot spell as null."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError:
        return json.dumps(finite(value), **options)


def finite(value: Any) -> Any:
    """``value`` with each float JSON cannot spell, a dict key too, as None."""
    if isinstance(value, float):
        return value if value - value == 0.0 else None
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    if isinstance(value, dict):
        return {finite(k): finite(v) for k, v in value.items()}
    return value
