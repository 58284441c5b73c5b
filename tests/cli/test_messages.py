"""What a newcomer reads: every bad input in our ``error:`` form, ``--as`` on either side
of the verb, an example in every verb's help."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git
from support.cli import alock, alock_process

from gitlocks.cli.app import VERBS


def test_remote_naming_no_remote_says_so_without_blaming_the_setting(repo: Path) -> None:
    got = alock(repo, "remote", "nosuch")
    assert got.code == 2 and got.err.startswith("error: no such remote 'nosuch'"), got
    assert "alock.remote" not in got.err and "nothing changed" in got.err
    assert git(repo, "config", "--get", "alock.remote", check=False) == ""


def test_a_remote_setting_naming_no_remote_names_the_setting(repo: Path) -> None:
    git(repo, "config", "alock.remote", "gone")
    got = alock(repo, "list")
    assert got.code == 2 and "alock.remote names 'gone'" in got.err, got


@pytest.mark.parametrize(
    "args",
    [
        ("--as", "bob", "acquire", "src/**"),
        ("--as=bob", "acquire", "src/**"),
        ("acquire", "--as", "bob", "src/**"),
        ("acquire", "src/**", "--as", "bob"),
    ],
    ids=["before", "before-equals", "after-verb", "last"],
)
def test_as_goes_before_or_after_the_verb(repo: Path, args: tuple[str, ...]) -> None:
    got = alock(repo, *args)
    assert got.code == 0 and got.out.startswith("ACQUIRED src/** as bob"), got
    assert alock(repo, "list", "--json").json()[0]["holder"] == "bob"


def test_as_before_the_verb_through_git(repo: Path) -> None:
    got = alock_process(repo, "--as", "carol", "acquire", "src/**")
    assert got.code == 0 and got.out.startswith("ACQUIRED src/** as carol"), got
    mine = alock_process(repo, "--as", "carol", "check", "src/app.py")
    assert mine.code == 0 and mine.out.startswith("YOURS"), mine


@pytest.mark.parametrize(
    "args",
    [("--as",), ("--as", "bob"), ("--as", "bob", "--json")],
    ids=["no-id", "no-verb", "option-not-verb"],
)
def test_as_without_an_id_or_a_verb_is_a_usage_error(repo: Path, args: tuple[str, ...]) -> None:
    got = alock(repo, *args)
    assert got.code == 2 and got.err.startswith("error: ") and "--as" in got.err, got


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("log", "-n", "abc"), "-n"),
        (("log", "--max-count", "0"), "-n"),
        (("log", "-n", "-3"), "-n"),
        (("watch", "--count", "x"), "--count"),
        (("watch", "--interval", "soon"), "--interval"),
        (("watch", "--interval", "0"), "--interval"),
    ],
)
def test_typed_values_are_reported_in_our_form(
    repo: Path, args: tuple[str, ...], option: str
) -> None:
    got = alock(repo, *args)
    assert got.code == 2, got
    assert got.err.startswith(f"error: invalid {option} "), got.err
    assert "Invalid value" not in got.err and "not a valid" not in got.err


def test_log_count_still_limits(repo: Path) -> None:
    for n in range(3):
        alock(repo, "acquire", f"d{n}", AGENT_ID="a")
    assert len(alock(repo, "log", "-n", "2").out.splitlines()) == 2


def test_every_verb_has_an_example_in_its_help(repo: Path) -> None:
    for verb in VERBS:
        got = alock(repo, verb, "--help")
        assert got.code == 0 and "Example" in got.out, verb


def test_an_until_merged_claim_without_the_post_commit_hook_says_it_cannot_land(
    repo: Path,
) -> None:
    # Only the post-commit hook records commits in the claim: without it, it never lands.
    got = alock(repo, "acquire", "src/**", "--until-merged", AGENT_ID="bob")
    assert got.code == 0 and "no gitlocks post-commit hook here" in got.err, got
    assert "git alock install-hooks" in got.err
    assert alock(repo, "install-hooks").code == 0
    got = alock(repo, "acquire", "README.md", "--until-merged", AGENT_ID="bob")
    assert got.code == 0 and "post-commit" not in got.err, got
    got = alock(repo, "acquire", "lib/**", AGENT_ID="carol")  # no branch awaited
    assert "post-commit" not in got.err, got


def test_a_pattern_taken_as_the_until_merged_branch_is_hinted(repo: Path) -> None:
    """``--until-merged`` may go without its branch, so a pattern right after it becomes the
    branch: the missing pattern's error says so and how to write it; a branch named there
    (no pattern at all) gets the usual hint."""
    got = alock(repo, "acquire", "--until-merged", "src/**", "-m", "a b", AGENT_ID="bob")
    assert got.code == 2 and got.err.startswith("error: Missing argument 'PATTERN...'.")
    assert "hint: --until-merged took 'src/**' as its branch" in got.err
    assert "git alock acquire -m 'a b' 'src/**' --until-merged" in got.err
    took = alock(repo, "acquire", "--until-merged", "README.md", AGENT_ID="bob")
    assert "took README.md as its branch" in took.err
    branch = alock(repo, "acquire", "--until-merged", "main", AGENT_ID="bob")
    assert branch.code == 2 and "took" not in branch.err and "hint: git alock -h" in branch.err
    fine = alock(repo, "acquire", "src/**", "--until-merged", AGENT_ID="bob")
    assert fine.code == 0, fine


def test_a_claim_of_an_ignored_path_notes_the_alockignore(repo: Path) -> None:
    """The note names the pattern .alockignore exempts, and only where a list exists."""
    quiet = alock(repo, "acquire", "build/**", "-m", "x", AGENT_ID="a1")
    assert quiet.code == 0 and ".alockignore" not in quiet.err
    (repo / ".alockignore").write_text("build/**\n")
    noted = alock(repo, "acquire", "build/out/**", "-m", "x", AGENT_ID="a1")
    assert noted.code == 0
    assert "note: build/out/** is listed in .alockignore: nobody needs to claim it" in noted.err
    other = alock(repo, "acquire", "src/**", "-m", "x", AGENT_ID="a3")
    assert ".alockignore" not in other.err
