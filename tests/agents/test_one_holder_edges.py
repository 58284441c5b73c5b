"""Attacks on "one agent session is one holder": hostile register files, odd process trees,
an MCP server that starts before the session's first hook, and the other ends of the
agent loop. Each session is a stand-in harness process (``tests/support/harness.py``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import git
from support.cli import alock
from support.harness import StandIn
from support.interpreter import named_python
from test_one_holder import denied, edit, event, holder_of, records

from gitlocks.identity import process_start_time, register_dir
from gitlocks.identity.sessions import _key


@pytest.fixture
def standins() -> Iterator[list[StandIn]]:
    made: list[StandIn] = []
    yield made
    for one in made:
        one.close()


def start(
    standins: list[StandIn], tmp_path: Path, repo: Path, name: str = "claude", **env: str
) -> StandIn:
    one = StandIn(tmp_path / f"bin-{len(standins)}", name, repo, (), **env)
    standins.append(one)
    return one


def whoami(session: StandIn, cwd: Path | None = None, **env: str) -> dict[str, object]:
    got = session.shell("git alock whoami --json", cwd=cwd, **env)
    assert got.code == 0, got
    found: dict[str, object] = json.loads(got.out)
    return found


def entry_file(session: StandIn, suffix: str = ".json") -> Path:
    """The register's file for the stand-in's process, named as the register names it."""
    where = register_dir()
    assert where is not None
    start_time = process_start_time(session.pid)
    assert start_time
    return Path(where) / (_key(session.pid, start_time) + suffix)


# --- hostile register files ----------------------------------------------------------------


def test_a_deeply_nested_entry_is_no_entry_not_a_crash(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    agent = start(standins, tmp_path, repo)
    me = holder_of(agent, repo)
    path = entry_file(agent)
    path.write_text("[" * 5000)  # json.loads raises RecursionError, no ValueError
    got = agent.shell("git alock whoami --json")
    assert got.code == 0 and "Traceback" not in got.err, got
    # The guard writes the entry anew: the session is its holder again.
    assert denied(agent.guard(edit(repo, "src/app.py"))) == ""
    assert json.loads(agent.shell("git alock whoami --json").out)["holder"] == me


def test_a_deeply_nested_line_of_repositories_does_not_stop_session_end(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    agent = start(standins, tmp_path, repo)
    holder_of(agent, repo)
    assert denied(agent.guard(edit(repo, "src/app.py"))) == ""
    with open(entry_file(agent, ".repos"), "a") as f:
        f.write("[" * 5000 + "\n")
    got = agent.guard(event(repo, "SessionEnd"))
    assert got.code == 0 and "internal error" not in got.err, got
    assert records(repo) == []


# --- the MCP server starts with the harness, before its first hook ---------------------------


def test_an_mcp_server_started_before_the_first_hook_is_the_sessions_holder(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    # Harnesses start their MCP servers as they start, alongside SessionStart: the server
    # may be up before the guard has registered the session.
    agent = start(standins, tmp_path, repo, "node")
    [who, claim] = agent.mcp(
        ("whoami", {}),
        ("acquire", {"paths": ["lib/**"]}),
        between=("git alock guard --for gemini", event(repo, "SessionStart")),
    )
    me = whoami(agent)["holder"]
    assert str(me).startswith("gemini-")
    assert json.loads(who["text"])["holder"] == me
    assert json.loads(claim["text"])["status"] == "acquired"
    assert denied(agent.guard(edit(repo, "lib/x.py", "gemini"), "gemini")) == ""
    assert {r["holder"] for r in records(repo)} == {me}


# --- a harness started from another harness's shell ----------------------------------------

# A process named like a harness, registered by its own guard, that runs one command through
# bash (its shell tool): the stand-in started from it is a harness inside a harness's shell.
OUTER = r"""
import subprocess, sys
subprocess.run(["sh", "-c", "git alock guard --for claude"], input=sys.argv[1], text=True,
               capture_output=True)
sys.exit(subprocess.call(["bash", "-c", '"$@"; exit $?', "bash", *sys.argv[2:]]))
"""


def nested(
    standins: list[StandIn], tmp_path: Path, repo: Path, name: str = "claude"
) -> tuple[StandIn, str]:
    """A stand-in harness (``name``) run from the shell of an outer, registered ``claude``;
    the outer session's holder."""
    outer = named_python(tmp_path / "outer", "claude")
    start = json.dumps(event(repo, "SessionStart"))
    inner = StandIn(tmp_path / "inner", name, cwd=repo, wrap=(str(outer), "-c", OUTER, start))
    standins.append(inner)
    assert inner.shell("true").code == 0  # up, and the outer registered before it started
    registered = register_dir()
    assert registered is not None
    holders = {json.loads(p.read_text())["holder"] for p in Path(registered).glob("*.json")}
    assert len(holders) == 1, holders
    return inner, holders.pop()


def test_a_harness_in_a_harness_shell_is_its_own_holder(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    inner, outer = nested(standins, tmp_path, repo)
    mine = holder_of(inner, repo)
    assert mine != outer
    assert whoami(inner)["holder"] == mine
    [who] = inner.mcp(("whoami", {}))
    assert json.loads(who["text"])["holder"] == mine


def test_a_harness_in_a_harness_shell_is_not_the_outer_holder_before_its_guard(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    # Its repository has no guard for it (another harness's hooks, or none): its commands
    # must not act as the harness that started it, whose claims they could release.
    inner, outer = nested(standins, tmp_path, repo)
    assert whoami(inner)["holder"] != outer
    # Claude Code exports the outer holder to its shell tool: the inner harness inherits it.
    assert whoami(inner, GITLOCKS_HOLDER=outer)["holder"] != outer


@pytest.mark.xfail(
    strict=True,
    reason="a harness run by node is no harness to the register walk until its guard has "
    "registered it: without the guard in its repository, its commands act as the outer "
    "harness whose shell started it",
)
def test_a_node_harness_in_a_harness_shell_is_not_the_outer_holder_before_its_guard(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    inner, outer = nested(standins, tmp_path, repo, "node")
    assert whoami(inner)["holder"] != outer


# --- a harness that is pid 1 (a container's entry point) -----------------------------------


def pid_namespace() -> tuple[str, ...]:
    """The command that runs the rest as pid 1 of a new pid namespace (and /proc)."""
    wrap = ("unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc")
    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    probe = subprocess.run([*wrap, "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("no unprivileged pid namespaces here")
    return wrap


def test_a_harness_that_is_pid_one_is_the_holder_of_its_shell(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    # `docker run IMAGE gemini`: the harness is the container's pid 1.
    agent = StandIn(tmp_path / "bin", "node", cwd=repo, wrap=pid_namespace())
    standins.append(agent)
    assert agent.shell("echo $PPID").out.strip() == "1"
    me = holder_of(agent, repo, "gemini")
    assert whoami(agent)["holder"] == me
    assert agent.shell("git alock acquire 'pkg/**'").code == 0
    assert denied(agent.guard(edit(repo, "pkg/a.py", "gemini"), "gemini")) == ""


def test_a_guard_run_from_a_shell_at_the_top_registers_no_shell(repo: Path) -> None:
    # Run by hand (or from an orphaned hook) the guard finds no harness above it, only a
    # shell that is pid 1: registered, it would make every command below it that holder.
    script = (
        "git alock guard --for claude >/dev/null 2>&1 <<'EOF'\n"
        + json.dumps(event(repo, "SessionStart"))
        + "\nEOF\ngit alock whoami --json"
    )
    # The venv's git alock, as the other tests find it: on PATH or not when pytest runs.
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    got = subprocess.run([*pid_namespace(), "bash", "-c", script], cwd=repo, env=env,
                         capture_output=True, text=True)  # fmt: skip
    assert got.returncode == 0, got
    assert json.loads(got.stdout)["holder_source"] != "harness", got.stdout


def plant(session: StandIn, holder: str) -> Path:
    """An entry naming ``holder`` for the stand-in's process, as another would write it."""
    path = entry_file(session)
    start_time = process_start_time(session.pid)
    doc = {"holder": holder, "parent": None, "harness": "claude", "pid": session.pid,
           "start_time": start_time, "name": session.name}  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def test_a_register_others_can_write_is_not_believed(
    repo: Path, tmp_path: Path, standins: list[StandIn], monkeypatch: pytest.MonkeyPatch
) -> None:
    # XDG_STATE_HOME on a shared directory: anyone who can write the register could name
    # the holder of every session of ours, the guard's own included.
    state = tmp_path / "shared-state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    agent = start(standins, tmp_path, repo, XDG_STATE_HOME=str(state))
    sessions_dir = plant(agent, "mallory").parent
    sessions_dir.chmod(0o777)
    assert whoami(agent)["holder"] != "mallory"
    assert holder_of(agent, repo) != "mallory"


# --- the trailer -----------------------------------------------------------------------------


def trailer(repo: Path, rev: str = "HEAD") -> str:
    return git(repo, "log", "-1", "--format=%(trailers:key=Agent-Id,valueonly)", rev).strip()


@pytest.mark.parametrize(
    "message",
    ["no newline at the end", "crlf\r\n\r\nbody\r\n", "subject\n\nSigned-off-by: A <a@b>"],
)
def test_every_commit_message_gets_a_real_trailer(
    repo: Path, tmp_path: Path, standins: list[StandIn], message: str
) -> None:
    assert alock(repo, "install-hooks").code == 0
    agent = start(standins, tmp_path, repo)
    me = holder_of(agent, repo)
    assert denied(agent.guard(edit(repo, "src/app.py"))) == ""
    (repo / "src" / "app.py").write_text("changed\n")
    (tmp_path / "msg").write_bytes(message.encode())
    got = agent.shell(f"git commit -qa -F {tmp_path / 'msg'}")
    assert got.code == 0, got
    assert trailer(repo) == me, git(repo, "log", "-1", "--format=%B")
    # An amend keeps one trailer; a merge without -m gets one too.
    assert agent.shell("git commit -q --amend --no-edit").code == 0
    assert trailer(repo).splitlines() == [me]
    git(repo, "checkout", "-q", "-b", "side", "HEAD~1")
    (repo / "side.txt").write_text("side\n")
    git(repo, "add", "side.txt")
    git(repo, "commit", "-qm", "side")
    git(repo, "checkout", "-q", "main")
    assert agent.shell("git merge -q --no-ff --no-edit side").code == 0
    assert trailer(repo) == me, git(repo, "log", "-1", "--format=%B")


# --- races -----------------------------------------------------------------------------------


def test_parallel_first_events_of_one_session_make_one_holder(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    # Claude Code runs the hooks of parallel tool calls at once: the session's first events
    # race to register it and to note its repository.
    agent = start(standins, tmp_path, repo)
    for i in range(8):
        (tmp_path / f"ev{i}").write_text(json.dumps(edit(repo, f"src/f{i}.py")))
    script = " ".join(
        f"git alock guard --for claude <{tmp_path / f'ev{i}'} >{tmp_path / f'out{i}'} &"
        for i in range(8)
    )
    assert agent.hook(script + " wait", "").code == 0
    for i in range(8):
        assert denied(agent.guard(edit(repo, f"src/f{i}.py"))) == ""  # nothing held by another
    me = whoami(agent)["holder"]
    assert {r["holder"] for r in records(repo)} == {me}
    assert len({p for r in records(repo) for p in r["paths"]}) == 8
    repos = entry_file(agent, ".repos").read_text().splitlines()
    assert len({json.loads(line)["common"] for line in repos}) == 1
    assert agent.guard(event(repo, "SessionEnd")).code == 0
    assert records(repo) == []


def test_two_sessions_starting_at_once_are_two_holders(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    one, two = start(standins, tmp_path, repo), start(standins, tmp_path, repo)
    first, second = holder_of(one, repo), holder_of(two, repo)
    assert first != second
    assert whoami(one)["holder"] == first and whoami(two)["holder"] == second


# --- a shell in a sandbox that hides the harness ----------------------------------------------


def sandboxed(command: str) -> str:
    """``command`` as a sandboxed shell tool runs it: in a pid namespace of its own, where
    the harness process cannot be seen."""
    return " ".join([*pid_namespace(), "bash", "-c", json.dumps(command)])


def test_session_end_releases_what_its_sandboxed_shell_claimed(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    env_file = tmp_path / "claude-env.sh"
    env_file.write_text("")
    agent = start(standins, tmp_path, repo, CLAUDE_ENV_FILE=str(env_file))
    me = holder_of(agent, repo)
    exported = {"GITLOCKS_HOLDER": me}  # what Claude Code's shell tool gets from the file
    got = agent.shell(sandboxed("git alock acquire 'docs/**' --json"), None, **exported)
    assert got.code == 0 and json.loads(got.out)["lock"]["holder"] == me, got
    assert denied(agent.guard(edit(repo, "docs/a.md"))) == ""
    assert agent.guard(event(repo, "SessionEnd")).code == 0
    assert records(repo) == []


# --- no register --------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["state-is-a-file", "relative-home"])
def test_without_a_register_the_guard_and_the_shell_still_agree(
    repo: Path, tmp_path: Path, standins: list[StandIn], where: str
) -> None:
    # A state directory that cannot be made (a file where it would go, a relative HOME;
    # as on a system without /proc, where no entry is ever written): each command
    # derives its id.
    blocked = tmp_path / where
    blocked.write_text("")
    env = {"XDG_STATE_HOME": str(blocked)} if where == "state-is-a-file" else {"HOME": where}
    agent = start(standins, tmp_path, repo, "node", **env)
    me = holder_of(agent, repo, "gemini")
    assert whoami(agent)["holder"] == me
    assert agent.shell("git alock acquire 'pkg/**'").code == 0
    assert denied(agent.guard(edit(repo, "pkg/a.py", "gemini"), "gemini")) == ""


@pytest.mark.parametrize("conclude", ["git commit --no-edit -q", "GIT_EDITOR=true git commit -q"])
def test_a_merge_concluded_after_a_conflict_gets_a_real_trailer(
    repo: Path, tmp_path: Path, standins: list[StandIn], conclude: str
) -> None:
    assert alock(repo, "install-hooks").code == 0
    agent = start(standins, tmp_path, repo)
    me = holder_of(agent, repo)
    git(repo, "checkout", "-q", "-b", "side")
    (repo / "README.md").write_text("side\n")
    git(repo, "commit", "-qam", "side")
    git(repo, "checkout", "-q", "main")
    (repo / "README.md").write_text("main\n")
    git(repo, "commit", "-qam", "main")
    assert agent.shell("git merge -q side").code != 0  # a conflict
    (repo / "README.md").write_text("both\n")
    git(repo, "add", "README.md")
    got = agent.shell(conclude)
    assert got.code == 0, got
    assert trailer(repo) == me, git(repo, "log", "-1", "--format=%B")


def test_session_end_finds_a_repository_after_many_that_are_gone(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    # A long session claims in many short-lived repositories (a test suite's, scratch
    # clones) that are deleted since: the list of them must not hide the ones that remain.
    nested = repo / "vendor" / "lib"
    nested.mkdir(parents=True)
    git(nested, "init", "-q")
    agent = start(standins, tmp_path, repo)
    holder_of(agent, repo)
    gone = tmp_path / ("scratch-" + "x" * 100)
    lines = [
        json.dumps({"common": f"{gone}-{i}/.git", "root": f"{gone}-{i}"}) + "\n" for i in range(600)
    ]
    entry_file(agent, ".repos").write_text("".join(lines))
    assert denied(agent.guard(edit(repo, "vendor/lib/x.py"))) == ""
    assert len(records(nested)) == 1
    assert agent.guard(event(repo, "SessionEnd")).code == 0
    assert records(nested) == []


def test_the_holder_is_stable_across_new_session_ids_of_one_process(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    # /clear: SessionEnd, then SessionStart with a new session id, in the same process.
    agent = start(standins, tmp_path, repo)
    me = holder_of(agent, repo)
    assert agent.guard(event(repo, "SessionEnd")).code == 0
    again = agent.guard({**event(repo, "SessionStart"), "session_id": "sess-2", "source": "clear"})
    assert f"you are {me}." in again.out
    assert whoami(agent)["holder"] == me


# --- install-agent-hooks and links ----------------------------------------------------------


@pytest.mark.parametrize(
    "harness, link, target",
    [
        ("claude", ".claude", "../outside"),  # relative, to a directory
        ("claude", ".claude/settings.json", "../../outside/settings.json"),  # to a file
        ("copilot", ".github", "../outside"),
        ("gemini", ".gemini", "inside/../../outside"),  # through a directory of the tree
    ],
)
def test_install_refuses_every_committed_link_out_of_the_repository(
    repo: Path, tmp_path: Path, harness: str, link: str, target: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "inside").mkdir()
    (repo / "inside" / "keep").write_text("")
    (repo / link).parent.mkdir(parents=True, exist_ok=True)
    (repo / link).symlink_to(target)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a link out")
    got = alock(repo, "install-agent-hooks", "--for", harness)
    assert got.code == 2 and "committed symbolic link" in got.err, got
    assert list(outside.iterdir()) == []


def test_install_writes_through_a_link_of_the_users_own(repo: Path, tmp_path: Path) -> None:
    mine = tmp_path / "my-claude"
    mine.mkdir()
    (repo / ".claude").symlink_to(mine)  # not committed: the user's choice
    got = alock(repo, "install-agent-hooks", "--for", "claude")
    assert got.code == 0, got
    assert (mine / "settings.json").exists()


def test_a_process_that_left_the_session_does_not_keep_its_exported_holder(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    # The agent starts something that outlives its command and leaves the harness's tree
    # (a tmux server a person attaches to later, a daemon): with the exported variable in
    # its environment, it must not act as the session, which its tree does not hold.
    env_file = tmp_path / "claude-env.sh"
    env_file.write_text("")
    agent = start(standins, tmp_path, repo, CLAUDE_ENV_FILE=str(env_file))
    me = holder_of(agent, repo)
    exported = dict(
        line.removeprefix("export ").split("=", 1) for line in env_file.read_text().splitlines()
    )
    fifo, out = tmp_path / "go", tmp_path / "who.json"
    os.mkfifo(fifo)
    detached = f"(sh -c 'read x <{fifo}; git alock whoami --json >{out}.tmp; mv {out}.tmp {out}'"
    got = agent.shell(detached + " </dev/null >/dev/null 2>&1 &)", None, **exported)
    assert got.code == 0, got  # its shell is gone: the command's parent is no more
    writer = -1
    for _ in range(600):  # until its reader is there (never blocking on a dead one)
        try:
            writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError:
            subprocess.run(["sleep", "0.05"])
    assert writer >= 0, "the detached command never started"
    os.write(writer, b"go\n")
    os.close(writer)
    for _ in range(600):
        if out.exists():
            break
        subprocess.run(["sleep", "0.05"])
    assert json.loads(out.read_text())["holder"] != me
    # Inside a sandbox that hides the harness, the exported holder still counts.
    inside = agent.shell(sandboxed("git alock whoami --json"), None, **exported)
    assert json.loads(inside.out)["holder"] == me, inside


def test_a_harness_started_with_an_id_is_that_holder_everywhere(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    agent = start(standins, tmp_path, repo, AGENT_ID="lead", AGENT_PARENT_ID="boss")
    assert holder_of(agent, repo) == "lead"
    assert agent.shell("git alock acquire 'src/**'").code == 0
    unset = agent.shell("unset AGENT_ID AGENT_PARENT_ID; git alock whoami --json")
    who = json.loads(unset.out)
    assert (who["holder"], who["parent"], who["session"]["pid"]) == ("lead", "boss", agent.pid)
    assert agent.shell("unset AGENT_ID; git alock acquire 'docs/**'").code == 0
    assert denied(agent.guard(edit(repo, "src/app.py"))) == ""
    sub = agent.shell("git alock acquire lib/x.py --json", AGENT_ID="sub", AGENT_PARENT_ID="")
    assert json.loads(sub.out)["lock"]["parent"] is None  # a parent is only ever declared
    assert agent.guard(event(repo, "SessionEnd")).code == 0
    assert [r["holder"] for r in records(repo)] == ["sub"]


# --- what pruning leaves ------------------------------------------------------------------------


def a_dead_pid() -> int:
    pid = int(Path("/proc/sys/kernel/pid_max").read_text()) - 1
    while Path(f"/proc/{pid}").exists():
        pid -= 1
    return pid


def test_session_start_prunes_what_crashes_and_reboots_left(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    from gitlocks.identity import host_identity

    found = register_dir()
    assert found is not None
    where = Path(found)
    where.mkdir(parents=True, mode=0o700)
    boot, namespace = host_identity().split(":", 1)
    dead = a_dead_pid()

    def planted(name: str, host: str, host_id: str) -> Path:
        doc = {"holder": "old", "parent": None, "harness": "claude", "pid": 4242,
               "start_time": "x:1", "name": "claude", "host_id": host_id, "host": host}  # fmt: skip
        (where / f"4242-{name}.repos").write_text("")
        path = where / f"4242-{name}.json"
        path.write_text(json.dumps(doc))
        return path

    rebooted = planted("a" * 16, os.uname().nodename, f"another-boot:{namespace}")
    container = planted("b" * 16, os.uname().nodename, f"{boot}:another-namespace")
    elsewhere = planted("c" * 16, "another-machine", f"another-boot:{namespace}")
    orphan = where / f"{dead}-{'d' * 16}.repos"  # its entry forgotten, then appended to
    orphan.write_text("")
    left = where / f".{dead}-{'e' * 16}.json.{dead}.tmp"  # a writer killed before its rename
    left.write_text("{")
    os.utime(left, (1, 1))
    # Named by no process id git or the kernel writes: "²" passes isdigit(), not int().
    odd = [where / f"\u00b2-{'f' * 16}.repos", where / f"\u00b2-{'1' * 16}.json"]
    odd[0].write_text("")  # a list of repositories without its entry
    odd[1].write_text(json.dumps({"start_time": "x:1", "host": "elsewhere"}))
    agent = start(standins, tmp_path, repo)
    holder_of(agent, repo)
    assert not rebooted.exists() and not rebooted.with_suffix(".repos").exists()
    assert not orphan.exists() and not left.exists()
    assert container.exists() and elsewhere.exists()  # not ours to judge
    assert all(path.exists() for path in odd)  # nor are these
    assert entry_file(agent).exists()


# --- durations ----------------------------------------------------------------------------------


def test_a_ttl_of_many_leading_zeros_is_a_usage_error_or_a_ttl(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    zeros = "0" * 5000
    got = alock(repo, "acquire", "--ttl", zeros + "5m", "a.txt", AGENT_ID="alice")
    assert got.code == 0 and "Traceback" not in got.err, got
    assert alock(repo, "list", "--json").json()[0]["ttl"] == 300
    agent = start(standins, tmp_path, repo)
    holder_of(agent, repo)
    [answer] = agent.mcp(("acquire", {"paths": ["b.txt"], "ttl": zeros + "1"}))
    assert "internal error" not in answer["text"], answer


def test_session_end_with_a_repository_deleted_since(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    other = tmp_path / "scratch"
    other.mkdir()
    git(other, "init", "-q")
    agent = start(standins, tmp_path, repo)
    holder_of(agent, repo)
    assert denied(agent.guard(edit(repo, "src/app.py"))) == ""
    assert agent.shell("git alock acquire 'x/**'", cwd=other).code == 0
    shutil.rmtree(other)
    got = agent.guard(event(repo, "SessionEnd"))
    assert got.code == 0 and "error" not in got.err, got
    assert records(repo) == []


# --- reverts and cherry-picks, which run no commit-msg ----------------------------------------


def test_reverts_and_cherry_picks_carry_the_sessions_trailer(
    repo: Path, tmp_path: Path, standins: list[StandIn]
) -> None:
    assert alock(repo, "install-hooks").code == 0
    git(repo, "config", "alock.hookMode", "block")
    agent = start(standins, tmp_path, repo)
    me = holder_of(agent, repo)
    assert denied(agent.guard(edit(repo, "src/app.py"))) == ""
    (repo / "src" / "app.py").write_text("changed\n")
    assert agent.shell("git commit -qam change").code == 0
    assert agent.shell("git revert --no-edit HEAD").code == 0
    assert trailer(repo) == me, git(repo, "log", "-1", "--format=%B")
    # With its message edited, git commits a revert through git commit -n: no commit-msg.
    assert agent.shell("GIT_EDITOR=true git revert HEAD").code == 0
    assert trailer(repo) == me, git(repo, "log", "-1", "--format=%B")
    # A cherry-pick names the agent that picked a commit naming none, and keeps the
    # trailer of one that names its own.
    git(repo, "checkout", "-q", "-b", "side")
    (repo / "src" / "app.py").write_text("by hand\n")
    git(repo, "commit", "-qam", "by hand", "--no-verify")
    (repo / "src" / "app.py").write_text("by alice\n")
    git(repo, "commit", "-qam", "by alice\n\nAgent-Id: alice", "--no-verify")
    git(repo, "checkout", "-q", "main")
    assert agent.shell("git cherry-pick side~1").code == 0
    assert trailer(repo) == me, git(repo, "log", "-1", "--format=%B")
    assert agent.shell("git cherry-pick side").code == 0
    assert trailer(repo) == "alice", git(repo, "log", "-1", "--format=%B")
    # Every commit of the session's own is its own to verify.
    assert agent.shell("git alock verify HEAD~4..HEAD~1").out.startswith("CLEAN 3 commits")
    # Other commits still get their one trailer from commit-msg alone.
    (repo / "src" / "app.py").write_text("again\n")
    assert agent.shell("git commit -qam again").code == 0
    assert trailer(repo).splitlines() == [me]
