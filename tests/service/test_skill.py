"""The agent skill: installed where each tool reads it, and true to the real command line."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from support.cli import alock

from gitlocks.service import skill

TEXT = skill.skill_text()
_CODE_RE = re.compile(r"\bexit (\d)\b")
_WORD_RE = re.compile(r"^\s*([A-Z][A-Z ]*[A-Z])\b")


def commands(text: str) -> list[str]:
    """Every ``git alock ...`` command the text shows, in code blocks and inline."""
    found = []
    in_block = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_block = not in_block
            continue
        if in_block and "git alock" in line:
            found.append(line.split("#", 1)[0].strip())
        elif not in_block:
            found += [m for m in re.findall(r"`([^`]*git alock [^`]*)`", line)]
    return found


def split(command: str) -> tuple[dict[str, str], list[str]]:
    """(environment assignments, arguments after ``git alock``)."""
    words = shlex.split(command)
    env = {}
    while words and re.match(r"^[A-Z_]+=", words[0]):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    assert words[:2] == ["git", "alock"], command
    return env, words[2:]


def test_text_ships_with_front_matter_and_the_protocol() -> None:
    assert TEXT.startswith("---\nname: gitlocks\ndescription: ")
    for needle in ("AGENT_ID", "--as", "renew", "release", "INTERRUPTED WORK", "STALE"):
        assert needle in TEXT
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert 'packages = ["gitlocks"]' in pyproject  # the whole package, its data too


def test_every_command_shown_names_a_real_verb_and_real_options(repo: Path) -> None:
    shown = commands(TEXT)
    assert len(shown) >= 10
    helps: dict[str, str] = {}
    for command in shown:
        _, args = split(command)
        verb = args[0]
        if verb not in helps:
            got = alock(repo, verb, "--help")
            assert got.code == 0, f"{command}: {got.err}"
            helps[verb] = got.out
        for word in args[1:]:
            if word.startswith("-"):
                option = word.split("=", 1)[0]
                assert re.search(rf"(^|[\s,]){re.escape(option)}\b", helps[verb]), (
                    f"{command}: {option} is not an option of {verb}"
                )


def test_the_walkthrough_runs_with_the_words_and_exit_codes_it_promises(repo: Path) -> None:
    env: dict[str, str] = {}
    ran = 0
    in_block = False
    for line in TEXT.splitlines():
        if line.startswith("```"):
            in_block = not in_block
            continue
        if not in_block:
            continue
        if line.startswith("export "):
            key, _, value = line[len("export ") :].partition("=")
            env[key] = value.strip()
            continue
        if "git alock" not in line:
            continue
        command, _, comment = line.partition("#")
        extra, args = split(command.strip())
        got = alock(repo, *args, **{**env, **extra})
        code = _CODE_RE.search(comment)
        assert code, f"{line}: say the exit code"
        assert got.code == int(code.group(1)), f"{line}: exit {got.code}\n{got.out}{got.err}"
        word = _WORD_RE.match(comment)
        if word:
            first = got.out.split("\n", 1)[0]
            assert first.startswith(word.group(1)), f"{line}: got {first!r}"
        ran += 1
    assert ran >= 6


def test_interrupted_work_advice_is_what_the_tool_says() -> None:
    # The skill tells agents the exact forms of the two ways on.
    assert "`git alock resume <pattern>`" in TEXT
    assert "`git alock break <lock id>`" in TEXT


@pytest.mark.parametrize(
    ("tool", "where"),
    [
        ("claude", ".claude/skills/gitlocks/SKILL.md"),
        ("cursor", ".cursor/rules/gitlocks.mdc"),
        ("codex", "AGENTS.md"),
        ("agents", "AGENTS.md"),
    ],
)
def test_install_where_each_tool_reads_it(repo: Path, tool: str, where: str) -> None:
    got = alock(repo, "skill", "install", "--for", tool)
    assert got.code == 0 and got.word.startswith("INSTALLED ")
    path = repo / where
    assert path.read_text() == skill.text_for(tool)
    again = alock(repo, "skill", "install", "--for", tool)
    assert again.code == 0 and again.word.startswith("ALREADY INSTALLED")
    path.write_text(path.read_text().replace("Release when done", "Keep it forever"))
    refused = alock(repo, "skill", "install", "--for", tool)
    assert refused.code == 1 and refused.word.startswith("REFUSED")
    assert "Keep it forever" in path.read_text()
    forced = alock(repo, "skill", "install", "--for", tool, "--force", "--json")
    assert forced.code == 0 and forced.json()["status"] == "updated"
    assert "Release when done" in path.read_text()


def test_agents_md_keeps_the_rest_of_the_file(repo: Path) -> None:
    agents = repo / "AGENTS.md"
    agents.write_text("# Project rules\n\nUse tabs.\n")
    assert alock(repo, "skill", "install", "--for", "agents").code == 0
    text = agents.read_text()
    assert text.startswith("# Project rules\n\nUse tabs.\n\n" + skill.BEGIN)
    assert text.rstrip().endswith(skill.END)
    assert alock(repo, "skill", "install", "--for", "codex").word.startswith("ALREADY")
    agents.write_text(text + "\n## Later section\n")
    assert alock(repo, "skill", "install", "--for", "agents").word.startswith("ALREADY")


def test_install_into_a_directory_and_from_a_subdirectory(repo: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "home"
    elsewhere.mkdir()
    assert alock(repo, "skill", "install", "--into", str(elsewhere)).code == 0
    assert (elsewhere / ".claude/skills/gitlocks/SKILL.md").is_file()
    assert alock(repo / "src", "skill", "install").code == 0
    assert (repo / ".claude/skills/gitlocks/SKILL.md").is_file()


def test_show_and_bad_input(repo: Path) -> None:
    assert alock(repo, "skill", "show").out == TEXT
    cursor = alock(repo, "skill", "show", "--for", "cursor").out
    assert cursor.startswith("---\ndescription: ") and "alwaysApply: true" in cursor
    assert alock(repo, "skill", "show", "--for", "vim").code == 2
    assert alock(repo, "skill", "remove").code == 2


def test_skill_install_into_a_missing_directory_is_refused(repo: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such"
    got = alock(repo, "skill", "install", "--into", str(missing))
    assert got.code == 2 and "no such directory" in got.err, got
    assert not (tmp_path / "no").exists()


def test_the_hint_to_install_the_guard_is_given_only_where_it_is_not_installed(
    repo: Path,
) -> None:
    hint = "install-agent-hooks --for claude"
    first = alock(repo, "skill", "install", "--for", "claude")
    assert first.code == 0 and hint in first.err
    assert alock(repo, "install-agent-hooks", "--for", "claude").code == 0
    again = alock(repo, "skill", "install", "--for", "claude", "--force")
    assert again.code == 0 and hint not in again.err
