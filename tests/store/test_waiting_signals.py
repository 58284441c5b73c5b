"""A waiter stopped by a signal other than Ctrl-C (docs/design.md, section 4.7): a harness
ends a command that ran past its time with SIGTERM, a closed terminal sends SIGHUP. Each a
defect an outside review found, pinned by the test that found it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import git
from support.cli import alock

from gitlocks.core.queue import is_waiter_id

ALOCK = os.path.join(os.path.dirname(sys.executable), "git-alock")
JOURNAL = "refs/agent-locks-meta/journal"


def waiters(repo: Path) -> list[str]:
    names = git(repo, "for-each-ref", "--format=%(refname:lstrip=2)", "refs/agent-locks/")
    return [n for n in names.split() if is_waiter_id(n)]


def events(repo: Path) -> list[dict[str, object]]:
    out = git(repo, "log", "--format=%x1e%B", JOURNAL)
    found = []
    for message in reversed(out.split("\x1e")[1:]):
        found += [json.loads(x) for x in message.splitlines() if x.startswith("{")]
    return found


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_waiter_ended_by_a_signal_leaves_the_queue_itself(repo: Path, signum: int) -> None:
    """A waiter ended with SIGTERM (a harness's time limit) or SIGHUP stayed in the queue
    until some write judged its process dead, which in remote mode only a write from its
    own machine can: from any other, it stood before every claim until its wait ran out.
    It leaves the queue as Ctrl-C makes it, then ends as that signal ends a process."""
    assert alock(repo, "acquire", "src/app.py", AGENT_ID="alice").code == 0
    env = {**os.environ, "AGENT_ID": "bob"}
    proc = subprocess.Popen(
        [ALOCK, "acquire", "src/app.py", "--wait=2m", "--json"],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ends = time.monotonic() + 90
        while not waiters(repo):
            assert proc.poll() is None and time.monotonic() < ends, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == -signum, (proc.returncode, out, err)
    assert out == "" and "Traceback" not in err, err
    assert waiters(repo) == []
    last = events(repo)[-1]
    assert (last["event"], last["why"], last["holder"]) == ("left_queue", "stopped", "bob")


def test_an_mcp_server_ended_while_a_tool_waits_takes_the_waiter_out(repo: Path) -> None:
    """The MCP acquire tool's wait runs in the server's one thread: a harness that ends
    the server (SIGTERM) as the session closes left the waiter in the queue, where only a
    write from this machine could judge it dead. It leaves as the verb's waiter does."""
    assert alock(repo, "acquire", "src/app.py", AGENT_ID="alice").code == 0
    calls = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2024-11-05", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "acquire", "arguments": {"paths": ["src/app.py"], "wait": "2m"}}},
    ]  # fmt: skip
    proc = subprocess.Popen(
        [ALOCK, "mcp"],
        cwd=repo,
        env={**os.environ, "AGENT_ID": "bob"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdin is not None
        proc.stdin.write("".join(json.dumps(c) + "\n" for c in calls))
        proc.stdin.flush()
        ends = time.monotonic() + 90
        while not waiters(repo):
            assert proc.poll() is None and time.monotonic() < ends, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    assert proc.returncode == -signal.SIGTERM
    assert waiters(repo) == []
    last = events(repo)[-1]
    assert (last["event"], last["why"], last["holder"]) == ("left_queue", "stopped", "bob")
