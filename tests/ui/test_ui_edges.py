"""Attacks on the live page's server and on the newcomer fixes (landing, typo notes,
messages): each test here failed before the fix it names."""

from __future__ import annotations

import json
import select
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import test_docs
from chromium import Page
from conftest import git
from support.cli import alock, run_git
from test_ui import browser, fetch, needs_chromium, serve, text_of

from gitlocks.core.scope import make_entry
from gitlocks.service import typos

__all__ = ["browser", "serve"]  # the fixtures, imported so pytest finds them


def _raw(port: int, request: bytes, bound: float = 30) -> bytes:
    """Send ``request`` as it is, bytes no client library would send; the answer's start."""
    with socket.create_connection(("127.0.0.1", port), timeout=bound) as sock:
        sock.sendall(request)
        return sock.recv(4096)


# --- the live page's server ---------------------------------------------------------------------


def test_an_event_stream_asked_since_a_non_ascii_digit_is_no_traceback(
    repo: Path, serve: Any
) -> None:
    """``"²".isdigit()`` holds, yet ``int("²")`` raises: the request was dropped and a
    traceback printed in the terminal that serves the page."""
    ui = serve(repo)
    token = ui.url.split("/")[3]
    host = f"Host: 127.0.0.1:{ui.port}\r\n"
    for request in (
        f"GET /{token}/events?since=\xb2 HTTP/1.1\r\n{host}\r\n",
        f"GET /{token}/events HTTP/1.1\r\n{host}Last-Event-ID: \xb2\r\n\r\n",
    ):
        answer = _raw(ui.port, request.encode("latin-1"))
        assert answer.startswith(b"HTTP/1.1 200"), answer
    _, err = ui.stop()
    assert "Traceback" not in err and "ValueError" not in err, err


def test_a_connection_that_never_sends_a_request_is_closed(repo: Path, serve: Any) -> None:
    """Any local process, token or not, could open connections and say nothing: each held
    a thread for ever."""
    ui = serve(repo)
    with socket.create_connection(("127.0.0.1", ui.port), timeout=60) as sock:
        sock.sendall(b"GET /")  # and never the rest
        assert sock.recv(4096) == b""  # closed by the server, well within the bound
    ui.stop()


def test_a_request_trickled_a_byte_at_a_time_is_cut_off(repo: Path, serve: Any) -> None:
    """Each byte came within the idle bound, so the connection was never idle: a request
    sent slowly enough held its thread for ever."""
    ui = serve(repo)
    with socket.create_connection(("127.0.0.1", ui.port), timeout=60) as sock:
        sock.sendall(b"GET /")
        closed = False
        for _ in range(60):  # a minute at most, well past the server's bound
            try:
                sock.sendall(b"x")
            except OSError:
                closed = True
                break
            ready, _, _ = select.select([sock], [], [], 1.0)
            if ready and sock.recv(4096) == b"":
                closed = True
                break
        assert closed
    ui.stop()


@needs_chromium
def test_a_path_that_reads_backwards_is_shown_escaped(
    browser: Page, repo: Path, serve: Any
) -> None:
    """The terminal escapes bidirectional overrides and invisible characters
    (``src/\\u202eyp.htua``); the page drew them raw, so a claim of that path read as a
    claim of ``src/auth.py`` beside the real one."""
    spoof = "src/\u202eyp.htua"
    reason = "fix\u200b auth\nFREE src/auth.py"
    assert alock(repo, "acquire", spoof, "-m", reason, AGENT_ID="mallory").code == 0
    ui = serve(repo)
    browser.goto(ui.url)
    browser.wait_for("!!document.querySelector('#holders .card')", "a holder card")
    browser.eval("document.querySelector('#holders .chip').click()")
    browser.wait_for("!document.getElementById('detail').hidden", "the claim's detail")
    text = text_of(browser)
    titles = browser.eval("[...document.querySelectorAll('[title]')].map(e => e.title).join()")
    for shown in (text, titles):
        assert "\u202e" not in shown and "\u200b" not in shown, shown
    assert "src/\\u202eyp.htua" in text, text
    assert "fix\\u200b auth\\nFREE src/auth.py" in text, text
    ui.stop()


# --- landing ----------------------------------------------------------------------------------


def test_a_commit_on_the_awaited_branch_itself_lands_nothing(repo: Path) -> None:
    """A claim until merged into main, worked on main itself: its first commit is in main
    at once, so the claim was released there (the next read asks), work unfinished, and
    anyone could take the paths. It ends as a claim waiting for a feature branch does."""
    assert alock(repo, "install-hooks").code == 0
    main = git(repo, "branch", "--show-current").strip()
    agent = {"AGENT_ID": "alice"}
    assert alock(repo, "acquire", "src/**", "--until-merged", main, **agent).code == 0
    (repo / "src" / "app.py").write_text("step 1 of 3\n")
    assert run_git(repo, "commit", "-qam", "step 1", env=agent).code == 0
    held = alock(repo, "list", "--json").json()
    assert [r["paths"] for r in held] == [["src/**"]], held
    assert alock(repo, "acquire", "src/app.py", AGENT_ID="bob").code == 1

    git(repo, "checkout", "-q", "-b", "feature")  # the same claim's work on a branch lands
    (repo / "src" / "app.py").write_text("step 2 of 3\n")
    assert run_git(repo, "commit", "-qam", "step 2", env=agent).code == 0
    git(repo, "checkout", "-q", main)
    assert run_git(repo, "merge", "-q", "--ff-only", "feature", env=agent).code == 0
    assert alock(repo, "list", "--json").json() == []


def test_the_page_leaves_off_a_claim_whose_work_landed_as_list_does(
    repo: Path, worktree: Path, serve: Any
) -> None:
    """A merge git made without hooks (a tool, core.hooksPath) lands a claim: ``list``
    releases it before answering, yet the page, which writes nothing, showed it held."""
    assert alock(repo, "install-hooks").code == 0
    main = git(repo, "branch", "--show-current").strip()
    agent = {"AGENT_ID": "alice"}
    assert alock(worktree, "acquire", "src/**", "--until-merged", main, **agent).code == 0
    (worktree / "src" / "app.py").write_text("done\n")
    assert run_git(worktree, "commit", "-qam", "done", env=agent).code == 0
    git(repo, "-c", "core.hooksPath=/dev/null", "merge", "-q", "--ff-only", "side")
    journal = git(repo, "rev-parse", "refs/agent-locks-meta/journal")

    ui = serve(repo)
    code, body, _ = fetch(f"{ui.url}state")
    assert code == 200
    assert json.loads(body)["locks"] == [], body
    ui.stop()
    assert git(repo, "rev-parse", "refs/agent-locks-meta/journal") == journal  # read-only
    assert alock(repo, "list", "--json").json() == []  # the terminal agrees


# --- messages ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [("--as", "x", "version"), ("version", "--as=x"), ("--as", "x", "help"), ("--as=x", "help")],
)
def test_as_given_to_a_verb_that_acts_for_nobody_says_so(repo: Path, args: tuple[str, ...]) -> None:
    """``--as`` before the verb works now, yet a verb without it still said ``No such
    option: --as``: the very message a newcomer was misled by."""
    got = alock(repo, *args)
    assert got.code == 2 and got.err.startswith("error: "), got
    assert "takes no --as" in got.err and "No such option" not in got.err, got.err


@pytest.mark.parametrize(
    "args",
    [("--as", "--json", "acquire", "src/**"), ("acquire", "src/**", "--as", "--json")],
)
def test_as_followed_by_an_option_is_no_agent_id(repo: Path, args: tuple[str, ...]) -> None:
    """``--as --json``: the id forgotten, the next option was taken for it, and the claim
    made as the holder ``--json``."""
    got = alock(repo, *args)
    assert got.code == 2 and "--as needs an agent id" in got.err, got
    assert alock(repo, "list", "--json").json() == []


# --- typo notes ---------------------------------------------------------------------------------


def test_a_name_in_another_unicode_form_is_told_apart(repo: Path) -> None:
    """The tree spells ``café.py`` as e + combining accent; the claim, as one code point.
    The note named the closest path, printed exactly as the pattern: no help at all."""
    (repo / "cafe\u0301.py").write_text("x\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a file named in NFD")
    got = alock(repo, "acquire", "caf\u00e9.py", AGENT_ID="alice")
    assert got.code == 0, got
    assert "another Unicode form (cafe\\u0301.py)" in got.err, got.err


class Counted(list[str]):
    """The index's paths, counting how often they are read through."""

    reads = 0

    def __iter__(self) -> Iterator[str]:
        self.reads += 1
        return super().__iter__()


def test_a_claim_of_many_new_files_reads_the_index_once(tmp_path: Path) -> None:
    """An agent claiming a thousand files it is about to write paid a walk of the whole
    index per file and a difflib search each: seconds in a repository of 20,000 files."""
    files = Counted(f"pkg{d}/mod{f}.py" for d in range(20) for f in range(100))
    (tmp_path / "pkg0").mkdir()
    claim = [make_entry(f"pkg{d}/new{f}.py") for d in range(20) for f in range(50)]
    found = typos.uncovered(str(tmp_path), claim, list_files=lambda: files)
    assert [u.pattern for u in found] == [e.pattern for e in claim]
    assert found[18].closest == "pkg0/mod18.py"
    assert sum(u.closest is not None for u in found) <= typos.MAX_SUGGESTED
    assert files.reads <= 3, files.reads


# --- the docs' console blocks -------------------------------------------------------------------


def _block(text: str) -> test_docs.Block:
    body = list(enumerate(text.strip("\n").splitlines(), start=1))
    return test_docs.Block(test_docs.PROJECT / "README.md", 1, test_docs.parse(body))


TOUR = """
$ AGENT_ID=alice git alock acquire README.md --ttl {ttl}
ACQUIRED README.md as alice, expires in {said} [lock 1a2268d3fb2-311280c0ae]
$ AGENT_ID=bob git alock acquire 'docs/**'
ACQUIRED docs/** as bob, expires in 30m [lock {bobs}]
$ AGENT_ID=bob git alock check README.md
HELD README.md by alice (README.md), expires in {said} [lock 1a2268d3fb2-311280c0ae]
"""
RIGHT = {"ttl": "2h", "said": "2h", "bobs": "1a2268d4185-3116d826d7"}


def test_a_true_block_passes(tmp_path: Path) -> None:
    test_docs.test_console_block_runs_as_shown(_block(TOUR.format(**RIGHT)), tmp_path)


@pytest.mark.parametrize(
    "wrong",
    [
        {"said": "30m"},  # the docs say 30m where the tool says 2h: durations were all masked
        {"bobs": "1a2268d3fb2-311280c0ae"},  # bob's claim named with alice's lock id
    ],
    ids=["duration", "lock-id"],
)
def test_a_block_that_drifted_fails(wrong: dict[str, str], tmp_path: Path) -> None:
    with pytest.raises(AssertionError):
        test_docs.test_console_block_runs_as_shown(
            _block(TOUR.format(**{**RIGHT, **wrong})), tmp_path
        )
