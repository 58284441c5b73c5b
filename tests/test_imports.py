"""Heavy dependencies stay off the hot paths.

The guard runs before every edit an agent makes, the commit hooks on every commit, and
``check``, ``list`` and ``acquire`` are what agents run most: none of them may import
pygit2, the command-line framework (typer, click) or the MCP SDK, each of which costs
more than the rest of the command. Which of gitlocks' own modules a path loads is left
to the code: moving a function between them fails nothing here. Each path runs as its
own process, as an agent or git runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from support.cli import alock
from support.remote import make_clone

# Top-level modules no hot path may load: libgit2's binding, the command-line framework,
# the MCP SDK and what it brings (pydantic, anyio, starlette, httpx), and the event loop.
HEAVY = frozenset(
    {"pygit2", "typer", "click", "mcp", "pydantic", "pydantic_core", "anyio", "starlette"}
    | {"httpx", "asyncio"}
)
# What the commands agents and git run on every edit and commit leave to the type checker
# and to the modules off their paths (docs/design.md, section 8): the cost of importing
# them, and of building data classes as a module loads, was a fifth of a ``check``.
TYPING = frozenset({"typing", "dataclasses", "inspect"})

# Runs ``main`` on its arguments and writes the top-level modules then loaded.
PROBE = """
import sys
from gitlocks.main import main
code = main(sys.argv[1:])
sys.stdout.flush()
sys.stderr.write("\\nMODULES=" + " ".join(sorted({m.split(".")[0] for m in sys.modules})) + "\\n")
sys.stderr.write("CODE=%d\\n" % code)
"""

A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}


def heavy_loaded(
    repo: Path,
    args: list[str],
    stdin: str = "",
    env: dict[str, str] | None = A,
    deny: frozenset[str] = HEAVY | TYPING,
) -> set[str]:
    """The modules of ``deny`` a process running ``args`` had loaded when it finished
    (``env`` None: no AGENT_ID, as a harness runs the guard)."""
    environ = {k: v for k, v in os.environ.items() if k != "AGENT_ID"}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=repo,
        input=stdin,
        capture_output=True,
        text=True,
        env={**environ, **(env or {})},
    )
    marker = proc.stderr.rfind("\nMODULES=")
    assert marker >= 0, proc.stderr
    assert int(proc.stderr.rsplit("CODE=", 1)[1]) in (0, 1), proc.stderr
    modules = set(proc.stderr[marker + len("\nMODULES=") :].splitlines()[0].split())
    return modules & deny


@pytest.fixture
def held(repo: Path) -> Path:
    """agent-b holds src/**; agent-a holds docs/**."""
    assert alock(repo, "acquire", "src/**", **B).code == 0
    assert alock(repo, "acquire", "docs/**", **A).code == 0
    return repo


@pytest.mark.parametrize(
    "args",
    [
        ["acquire", "README.md", "-m", "work"],
        ["list"],
        ["list", "--json"],
        ["check", "src/a.py", "free.txt"],
        ["release", "docs/**"],
        ["renew"],
        ["status"],
    ],
    ids=" ".join,
)
def test_the_verbs_agents_run_most_load_nothing_heavy(held: Path, args: list[str]) -> None:
    assert not heavy_loaded(held, args)


def test_the_commit_hooks_load_nothing_heavy(held: Path, tmp_path: Path) -> None:
    (held / "lib").mkdir()
    (held / "lib" / "a.py").write_text("x\n")
    git(held, "add", "lib/a.py")
    assert not heavy_loaded(held, ["hook", "pre-commit"])
    message = tmp_path / "MSG"
    message.write_text("a change\n")
    assert not heavy_loaded(held, ["hook", "commit-msg", str(message)])
    git(held, "commit", "-q", "--no-verify", "-m", "a change")
    assert not heavy_loaded(held, ["hook", "post-commit"])


PATCH = "*** Begin Patch\n*** Update File: src/app.py\n@@\n-a\n+b\n*** End Patch\n"


@pytest.mark.parametrize("harness", ["claude", "codex"])
def test_the_guard_loads_nothing_heavy(held: Path, harness: str) -> None:
    event: dict[str, Any] = {
        "session_id": "s1",
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": str(held / "src" / "app.py")},
    }
    if harness == "codex":
        event.update(tool_name="apply_patch", tool_input={"command": PATCH}, cwd=str(held))
    git(held, "config", "alock.guardMode", "block")
    assert not heavy_loaded(held, ["guard", "--for", harness], json.dumps(event), None)


def _mcp_lines(*requests: dict[str, Any]) -> str:
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
    messages = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}]
    return "".join(json.dumps(m) + "\n" for m in (*messages, *requests))


def test_serving_mcp_loads_neither_the_sdk_nor_the_command_line_framework(held: Path) -> None:
    """A whole session (tools listed, a tool called) speaks the protocol with the standard
    library, and reads the tools' declarations without typer."""
    listed = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    called = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
    called["params"] = {"name": "check", "arguments": {"paths": ["src/a.py"]}}
    assert not heavy_loaded(held, ["mcp"], stdin=_mcp_lines(listed, called), deny=HEAVY)


@pytest.mark.parametrize("shards", [1, 64], ids=["one journal", "sharded"])
def test_a_remote_claim_and_release_load_nothing_heavy(tmp_path: Path, shards: int) -> None:
    """In remote mode a claim is what agents run most too: pushed, with neither the
    type checker's modules nor pygit2."""
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    clone = make_clone(bare.as_uri(), tmp_path / "clone", shards=shards)
    assert alock(clone, "acquire", "docs/**", **B).code == 0
    assert not heavy_loaded(clone, ["acquire", "src/**", "-m", "work"])
    assert not heavy_loaded(clone, ["release", "src/**"])
    assert not heavy_loaded(clone, ["acquire", "docs/a.md"])  # refused: docs/** is b's
