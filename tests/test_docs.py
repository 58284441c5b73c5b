"""The docs cannot drift: every ```console block of the README and docs/*.md runs here.

Each block runs in a fresh repository (a few files: ``SAMPLE_TREE``), one ``bash``
session per block, through the installed ``git alock``, so the ``$`` lines' environment
prefixes (``AGENT_ID=... git alock ...``) and ``echo $?`` mean what they mean to a reader.
What a command printed (stdout and stderr, as a terminal shows them) is compared with the
lines under it, blank lines aside, after masking what differs from run to run: times,
commit hashes and runs of spaces (table columns); the repository is written ``~/app``.
Lock ids read as the order they first appear in the block (a line naming the wrong lock
still differs), and durations must agree within a run's slack (``59m`` for ``1h``, never
``2h`` for ``30m``).

A block that cannot run here (a remote host, an agent harness) is marked by the line
``<!-- no-test -->`` right above it; keep those few.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import git

PROJECT = Path(__file__).resolve().parents[1]
DOCS = [PROJECT / "README.md", *sorted((PROJECT / "docs").glob("*.md"))]
NO_TEST = "<!-- no-test -->"
# The files every block's repository starts with (the names the docs' examples use).
SAMPLE_TREE = ("README.md", "src/api/auth.py", "src/web/app.js", "docs/guide.md")
MARK = "@@gitlocks-doc-test@@"

LOCK_ID = re.compile(r"\b[0-9a-f]{11}-[0-9a-f]{10}\b")
DURATION = re.compile(r"\b(\d+(?:\.\d+)?)(ms|[smhd])(?:(\d+)([smh]))?\b")
UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
MASKS = [
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b"), "<time>"),
    (DURATION, "<duration>"),
    (re.compile(r"\b[0-9a-f]{7,40}\b"), "<hash>"),
    (re.compile(r"[ \t]+"), " "),
]


@dataclass
class Command:
    line: int  # where its ``$`` line is in the file
    text: str
    expected: list[str]


@dataclass
class Block:
    path: Path
    line: int
    commands: list[Command]

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(PROJECT)}:{self.line}"


def console_blocks(path: Path) -> list[Block]:
    """The ```console blocks of ``path`` not marked ``<!-- no-test -->``."""
    lines = path.read_text().splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```console":
            i += 1
            continue
        start = i
        before = next((ln.strip() for ln in reversed(lines[:start]) if ln.strip()), "")
        i += 1
        body: list[tuple[int, str]] = []
        while i < len(lines) and lines[i].strip() != "```":
            body.append((i + 1, lines[i]))
            i += 1
        if before != NO_TEST:
            blocks.append(Block(path, start + 1, parse(body)))
    return blocks


def parse(body: list[tuple[int, str]]) -> list[Command]:
    commands: list[Command] = []
    for number, text in body:
        if text.startswith("$ "):
            commands.append(Command(number, text[2:], []))
        elif text.strip() and commands:
            commands[-1].expected.append(text)
    return commands


def mask(text: str, repo: Path | None = None, ids: dict[str, str] | None = None) -> str:
    """``text`` with what differs from run to run masked; the repository's own path (in
    what a command printed) reads as the docs write it, ``~/app``. With ``ids`` (one per
    block and side) each lock id reads as the order it first appeared in, ``<id1>``..., so
    a line that names the wrong lock still differs."""
    if repo is not None:
        text = text.replace(os.fspath(repo), "~/app")
    if ids is None:
        text = LOCK_ID.sub("<id>", text)
    else:
        text = LOCK_ID.sub(lambda m: ids.setdefault(m[0], f"<id{len(ids) + 1}>"), text)
    for pattern, replacement in MASKS:
        text = pattern.sub(replacement, text)
    return text.strip()


def durations(text: str) -> list[float]:
    """The durations ``text`` says, in seconds (``1h30m``, ``250ms``...); never a piece of
    a lock id (``...-217201555d`` ends in digits and a ``d``)."""
    return [
        float(n) * UNIT_SECONDS[u] + (float(m) * UNIT_SECONDS[v] if m else 0.0)
        for n, u, m, v in DURATION.findall(LOCK_ID.sub("<id>", text))
    ]


def same_durations(shown: str, printed: str) -> bool:
    """Whether ``printed`` says the durations ``shown`` says, give or take what a run
    takes and how the tool rounds (``59m`` for ``1h``), but never ``2h`` for ``30m``."""
    a, b = durations(shown), durations(printed)
    if len(a) != len(b):
        return False
    return all(abs(x - y) <= max(90.0, 0.05 * max(x, y)) for x, y in zip(a, b, strict=True))


def run_block(block: Block, cwd: Path) -> list[list[str]]:
    """Run the block's commands in one bash session; each one's output lines."""
    script = "".join(
        f"{c.text} 2>&1\n__rc=$?; echo; echo {MARK}; (exit $__rc)\n" for c in block.commands
    )
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    parts = proc.stdout.split(MARK + "\n")
    return [[ln for ln in part.splitlines() if ln.strip()] for part in parts[: len(block.commands)]]


def sample_repository(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q")
    for name in SAMPLE_TREE:
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(f"{name}\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


BLOCKS = [block for path in DOCS for block in console_blocks(path)]


def test_the_readme_has_a_tour_to_run() -> None:
    assert any(b.path.name == "README.md" and len(b.commands) >= 5 for b in BLOCKS)


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_console_block_runs_as_shown(block: Block, tmp_path: Path) -> None:
    repo = sample_repository(tmp_path / "repo")
    outputs = run_block(block, repo)
    assert len(outputs) == len(block.commands), outputs
    shown_ids: dict[str, str] = {}
    printed_ids: dict[str, str] = {}
    for command, got in zip(block.commands, outputs, strict=True):
        where = f"{block.path.relative_to(PROJECT)}:{command.line}: $ {command.text}"
        expected = [mask(ln, ids=shown_ids) for ln in command.expected]
        actual = [mask(ln, repo, ids=printed_ids) for ln in got]
        assert actual == expected, f"{where}\nprinted:\n" + "\n".join(got)
        for shown, printed in zip(command.expected, got, strict=True):
            assert same_durations(shown, printed), f"{where}\nprinted:\n" + "\n".join(got)


def test_masks_keep_what_matters() -> None:
    shown = "RENEWED src/api/**, expires in 1h [lock 1a2268d3fb2-311280c0ae]"
    run = "RENEWED src/api/**, expires in 59m [lock 1a2269000aa-000000c0ae]"
    assert mask(shown) == mask(run)
    assert mask("RELEASED src/api/** [lock 1a2268d3fb2-311280c0ae]") != mask(
        "RELEASED src/web/** [lock 1a2268d3fb2-311280c0ae]"
    )


def test_a_marked_block_is_skipped(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "```console\n$ git alock version\ngitlocks 0\n```\n\n"
        f"{NO_TEST}\n```console\n$ ssh elsewhere git alock list\n```\n"
    )
    [block] = console_blocks(doc)
    assert [c.text for c in block.commands] == ["git alock version"]
    assert block.commands[0].expected == ["gitlocks 0"]


def test_a_lock_id_is_no_duration() -> None:
    """Lock ids are random: one ending in digits and a ``d`` once read as a duration of
    days, and failed a block that ran as shown."""
    shown = "ACQUIRED docs/** as bob, expires in 30m [lock 1a2268d4185-3116d826d7]"
    printed = "ACQUIRED docs/** as bob, expires in 30m [lock 1a2352d3677-217201555d]"
    assert durations(printed) == durations(shown) == [1800.0]
    assert same_durations(shown, printed)
    assert not same_durations(shown, printed.replace("30m", "2h"))
