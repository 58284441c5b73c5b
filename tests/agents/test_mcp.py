"""The MCP tools are the verbs' declarations: names, schemas, descriptions and argument
checks follow from ``gitlocks.cli.declare``, and the server's bodies cannot drift from them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from support.cli import alock, run_git

from gitlocks.agents.mcp import (
    MAX_PATHS,
    MAX_PATTERN_CHARS,
    Server,
    Tool,
    ToolArgument,
    in_tools,
    schema,
)
from gitlocks.cli import declare
from gitlocks.cli.app import VERBS, _command
from gitlocks.cli.tools import TOOLS, tool, tools

# What agents rely on: each tool's arguments, (JSON type, required). A change here is a
# change of the tools' contract, made on purpose in the verb's declaration.
SURFACE: dict[str, dict[str, tuple[str, bool]]] = {
    "acquire": {
        "paths": ("array", True),
        "reason": ("string", False),
        "ttl": ("string", False),
        "shared": ("boolean", False),
        "until_merged": ("string", False),
        "wait": ("string", False),
    },
    "release": {"paths": ("array", False), "all": ("boolean", False)},
    "renew": {"paths": ("array", False), "ttl": ("string", False)},
    "check": {"paths": ("array", True)},
    "list": {},
    "status": {},
    "note": {"path": ("string", True), "text": ("string", True)},
    "resume": {"path": ("string", True), "ttl": ("string", False)},
    "break": {"targets": ("array", True)},
    "log": {
        "max_count": ("string", False),
        "since": ("string", False),
        "reverse": ("boolean", False),
    },
    "whoami": {},
}


def surface(published: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    return {
        name: (prop["type"], name in published["required"])
        for name, prop in published["properties"].items()
    }


def test_the_tools_offer_what_agents_rely_on() -> None:
    table = tools()
    assert list(table) == list(SURFACE)
    assert {name: surface(schema(t)) for name, t in table.items()} == SURFACE


@pytest.mark.parametrize("name", TOOLS)
def test_each_tool_is_its_verbs_declaration(name: str) -> None:
    """Every parameter of the verb is offered or marked as not offered; an offered one
    keeps its help, its required-ness (unless marked) and a JSON type of its Python type."""
    verb = _verb(name)
    published = schema(tools()[name])
    hints = typing.get_type_hints(verb.callback)
    offered = [p for p in declare.params(verb.callback) if p.tool.offered]
    assert len(published["properties"]) == len(offered)
    types = {bool: "boolean", str: "string", str | None: "string"}
    for p, (argument, prop) in zip(offered, published["properties"].items(), strict=True):
        base = hints[p.name]
        many = list in {typing.get_origin(t) for t in (base, *typing.get_args(base))}
        assert prop["type"] == ("array" if many else types[base]), argument
        assert prop["description"] == p.help and p.help, argument
        required = p.required if p.tool.required is None else p.tool.required
        assert (argument in published["required"]) == required, argument
    assert tools()[name].description == verb.tool


def _verb(name: str) -> declare.Verb:
    import importlib  # the verb's own module, as the verb table names it

    module = importlib.import_module(f"gitlocks.cli.{VERBS[name][0]}")
    verb: declare.Verb = module.app.commands[name]
    return verb


def test_only_the_named_tools_declare_a_tool() -> None:
    import importlib  # every verb module, to find each declared tool

    declared = set()
    for verb, (module_name, _) in VERBS.items():
        module = importlib.import_module(f"gitlocks.cli.{module_name}")
        if module.app.commands[verb].tool is not None:
            declared.add(verb)
    assert declared == set(TOOLS)


def test_who_acts_and_the_output_form_are_never_tool_arguments() -> None:
    for t in tools().values():
        assert not {a.param for a in t.arguments} & {"as_id", "as_json", "fresh", "long"}


def test_a_new_option_reaches_the_command_line_and_the_tool_from_one_declaration(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A verb declared as a newcomer would: its option shows in typer's help, is parsed
    by the small parser, and is in the tool's schema with the same help."""
    app = declare.Verbs()

    @app.command(tool="Paint paths.")
    def paint(
        patterns: list[str] = declare.Argument(metavar="PATTERN...", help="What to paint."),
        colour_name: str = declare.Option(
            "--colour-name", default="red", help="The colour, by name."
        ),
        dry: bool = declare.Option(
            "--dry", default=False, help="Say what, paint nothing.", tool=declare.NOT_IN_TOOL
        ),
    ) -> None:
        """Paint PATTERN...."""

    assert declare.parse(paint, ["a", "--colour-name", "blue"]) == {
        "patterns": ["a"],
        "colour_name": "blue",
        "dry": False,
    }
    import typer  # the help a person sees

    command = _command(app, "paint", typer)
    command.get_help(_context(command))  # typer's rich help prints itself
    help_text = capsys.readouterr().out
    assert "The colour, by name." in help_text and "--dry" in help_text
    painted = tool(app.commands["paint"])
    assert painted.description == "Paint paths."
    assert [(a.name, a.param, a.kind, a.required, a.default) for a in painted.arguments] == [
        ("patterns", "patterns", "paths", True, None),
        ("colour_name", "colour_name", "text", False, "red"),
    ]
    published = schema(painted)
    assert published["properties"]["colour_name"] == {
        "type": "string",
        "description": "The colour, by name.",
        "default": "red",
    }
    assert published["properties"]["patterns"]["items"]["maxLength"] == MAX_PATTERN_CHARS
    assert published["properties"]["patterns"]["maxItems"] == MAX_PATHS
    assert published["additionalProperties"] is False


def _context(command: Any) -> Any:
    import click  # a context, to ask the command for its help

    return click.Context(command, info_name="git alock paint")


def test_a_verb_that_declares_no_tool_is_no_tool() -> None:
    with pytest.raises(LookupError, match="declares no MCP tool"):
        tool(_verb("watch"))


def test_a_server_whose_body_drifts_from_the_declaration_does_not_start(repo: Path) -> None:
    table = tools(("release",))
    extra = ToolArgument("force", "force", "bool", False, False, "Even others'.")
    drifted = table["release"]._replace(arguments=(*table["release"].arguments, extra))
    with pytest.raises(TypeError, match=r"'release' takes .*'force'.* but Server\.release takes"):
        Server(str(repo), {"release": drifted})
    with pytest.raises(TypeError, match=r"Server\.paint takes None"):
        Server(str(repo), {"paint": Tool("paint", "Paint.", ())})
    with pytest.raises(TypeError, match=r"Server\.identity takes None"):  # no method
        Server(str(repo), {"identity": Tool("identity", "Who.", ())})
    assert Server(str(repo), tools(), env={**os.environ, "AGENT_ID": "a"}).tools.keys() == set(
        TOOLS
    )


# --- through the official SDK client -------------------------------------------------------


def session(repo: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[Any], list[Any]]:
    """The tools the SDK's client lists, and each call's document, over stdio."""
    mcp = pytest.importorskip("mcp")
    import anyio
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {k: v for k, v in os.environ.items() if k != "AGENT_ID"}
    env["AGENT_ID"] = "mcp-agent"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "gitlocks.main", "mcp"], env=env, cwd=str(repo)
    )

    async def run() -> tuple[list[Any], list[Any]]:
        answers = []
        async with stdio_client(params) as (read, write), mcp.ClientSession(read, write) as client:
            await client.initialize()
            with anyio.fail_after(30):
                listed = (await client.list_tools()).tools
            for name, arguments in calls:
                with anyio.fail_after(30):
                    result = await client.call_tool(name, arguments)
                failed = getattr(result, "is_error", getattr(result, "isError", False))
                doc = json.loads(result.content[0].text)
                assert bool(failed) == (isinstance(doc, dict) and doc.get("status") == "error")
                answers.append(doc)
        return list(listed), answers

    found: tuple[list[Any], list[Any]] = anyio.run(run)
    return found


def _input_schema(listed: Any) -> Any:
    return getattr(listed, "input_schema", None) or listed.inputSchema


def test_the_client_sees_the_declared_schemas_and_the_checks_answer_as_before(
    repo: Path,
) -> None:
    assert alock(repo, "acquire", "src/**", AGENT_ID="other-agent").code == 0
    listed, answers = session(
        repo,
        [
            ("acquire", {"paths": ["a"], "colour": "red"}),
            ("release", {"all": "yes"}),
            ("note", {"path": ["x"], "text": "t"}),
            ("note", {"text": "t"}),
            ("acquire", {"paths": ["docs/**"], "reason": None, "ttl": None, "shared": None}),
            ("acquire", {"paths": ["srcc/app.py"]}),
            ("release", {"paths": None, "all": True}),
        ],
    )
    declared = tools()
    assert [t.name for t in listed] == list(TOOLS)
    for t in listed:
        assert t.description == declared[t.name].description
        assert _input_schema(t) == schema(declared[t.name])
    acquire = _input_schema(listed[0])["properties"]
    assert acquire["paths"]["description"] == "Glob patterns to claim."
    assert acquire["ttl"]["description"].startswith("Lifetime: 90, 90s, 15m")
    unknown, mistyped, not_text, missing, defaults, typo, released = answers
    assert unknown["error"] == (
        "acquire takes no argument 'colour' "
        "(it takes paths, reason, ttl, shared, until_merged, wait)"
    )
    assert mistyped["error"] == "all must be true or false, not a string 'yes'"
    assert not_text["error"] == "path must be a string, not an array"
    assert missing["error"] == "note needs the argument 'path'"
    assert all(e["exit_code"] == 2 for e in (unknown, mistyped, not_text, missing))
    # null is the declared default, as leaving the argument out is.
    assert defaults["status"] == "acquired" and defaults["lock"]["reason"] == ""
    assert defaults["lock"]["shared"] is False
    # The same document as the verb's --json, the typo note included.
    by_cli = alock(repo, "acquire", "srcc/lib.py", "--json", AGENT_ID="third").json()
    assert set(typo) == set(by_cli)
    assert typo["covers_nothing"] == [{"pattern": "srcc/app.py", "closest": "src/app.py"}]
    assert released["status"] == "released"


def shape(doc: Any) -> Any:
    """A document's keys and nesting, without its values."""
    if isinstance(doc, dict):
        return {k: shape(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [shape(v) for v in doc[:1]]
    return "value"


def test_each_tool_answers_its_verbs_json_document(repo: Path) -> None:
    """The same steps through the tools and through the command line's --json, on two
    regions of the same repository: every answer has the same shape."""
    steps: list[tuple[str, dict[str, Any], list[str]]] = [
        ("acquire", {"paths": ["docs/**"], "reason": "r"}, ["acquire", "lib/**", "-m", "r"]),
        ("check", {"paths": ["docs/a.md", "x.txt"]}, ["check", "lib/a.py", "y.txt"]),
        ("note", {"path": "docs/**", "text": "half"}, ["note", "lib/**", "half"]),
        ("renew", {}, ["renew"]),
        ("renew", {"ttl": "2h"}, ["renew", "--ttl", "2h"]),
        ("list", {}, ["list"]),
        ("status", {}, ["status"]),
        ("whoami", {}, ["whoami"]),
        ("release", {"paths": ["docs/**"]}, ["release", "lib/**"]),
        ("release", {"all": True}, ["release", "--all"]),
    ]
    _, by_tool = session(repo, [(name, arguments) for name, arguments, _ in steps])
    for (name, _, args), got in zip(steps, by_tool, strict=True):
        by_verb = alock(repo, *args, "--json", AGENT_ID="mcp-agent").json()
        assert shape(got) == shape(by_verb), name


def test_the_reading_tools_release_landed_claims_first_as_the_reading_verbs_do(
    repo: Path, worktree: Path
) -> None:
    """A merge git made without hooks lands a claim: ``list --json`` releases it before
    answering, and so do the tools ``list``, ``check`` and ``status``."""
    assert alock(repo, "install-hooks").code == 0
    main = git(repo, "branch", "--show-current").strip()
    agent = {"AGENT_ID": "alice"}
    assert alock(worktree, "acquire", "src/**", "--until-merged", main, **agent).code == 0
    (worktree / "src" / "app.py").write_text("done\n")
    assert run_git(worktree, "commit", "-qam", "done", env=agent).code == 0
    git(repo, "-c", "core.hooksPath=/dev/null", "merge", "-q", "--ff-only", "side")
    _, [listed] = session(repo, [("list", {})])
    assert listed == []
    events = alock(repo, "log", "--json").json()
    assert [e["event"] for e in events][:1] == ["landed"], events

    assert alock(worktree, "acquire", "src/**", "--until-merged", main, **agent).code == 0
    (worktree / "src" / "app.py").write_text("again\n")
    assert run_git(worktree, "commit", "-qam", "again", env=agent).code == 0
    git(repo, "-c", "core.hooksPath=/dev/null", "merge", "-q", "--ff-only", "side")
    _, [[checked]] = session(repo, [("check", {"paths": ["src/app.py"]})])
    assert checked["status"] == "free", checked


def test_the_mcp_verbs_help_names_exactly_the_tools_it_serves() -> None:
    """The help is written by hand; this holds it to the table the server publishes."""
    import re

    from gitlocks.cli.agents import mcp
    from gitlocks.cli.tools import TOOLS

    listed = re.search(r"\(([^)]*)\)", " ".join((mcp.__doc__ or "").split()))
    assert listed is not None
    assert tuple(n.strip() for n in listed.group(1).split(",")) == TOOLS


def test_interrupted_work_is_resumed_broken_and_logged_through_the_tools(
    repo: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    """The tools an answer points to are there: a claim that meets interrupted work is
    told to call resume (never to run git alock), and resume, break and log answer as
    their verbs' --json do."""
    dead = {"AGENT_ID": "agent-a", "AGENT_SESSION_PID": str(sleeper.pid)}
    assert alock(repo, "acquire", "src/api/**", **dead).code == 0
    assert alock(repo, "note", "src/api/**", "token refresh done", **dead).code == 0
    assert alock(repo, "acquire", "docs/**", AGENT_ID="agent-c").code == 0
    [other] = [r["id"] for r in alock(repo, "list", "--json").json() if r["holder"] == "agent-c"]
    sleeper.kill()
    sleeper.wait()
    _, answers = session(
        repo,
        [
            ("acquire", {"paths": ["src/api/**"]}),
            ("resume", {"path": "src/api/**"}),
            ("break", {"targets": [other]}),
            ("break", {"targets": []}),
            ("log", {"max_count": "3"}),
            ("log", {"max_count": "many"}),
        ],
    )
    met, resumed, broken, empty, logged, bad_count = answers
    assert met["status"] == "interrupted"
    assert "the resume tool" in met["hint"] and "the break tool" in met["hint"], met
    assert "git alock" not in met["hint"]
    assert resumed["status"] == "resumed" and resumed["lock"]["holder"] == "mcp-agent"
    assert resumed["lock"]["notes"][0]["text"] == "token refresh done"
    assert broken["status"] == "broken" and [r["id"] for r in broken["locks"]] == [other]
    assert empty["status"] == "error" and "name the lock ids or patterns" in empty["error"]
    assert [e["event"] for e in logged] == ["broken", "resumed", "interrupted"]
    assert logged[0]["by"] == "mcp-agent"
    assert logged == alock(repo, "log", "-n", "3", "--json").json()
    assert bad_count["status"] == "error" and "whole number" in bad_count["error"]


def test_an_answer_names_the_tool_where_it_would_name_a_command() -> None:
    table = tools()
    said = in_tools(
        "git alock log names its holder; git alock break 1a-2b discards it; "
        "git alock sync tells once the remote answers",
        table,
    )
    assert said == (
        "the log tool names its holder; the break tool 1a-2b discards it; "
        "git alock sync tells once the remote answers"
    )


def test_acquire_takes_wait_as_the_verb_takes_wait(repo: Path) -> None:
    """``wait`` is ``--wait``: a held scope waits its time out, then is refused as ever;
    a free one is granted at once; a bad duration is an error result."""
    assert alock(repo, "acquire", "docs/a.md", AGENT_ID="other").code == 0
    calls: list[tuple[str, dict[str, Any]]] = [
        ("acquire", {"paths": ["docs/a.md"], "wait": "1"}),
        ("acquire", {"paths": ["docs/b.md"], "wait": ""}),
        ("acquire", {"paths": ["docs/c.md"], "wait": "soon"}),
    ]
    _, (out_of_time, free, bad) = session(repo, calls)
    assert out_of_time["status"] == "refused"
    assert [c["holder"] for c in out_of_time["conflicts"]] == ["other"]
    assert out_of_time["waiter"]["holder"] == "mcp-agent" and "waited_seconds" in out_of_time
    assert free["status"] == "acquired" and "waiter" not in free
    assert bad["status"] == "error" and "invalid wait 'soon'" in bad["error"]
