"""Shell completion: verbs and options completed by bash, through git's own ``git alock``."""

from __future__ import annotations

import inspect
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git
from support.cli import alock

from gitlocks.cli.answers import ANSWERS
from gitlocks.cli.app import VERBS, verb_callback
from gitlocks.cli.declare import ArgumentInfo

ALOCK = str(Path(sys.executable).parent / "git-alock")


def answers(words: str, cwd: Path | None = None, **env: str) -> list[tuple[str, str]]:
    """What ``git-alock`` answers a bash completion request for ``words`` (the cursor on
    the last word, an empty one after a trailing space): (type, value) pairs."""
    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    env = {
        **os.environ,
        **env,
        "_GIT_ALOCK_COMPLETE": "bash_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": str(cword),
    }
    got = subprocess.run([ALOCK], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    assert not got.stderr, got.stderr
    return [(t, v) for t, _, v in (line.partition(",") for line in got.stdout.splitlines() if line)]


def complete(words: str, cword: int) -> list[str]:
    """The values ``git-alock`` offers for ``words``."""
    assert cword == len(words.split()) - (0 if words.endswith(" ") else 1)
    return [value for _, value in answers(words)]


def test_verbs_and_options_are_completed() -> None:
    assert complete("git-alock acq", 1) == ["acquire"]
    assert "ls" not in complete("git-alock l", 1)  # hidden verbs stay hidden
    assert "list" in complete("git-alock l", 1)
    assert complete("git-alock acquire --t", 2) == ["--ttl"]
    assert complete("git-alock acquire src/app.py --wa", 3) == ["--wait"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_completes_git_alock_through_the_script(tmp_path: Path) -> None:
    script = alock(tmp_path, "completion", "bash")
    assert script.code == 0, script
    (tmp_path / "alock.bash").write_text(script.out)
    probe = (
        f"source {tmp_path / 'alock.bash'}\n"
        "COMP_WORDS=(git alock rel); COMP_CWORD=2; COMPREPLY=()\n"
        "_git_alock\n"
        'echo "${COMPREPLY[@]}"\n'
    )
    env = {**os.environ, "PATH": f"{Path(ALOCK).parent}{os.pathsep}{os.environ['PATH']}"}
    got = subprocess.run(["bash", "-c", probe], env=env, capture_output=True, text=True)
    assert got.stdout.split() == ["release"], got


def test_an_unknown_shell_is_a_usage_error(tmp_path: Path) -> None:
    got = alock(tmp_path, "completion", "tcsh")
    assert got.code == 2 and "error: unknown shell 'tcsh'" in got.err, got


def test_the_click_completion_needs_is_a_declared_dependency() -> None:
    """A plain ``pip install .`` must bring what ``completion`` imports: typer's own copy
    of click has no shell completion, so ``click`` is declared, not found by chance."""
    from importlib.metadata import requires

    declared = [r.split(";")[0].strip() for r in requires("gitlocks") or []]
    assert any(r.startswith("click") for r in declared), declared


def test_each_positional_argument_is_offered_what_it_takes(repo: Path) -> None:
    """Remote names for remote, lock ids and patterns for break and resume, your own
    patterns for release, renew and note, file names only where a path is asked for, and
    never file names where a name is (git's completion falls back to them on no answer)."""
    git(repo, "remote", "add", "origin", str(repo))
    git(repo, "remote", "add", "upstream", str(repo))
    assert alock(repo, "acquire", "src/**", AGENT_ID="alice").code == 0
    assert alock(repo, "acquire", "docs", AGENT_ID="bob").code == 0
    table = alock(repo, "list", "--json").json()
    ids = {r["holder"]: r["id"] for r in table}

    def plain(words: str, cwd: Path = repo) -> list[str]:
        got = answers(words, cwd, AGENT_ID="alice")
        assert all(t == "plain" for t, _ in got), got
        return [v for _, v in got]

    assert plain("git-alock remote ") == ["origin", "upstream"]
    assert plain("git-alock remote up") == ["upstream"]
    assert sorted(plain("git-alock break ")) == sorted([ids["alice"], "src/**", ids["bob"], "docs"])
    assert plain("git-alock break src/** d") == ["docs"]
    assert sorted(plain("git-alock resume ")) == sorted(plain("git-alock break "))
    assert plain("git-alock release ") == ["src/**"]
    assert plain("git-alock release --as bob ") == ["docs"]
    assert plain("git-alock renew ") == ["src/**"]
    assert plain("git-alock note ") == ["src/**"]
    assert plain("git-alock note src/** ") == []  # the note's text
    assert plain("git-alock release ", repo / "src") == [":/src/**"]
    assert plain("git-alock skill ") == ["install", "show"]
    assert plain("git-alock completion z") == ["zsh"]
    assert plain("git-alock verify m") == ["main"]
    assert plain("git-alock list ") == []
    assert answers("git-alock acquire ", repo) == [("file", "")]
    assert answers("git-alock acquire src/x --ttl 5m sr", repo) == [("file", "sr")]
    assert answers("git-alock check ", repo) == [("file", "")]
    assert answers("git-alock install-remote-hook ", repo) == [("dir", "")]
    assert answers("git-alock acquire --ttl ", repo) == []  # the option's value
    assert [v for _, v in answers("git-alock acquire --t", repo)] == ["--ttl"]
    assert plain("git-alock break ", repo.parent) == []  # no repository: nothing, quietly


def test_every_verb_s_positional_arguments_declare_what_a_shell_offers() -> None:
    for verb in VERBS:
        callback = verb_callback(verb)
        assert callback is not None, verb
        for p in inspect.signature(callback).parameters.values():
            if isinstance(p.default, ArgumentInfo):
                assert p.default.complete in ANSWERS, (verb, p.name)


def test_the_bash_script_keeps_git_from_offering_file_names_for_a_name(tmp_path: Path) -> None:
    script = alock(tmp_path, "completion", "bash").out
    shim = script[script.index("_git_alock() {") :]
    assert "compopt +o default +o bashdefault" in shim
