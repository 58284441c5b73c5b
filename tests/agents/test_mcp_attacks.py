"""The MCP server as a careless or hostile client meets it: through the harness that
started it (a stand-in ``claude`` speaking with the SDK's own client), next to the same
session's shell, and as raw lines on its standard input. Each tool takes its input as its
verb does, and the server holds its bodies to the declaration they serve."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.cli import alock
from support.harness import StandIn

import gitlocks
from gitlocks.agents.mcp import Server
from gitlocks.cli import declare
from gitlocks.cli.tools import tool, tools

pytest.importorskip("mcp")


@pytest.fixture
def claude(tmp_path: Path, repo: Path) -> Iterator[StandIn]:
    """One harness session, no AGENT_ID: the shell and the MCP server are one holder."""
    one = StandIn(tmp_path / "bin", "claude", repo)
    yield one
    one.close()


def records(repo: Path) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = alock(repo, "list", "--json").json()
    return got


# --- one session, one holder, one liveness ---------------------------------------------------


def test_an_explicit_agent_id_binds_the_servers_claims_to_no_process_as_the_shells(
    repo: Path, tmp_path: Path
) -> None:
    """A claim under an explicit id that no registered harness adopted lives by its TTL:
    through MCP as through the shell, so the harness's exit frees neither."""
    agent = StandIn(tmp_path / "bin", "claude", repo, AGENT_ID="agent-7")
    try:
        [who, claim] = agent.mcp(("whoami", {}), ("acquire", {"paths": ["lib/**"]}))
        by_shell = agent.shell("git alock acquire 'pkg/**' --json")
        shell_who = json.loads(agent.shell("git alock whoami --json").out)
    finally:
        agent.close()
    tool_who = json.loads(who["text"])
    assert tool_who["holder"] == shell_who["holder"] == "agent-7"
    assert tool_who["session"]["source"] == shell_who["session"]["source"], (tool_who, shell_who)
    by_tool = json.loads(claim["text"])["lock"]
    assert by_tool["pid"] == json.loads(by_shell.out)["lock"]["pid"]
    # The harness is gone: both claims still refuse another holder.
    for path in ("lib/a.py", "pkg/a.py"):
        refused = alock(repo, "acquire", path, "--json", AGENT_ID="other")
        assert refused.code == 1 and refused.json()["conflicts"][0]["holder"] == "agent-7"


def test_the_server_honours_agent_session_pid_as_the_shell_does(
    repo: Path, tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    """An integration names the process that embodies its agent: the server's claims are
    bound to it, as the same agent's claims from its shell are, not to the server's parent."""
    named = str(sleeper.pid)
    agent = StandIn(tmp_path / "bin", "claude", repo, AGENT_ID="agent-8", AGENT_SESSION_PID=named)
    try:
        [claim] = agent.mcp(("acquire", {"paths": ["lib/**"]}))
        by_shell = json.loads(agent.shell("git alock acquire 'pkg/**' --json").out)
    finally:
        agent.close()
    by_tool = json.loads(claim["text"])["lock"]
    assert by_tool["pid"] == by_shell["lock"]["pid"] == sleeper.pid, (by_tool, by_shell)


# --- each tool takes its input as its verb does ----------------------------------------------

# (tool, arguments, the verb's command line): the same input both ways.
SAME_INPUT: list[tuple[str, dict[str, Any], str]] = [
    ("note", {"path": "src/**", "text": ""}, "note 'src/**' ''"),
    ("note", {"path": "src/**", "text": " \n\t"}, "note 'src/**' ' \n\t'"),
    ("acquire", {"paths": ["lib/**"], "ttl": ""}, "acquire 'pkg/**' --ttl ''"),
    ("renew", {"ttl": ""}, "renew --ttl ''"),
    ("acquire", {"paths": ["ee", "ee/", "./ee"]}, "acquire ff ff/ ./ff"),
    ("check", {"paths": ["x.txt", "./x.txt"]}, "check x.txt ./x.txt"),
    ("release", {"paths": ["ee", "ee/"]}, "release ff ff/"),
]


def _outcome(doc: Any) -> Any:
    """What a document says, without what differs between two claims (ids, times, paths)."""
    if isinstance(doc, list):
        return ["item" for _ in doc]
    if doc.get("status") == "error":
        return ("error", doc["exit_code"])
    lock = doc.get("lock") or {}
    released = doc.get("released") or []
    return (doc["status"], len(lock.get("paths", [])), [len(r["paths"]) for r in released])


def test_each_tool_takes_its_input_as_its_verb_does(repo: Path, claude: StandIn) -> None:
    assert claude.shell("git alock acquire 'src/**' -m work").code == 0
    answers = claude.mcp(*[(name, arguments) for name, arguments, _ in SAME_INPUT])
    for (name, arguments, line), answer in zip(SAME_INPUT, answers, strict=True):
        by_tool = json.loads(answer["text"])
        got = claude.shell(f"git alock {line} --json")
        by_verb = json.loads(got.out)
        assert _outcome(by_tool) == _outcome(by_verb), (name, arguments, by_tool, by_verb)
        assert answer["error"] == (got.code == 2), (name, arguments)
    [mine] = [r for r in records(repo) if r["paths"] == ["src/**"]]
    assert mine["notes"] == []  # no empty note was kept


# --- the drift guard: a body must take what its declaration hands it -------------------------


def test_a_declaration_whose_kinds_the_body_cannot_take_stops_the_server(repo: Path) -> None:
    """Renaming is not the only drift: a parameter's type or default changed in the verb's
    declaration reaches the tool's schema and checks, and the body, unchanged, would get a
    list for text or null for a required note."""
    table = tools(("acquire", "note"))
    acquire, note = table["acquire"], table["note"]
    listed = tuple(a._replace(kind="paths") if a.name == "reason" else a for a in acquire.arguments)
    with pytest.raises(TypeError, match=r"'acquire' hands 'reason' .*array.* Server\.acquire"):
        Server(str(repo), {"acquire": acquire._replace(arguments=listed)})
    optional = tuple(
        a._replace(required=False, default=None) if a.name == "text" else a for a in note.arguments
    )
    with pytest.raises(TypeError, match=r"'note' hands 'text' .*null.* Server\.note"):
        Server(str(repo), {"note": note._replace(arguments=optional)})
    flag = tuple(a._replace(kind="bool") if a.name == "path" else a for a in note.arguments)
    with pytest.raises(TypeError, match=r"'note' hands 'path' .*boolean"):
        Server(str(repo), {"note": note._replace(arguments=flag)})
    assert Server(str(repo), tools(), env={**os.environ, "AGENT_ID": "a"}).tools.keys() == set(
        tools()
    )


# --- raw lines on standard input ---------------------------------------------------------------


class Raw:
    """``git alock mcp`` spoken to line by line, as any client (or a broken one) may."""

    def __init__(self, repo: Path) -> None:
        env = {**os.environ, "AGENT_ID": "raw-agent"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gitlocks.main", "mcp"],
            cwd=repo,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.watchdog = threading.Timer(60, self.proc.kill)
        self.watchdog.start()
        self.send(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"}}}
        )  # fmt: skip
        assert self.answer()["id"] == 0
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: Any) -> None:
        raw = message if isinstance(message, bytes) else json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def answer(self) -> Any:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the server answered nothing and went away"
        return json.loads(line)

    def call(self, ident: int, name: str, arguments: Any) -> Any:
        params = {"name": name, "arguments": arguments}
        self.send({"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params})
        got = self.answer()
        assert got["id"] == ident, got
        return got

    def close(self) -> str:
        """Standard input closed: the server ends; what it wrote on stderr."""
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        code = self.proc.wait()
        self.watchdog.cancel()
        err = self.proc.stderr.read().decode()
        assert code == 0, err
        return err


def test_bytes_that_are_no_utf8_are_refused_not_claimed_as_another_path(repo: Path) -> None:
    raw = Raw(repo)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "acquire", "arguments": {"paths": ["src/\x00.py"], "reason": "r"}}}  # fmt: skip
    raw.send(json.dumps(call).replace("\\u0000", "\udcff\udcfe").encode("utf-8", "surrogateescape"))
    got = raw.answer()
    assert raw.close() == ""
    doc = json.loads(got["result"]["content"][0]["text"])
    assert got["result"]["isError"] and "NUL" in doc["error"], doc
    assert records(repo) == []


def test_broken_requests_are_answered_or_dropped_and_the_server_serves_on(repo: Path) -> None:
    """Lines the protocol cannot read get a JSON-RPC error with the id null (-32700 for no
    JSON, -32600 for no request object, a batch too): never a traceback, a crash or a
    claim."""
    raw = Raw(repo)
    lines = {b"not json": -32700, b"{": -32700, b"[]": -32600, b"null": -32600}
    lines[b"[" * 100_000 + b"]" * 100_000] = -32700  # nested past what the reader takes
    for line, code in lines.items():
        raw.send(line)
        got = raw.answer()
        assert got["id"] is None and got["error"]["code"] == code, (line[:10], got)
    raw.send([{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "acquire", "arguments": {"paths": ["batch/**"]}}}])  # fmt: skip
    assert raw.answer()["error"]["code"] == -32600
    raw.send({"jsonrpc": "2.0", "method": "tools/call",
              "params": {"name": "acquire", "arguments": {"paths": ["notified/**"]}}})  # fmt: skip
    for ident, arguments in enumerate([[], "paths", 5], start=2):
        got = raw.call(ident, "acquire", arguments)
        assert got["error"]["code"] == -32602, got  # invalid params: not an object
    answered = raw.call(9, "acquire", {"paths": ["src/**"]})
    doc = json.loads(answered["result"]["content"][0]["text"])
    assert doc["status"] == "acquired"
    err = raw.close()
    assert "Traceback" not in err, err
    assert [r["paths"] for r in records(repo)] == [["src/**"]]


def test_a_request_with_no_usable_id_or_method_is_refused_not_dropped(repo: Path) -> None:
    """An id null (which MCP forbids) or a method that is no string is a broken request,
    not a notification or a response: JSON-RPC answers -32600, and no tool runs. Only
    responses (a result or an error, no method) and notifications go unanswered."""
    raw = Raw(repo)
    acquire = {"name": "acquire", "arguments": {"paths": ["nulled/**"]}}
    broken: list[tuple[Any, Any]] = [
        ({"jsonrpc": "2.0", "id": None, "method": "tools/call", "params": acquire}, None),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": 3, "method": 5}, 3),
        ({"jsonrpc": "2.0", "id": 4}, 4),
        ({"jsonrpc": "2.0"}, None),
    ]
    for message, ident in broken:
        raw.send({"jsonrpc": "2.0", "id": 7, "result": {}})  # a response: no answer
        raw.send(message)
        got = raw.answer()
        assert got["id"] == ident and got["error"]["code"] == -32600, (message, got)
    raw.send({"jsonrpc": "2.0", "id": "last", "method": "ping"})
    assert raw.answer() == {"jsonrpc": "2.0", "id": "last", "result": {}}
    assert raw.close() == ""
    assert records(repo) == []


def test_each_answer_is_one_line_whatever_characters_it_carries(repo: Path) -> None:
    """Characters that some readers take for the end of a line (U+2028, U+2029, U+0085,
    a form feed) travel escaped: each answer is one line of ASCII, by any reckoning."""
    raw = Raw(repo)
    odd = "a\u2028b\u2029c\x85d\x0ce\u00e9"
    path = "src/a\u2028b\u2029c\u00e9"  # a path holds no control character
    raw.send({"jsonrpc": "2.0", "id": odd, "method": "ping"})
    raw.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "acquire", "arguments": {"paths": [path], "reason": odd}}})  # fmt: skip
    raw.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "note", "arguments": {"path": path, "text": f"one\ntwo {odd}"}}})  # fmt: skip
    assert raw.proc.stdout is not None
    lines = [raw.proc.stdout.readline() for _ in range(3)]
    assert raw.close() == ""
    for line in lines:
        assert line.isascii() and len(line.decode().splitlines()) == 1, line
    first, acquired, noted = (json.loads(line) for line in lines)
    assert first == {"jsonrpc": "2.0", "id": odd, "result": {}}
    doc = json.loads(acquired["result"]["content"][0]["text"])
    assert doc["lock"]["reason"] == odd, doc
    assert json.loads(noted["result"]["content"][0]["text"])["status"] == "noted", noted
    assert [r["paths"] for r in records(repo)] == [[path]]


def test_the_handshake_names_the_revision_asked_for_and_gitlocks(repo: Path) -> None:
    """``initialize`` answers the client's revision when the server speaks it, else its
    newest; ``tools/list`` before it, an unknown method, and ``ping`` as the spec says."""
    lines = "".join(json.dumps(m) + "\n" for m in [
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
                "protocolVersion": "2024-11-05", "capabilities": {}}},
            {"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {
                "protocolVersion": "1999-01-01", "capabilities": {}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}},
            {"jsonrpc": "2.0", "id": 4, "method": "ping"},
            {"jsonrpc": "2.0", "id": "five", "method": "resources/list"},
            {"jsonrpc": "2.0", "id": 6, "method": "tools/list"},
    ])  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "gitlocks.main", "mcp"],
        cwd=repo,
        env={**os.environ, "AGENT_ID": "raw-agent"},
        input=lines,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    got = {a["id"]: a for a in map(json.loads, proc.stdout.splitlines())}
    assert list(got) == [1, 2, 3, 4, "five", 6]
    assert got[1]["error"]["code"] == -32602
    hello = got[2]["result"]
    assert hello["protocolVersion"] == "2024-11-05"
    assert hello["capabilities"] == {"tools": {"listChanged": False}}
    assert hello["serverInfo"] == {"name": "gitlocks", "version": gitlocks.__version__}
    assert got[3]["result"]["protocolVersion"] == "2025-11-25"
    assert got[4]["result"] == {}
    assert got["five"]["error"]["code"] == -32601
    assert got[6]["result"]["tools"][0]["name"] == "acquire"


def test_two_parameters_a_tool_would_take_under_one_name_are_refused() -> None:
    """An option added as ``--paths`` next to the argument the tool calls ``paths``: one key
    of the call would fill both, silently."""
    app = declare.Verbs()

    @app.command(tool="Paint paths.")
    def paint(
        patterns: list[str] = declare.Argument(help="What to paint.", tool=declare.InTool("paths")),
        paths: str = declare.Option("--paths", default="", help="A file of paths."),
    ) -> None:
        """Paint."""

    with pytest.raises(TypeError, match="'paint' takes two arguments named 'paths'"):
        tool(app.commands["paint"])


def test_a_refusal_through_mcp_names_the_holder_as_the_shells_does(
    repo: Path, tmp_path: Path, claude: StandIn
) -> None:
    """Two sessions, no AGENT_ID: the first claims through its MCP server; the second is
    refused through its own server and its shell alike, each naming the first's holder."""
    [mine] = claude.mcp(("acquire", {"paths": ["src/**"], "reason": "rewrite"}))
    first = json.loads(mine["text"])["lock"]["holder"]
    assert first == json.loads(claude.shell("git alock whoami --json").out)["holder"]
    other = StandIn(tmp_path / "bin-2", "claude", repo)
    try:
        [refused, held] = other.mcp(
            ("acquire", {"paths": ["src/app.py"]}), ("check", {"paths": ["src/app.py"]})
        )
        by_shell = other.shell("git alock acquire src/app.py")
    finally:
        other.close()
    doc = json.loads(refused["text"])
    assert not refused["error"] and doc["status"] == "refused", doc
    [conflict] = doc["conflicts"]
    assert conflict["holder"] == first and conflict["reason"] == "rewrite"
    assert conflict["overlapping"] == [["src/app.py", "src/**"]]
    [item] = json.loads(held["text"])
    assert item["status"] == "held" and item["locks"][0]["holder"] == first
    assert by_shell.code == 1 and f"by {first}" in by_shell.out, by_shell
