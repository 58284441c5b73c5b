"""Fuzz every verb of the command line with hostile arguments and hostile lock records.

Whatever it is given, a verb must never show a Python traceback, must exit with a code the
design documents (7.2: 0, 1, 2 and 130), and must lose nothing: a valid lock another agent
held before the run is still there, unchanged, afterwards, unless the run was a ``break``
aimed at it. With ``--json`` the answer is one JSON document, errors included (7.4).

Every run is in-process (``support.cli.alock``): ``gitlocks.main`` turns any exception into
"internal error" plus a traceback on stderr, which is what these tests look for, and
anything it lets through (``SystemExit``, ...) fails the test as it stands. One repository
serves each test function; every example starts from the same lock table (the guard lock
alone) and plants its own records.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import typer
from conftest import git
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support.cli import Result, alock

from gitlocks import patterns_overlap
from gitlocks.cli.app import VERBS, _command
from gitlocks.identity import host_identity, process_start_time
from gitlocks.layout import CACHE_FILE, SYNC_FILE
from gitlocks.service import journal
from gitlocks.ui import server as ui_server

# docs/design.md 7.2: nothing else is ever an exit code (3 is not one).
DOCUMENTED_EXIT_CODES = {0, 1, 2, 130}

GUARD_HOLDER = "guard-holder-q9"  # never used by the fuzz, as --as or as AGENT_ID
GUARD_PATTERN = "guarded/**"

FUZZ = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)

# --- the options of each verb, read from the command line itself ----------------------------


def _options(verb: str) -> tuple[list[str], list[str]]:
    """``(flags, options taking a value)`` of ``verb``, as its click command declares them."""
    module = importlib.import_module(f"gitlocks.cli.{VERBS[verb][0]}")
    command = _command(module.app, verb, typer)
    flags: list[str] = ["-h", "--help"]
    valued: list[str] = []
    for param in command.params:
        if param.param_type_name == "option":
            names = [*param.opts, *param.secondary_opts]
            (flags if param.is_flag else valued).extend(names)
    return flags, valued


OPTIONS = {verb: _options(verb) for verb in VERBS}
# Verbs that speak another protocol on stdin (a harness's hook event, MCP): fuzzed with
# hostile events in tests/agents/test_guard.py, not with arguments here.
STDIN_VERBS = {"guard", "mcp"}
FUZZED = [verb for verb in VERBS if verb not in STDIN_VERBS]
# `skill install --into DIR` writes there: it only ever gets a directory inside the test's
# temporary directory (SAFE_INTO), never a generated one.
OPTIONS["skill"] = (OPTIONS["skill"][0], [o for o in OPTIONS["skill"][1] if o != "--into"])
VALUE_OPTIONS = {o for _, valued in OPTIONS.values() for o in valued} | {"--into"}

# --- hostile arguments ----------------------------------------------------------------------

# Placeholders, filled in per run: {ROOT} the repository, {TMP} the test's temporary
# directory, {GUARD_ID} the guard lock's id.
HOSTILE_BY_KIND: dict[str, list[str]] = {
    # nothing, dashes, options in odd places
    "options": [
        "",
        " ",
        "-",
        "--",
        "---",
        "-x",
        "--bogus",
        "--=",
        "=",
        "--json",
        "--all",
        "--as",
        "--ttl",
        "-m",
        "-h",
        "--help",
        "--staged",
        "--fresh",
        "--off",
        "--forget",
        "--force",
        "--ttl=",
        "--as=",
        "--json=1",
        "-n0",
        "-mx",
        "--ttl=1" + "0" * 5000,
    ],
    # paths: .., absolute, outside the tree, git's magic
    "paths": [
        ".",
        "./",
        "..",
        "../..",
        "../../../../../etc/passwd",
        "/",
        "//",
        "/etc/passwd",
        "{ROOT}",
        "{ROOT}/guarded",
        "{ROOT}/src/app.py",
        "{ROOT}/../outside",
        ":/",
        ":/guarded",
        ":(glob)*",
        ":(top)src",
        ":!src",
        "!src",
        "src/**/..",
        "*/..",
        "src/../..",
    ],
    # globs
    "globs": [
        "*",
        "**",
        "***",
        "**/**/**/**",
        "*a*a*a*a*a*a*a*a*b",
        "*a" * 40 + "*b",
        "[a-",
        "[z-a]",
        "[!/]",
        "[^]",
        "[]",
        "[[:alpha:]]",
        "?",
        "a**b",
        "\\",
        "a\\",
        "\\*",
    ],
    # long names
    "long": [
        "a" * 400,
        "\u00e9" * 400,
        "a/" * 200,
        "/".join(["seg"] * 150),
        "x" * 5000,
    ],
    # control, bidi and zero-width characters
    "control": [
        "\x01",
        "\x1b[31mred\x1b[0m",
        "a\nb",
        "\r",
        "\t",
        "\x7f",
        "a\x08b",
        "\u202etxt.exe",
        "\u2066x\u2069",
        "\u200b",
        "a\u200db",
        "\ufeff",
        "\u061c",
        "\u00a0",
    ],
    # ordinary paths, some crossing the guard lock
    "ordinary": [
        "src",
        "src/**",
        "src/app.py",
        "README.md",
        "guarded",
        "guarded/x",
        GUARD_PATTERN,
        "mine/**",
        "mine/x",
        "{GUARD_ID}",
        "{GUARD_ID}/x",
    ],
    # numbers and durations
    "numbers": [
        "0",
        "-1",
        "-0",
        "1",
        "007",
        "99999999999999999999",
        "1" + "0" * 5000,
        "9" * 4301,
        "1e308",
        "1e-308",
        "nan",
        "NaN",
        "inf",
        "-inf",
        "1.5",
        "0x10",
        "\u0661\u0662\u0663",
        "\u0663d",
        "366d",
        "367d",
        "366d1s",
        "1d1h1m1s",
        " 5 m ",
        "0s",
        "5 weeks",
        "1y",
    ],
    # times
    "times": [
        "9999-12-31T23:59:59Z",
        "0001-01-01",
        "2025-01-31T12:00:00+14:00",
        "9999-12-31T23:59:59-01:00",
        "0001-01-01T00:00:00+01:00",
        "2025-02-30",
        "2025-01-31T25:00:00Z",
    ],
    # names and ids
    "names": [
        "fuzzer",
        "other-agent",
        "show",
        "install",
        "claude",
        "origin",
    ],
}
# A kind, then one of its tokens: the few numbers are drawn as often as the many paths.
TOKEN = st.sampled_from(list(HOSTILE_BY_KIND.values())).flatmap(st.sampled_from)
NUMBER = st.sampled_from(HOSTILE_BY_KIND["numbers"] + HOSTILE_BY_KIND["times"])

# Everything argv can hold: no NUL, no lone surrogates.
ANY_CHAR = st.characters(codec="utf-8", exclude_characters="\x00")
HOSTILE_TEXT = st.text(ANY_CHAR, max_size=16)
SEGMENTS = ["src", "guarded", "mine", "..", ".", "*", "**", "[a-", "a" * 100, "\u202e", "x\x01", ""]
COMPOSED = st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=4).map("/".join)
# The values at the edges, for options taking a number, a duration or a time: drawn often.
EXTREMES = st.sampled_from(
    [
        "1" + "0" * 5000,  # more digits than int() converts
        "9" * 4301,
        "1e10",
        "nan",
        "inf",
        "0001-01-01",
        "0001-01-01T00:00:00+01:00",
        "9999-12-31T23:59:59-01:00",
    ]
)
VALUE = st.one_of(EXTREMES, NUMBER, TOKEN, HOSTILE_TEXT)

# A first positional argument that gets a verb past its usage check, now and then.
LEAD = {
    "acquire": ["mine/**"],
    "release": ["mine/**"],
    "renew": ["mine/**"],
    "check": ["guarded/x"],
    "note": ["mine/**", "progress"],
    "break": [GUARD_PATTERN],
    "resume": ["mine/**"],
    "remote": ["origin"],
    "skill": ["show"],
}
SAFE_INTO = [
    "{TMP}/into",
    "{TMP}/into/\u202e\x01",
    "{TMP}/into/" + "a" * 200,
    "{TMP}/into/../into",
    "{TMP}/missing",
    "{TMP}/not-a-dir",  # a file
    "rel-into",
]

IDS = [
    "fuzzer",
    "fuzz-2",
    "fuzz.child",
    "a" * 64,
    "a" * 65,
    "",
    " ",
    ".",
    "..",
    "-",
    "--json",
    "bad id",
    "x\ny",
    "\u202efuzzer",
    "fuzzer\u200b",
    "\u00e9",
    GUARD_HOLDER.upper(),  # holder ids are case-sensitive: this is somebody else
]
ENVS = st.fixed_dictionaries(
    {},
    optional={
        "AGENT_ID": st.one_of(st.sampled_from(IDS), HOSTILE_TEXT),
        "AGENT_PARENT_ID": st.one_of(st.sampled_from([*IDS, GUARD_HOLDER]), HOSTILE_TEXT),
        "AGENT_SESSION_PID": st.sampled_from(
            [
                "",
                "0",
                "-1",
                "1",
                "abc",
                "99999999999999999999",
                "9" * 5000,
                "4194311",
                " 1 ",
                "\u00b2",
            ]
        ),
        "AGENT_SESSION_SKIP": st.sampled_from(["", ",", "python,pytest", "\u202e," * 100]),
    },
)
WHERE = st.sampled_from(["root", "subdir", "gitdir", "outside"])


def arguments(verb: str) -> st.SearchStrategy[list[str]]:
    """Hostile arguments for ``verb``: values, its own options anywhere, ``--opt=value``."""
    flags, valued = OPTIONS[verb]
    pieces = [
        st.one_of(TOKEN, HOSTILE_TEXT, COMPOSED).map(lambda t: [t]),
        st.sampled_from(flags).map(lambda f: [f]),
    ]
    if valued:
        pair = st.tuples(st.sampled_from(valued), VALUE)
        pieces.append(pair.map(list))
        pieces.append(
            pair.filter(lambda p: p[0].startswith("--")).map(lambda p: [f"{p[0]}={p[1]}"])
        )
    lead: st.SearchStrategy[list[str]] = st.one_of(st.just([]), st.just(LEAD.get(verb, [])))
    rest = st.lists(st.one_of(*pieces), max_size=4).map(lambda ps: [a for p in ps for a in p])
    into: st.SearchStrategy[list[str]] = st.just([])
    if verb == "skill":
        into = st.one_of(st.just([]), st.sampled_from(SAFE_INTO).map(lambda d: ["--into", d]))
    return st.tuples(lead, rest, into).map(lambda t: [*t[0], *t[1], *t[2]])


# --- hostile records ------------------------------------------------------------------------

_NOW = datetime.now(timezone.utc).replace(microsecond=0)


def _time(delta: timedelta) -> str:
    return (_NOW + delta).strftime("%Y-%m-%dT%H:%M:%SZ")


PAST = _time(timedelta(hours=-1))
LONG_PAST = _time(timedelta(days=-30))
FUTURE = _time(timedelta(hours=2))
DEAD_PID = 4_194_311  # above Linux's largest pid_max: no process has it

# Raw JSON text a JSON encoder will not write: '"@@RAW:name@@"' becomes RAW[name].
RAW = {
    "bignum": "9" * 5000,
    "negnum": "-" + "9" * 4000,
    "float": "1e400",
    "nan": "NaN",
    "inf": "Infinity",
    "ninf": "-Infinity",
    "deep50": "[" * 50 + "]" * 50,
    "deep500": '{"a":' * 500 + "1" + "}" * 500,
    "deep900": "[" * 900 + "]" * 900,
    "deep980": '{"a":' * 980 + "1" + "}" * 980,
    "deep100k": "[" * 100_000 + "]" * 100_000,
}


def raw(name: str) -> str:
    return f"@@RAW:{name}@@"


RAWS = [raw(name) for name in RAW]
BAD_TIMES: list[Any] = [
    "",
    "junk",
    "Z",
    "2030-01-01T10:00:00",
    "2030-01-01T10:00:00+00:00",
    "2030-01-01T10:00:00-05:00Z",
    "2030-01-01 10:00:00Z",
    "2030-01-01T10:00:00.999999Z",
    "2030-01-01T10:00:00.1234567Z",
    "9999-12-31T23:59:59Z",
    "9999-12-31T23:59:59.5Z",
    "9999-12-31T23:59:59.000001Z",
    "0001-01-01T00:00:00Z",
    "0999-12-31T23:59:59Z",
    "0001-01-01T00:00:00.5Z",
    "2030-02-30T00:00:00Z",
    "2030-01-01T24:00:00Z",
    "x" * 100 + "Z",
    "+10000-01-01T00:00:00Z",
    "2030-W01-1T00:00:00Z",
    "20300101T100000Z",
    "2030-01-01T10Z",
    "2030-01-01Z",
    "\u0662\u0660\u0663\u0660-01-01T00:00:00Z",
    LONG_PAST,
    0,
    None,
    1e10,
    ["2030"],
]
WRONG_TYPES: list[Any] = [None, True, 0, -1, 10**30, 1.5, "", "x", [], {}, ["a"], [1], {"a": 1}]
BULK = [f"bulk/{'x' * 100}{i}" for i in range(2000)]  # just under the record size limit
FIELD_VALUES: dict[str, list[Any]] = {
    "format": [2, 0, -1, "1", 1.0, True, raw("bignum"), raw("nan")],
    "id": ["{GUARD_ID}", "", "bad id", "a" * 65, "../x", "probe/x", "\u00e9"],
    "holder": ["fuzzer", "other-agent", GUARD_HOLDER, " ", "bad holder", "a" * 65, ".", "x\ny"],
    "parent": ["fuzzer", GUARD_HOLDER, "other-agent", "bad parent", "a" * 65, "\u202e"],
    "paths": [
        [""],
        [GUARD_PATTERN],
        ["guarded"],
        ["**"],
        ["."],
        [":/"],
        ["[a-"],
        ["[z-a]"],
        ["/abs/path"],
        ["../outside"],
        ["a\x00b"],
        ["a\x01b"],
        ["a\nb"],
        ["!x"],
        [":(glob)a"],
        ["src/**/.."],
        ["*a" * 40 + "*b"],
        ["a" * 400],
        ["\u202e"],
        BULK,
        ["**"] * 1000,
        "mine/**",
    ],
    "exact": [["mine/**"], ["not-in-paths"], ["[a-"], [""], "x"],
    "reason": ["\x1b[31m", "\u202e", "r" * 100_000],
    "created_at": BAD_TIMES,
    "renewed_at": BAD_TIMES,
    "expires_at": BAD_TIMES,
    "pid": [-1, 1, 2**31, 2**63, 10**30, raw("negnum"), raw("float"), "1", DEAD_PID],
    "pid_start": ["x", "9" * 5000, "1"],
    "host_id": ["{HOST_ID}", "x", "{HOST_ID}x"],
    "notes": [
        [{"at": "junk", "text": "t"}],
        [{"at": PAST, "text": 5}],
        [{"at": PAST}],
        [1],
        "notes",
        {"at": PAST},
        [{"at": "9999-12-31T23:59:59Z", "text": "future"}],
        [{"at": "9999-12-31T23:59:59.9Z", "text": "future"}],
        [{"at": "0001-01-01T00:00:00Z", "text": "ancient"}],
        [{"at": "0999-12-31T23:59:59Z", "text": "ancient"}],
        [{"at": PAST, "text": "n"}] * 1000,
        [{"at": PAST, "text": "\x1b[2J\u202e"}],
        [{"at": PAST, "text": "t", "extra": raw("deep500")}],
    ],
    "ttl": [-1, 0, 1, 366 * 86400, 366 * 86400 + 1, 10**30, raw("bignum")],
    "session": ["\x1b]0;title\x07", "a" * 10_000],
    "worktree": ["/nonexistent", "\x01"],
    "branch": ["\u202emain", "a" * 10_000],
    "head": ["not-a-sha", "0" * 40],
    "host": ["\x1b]0;title\x07"],
}
EXTRA_KEYS = ["zz", "", "\u202e", "a" * 1000, "format2"]
EXTRA_VALUES: list[Any] = [*RAWS, 10**4000, "x" * 100_000, {"nested": {"deep": []}}]

RAW_BLOBS = [
    b"",
    b"\n",
    b"not json",
    b"\xff\xfe\x00",
    b"\xef\xbb\xbf{}",
    b"null",
    b"[]",
    b'"string"',
    b"1",
    b"NaN",
    b"{}",
    b'{"format": 1}',
    b"[" * 100_000 + b"]" * 100_000,
    b"{" * 50_000,
    b'{"a":' * 980 + b"1" + b"}" * 980,
    b'{"format": 1, "id": "x", "pid": ' + b"9" * 5000 + b"}",
    b'{"format": 1e99999}',
    b'{"format": NaN}',
    b"x" * 300_000,
]


def record(name: str, template: str) -> dict[str, Any]:
    """A valid record at ``refs/agent-locks/<name>``, of one of a few kinds."""
    doc: dict[str, Any] = {
        "format": 1,
        "id": name,
        "holder": "other-agent",
        "parent": None,
        "paths": ["mine/**"],
        "exact": [],
        "reason": "planted",
        "created_at": PAST,
        "renewed_at": PAST,
        "expires_at": FUTURE,
        "host": "fuzz-host",
        "pid": 0,
        "pid_start": "",
        "session": "",
        "worktree": "",
        "branch": None,
        "head": None,
        "notes": [],
        "ttl": 3600,
        "host_id": "",
    }
    if template == "mine":
        doc["holder"] = "fuzzer"
    elif template == "expired":
        doc["expires_at"] = LONG_PAST
    elif template in ("interrupted", "interrupted-expired"):
        doc.update(holder="ghost", host_id="{HOST_ID}", pid=DEAD_PID, pid_start="1")
        doc["notes"] = [{"at": PAST, "text": "half done"}]
        if template == "interrupted-expired":
            doc["expires_at"] = LONG_PAST
    elif template == "alive":
        doc.update(holder="fuzzer", host_id="{HOST_ID}", pid=raw("mypid"), pid_start="{START}")
    return doc


@dataclass(frozen=True)
class Plant:
    """A ref to plant under ``refs/agent-locks/``: a blob, or something that is none."""

    kind: str  # blob, symref, commit, tree, missing
    name: str
    payload: bytes = b""
    target: str = ""


NAMES = st.one_of(
    st.sampled_from(["evil", "x-1", "a.b", "Z_9", "\u00e9", "a" * 64, "a" * 65, "probe/x"]),
    st.sampled_from(["sub/dir", "-lead", "0193a7c2b1f-4a2b9c1d00", "ALLCAPS"]),
    st.from_regex(r"\A[a-z0-9][a-z0-9_-]{0,12}\Z"),
)
OVERRIDE = st.one_of(
    st.sampled_from(sorted(FIELD_VALUES)).flatmap(
        lambda k: st.tuples(
            st.just(k), st.one_of(st.sampled_from(FIELD_VALUES[k]), st.sampled_from(WRONG_TYPES))
        )
    ),
    st.tuples(st.sampled_from(EXTRA_KEYS), st.sampled_from(EXTRA_VALUES)),
    st.tuples(st.sampled_from(sorted(FIELD_VALUES)), st.just(raw("delete"))),
    # Times at the edges of what a datetime holds, drawn often.
    st.tuples(
        st.sampled_from(["created_at", "renewed_at", "expires_at"]),
        st.sampled_from(
            [
                "9999-12-31T23:59:59Z",
                "9999-12-31T23:59:59.5Z",
                "0999-12-31T23:59:59Z",
                "0001-01-01T00:00:00Z",
                "0001-01-01T00:00:00.5Z",
            ]
        ),
    ),
)
TEMPLATES = st.sampled_from(
    ["live", "mine", "expired", "interrupted", "interrupted-expired", "alive"]
)


@st.composite
def plants(draw: st.DrawFn) -> Plant:
    name = draw(NAMES)
    kind = draw(st.sampled_from(["record"] * 6 + ["raw", "symref", "commit", "tree", "missing"]))
    if kind == "record":
        doc = record(name, draw(TEMPLATES))
        for key, value in draw(st.lists(OVERRIDE, max_size=3)):
            if value == raw("delete"):
                doc.pop(key, None)
            else:
                doc[key] = value
        text = json.dumps(doc, ensure_ascii=False, indent=draw(st.sampled_from([None, 2])))
        return Plant("blob", name, text.encode())
    if kind == "raw":
        return Plant("blob", name, draw(st.sampled_from(RAW_BLOBS)))
    if kind == "symref":
        targets = ["refs/heads/main", "{GUARD_REF}", "refs/agent-locks/nowhere", "HEAD"]
        return Plant("symref", name, target=draw(st.sampled_from(targets)))
    return Plant(kind, name)


# Arguments for a run against planted records: mostly what reaches them, some hostile.
RECORD_TOKENS = [
    "mine/**",
    "mine/x",
    "mine",
    "**",
    ".",
    "guarded/x",
    "bulk/**",
    "--json",
    "--all",
    "-m",
    "why",
    "--ttl",
    "1h",
    "show",
    "progress note",
    "--staged",
    "--fresh",
    "-n",
    "5",
    "--reverse",
    "--since",
    "1d",
]


def record_arguments(verb: str, names: list[str]) -> st.SearchStrategy[list[str]]:
    leads = [[], LEAD.get(verb, [])]
    if verb in ("break", "resume"):
        leads = [["mine/**"], *([n] for n in names)]
    if verb == "release":
        leads.append(["--all"])
    pool = RECORD_TOKENS + names
    rest = st.lists(st.one_of(st.sampled_from(pool), TOKEN), max_size=3)
    return st.tuples(st.sampled_from(leads), rest).map(lambda t: [*t[0], *t[1]])


# --- the repository under fuzz --------------------------------------------------------------


def _interrupting_sleep(seconds: float) -> None:
    """``watch``'s wait between polls, with Ctrl-C arriving during it.

    An interval ``time.sleep`` refuses at once (NaN, negative, infinite, too long for the
    platform) still goes to it, so a bad interval fails as it would for real.
    """
    if not math.isfinite(seconds) or seconds < 0 or seconds >= 1e10:
        time.sleep(seconds)
    raise KeyboardInterrupt


def _interrupted_serving(self: ui_server.Server, poll_interval: float = 0.5) -> None:
    raise KeyboardInterrupt


@dataclass
class Stage:
    repo: Path
    tmp: Path
    guard_id: str
    guard_value: str

    @property
    def gitdir(self) -> Path:
        return self.repo / ".git"

    @property
    def guard_ref(self) -> str:
        return f"refs/agent-locks/{self.guard_id}"

    def cwd(self, where: str) -> Path:
        return {
            "root": self.repo,
            "subdir": self.repo / "src",
            "gitdir": self.gitdir,
            "outside": self.tmp / "outside",
        }[where]

    def fill(self, text: str) -> str:
        return (
            text.replace("{ROOT}", str(self.repo))
            .replace("{TMP}", str(self.tmp))
            .replace("{GUARD_ID}", self.guard_id)
        )

    @property
    def bare(self) -> Path:
        """The bare repository behind the remote ``origin``, where remote mode keeps locks."""
        return self.tmp / "origin.git"

    def reset(self) -> None:
        """Local mode, the guard lock alone, an empty remote (the journal, hooks and logs
        are left as they are)."""
        git(self.repo, "config", "--unset-all", "alock.remote", check=False)
        for gitdir in (self.gitdir, self.bare):
            for namespace in ("agent-locks", "agent-locks-meta", "agent-locks-remote"):
                if gitdir == self.bare or namespace != "agent-locks-meta":
                    shutil.rmtree(gitdir / "refs" / namespace, ignore_errors=True)
            packed = gitdir / "packed-refs"
            if packed.exists() and " refs/agent-locks" in packed.read_text():
                lines = packed.read_text().splitlines(keepends=True)
                packed.write_text("".join(x for x in lines if " refs/agent-locks" not in x))
        for kept in (self.gitdir / "refs" / "agent-locks-meta").glob("local-journal*"):
            kept.unlink()
        locks = self.gitdir / "refs" / "agent-locks"
        locks.mkdir(parents=True)
        (locks / self.guard_id).write_text(self.guard_value + "\n")
        for name in (CACHE_FILE, SYNC_FILE):
            (self.gitdir / name).unlink(missing_ok=True)

    def remote_mode(self) -> None:
        """Switch to remote mode on ``origin``, which takes the guard lock there."""
        got = alock(self.repo, "remote", "origin")
        assert got.code == 0, got

    def guard_now(self, where: Path | None = None) -> str | None:
        """The guard lock's ref here (or in the repository ``where``), None when gone."""
        gitdir = str(where or self.gitdir)
        proc = subprocess.run(
            ["git", "--git-dir", gitdir, "rev-parse", "--verify", "-q", self.guard_ref],
            capture_output=True,
            text=True,
        )
        return proc.stdout.strip() or None

    def plant(self, plant: Plant) -> None:
        ref = f"refs/agent-locks/{plant.name}"
        if plant.kind == "blob":
            payload = (
                plant.payload.replace(b"{HOST_ID}", host_identity().encode())
                .replace(b"{GUARD_ID}", self.guard_id.encode())
                .replace(b"{START}", (process_start_time(os.getpid()) or "").encode())
            )
            for name, text in {**RAW, "mypid": str(os.getpid())}.items():
                payload = payload.replace(f'"{raw(name)}"'.encode(), text.encode())
            blob = subprocess.run(
                ["git", "hash-object", "-w", "--stdin"],
                cwd=self.repo,
                input=payload,
                capture_output=True,
                check=True,
            )
            git(self.repo, "update-ref", ref, blob.stdout.decode().strip())
        elif plant.kind == "symref":
            target = plant.target.replace("{GUARD_REF}", self.guard_ref)
            git(self.repo, "symbolic-ref", ref, target)
        elif plant.kind == "commit":
            git(self.repo, "update-ref", ref, "HEAD")
        elif plant.kind == "tree":
            git(self.repo, "update-ref", ref, "HEAD^{tree}")
        else:  # a ref naming an object the repository does not have
            path = self.gitdir / ref
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("0123456789abcdef0123456789abcdef01234567\n")


@pytest.fixture
def stage(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Stage:
    """``repo`` with one lock, ``guarded/**``, held by a holder the fuzz never acts as."""
    for name in ("AGENT_SESSION_PID", "AGENT_SESSION_SKIP"):
        monkeypatch.delenv(name, raising=False)
    defaults = journal.follow.__kwdefaults__
    assert defaults is not None and "sleep" in defaults
    monkeypatch.setitem(defaults, "sleep", _interrupting_sleep)
    # ``ui`` serves until Ctrl-C: here Ctrl-C comes as soon as it would start serving,
    # and no browser is ever opened.
    monkeypatch.setattr(ui_server.Server, "serve_forever", _interrupted_serving)
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):
        monkeypatch.delenv(name, raising=False)
    for name in ("outside", "into"):
        (tmp_path / name).mkdir()
    (tmp_path / "not-a-dir").write_text("a file\n")
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(tmp_path / "origin.git"))
    git(repo, "remote", "add", "origin", str(tmp_path / "origin.git"))
    got = alock(
        repo, "acquire", GUARD_PATTERN, "-m", "guard", "--ttl", "366d", AGENT_ID=GUARD_HOLDER
    )
    assert got.code == 0, got
    guard_ref = git(repo, "for-each-ref", "--format=%(refname)", "refs/agent-locks/").strip()
    guard_id = guard_ref.removeprefix("refs/agent-locks/")
    return Stage(repo, tmp_path, guard_id, git(repo, "rev-parse", guard_ref).strip())


# --- what every run must satisfy ------------------------------------------------------------


def _wants_json(verb: str, args: list[str]) -> bool:
    """Whether ``args`` surely ask ``verb`` for its one JSON document (watch prints lines)."""
    if verb == "watch" or "--json" not in args or {"-h", "--help"} & set(args):
        return False
    at = args.index("--json")
    if "--" in args[:at]:
        return False
    return at == 0 or args[at - 1] not in VALUE_OPTIONS


def _aims_at_guard(stage: Stage, args: list[str], where: str) -> bool:
    """Whether a ``break`` with ``args`` may name the guard lock: its id, or a pattern crossing
    it (relative to the directory it ran in)."""
    prefix = {"subdir": "src/", "gitdir": ".git/"}.get(where, "")
    root = str(stage.repo)
    for arg in args:
        if stage.guard_id in arg:
            return True
        if arg.startswith(root):
            pattern = arg[len(root) :].lstrip("/") or "."
        elif arg.startswith(":/"):
            pattern = arg[2:] or "."
        else:
            pattern = prefix + arg
        try:
            if patterns_overlap(pattern, GUARD_PATTERN):
                return True
        except ValueError:
            pass  # refused as a pattern: break refuses it too, before breaking anything
    return False


def _judge(
    stage: Stage, argv: list[str], env: dict[str, str], where: str, got: Result, remote: bool
) -> bool:
    """Assert what every run must satisfy; return whether the guard lock is still there.

    In remote mode the guard lock lives on the remote; the local view may drop its copy
    only when told to (``remote --off --forget``).
    """
    shown = (
        f"\n  argv: {argv!r}\n  env: {env!r}\n  cwd: {where}\n  exit: {got.code}"
        f"\n  stdout: {got.out[:3000]!r}\n  stderr: {got.err[:6000]}"
    )
    assert "Traceback" not in got.err, "a Python traceback:" + shown
    assert got.code in DOCUMENTED_EXIT_CODES, "an undocumented exit code:" + shown
    verb, args = argv[0], argv[1:]
    if verb in VERBS and _wants_json(verb, args):
        try:
            json.loads(got.out)
        except ValueError:
            pytest.fail("--json printed no single JSON document:" + shown)
    now = stage.guard_now(stage.bare if remote else None)
    if verb == "break" and now is None and _aims_at_guard(stage, args, where):
        return False  # broken on purpose: the next example puts it back
    assert now == stage.guard_value, f"the guard lock {stage.guard_id} changed to {now}:{shown}"
    if remote:
        here = stage.guard_now()
        if here is None and verb == "remote" and "--forget" in args:
            return False
        assert here == stage.guard_value, f"the local view lost the guard lock:{shown}"
    return True


def _run(stage: Stage, argv: list[str], env: dict[str, str], where: str) -> Result:
    assume(GUARD_HOLDER not in " ".join(argv) and GUARD_HOLDER not in env.get("AGENT_ID", ""))
    return alock(stage.cwd(where), *argv, **env)


# --- the tests ------------------------------------------------------------------------------


@pytest.mark.parametrize("verb", FUZZED)
@settings(FUZZ, max_examples=40)
@given(data=st.data())
def test_every_verb_survives_hostile_arguments(
    stage: Stage, verb: str, data: st.DataObject
) -> None:
    stage.reset()
    argv = [verb, *(stage.fill(a) for a in data.draw(arguments(verb), label="args"))]
    env = data.draw(ENVS, label="env")
    where = data.draw(WHERE, label="cwd")
    got = _run(stage, argv, env, where)
    if not _judge(stage, argv, env, where, got, remote=False):
        return
    # The store still answers, and the guard lock still holds against others.
    probe = alock(stage.repo, "check", "guarded/x", AGENT_ID="other-agent")
    assert probe.code == 1 and probe.word.startswith("HELD guarded/x "), (argv, env, where, probe)


@pytest.mark.parametrize("verb", FUZZED)
@settings(FUZZ, max_examples=30)
@given(data=st.data())
def test_every_verb_survives_hostile_records(stage: Stage, verb: str, data: st.DataObject) -> None:
    stage.reset()
    planted = data.draw(st.lists(plants(), min_size=1, max_size=3, unique_by=lambda p: p.name))
    assume(all(p.name != stage.guard_id for p in planted))
    for plant in planted:
        stage.plant(plant)
    names = [p.name for p in planted]
    argv = [verb, *(stage.fill(a) for a in data.draw(record_arguments(verb, names), label="args"))]
    env = {"AGENT_ID": data.draw(st.sampled_from(["fuzzer", "other-agent", "ghost"]))}
    got = _run(stage, argv, env, "root")
    _judge(stage, argv, env, "root", got, remote=False)


FIRST_WORDS = st.one_of(
    TOKEN,
    HOSTILE_TEXT,
    st.sampled_from(list(VERBS)).map(str.upper),
    st.sampled_from(list(VERBS)).map(lambda v: v[:-1]),
    st.sampled_from(list(VERBS)).map(lambda v: v + "\u200b"),
    st.sampled_from(["-h", "--help", "--json", "--version", "--as", "alock", "lock"]),
    st.just("help"),  # not in the verb table: `help [VERB]` is answered before it
)


@settings(FUZZ, max_examples=60)
@given(data=st.data())
def test_the_verb_table_survives_hostile_first_words(stage: Stage, data: st.DataObject) -> None:
    stage.reset()
    words = data.draw(st.lists(st.one_of(TOKEN, HOSTILE_TEXT), max_size=4))
    argv = [stage.fill(a) for a in [data.draw(FIRST_WORDS, label="first"), *words]]
    # `hook` is the git hooks' entry, which reads the pushed refs from stdin: not a verb.
    assume(argv[0] not in VERBS and argv[0] != "hook")
    env = data.draw(ENVS, label="env")
    where = data.draw(WHERE, label="cwd")
    got = _run(stage, argv, env, where)
    _judge(stage, argv, env, where, got, remote=False)


@settings(FUZZ, max_examples=40)
@given(data=st.data())
def test_remote_mode_survives_hostile_arguments(stage: Stage, data: st.DataObject) -> None:
    stage.reset()
    stage.remote_mode()
    verb = data.draw(st.sampled_from(FUZZED), label="verb")
    argv = [verb, *(stage.fill(a) for a in data.draw(arguments(verb), label="args"))]
    env = data.draw(ENVS, label="env")
    where = data.draw(WHERE, label="cwd")
    got = _run(stage, argv, env, where)
    if not _judge(stage, argv, env, where, got, remote=True):
        return
    probe = alock(stage.repo, "check", "guarded/x", AGENT_ID="other-agent")
    assert probe.code == 1 and probe.word.startswith("HELD guarded/x "), (argv, env, where, probe)
