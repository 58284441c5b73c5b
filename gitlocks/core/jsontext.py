"""JSON text, read and written the way the standard ``json`` module does, without it.

``import json`` compiles regular expressions as it loads (its decoder's and encoder's),
which brings in ``re``, ``enum`` and ``functools``: a few milliseconds, in every command,
hook and guard call, for work whose cost is otherwise its imports (docs/design.md §9).
The scanning and encoding here are the very C functions ``json`` itself calls (its
``_json`` accelerator); only the thin Python layer around them is written again, and a
property test holds every result to ``json``'s, byte for byte and error for error.

Where the accelerator is missing (another Python), or the input is one the thin layer
leaves to ``json`` (bytes in UTF-16, a byte-order mark, any error), ``json`` itself runs.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_accelerator: Any
try:
    import _json as _accelerator  # json's own C functions, which json itself imports
except ImportError:  # pragma: no cover - CPython always has it
    _accelerator = None

_SPACE = " \t\n\r"  # what JSON calls whitespace: nothing else is skipped
_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


class _Options:
    """What the scanner reads from ``json.JSONDecoder``: its defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


_scan: Any = _accelerator.make_scanner(_Options()) if _accelerator is not None else None


def _stdlib() -> Any:
    import json  # the reference, and the exact error for input it refuses

    return json


def loads(text: str | bytes | bytearray) -> Any:
    """``json.loads(text)``."""
    if _scan is None:
        return _stdlib().loads(text)
    if not isinstance(text, str):
        data = bytes(text)
        if data[:3] == b"\xef\xbb\xbf" or b"\x00" in data[:4]:  # json's encoding detection
            return _stdlib().loads(text)
        text = data.decode("utf-8", "surrogatepass")
    start = len(text) - len(text.lstrip(_SPACE))
    try:
        value, end = _scan(text, start)
    except (StopIteration, SystemError):
        # No value where one starts, or one that is no JSON: json says which, and where.
        # (Before Python 3.12 the scanner finds the error's class in a loaded json.decoder
        # only, and without it fails with a SystemError instead.)
        return _stdlib().loads(text)
    if text[end:].strip(_SPACE) or text.startswith("\ufeff"):
        return _stdlib().loads(text)  # "Extra data", or a byte-order mark json refuses
    return value


def _not_serializable(value: object) -> Any:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == float("inf"):
        return "Infinity"
    if value == float("-inf"):
        return "-Infinity"
    return float.__repr__(value)


def dumps(
    value: object,
    *,
    ensure_ascii: bool = True,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
    allow_nan: bool = True,
) -> str:
    """``json.dumps(value, ...)`` with these options (the others at their defaults)."""
    if _scan is None:
        return str(
            _stdlib().dumps(
                value,
                ensure_ascii=ensure_ascii,
                indent=indent,
                separators=separators,
                sort_keys=sort_keys,
                allow_nan=allow_nan,
            )
        )
    item, key = separators or ((",", ": ") if indent is not None else (", ", ": "))
    encode_str = (
        _accelerator.encode_basestring_ascii if ensure_ascii else _accelerator.encode_basestring
    )
    if indent is None:
        encoder = _accelerator.make_encoder(
            {}, _not_serializable, encode_str, None, key, item, sort_keys, False, allow_nan
        )
        return "".join(encoder(value, 0))
    if not allow_nan and not _all_finite(value):  # json's own error, where it finds one
        _stdlib().dumps(value, indent=indent, sort_keys=sort_keys, allow_nan=False)
    parts: list[str] = []
    _indented(value, parts, encode_str, " " * indent, item, key, sort_keys, 0)
    return "".join(parts)


def dumps_finite(value: object, **options: Any) -> str:
    """``dumps`` for a reader of strict JSON (an agent, an MCP client): a float JSON cannot
    spell (NaN, an infinity: a hostile journal event's) is written as null."""
    try:
        return dumps(value, allow_nan=False, **options)
    except ValueError:
        return dumps(finite(value), **options)


def finite(value: Any) -> Any:
    """``value`` with each float JSON cannot spell, a dict key too, as None."""
    if isinstance(value, float):
        return value if value - value == 0.0 else None
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    if isinstance(value, dict):
        return {finite(k): finite(v) for k, v in value.items()}
    return value


def _all_finite(value: Any) -> bool:
    if isinstance(value, float):
        return value - value == 0.0
    if isinstance(value, (list, tuple)):
        return all(map(_all_finite, value))
    if isinstance(value, dict):
        return all(_all_finite(k) and _all_finite(v) for k, v in value.items())
    return True


def _indented(
    value: object,
    out: list[str],
    encode_str: Any,
    step: str,
    item: str,
    key_sep: str,
    sort_keys: bool,
    level: int,
) -> None:
    """``json``'s indented layout (its encoder written in Python, which the C one is not
    for ``indent`` before Python 3.14), for the value kinds ``json`` knows."""
    if isinstance(value, str):
        out.append(encode_str(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(_float(value))
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner = "\n" + step * (level + 1)
        out.append("[" + inner)
        for i, element in enumerate(value):
            if i:
                out.append(item + inner)
            _indented(element, out, encode_str, step, item, key_sep, sort_keys, level + 1)
        out.append("\n" + step * level + "]")
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = "\n" + step * (level + 1)
        out.append("{" + inner)
        first = True
        for k, v in sorted(value.items()) if sort_keys else value.items():
            if isinstance(k, str):
                pass
            elif isinstance(k, float):
                k = _float(k)
            elif k is True:
                k = "true"
            elif k is False:
                k = "false"
            elif k is None:
                k = "null"
            elif isinstance(k, int):
                k = int.__repr__(k)
            else:
                raise TypeError(
                    f"keys must be str, int, float, bool or None, not {k.__class__.__name__}"
                )
            if not first:
                out.append(item + inner)
            first = False
            out.append(encode_str(k) + key_sep)
            _indented(v, out, encode_str, step, item, key_sep, sort_keys, level + 1)
        out.append("\n" + step * level + "}")
    else:
        _not_serializable(value)


__all__ = ["dumps", "dumps_finite", "finite", "loads"]
