"""``git alock ui``: the live page, driven in a real headless Chromium over the DevTools
protocol, and its server asked directly for what it must refuse."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chromium import CHROMIUM, Page, chromium
from conftest import git
from support.cli import alock, alock_process
from support.daemon import Daemon
from support.records import plant
from support.remote import daemon, make_bare, make_clone

__all__ = ["daemon"]  # the fixture, imported so pytest finds it

HOSTILE = "<img src=x onerror=alert(1)>"

needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")


# --- the browser: one per module, driven over the DevTools protocol --------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Page]:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed")
    with chromium() as page:
        yield page


# --- the server: git alock ui as a user runs it -----------------------------------------------


class Ui:
    def __init__(self, proc: subprocess.Popen[str], url: str) -> None:
        self.proc = proc
        self.url = url
        self.port = int(url.split(":")[2].split("/")[0])

    def stop(self) -> tuple[int, str]:
        """Ctrl-C, as a person stops it: its exit code and what it said on stderr."""
        self.proc.send_signal(signal.SIGINT)
        _, err = self.proc.communicate(timeout=30)
        return self.proc.returncode, err


@pytest.fixture
def serve() -> Iterator[Any]:
    started: list[Ui] = []

    def start(repo: Path, *args: str) -> Ui:
        # The console script itself, so that Ctrl-C (SIGINT) reaches it as from a terminal.
        script = os.path.join(os.path.dirname(sys.executable), "git-alock")
        proc = subprocess.Popen(
            [script, "ui", "--no-browser", *args],
            cwd=repo,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), (url, proc.stderr and proc.stderr.read())
        ui = Ui(proc, url)
        started.append(ui)
        return ui

    yield start
    for ui in started:
        if ui.proc.poll() is None:
            ui.proc.kill()
            ui.proc.communicate()


def fetch(url: str, method: str = "GET", host: str | None = None) -> tuple[int, bytes, Any]:
    request = urllib.request.Request(url, method=method)
    if host is not None:
        request.add_header("Host", host)
    try:
        with urllib.request.urlopen(request, timeout=10) as res:
            return res.status, res.read(), res.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), exc.headers


def text_of(page: Page) -> str:
    return str(page.eval("document.body.innerText"))


# --- the page ------------------------------------------------------------------------------------


@needs_chromium
def test_page_shows_holders_paths_and_edits_and_follows_new_claims_live(
    browser: Page, repo: Path, worktree: Path, serve: Any
) -> None:
    (repo / "src" / "api").mkdir()
    (repo / "src" / "api" / "auth.py").write_text("auth\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "guide.md").write_text("guide\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "more")
    got = alock(repo, "acquire", "src/api/**", "-m", "rewrite auth", AGENT_ID="alice")
    assert got.code == 0, got
    # bob's worktree edits a file inside alice's claim: someone else's ground.
    (worktree / "src" / "app.py").write_text("bob was here\n")
    assert alock(worktree, "acquire", "src/app.py", AGENT_ID="bob").code == 0
    (worktree / "src" / "api").mkdir()
    (worktree / "src" / "api" / "trespass.py").write_text("x\n")
    ui = serve(repo)

    browser.goto(ui.url)
    browser.wait_for("!!document.querySelector('#holders .card')", "a holder card")
    text = text_of(browser)
    assert "alice" in text and "bob" in text
    api = browser.eval(
        "[...document.querySelectorAll('#tree .row')]"
        ".filter(r => r.dataset.path === 'src/api').map(r => r.innerText).join('')"
    )
    assert "alice" in api, api
    assert "rewrite auth" not in api  # the reason is in the detail, not the tree
    edits = browser.eval("document.getElementById('edits').innerText")
    assert "src/api/trespass.py" in edits and "inside another worktree's claim" in edits

    # A claim made by another process shows up without a reload.
    browser.eval("window.sameDocument = true")
    got = alock_process(
        repo, "acquire", "docs/**", "--shared", "-m", "docs", env={"AGENT_ID": "carol"}
    )
    assert got.code == 0, got
    browser.wait_for(
        "[...document.querySelectorAll('#tree .row')].some(r => r.dataset.path === 'docs'"
        " && r.innerText.includes('carol') && r.innerText.includes('shared'))",
        "carol's shared claim on docs/ in the tree",
    )
    browser.wait_for(
        "document.getElementById('journal').innerText.includes('carol')",
        "carol's claim in the journal",
    )
    assert browser.eval("window.sameDocument") is True

    # A refusal shows in the journal too.
    got = alock_process(repo, "acquire", "docs/guide.md", env={"AGENT_ID": "dave"})
    assert got.code == 1, got
    browser.wait_for(
        "document.getElementById('journal').innerText.toLowerCase().includes('refused')",
        "dave's refusal in the journal",
    )

    # Clicking a claim shows its record and the commands to follow up.
    browser.eval(
        "[...document.querySelectorAll('#tree .chip')].find(c => c.innerText.includes('alice'))"
        ".click()"
    )
    detail = browser.wait_for(
        "!document.getElementById('detail').hidden && document.getElementById('detail').innerText",
        "the claim's detail",
    )
    lock_id = json.loads(alock(repo, "list", "--json").out)[0]["id"]
    assert "rewrite auth" in detail and f"git alock break {lock_id}" in detail

    code, err = ui.stop()
    assert code == 130 and "Traceback" not in err, err


@needs_chromium
def test_hostile_values_are_shown_as_text(browser: Page, repo: Path, serve: Any) -> None:
    got = alock(repo, "acquire", HOSTILE, "-m", HOSTILE, AGENT_ID="mallory")
    assert got.code == 0, got
    assert alock(repo, "note", HOSTILE, HOSTILE, AGENT_ID="mallory").code == 0
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    record = {
        "format": 1,
        "id": "hostile-1",
        "holder": HOSTILE,
        "paths": ["src/**"],
        "created_at": now,
        "renewed_at": now,
        "expires_at": "2999-01-01T00:00:00Z",
    }
    plant(repo, "hostile-1", record)  # no usable record: reported, with its holder as text
    common = Path(git(repo, "rev-parse", "--git-common-dir").strip())
    refusal = {"event": "refused", "at": now, "holder": HOSTILE, "paths": [HOSTILE], "id": ""}
    with open(repo / common / "agent-locks-refusals.jsonl", "a") as log:
        log.write(json.dumps(refusal) + "\n")
    ui = serve(repo)

    browser.goto(ui.url)
    browser.wait_for("!!document.querySelector('#holders .card')", "a holder card")
    browser.wait_for("!document.getElementById('banner').hidden", "the unusable record")
    browser.eval(
        "[...document.querySelectorAll('#tree .chip')].find(c => c.innerText.includes('mallory'))"
        ".click()"
    )
    browser.wait_for("!document.getElementById('detail').hidden", "the claim's detail")
    text = text_of(browser)
    assert text.count(HOSTILE) >= 4, text  # tree, reason, note, refusal, unusable holder
    assert browser.eval("document.querySelectorAll('img, script:not([src])').length") == 0
    assert browser.eval("document.querySelectorAll('[onerror]').length") == 0
    ui.stop()


@needs_chromium
def test_a_request_without_the_token_gets_nothing(browser: Page, repo: Path, serve: Any) -> None:
    ui = serve(repo)
    base = f"http://127.0.0.1:{ui.port}"
    token = ui.url.split("/")[3]
    for url in (
        f"{base}/",
        f"{base}/state",
        f"{base}/events",
        f"{base}/app.js",
        f"{base}/{token[:-1]}/state",
        f"{base}/x{token}/",
        f"{base}/{token}x/state",
    ):
        code, body, _ = fetch(url)
        assert (code, body) == (404, b""), url
    code, body, _ = fetch(ui.url, host=f"attacker.example:{ui.port}")  # DNS rebinding
    assert (code, body) == (404, b"")
    code, body, _ = fetch(f"{ui.url}state", method="POST")  # nothing changes through it
    assert code >= 400 and body == b""

    code, body, _ = fetch(ui.url.rstrip("/"))  # followed to the page itself
    assert code == 200 and b'src="app.js"' in body
    code, body, headers = fetch(f"{ui.url}state")
    assert code == 200 and json.loads(body)["repo"] == "repo"
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert "default-src 'none'" in headers["Content-Security-Policy"]

    browser.goto(f"{base}/")  # what a browser shows without the token: none of the page
    assert browser.eval("document.getElementById('holders') === null")
    assert "gitlocks" not in text_of(browser)
    ui.stop()


@needs_chromium
def test_remote_mode_shows_how_fresh_the_view_is_and_follows_a_sync(
    browser: Page, tmp_path: Path, daemon: Daemon, serve: Any
) -> None:
    make_bare(daemon.base / "shared.git")
    mine = make_clone(daemon.url("shared.git"), tmp_path / "mine")
    theirs = make_clone(daemon.url("shared.git"), tmp_path / "theirs")
    assert alock(mine, "acquire", "README.md", AGENT_ID="alice").code == 0
    ui = serve(mine)

    browser.goto(ui.url)
    mode = browser.wait_for(
        "document.getElementById('mode').innerText.includes('view as of')"
        " && document.getElementById('mode').innerText",
        "the remote mode and the age of its view",
    )
    assert "REMOTE origin" in mode
    # Another machine's claim reaches the page once this clone's view is refreshed.
    assert alock(theirs, "acquire", "docs/**", AGENT_ID="bob").code == 0
    got = alock_process(mine, "sync")
    assert got.code == 0, got
    browser.wait_for(
        "document.getElementById('holders').innerText.includes('bob')",
        "bob's claim from the other clone",
    )
    ui.stop()


def test_the_server_listens_on_loopback_only(repo: Path, serve: Any) -> None:
    ui = serve(repo)
    listening = _listening(ui.port)
    if listening is not None:
        assert listening == ["127.0.0.1"], listening
    address = _outward_address()
    if address is not None:
        with pytest.raises(OSError), socket.create_connection((address, ui.port), timeout=5):
            pass
    with socket.create_connection(("127.0.0.1", ui.port), timeout=5):
        pass  # while it answers on loopback
    code, err = ui.stop()
    assert code == 130 and "Traceback" not in err, err


def _listening(port: int) -> list[str] | None:
    """The addresses a TCP socket listens on at ``port``, from /proc (Linux only)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            return None
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.partition(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                raw = bytes.fromhex(address)
                if len(raw) == 4:
                    found.append(socket.inet_ntop(socket.AF_INET, raw[::-1]))
                else:
                    found.append("ipv6")
    return found


def _outward_address() -> str | None:
    """An address of this machine that is not loopback, if it has one (a UDP socket
    "connected" to a non-routed address sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 9))
            address = str(probe.getsockname()[0])
        except OSError:
            return None
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def test_bad_port_is_a_usage_error(repo: Path) -> None:
    got = alock(repo, "ui", "--port", "70000", "--no-browser")
    assert got.code == 2 and got.err.startswith("error: invalid --port"), got
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        got = alock(repo, "ui", "--port", str(port), "--no-browser")
    assert got.code == 2 and got.err.startswith("error: cannot listen on 127.0.0.1"), got


def test_not_in_a_repository_is_an_error(tmp_path: Path) -> None:
    got = alock(tmp_path, "ui", "--no-browser")
    assert got.code == 2 and got.err.startswith("error:"), got


def _serve_beside(repo: Path, browser: Path, **env: str) -> subprocess.Popen[str]:
    """``git alock ui`` started as its own process (Ctrl-C reaches it) with no display and
    ``browser`` as ``$BROWSER``."""
    script = os.path.join(os.path.dirname(sys.executable), "git-alock")
    full = {**os.environ, "BROWSER": str(browser), **env}
    full.pop("DISPLAY", None)
    full.pop("WAYLAND_DISPLAY", None)
    return subprocess.Popen(
        [script, "ui"],
        cwd=repo,
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_the_page_opens_in_the_users_browser(repo: Path, tmp_path: Path) -> None:
    """The browser is handed a file of the user's alone that sends it on to the page, so the
    token never shows in a command line (``ps``); the file goes when the server stops."""
    opened = tmp_path / "opened"
    browser = tmp_path / "browser"
    browser.write_text(
        "#!/bin/sh\n"
        f'f="${{1#file://}}"; stat -c %a "$f" "$(dirname "$f")" > {opened}.modes\n'
        f'cat "$f" > {opened}.page; printf %s "$1" > {opened}\n'
    )
    browser.chmod(0o755)
    proc = _serve_beside(repo, browser)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        deadline = time.monotonic() + 20
        while not (opened.exists() and opened.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        handed = opened.read_text()
        token = url.split("/")[3]
        assert handed.startswith("file://") and token not in handed, handed
        assert f'url={url}"' in Path(f"{opened}.page").read_text()
        assert Path(f"{opened}.modes").read_text().split() == ["600", "700"]
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert not Path(handed.removeprefix("file://")).parent.exists()


def test_ctrl_c_while_the_browser_runs_removes_the_file(repo: Path, tmp_path: Path) -> None:
    """A ``$BROWSER`` that keeps its page until it ends (a text browser: Python waits for
    it) and Ctrl-C meanwhile: the file that holds the page's key goes all the same."""
    opened = tmp_path / "opened"
    browser = tmp_path / "browser"
    browser.write_text(
        f'#!/bin/sh\necho $$ > {opened}.pid\nprintf %s "$1" > {opened}.tmp\n'
        f"mv {opened}.tmp {opened}\nexec sleep 60 >/dev/null 2>&1\n"
    )
    browser.chmod(0o755)
    proc = _serve_beside(repo, browser)
    try:
        deadline = time.monotonic() + 20
        while not opened.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        handed = opened.read_text()
        assert Path(handed.removeprefix("file://")).exists()
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        with contextlib.suppress(OSError, ValueError):  # the browser, if it started
            os.kill(int(Path(f"{opened}.pid").read_text()), signal.SIGKILL)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert not Path(handed.removeprefix("file://")).parent.exists()


def test_the_file_handed_is_a_url_where_temp_has_odd_characters(repo: Path, tmp_path: Path) -> None:
    """A temporary directory named with ``#``, ``%``, ``?`` or a space: the browser reads
    ``file://`` + the path as a URL, so the path must be quoted, or it opens another file
    (``#`` starts a fragment, ``%20`` is read as a space) and never reaches the page."""
    temp = tmp_path / "my tmp #1 50%20 ?x"
    temp.mkdir()
    opened = tmp_path / "opened"
    browser = tmp_path / "browser"
    browser.write_text(
        f"#!{sys.executable}\n"
        "import os, sys, urllib.parse\n"
        "url = urllib.parse.urlsplit(sys.argv[1])\n"
        "path = urllib.parse.unquote(url.path)\n"
        f"with open({str(opened)!r} + '.tmp', 'w') as f:\n"
        "    f.write(f'{url.scheme} {os.path.isfile(path)} {path}')\n"
        f"os.rename({str(opened)!r} + '.tmp', {str(opened)!r})\n"
    )
    browser.chmod(0o755)
    proc = _serve_beside(repo, browser, TMPDIR=str(temp))
    try:
        deadline = time.monotonic() + 20
        while not opened.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        scheme, found, path = opened.read_text().split(" ", 2)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert (scheme, found) == ("file", "True"), path
    assert path.startswith(f"{temp}/git-alock-ui-") and path.endswith("/open.html")
    assert proc.returncode == 130 and "Traceback" not in err, err


def test_without_a_display_a_failing_browser_is_the_only_one_tried(
    repo: Path, tmp_path: Path
) -> None:
    """Over ssh with ``$BROWSER`` set, a browser that fails left Python's ``webbrowser`` to
    try the others it knows: text browsers (lynx, w3m, ...), run in this very terminal,
    before the page is served. The URL printed is left to the user instead."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    lynx = bin_dir / "lynx"
    lynx.write_text(f'#!/bin/sh\nprintf %s "$1" > {tmp_path}/lynx-ran\n')
    lynx.chmod(0o755)
    failing = tmp_path / "browser"
    failing.write_text("#!/bin/sh\nexit 1\n")
    failing.chmod(0o755)
    proc = _serve_beside(repo, failing, PATH=f"{bin_dir}:{os.environ['PATH']}")
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert fetch(url)[0] == 200  # served: the browser has been tried
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert not (tmp_path / "lynx-ran").exists()
    assert "note: no browser opened" in err and "Traceback" not in err, err


def test_help_gives_an_example(repo: Path) -> None:
    got = alock(repo, "ui", "-h")
    assert got.code == 0 and "Example: git alock ui" in got.out and "--no-browser" in got.out
