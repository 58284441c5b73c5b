"""The import budget of each command agents and hooks run often.

Most of a command's time is its imports, so each fast path has a budget: the gitlocks
modules it may load, no third-party module at all (no pygit2, typer, click), and none of
the heavy standard modules it has no use for. A verb that starts loading something new
fails here, and its budget is raised on purpose or the import is moved off its path.
Each runs as its own process, as an agent or git runs it.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import site
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from support.cli import alock
from support.daemon import Daemon
from support.remote import daemon, make_bare, make_clone

import gitlocks

__all__ = ["daemon"]  # the fixture, imported so pytest finds it

# Loaded by every verb that reads or writes the lock table: the store, the table and the
# scope engine, the service, the renderer, the small parser.
STORE_VERBS = frozenset(
    {
        "gitlocks", "gitlocks.main", "gitlocks.errors", "gitlocks.layout",
        "gitlocks.cli", "gitlocks.cli.app", "gitlocks.cli.common", "gitlocks.cli.context",
        "gitlocks.cli.declare", "gitlocks.cli.reading", "gitlocks.cli.claims",
        "gitlocks.cli.history",
        "gitlocks.core", "gitlocks.core.change", "gitlocks.core.claims", "gitlocks.core.digest",
        "gitlocks.core.glob",
        "gitlocks.core.journal", "gitlocks.core.jsontext", "gitlocks.core.plain",
        "gitlocks.core.dates",
        "gitlocks.core.liveness", "gitlocks.core.record", "gitlocks.core.scope",
        "gitlocks.core.table", "gitlocks.core.summaries", "gitlocks.core.text",
        "gitlocks.core.ignore",
        "gitlocks.core.verdicts",
        "gitlocks.git", "gitlocks.git.files", "gitlocks.git.objects", "gitlocks.git.run",
        "gitlocks.git.kept",
        "gitlocks.git.settings", "gitlocks.git.transaction", "gitlocks.git.worktrees",
        "gitlocks.git.changes", "gitlocks.git.spawn",
        "gitlocks.identity", "gitlocks.identity.sessions",
        "gitlocks.render", "gitlocks.render.locks", "gitlocks.render.identity",
        "gitlocks.render.status", "gitlocks.render.journal",
        "gitlocks.service", "gitlocks.service.context", "gitlocks.service.journal",
        "gitlocks.service.landing", "gitlocks.service.lifecycle", "gitlocks.service.locks",
        "gitlocks.service.results", "gitlocks.service.typos", "gitlocks.service.status",
        "gitlocks.store", "gitlocks.store.journal", "gitlocks.store.local", "gitlocks.store.refs",
        "gitlocks.store.location", "gitlocks.store.mutex",
    }
)  # fmt: skip

WHOAMI = frozenset(
    {
        "gitlocks", "gitlocks.main", "gitlocks.errors", "gitlocks.cli", "gitlocks.cli.app",
        "gitlocks.cli.common", "gitlocks.cli.declare", "gitlocks.cli.info", "gitlocks.core",
        "gitlocks.core.digest", "gitlocks.core.plain", "gitlocks.core.record", "gitlocks.core.text",
        "gitlocks.core.jsontext", "gitlocks.core.dates", "gitlocks.identity",
        "gitlocks.identity.sessions",
        "gitlocks.render", "gitlocks.render.identity",
    }
)  # fmt: skip

# Standard modules none of these commands needs: each costs a few milliseconds.
# dataclasses brings inspect, ast, dis and tokenize (gitlocks.core.plain does its work);
# hashlib loads OpenSSL (gitlocks.core.digest has the built-in digests); subprocess brings
# signal, threading, selectors and locale (gitlocks.git.spawn starts git instead); shlex
# compiles a pattern as it loads (gitlocks.core.text.shell_word imports it for a hint);
# typing costs 2-3 ms (annotations are never evaluated: names for types only are imported
# under TYPE_CHECKING, and only typer's bridge evaluates a verb's declaration); re, with
# the enum it loads, 3-4 ms (names are checked with str methods, gitlocks.core.text); json
# loads re (gitlocks.core.jsontext calls json's own C scanner and encoder); pathlib
# costs ~7 ms (fnmatch, re, ntpath, urllib.parse, ipaddress: paths are str and os.path
# does their work); contextlib brings functools and collections (a small class with
# __enter__ and __exit__, or try/finally, does the same); functools and collections cost
# ~1 ms each (collections.abc names for types only are imported under TYPE_CHECKING);
# datetime runs its pure-Python classes before taking the C ones (gitlocks.core.dates
# takes those from _datetime).
HEAVY_STDLIB = frozenset(
    {
        "argparse", "asyncio", "concurrent", "dataclasses", "difflib", "email", "enum",
        "hashlib", "http", "inspect", "json", "locale", "logging", "re", "shlex",
        "pathlib", "contextlib", "functools", "collections", "datetime",
        "multiprocessing", "random", "selectors", "signal", "socket", "sqlite3", "ssl",
        "subprocess", "tempfile", "threading", "traceback", "typing",
        "unittest", "uuid", "xml", "zipfile",
        # Not heavy, but of no use where their C halves (_operator) serve, or (math) for
        # two checks plain arithmetic makes: each import costs 0.15 to 0.3 ms. Nor is
        # _bisect, a shared library to load, for a character class's few ranges, nor
        # itertools for a value repeated (a list of it serves).
        "operator", "bisect", "_bisect", "math", "itertools",
    }
)  # fmt: skip

STARTUP = {"__main__"}

# The probe imports nothing the budgets check: it reads its arguments as given, and writes
# the modules loaded and which module first imported each. It runs without site (-S): site
# loads modules of its own through .pth files (an editable install's finder loads pathlib),
# which a plain install does not; PYTHONPATH finds gitlocks and the site's packages instead.
PROBE = r"""
import os, sys
LOADER = {}
class Loader:
    def find_spec(self, name, path=None, target=None):
        frame = sys._getframe(1)
        while frame.f_code.co_filename.startswith("<frozen"):
            frame = frame.f_back
        LOADER.setdefault(name, frame.f_globals.get("__name__"))
sys.meta_path.insert(0, Loader())
from gitlocks.main import main
args = sys.argv[1:]
if args == ["mcp-call"]:
    from gitlocks.agents.mcp import Server
    from gitlocks.cli.tools import tools
    Server(os.getcwd(), tools(("list",))).list()
    code = 0
elif args == ["mcp-tools"]:
    from gitlocks.agents.mcp import Server, schema
    from gitlocks.cli.tools import tools
    table = tools()
    [schema(t) for t in table.values()]
    Server(os.getcwd(), table)
    code = 0
else:
    code = main(args)
sys.stdout.flush()
sys.stderr.write("\nMODULES=" + " ".join(sorted(sys.modules)) + "\n")
sys.stderr.write("LOADERS=" + " ".join("%s:%s" % pair for pair in LOADER.items()) + "\n")
sys.stderr.write("CODE=%d\n" % code)
"""
SEARCH = os.pathsep.join(
    [os.path.dirname(os.path.dirname(gitlocks.__file__)), *site.getsitepackages()]
)

A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}


class Loaded(set[str]):
    """The modules a process loaded, and which module first imported each (``loader``)."""

    loader: dict[str, str]


def loaded(repo: Path, args: list[str], stdin: str = "", env: dict[str, str] | None = A) -> Loaded:
    """The modules a process running ``args`` had loaded when it finished (``env`` None:
    no AGENT_ID, as a harness runs the guard)."""
    environ = {k: v for k, v in os.environ.items() if k != "AGENT_ID"}
    proc = subprocess.run(
        [sys.executable, "-S", "-c", PROBE, *args],
        cwd=repo,
        input=stdin,
        capture_output=True,
        text=True,
        env={**environ, **(env or {}), "PYTHONPATH": SEARCH},
    )
    if args[0] == "guard":
        assert "permissionDecision" in proc.stdout, proc  # it did answer: a denial
    marker = proc.stderr.rfind("\nMODULES=")
    assert marker >= 0, proc.stderr
    line = proc.stderr[marker + len("\nMODULES=") :].splitlines()[0]
    code = int(proc.stderr.rsplit("CODE=", 1)[1])
    assert code in (0, 1), proc.stderr
    modules = Loaded(line.split())
    pairs = proc.stderr[marker:].split("\nLOADERS=", 1)[1].splitlines()[0].split()
    modules.loader = dict(pair.split(":", 1) for pair in pairs)
    return modules


_IMPORTED: dict[str, set[str]] = {}


def imported_as_loaded(module: str) -> set[str]:
    """The top-level modules ``module`` imports as it loads: not inside a function, nor
    under ``if TYPE_CHECKING:`` (its ``else`` runs), nor in an ``except ImportError:``."""
    if module not in _IMPORTED:
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin is not None, module
        found: set[str] = set()

        def visit(nodes: list[ast.stmt]) -> None:
            for node in nodes:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                if isinstance(node, ast.Import):
                    found.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    found.add(node.module.split(".")[0])
                types_only = isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
                for name in ("orelse",) if types_only else ("body", "orelse", "finalbody"):
                    visit(getattr(node, name, []))
                for handler in getattr(node, "handlers", []):
                    if not (handler.type and ast.unparse(handler.type) == "ImportError"):
                        visit(handler.body)  # a fallback for a Python without a C module aside

        visit(ast.parse(Path(spec.origin).read_text(encoding="utf-8")).body)
        _IMPORTED[module] = found
    return _IMPORTED[module]


def within_budget(
    modules: Loaded, budget: frozenset[str], allowed: frozenset[str] = frozenset()
) -> None:
    """``allowed``: heavy standard modules this path may load all the same, with what they
    load themselves."""
    third_party = {
        m
        for m in modules
        if m.split(".")[0] not in sys.stdlib_module_names
        and m.split(".")[0] != "gitlocks"
        and m not in STARTUP
        and not m.startswith("__editable__")
    }
    assert not third_party, f"third-party modules loaded: {sorted(third_party)}"
    heavy = {m for m in modules if m.split(".")[0] in HEAVY_STDLIB - allowed}

    def forgiven(module: str, seen: frozenset[str] = frozenset()) -> bool:
        by = modules.loader.get(module, "")
        if by.split(".")[0] in allowed:
            return True
        return by in heavy and by not in seen and forgiven(by, seen | {module})

    heavy = {m for m in heavy if not forgiven(m)}
    loaders = {m: modules.loader.get(m) for m in sorted(heavy)}
    assert not heavy, f"heavy standard modules loaded (by): {loaders}"
    ours = {m for m in modules if m.split(".")[0] == "gitlocks"}
    # A heavy module loaded first by an allowed one, a module of ours may import all the
    # same: none does.
    direct = {m: sorted(imported_as_loaded(m) & (HEAVY_STDLIB - allowed)) for m in ours}
    direct = {m: found for m, found in direct.items() if found}
    assert not direct, f"heavy standard modules imported by: {direct}"
    assert ours <= budget, f"over budget: {sorted(ours - budget)}"


@pytest.fixture
def held(repo: Path) -> Path:
    """agent-b holds src/**; agent-a holds docs/**."""
    assert alock(repo, "acquire", "src/**", **B).code == 0
    assert alock(repo, "acquire", "docs/**", **A).code == 0
    return repo


VERBS = {
    "acquire": ["acquire", "README.md", "-m", "work"],
    "acquire a new file": ["acquire", "lib/new.py", "-m", "work"],  # the closest path looked for
    "list": ["list"],
    "list --json": ["list", "--json"],
    "check": ["check", "src/a.py", "free.txt"],
    "status": ["status"],
    "renew": ["renew", "--ttl", "1h"],
    "note": ["note", "docs/**", "half done"],
    "release": ["release", "docs/**"],
}


# The verbs that write nothing: they hash nothing with SHA-1 either (a write does, for its
# objects and the journal's paths). Each digest is a shared library, loaded when first used.
READING = ("list", "list --json", "check", "status")


# Modules of that budget a verb has no use for: only a claim lists the tree (its "covers
# nothing" note) and judges how long ago its session started.
NOT_LOADED = {
    verb: {"gitlocks.service.typos", "gitlocks.render.identity"}
    for verb in ("release", "renew", "note")
}


@pytest.mark.parametrize("verb", list(VERBS))
def test_each_fast_verb_stays_within_its_import_budget(held: Path, verb: str) -> None:
    modules = loaded(held, VERBS[verb])
    within_budget(modules, STORE_VERBS)
    assert not modules & NOT_LOADED.get(verb, set())
    # No guard has registered a harness session here: no register to read.
    assert "gitlocks.identity.sessions" not in modules
    if verb in READING:
        assert "_sha1" not in modules
    assert not {"_sha2", "_sha256"} <= modules  # one of them at most: the one this Python has


def test_whoami_loads_no_store(held: Path) -> None:
    within_budget(loaded(held, ["whoami"]), WHOAMI)


# A claim and a release in remote mode: the store's remote half, and no libgit2. Its runs
# against the remote are bounded (a session of their own, killed as a group on a timeout:
# gitlocks.git.spawn does that too). To a local or git:// remote it pushes itself
# (gitlocks.git.sendpack, over _socket: no socket, selectors or enum); elsewhere it lists
# the lock refs on a thread (_thread) beside git's push: no subprocess, threading or signal.
REMOTE_WRITE = STORE_VERBS | {
    "gitlocks.core.shard", "gitlocks.git.connect", "gitlocks.git.remote", "gitlocks.git.sendpack",
    "gitlocks.store.listing", "gitlocks.store.mirror", "gitlocks.store.push",
    "gitlocks.store.remote", "gitlocks.store.sharded",
}  # fmt: skip


@pytest.mark.parametrize("transport", ["file", "daemon"])
@pytest.mark.parametrize("verb", ["acquire", "release"])
def test_a_remote_claim_stays_within_its_import_budget(
    tmp_path: Path, verb: str, transport: str, daemon: Daemon
) -> None:
    if transport == "daemon":
        url = daemon.url(make_bare(daemon.base / "locks.git").name)
    else:
        url = make_bare(tmp_path / "locks.git").as_uri()
    clone = make_clone(url, tmp_path / "clone")
    assert alock(clone, "acquire", "docs/**", **A).code == 0
    args = ["acquire", "README.md", "-m", "work"] if verb == "acquire" else ["release", "docs/**"]
    modules = loaded(clone, args)
    within_budget(modules, frozenset(REMOTE_WRITE))
    assert "pygit2" not in modules
    # Looking the daemon's host up loads no codec (IDNA, and re with it) and no socket.py
    assert not {"re", "socket", "encodings.idna", "stringprep"} & modules


def test_one_mcp_call_stays_within_the_budget(held: Path) -> None:
    budget = STORE_VERBS | {"gitlocks.agents", "gitlocks.agents.mcp", "gitlocks.cli.tools"}
    within_budget(loaded(held, ["mcp-call"]), budget)


def test_the_mcp_tool_table_needs_no_command_line_framework(held: Path) -> None:
    """The server reads every tool's declaration without typer or click."""
    modules = loaded(held, ["mcp-tools"])
    assert not {m for m in modules if m.split(".")[0] in ("typer", "click", "mcp")}
    within_budget(
        modules,
        STORE_VERBS
        | {"gitlocks.agents", "gitlocks.agents.mcp", "gitlocks.cli.tools", "gitlocks.cli.info"}
        | {"gitlocks.service.skill"},
    )


HOOKS_BUDGET = frozenset(
    {
        "gitlocks", "gitlocks.main", "gitlocks.errors", "gitlocks.layout",
        "gitlocks.hooks", "gitlocks.hooks.check", "gitlocks.hooks.reading",
        "gitlocks.hooks.trailer", "gitlocks.hooks.commit", "gitlocks.hooks.session",
        "gitlocks.core", "gitlocks.core.claims", "gitlocks.core.digest", "gitlocks.core.glob",
        "gitlocks.core.ignore", "gitlocks.core.jsontext", "gitlocks.core.plain",
        "gitlocks.core.dates",
        "gitlocks.core.record", "gitlocks.core.scope", "gitlocks.core.table",
        "gitlocks.core.summaries",
        "gitlocks.core.text", "gitlocks.core.liveness", "gitlocks.core.journal",
        "gitlocks.core.verdicts",
        "gitlocks.git", "gitlocks.git.files", "gitlocks.git.run", "gitlocks.git.settings",
        "gitlocks.git.table", "gitlocks.git.spawn", "gitlocks.git.kept",
        "gitlocks.git.changes", "gitlocks.git.objects",
        "gitlocks.identity", "gitlocks.identity.sessions",
        "gitlocks.render", "gitlocks.render.hooks", "gitlocks.render.locks",
    }
)  # fmt: skip


def test_the_three_commit_hooks_stay_within_their_budget(held: Path, tmp_path: Path) -> None:
    (held / "lib").mkdir()
    (held / "lib" / "a.py").write_text("x\n")
    git(held, "add", "lib/a.py")
    within_budget(loaded(held, ["hook", "pre-commit"]), HOOKS_BUDGET)
    message = tmp_path / "MSG"
    message.write_text("a change\n")
    # The trailer and the heartbeat judge no paths: neither the check nor .alockignore.
    not_judging = HOOKS_BUDGET - {"gitlocks.hooks.check", "gitlocks.core.ignore"}
    within_budget(loaded(held, ["hook", "commit-msg", str(message)]), not_judging)
    git(held, "commit", "-q", "--no-verify", "-m", "a change")
    within_budget(loaded(held, ["hook", "post-commit"]), not_judging)


PATCH = "*** Begin Patch\n*** Update File: src/app.py\n@@\n-a\n+b\n*** End Patch\n"


@pytest.mark.parametrize("harness", ["claude", "codex"])
def test_the_guard_stays_within_its_budget(held: Path, harness: str) -> None:
    """Codex's patch reader is loaded for a Codex patch only: most edits name their file."""
    event: dict[str, Any] = {
        "session_id": "s1",
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": str(held / "src" / "app.py")},
    }
    if harness == "codex":
        event.update(tool_name="apply_patch", tool_input={"command": PATCH}, cwd=str(held))
    git(held, "config", "alock.guardMode", "block")
    modules = loaded(held, ["guard", "--for", harness], json.dumps(event), None)
    budget = HOOKS_BUDGET | {
        "gitlocks.agents", "gitlocks.agents.guard", "gitlocks.agents.harnesses",
        "gitlocks.agents.repos", "gitlocks.agents.session",
    }  # fmt: skip
    if harness == "codex":
        budget |= {"gitlocks.agents.codex_patch"}
    within_budget(modules, budget)


def _mcp_lines(*requests: dict[str, Any]) -> str:
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
    messages = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}]
    return "".join(json.dumps(m) + "\n" for m in (*messages, *requests))


SDK = ("mcp", "pydantic", "pydantic_core", "anyio", "starlette", "httpx")


def test_start_to_first_mcp_answer_loads_no_sdk(held: Path) -> None:
    """`git alock mcp` asked `initialize` only: standard modules and gitlocks alone."""
    modules = loaded(held, ["mcp"], stdin=_mcp_lines())
    assert not {m for m in modules if m.split(".")[0] in SDK}
    within_budget(modules, frozenset(m for m in modules if m.startswith("gitlocks")))
    assert "gitlocks.agents.settings" not in modules  # the installers' module: dataclasses


def test_serving_mcp_loads_no_sdk(held: Path) -> None:
    """A whole session (tools listed, a tool called) loads no MCP SDK, pydantic or anyio."""
    listed = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    called = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
    called["params"] = {"name": "check", "arguments": {"paths": ["src/a.py"]}}
    modules = loaded(held, ["mcp"], stdin=_mcp_lines(listed, called))
    assert not {m for m in modules if m.split(".")[0] in SDK}, sorted(modules)
    assert "gitlocks.agents.jsonrpc" in modules
    within_budget(modules, frozenset(m for m in modules if m.startswith("gitlocks")))
