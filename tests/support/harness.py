"""A stand-in agent harness: a long-lived process named like the real one (``claude``,
``node``, ``codex``, ``gemini``, ``copilot``) that does what a harness does, so that every
gitlocks process under it sees the process tree a real session gives:

- runs its hooks through ``sh -c`` (or the harness's own shell form) with the event as
  JSON on stdin;
- runs the agent's commands through ``bash -c`` (its shell tool);
- starts ``git alock mcp`` itself and talks to it with the official MCP SDK client
  (the server itself has no SDK).

The process is Python under another name, so that the kernel names the process after the
harness (``/proc/PID/comm``), inside the test's own environment (``support.interpreter``).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from support.cli import Result
from support.interpreter import named_python, python_env

SCRIPT = r"""
import json, os, subprocess, sys

def mcp_calls(cwd, env, calls, between=None):
    import anyio
    import mcp
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command="git", args=["alock", "mcp"], env=env, cwd=cwd)

    async def session():
        answers = []
        async with stdio_client(params) as (read, write), mcp.ClientSession(read, write) as c:
            await c.initialize()
            if between is not None:  # a hook that runs once the server is up
                subprocess.run(["sh", "-c", between["command"]], input=between["stdin"],
                               cwd=cwd, env=env, capture_output=True, text=True)
            for name, arguments in calls:
                result = await c.call_tool(name, arguments)
                error = bool(getattr(result, "isError", getattr(result, "is_error", False)))
                answers.append({"error": error, "text": result.content[0].text})
        return answers

    return anyio.run(session)


for line in sys.stdin:
    request = json.loads(line)
    env = {**os.environ, **request.get("env", {})}
    for name in request.get("unset", []):
        env.pop(name, None)
    kind, cwd = request["kind"], request["cwd"]
    if kind == "import":  # where this process finds a module: the test's environment
        module = __import__(request["module"])
        answer = {"code": 0, "out": module.__file__ or "", "err": ""}
    elif kind == "mcp":
        answer = {"code": 0, "out": json.dumps(
            mcp_calls(cwd, env, request["calls"], request.get("between"))
        ), "err": ""}
    else:
        shell = request.get("shell") or (["sh", "-c"] if kind == "hook" else ["bash", "-c"])
        proc = subprocess.run(
            [*shell, request["command"]], input=request.get("stdin", ""), cwd=cwd, env=env,
            capture_output=True, text=True,
        )
        answer = {"code": proc.returncode, "out": proc.stdout, "err": proc.stderr}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
"""


class StandIn:
    """One harness session: a process named ``name`` running hooks, shell commands and
    MCP calls for the test, as its children."""

    def __init__(
        self,
        where: Path,
        name: str = "claude",
        cwd: Path | None = None,
        wrap: tuple[str, ...] = (),
        **env: str,
    ):
        where.mkdir(parents=True, exist_ok=True)
        exe = named_python(where / ".python", name)
        full = python_env({k: v for k, v in os.environ.items() if k != "AGENT_ID"})
        full.update(env)
        self.name = name
        self.cwd = cwd or where
        self.proc = subprocess.Popen(
            [*wrap, str(exe), "-c", SCRIPT],
            cwd=self.cwd,
            env=full,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _ask(self, request: dict[str, Any]) -> Result:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        request.setdefault("cwd", str(self.cwd))
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the stand-in harness died"
        got = json.loads(line)
        return Result(got["code"], got["out"], got["err"])

    def imports_from(self, module: str) -> str:
        """The file this harness process imports ``module`` from."""
        return self._ask({"kind": "import", "module": module}).out

    def hook(
        self,
        command: str,
        event: dict[str, Any] | str | bytes,
        shell: tuple[str, ...] = ("sh", "-c"),
        **env: str,
    ) -> Result:
        """Run a hook command through ``shell`` (``sh -c``, as Claude Code does; ``bash
        -c`` as Gemini CLI, ``$SHELL -lc`` as Codex; ``("/bin/sh",)`` runs a hook file)
        with ``event`` on stdin."""
        if isinstance(event, bytes):
            raw = event.decode("utf-8")
        else:
            raw = event if isinstance(event, str) else json.dumps(event)
        request = {"kind": "hook", "command": command, "stdin": raw, "env": env}
        return self._ask({**request, "shell": list(shell)})

    def guard(self, event: dict[str, Any] | str, harness: str = "", **env: str) -> Result:
        """The guard's hook as install-agent-hooks writes it for this harness."""
        command = f"git alock guard --for {harness or self.name}"
        return self.hook(command, event, ("sh", "-c"), **env)

    def shell(self, command: str, cwd: Path | None = None, **env: str) -> Result:
        """The agent's shell tool: ``bash -c COMMAND``."""
        request: dict[str, Any] = {"kind": "shell", "command": command, "env": env}
        if cwd is not None:
            request["cwd"] = str(cwd)
        return self._ask(request)

    def mcp(
        self,
        *calls: tuple[str, dict[str, Any]],
        cwd: Path | None = None,
        between: tuple[str, dict[str, Any]] | None = None,
    ) -> list[Any]:
        """Start ``git alock mcp`` from this process, make ``calls`` through the SDK's
        client, and return each result as {"error": bool, "text": str}. ``between``: a hook
        command and its event, run once the server is up and before the calls."""
        request: dict[str, Any] = {"kind": "mcp", "calls": [list(c) for c in calls]}
        if between is not None:
            request["between"] = {"command": between[0], "stdin": json.dumps(between[1])}
        if cwd is not None:
            request["cwd"] = str(cwd)
        got = self._ask(request)
        answers: list[Any] = json.loads(got.out)
        return answers

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
