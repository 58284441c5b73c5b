"""The MCP stdio transport, standard library alone: JSON-RPC 2.0, one message a line of
UTF-8 each way (docs/design.md, section 6.6), only what a tools server needs
(``initialize``, ``ping``, ``tools/list``, ``tools/call``; notifications need no answer).
Requests are served in order, one at a time; nothing but the protocol reaches stdout.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, BinaryIO

from gitlocks.core import strictjson

# The revisions of the protocol reachable through ``initialize``, oldest to newest: the
# client's is answered when it is one of them, else the newest.
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _params(message: dict[str, Any]) -> dict[str, Any]:
    params = message.get("params", {})
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, "params must be an object")
    return params


def _write(out: BinaryIO, message: dict[str, Any]) -> None:
    """One line of ASCII: every other character escaped, so that none a reader may take
    for the end of a line (U+2028, U+2029, U+0085) is sent raw, nor a lone surrogate."""
    out.write(strictjson.dumps_finite(message).encode("ascii") + b"\n")
    out.flush()


def _error(ident: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


class Connection:
    """One client, served from ``tools`` (as published) and ``call`` (name, arguments)."""

    def __init__(
        self,
        info: dict[str, Any],
        tools: list[dict[str, Any]],
        call: Callable[[str, dict[str, Any]], tuple[str, bool]],
        instructions: str = "",
    ) -> None:
        self.info = info
        self.tools = tools
        self.call = call
        self.instructions = instructions
        self.initialized = False

    def handle(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The result of one request; RpcError for a JSON-RPC error."""
        if method == "ping":
            return {}
        if method == "initialize":
            asked = params.get("protocolVersion")
            if not isinstance(asked, str):
                raise RpcError(INVALID_PARAMS, "initialize needs a protocolVersion string")
            self.initialized = True
            result: dict[str, Any] = {
                "protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1],
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": self.info,
            }
            if self.instructions:
                result["instructions"] = self.instructions
            return result
        if method not in ("tools/list", "tools/call"):
            raise RpcError(METHOD_NOT_FOUND, f"method not found: {method}")
        if not self.initialized:
            raise RpcError(INVALID_PARAMS, "received a request before initialization")
        if method == "tools/list":
            return {"tools": self.tools}
        name, arguments = params.get("name"), params.get("arguments", {})
        if not isinstance(name, str):
            raise RpcError(INVALID_PARAMS, "tools/call needs the tool's name as a string")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise RpcError(INVALID_PARAMS, "tools/call's arguments must be an object")
        text, failed = self.call(name, arguments)
        return {"content": [{"type": "text", "text": text}], "isError": failed}

    def answer(self, line: bytes) -> dict[str, Any] | None:
        """The answer to one line, or None (a notification, a response, a blank line)."""
        if not line.strip():
            return None
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested past what it reads
            return _error(None, PARSE_ERROR, "parse error")
        if not isinstance(message, dict):
            return _error(None, INVALID_REQUEST, "a message is one JSON object")
        ident = message.get("id")
        method = message.get("method")
        if "method" not in message and ("result" in message or "error" in message):
            return None  # a response: the server asks nothing
        if "id" not in message and isinstance(method, str):
            return None  # a notification: none needs an answer, none runs a tool
        if isinstance(ident, bool) or not isinstance(ident, (str, int)):
            # The id null too: MCP forbids it, and a request, not a notification, has it.
            return _error(None, INVALID_REQUEST, "a request's id is a string or an integer")
        if not isinstance(method, str):
            return _error(ident, INVALID_REQUEST, "a request names its method as a string")
        if message.get("jsonrpc") != "2.0":
            return _error(ident, INVALID_REQUEST, 'jsonrpc must be "2.0"')
        try:
            result = self.handle(method, _params(message))
        except RpcError as exc:
            return _error(ident, exc.code, exc.message)
        except Exception as exc:  # a bug still answers, and the server serves on
            return _error(ident, INTERNAL_ERROR, f"internal error: {exc.__class__.__name__}")
        return {"jsonrpc": "2.0", "id": ident, "result": result}

    def serve(
        self,
        source: BinaryIO | None = None,
        out: BinaryIO | None = None,
        mend: Callable[[bytes], bytes] = lambda line: line,
    ) -> None:
        """Answer each line of ``source`` (standard input) until it ends."""
        source = source if source is not None else sys.stdin.buffer
        out = out if out is not None else sys.stdout.buffer
        for line in source:
            reply = self.answer(mend(line))
            if reply is not None:
                try:
                    _write(out, reply)
                except OSError:  # the client has gone
                    return
