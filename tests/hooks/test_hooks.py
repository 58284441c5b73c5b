"""The bundled hooks, through real ``git commit`` and ``git push`` with the hooks installed."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from support.cli import Result, alock, alock_process, run_git

from gitlocks.core.scope import make_entry
from gitlocks.core.table import Friends
from gitlocks.core.text import printable
from gitlocks.git import changes as hook_paths
from gitlocks.git import table as fast_table
from gitlocks.git.run import Process
from gitlocks.git.settings import Settings
from gitlocks.hooks import check as hooks
from gitlocks.hooks import install as hook_install
from gitlocks.hooks.reading import hook_config

PROJECT = Path(__file__).resolve().parents[2]
BIN = os.path.dirname(sys.executable)
A = {"AGENT_ID": "agent-a", "AGENT_PARENT_ID": "lead-a"}
B = {"AGENT_ID": "agent-b", "AGENT_PARENT_ID": "lead-b"}


def commit(cwd: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    return run_git(cwd, "commit", "-q", "-m", "change", *args, env=env)


def alock_lines(result: Result) -> list[str]:
    return [line for line in result.err.splitlines() if line.startswith("alock: ")]


def head_subject(cwd: Path) -> str:
    return git(cwd, "log", "-1", "--format=%s").strip()


def edit(cwd: Path, rel: str, text: str = "x\n") -> Path:
    path = cwd / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def hooked(repo: Path) -> Path:
    """``repo`` with src/api/auth.py, a lock of agent-a on src/api/**, and our hooks."""
    edit(repo, "src/api/auth.py", "auth\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "api")
    got = alock(repo, "acquire", "src/api/**", "-m", "rewrite auth", **A)
    assert got.code == 0, got.err
    assert alock(repo, "install-hooks", "--pre-push").code == 0
    return repo


# --- the pre-commit check ------------------------------------------------------------------


def test_warn_mode_names_path_holder_pattern_reason_expiry(hooked: Path) -> None:
    edit(hooked, "src/api/auth.py", "changed\n")
    git(hooked, "add", "-A")
    got = commit(hooked, env=B)
    assert got.code == 0, got.err
    assert head_subject(hooked) == "change"
    held, advice = alock_lines(got)
    assert held.startswith("alock: HELD src/api/auth.py by agent-a (src/api/**)")
    assert '"rewrite auth"' in held and "expires in 30m" in held
    assert advice.startswith("alock: WARNING: 1 path inside another holder's lock")


def test_a_warning_nobody_can_read_never_refuses_the_commit(hooked: Path) -> None:
    """Standard error that takes no writes (a full disk): the warning is lost, and the
    commit still goes on, as warn mode says; it once failed the shim (exit 1, refused)."""
    edit(hooked, "src/api/auth.py", "changed\n")
    git(hooked, "add", "-A")
    env = {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", ""), **B}
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            ["git", "commit", "-q", "-m", "change"],
            cwd=hooked, env=env, stdout=full, stderr=full, timeout=60,
        )  # fmt: skip
    assert done.returncode == 0
    assert head_subject(hooked) == "change"


def test_block_mode_refuses_and_no_verify_bypasses(hooked: Path) -> None:
    git(hooked, "config", "alock.hookMode", "block")
    edit(hooked, "src/api/auth.py", "changed\n")
    git(hooked, "add", "-A")
    got = commit(hooked, env=B)
    assert got.code == 1
    assert head_subject(hooked) == "api"
    assert alock_lines(got)[-1].startswith("alock: REFUSED commit: 1 path")
    assert "--no-verify" in alock_lines(got)[-1]
    bypass = commit(hooked, "--no-verify", env=B)
    assert bypass.code == 0 and not alock_lines(bypass)
    assert head_subject(hooked) == "change"


def test_git_dash_c_block_mode_and_unknown_mode(hooked: Path) -> None:
    edit(hooked, "src/api/auth.py", "changed\n")
    git(hooked, "add", "-A")
    refused = run_git(hooked, "-c", "alock.hookMode=block", "commit", "-q", "-m", "c", env=B)
    assert refused.code == 1
    git(hooked, "config", "alock.hookMode", "sometimes")
    got = commit(hooked, env=B)
    assert got.code == 0
    assert "unknown alock.hookMode 'sometimes'" in alock_lines(got)[0]


def test_free_paths_are_quiet(hooked: Path) -> None:
    edit(hooked, "src/web/page.py")
    git(hooked, "add", "-A")
    got = commit(hooked, env=B)
    assert got.code == 0 and not alock_lines(got)


def test_holder_parent_and_subagent_commits_are_quiet(hooked: Path) -> None:
    git(hooked, "config", "alock.hookMode", "block")
    edit(hooked, "src/api/auth.py", "mine\n")
    git(hooked, "add", "-A")
    assert commit(hooked, env=A).code == 0, "the holder itself"
    # A sub-agent of agent-a works inside its parent's claim.
    edit(hooked, "src/api/auth.py", "child\n")
    git(hooked, "add", "-A")
    child = {"AGENT_ID": "agent-a-1", "AGENT_PARENT_ID": "agent-a"}
    got = commit(hooked, env=child)
    assert got.code == 0 and not alock_lines(got)
    # A parent commits inside its sub-agent's claim.
    assert alock(hooked, "acquire", "docs/**", **child).code == 0
    edit(hooked, "docs/guide.md")
    git(hooked, "add", "-A")
    got = commit(hooked, env={"AGENT_ID": "agent-a", "AGENT_PARENT_ID": "lead-a"})
    assert got.code == 0 and not alock_lines(got)
    # A sibling is warned (refused, in block mode).
    edit(hooked, "docs/guide.md", "sibling\n")
    git(hooked, "add", "-A")
    assert commit(hooked, env={"AGENT_ID": "agent-a-2", "AGENT_PARENT_ID": "agent-a"}).code == 1


def test_session_identity_matches_the_command_line(repo: Path) -> None:
    """No AGENT_ID: the hook finds the same session as ``git alock`` did."""
    assert alock_process(repo, "install-hooks").code == 0
    assert alock_process(repo, "acquire", "src/**").code == 0
    git(repo, "config", "alock.hookMode", "block")
    edit(repo, "src/app.py", "mine\n")
    git(repo, "add", "-A")
    got = commit(repo)
    assert got.code == 0 and not alock_lines(got), got.err
    other = commit(repo, "--allow-empty", env={"AGENT_ID": "x", "AGENT_PARENT_ID": "y"})
    assert other.code == 0  # nothing staged: nothing to check
    edit(repo, "src/app.py", "theirs\n")
    git(repo, "add", "-A")
    assert commit(repo, env={"AGENT_ID": "x", "AGENT_PARENT_ID": "y"}).code == 1


def test_renames_out_of_and_into_a_claimed_area(hooked: Path) -> None:
    (hooked / "lib").mkdir()
    git(hooked, "mv", "src/api/auth.py", "lib/auth.py")
    out = commit(hooked, env=B)
    assert out.code == 0
    assert [line.split()[2] for line in alock_lines(out)[:-1]] == ["src/api/auth.py"]
    edit(hooked, "lib/new.py", "new\n")
    git(hooked, "add", "-A")
    git(hooked, "commit", "-q", "--no-verify", "-m", "lib")
    git(hooked, "mv", "lib/new.py", "src/api/new.py")
    into = commit(hooked, env=B)
    assert [line.split()[2] for line in alock_lines(into)[:-1]] == ["src/api/new.py"]


def test_deletions(hooked: Path) -> None:
    git(hooked, "rm", "-q", "src/api/auth.py")
    got = commit(hooked, env=B)
    assert got.code == 0
    assert alock_lines(got)[0].startswith("alock: HELD src/api/auth.py ")


def test_spaces_non_ascii_and_wildcard_characters_in_names(hooked: Path) -> None:
    assert alock(hooked, "acquire", "docs/my notes/**", "-m", "notes", **A).code == 0
    edit(hooked, "docs/my notes/café ü.md")
    edit(hooked, "src/api/we*ird [1].py")
    edit(hooked, "docs/other.md")
    git(hooked, "add", "-A")
    got = commit(hooked, env=B)
    held = [line for line in alock_lines(got) if line.startswith("alock: HELD ")]
    paths = sorted(line.split(" by ")[0].removeprefix("alock: HELD ") for line in held)
    assert paths == ["docs/my notes/café ü.md", "src/api/we*ird [1].py"]


def test_an_exact_file_lock_does_not_cover_neighbours(hooked: Path) -> None:
    assert alock(hooked, "acquire", "README.md", **A).code == 0
    edit(hooked, "README.md.bak")
    git(hooked, "add", "-A")
    assert not alock_lines(commit(hooked, env=B))
    edit(hooked, "README.md", "changed\n")
    git(hooked, "add", "-A")
    assert alock_lines(commit(hooked, env=B))[0].startswith("alock: HELD README.md ")


def test_commit_all_and_commit_paths_use_git_temporary_index(hooked: Path) -> None:
    edit(hooked, "src/api/auth.py", "unstaged\n")
    got = run_git(hooked, "commit", "-q", "-a", "-m", "all", env=B)
    assert got.code == 0 and alock_lines(got)[0].startswith("alock: HELD src/api/auth.py")
    edit(hooked, "src/api/auth.py", "again\n")
    edit(hooked, "README.md", "staged elsewhere\n")
    git(hooked, "add", "README.md")
    only = run_git(hooked, "commit", "-q", "-m", "only", "src/api/auth.py", env=B)
    assert [line.split()[2] for line in alock_lines(only)[:-1]] == ["src/api/auth.py"]


def test_linked_worktree_commits_share_hooks_and_locks(hooked: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt2"
    git(hooked, "worktree", "add", "-q", "-b", "side2", str(wt))
    again = alock(wt, "install-hooks", "--pre-push", "--json")
    assert {h["status"] for h in again.json()["hooks"]} == {"already_installed"}
    assert Path(again.json()["hooks"][0]["path"]) == (hooked / ".git/hooks/pre-commit").resolve()
    edit(wt, "src/api/auth.py", "from the worktree\n")
    git(wt, "add", "-A")
    got = commit(wt, env=B)
    assert got.code == 0 and alock_lines(got)[0].startswith("alock: HELD src/api/auth.py")
    assert git(wt, "log", "-1", "--format=%s").strip() == "change"


# --- commits that conclude a merge ----------------------------------------------------------


def _branch(repo: Path, name: str, files: dict[str, str], start: str = "main") -> str:
    """agent-a's work on a new branch ``name``: ``files`` written and committed."""
    git(repo, "checkout", "-q", "-b", name, start)
    for rel, text in files.items():
        edit(repo, rel, text)
    git(repo, "add", "-A")
    assert commit(repo, env=A).code == 0
    git(repo, "checkout", "-q", start)
    return git(repo, "rev-parse", name).strip()


def held_paths(result: Result) -> list[str]:
    held = [line for line in alock_lines(result) if line.startswith("alock: HELD ")]
    return [line.split(" by ")[0].removeprefix("alock: HELD ") for line in held]


def parents(cwd: Path) -> int:
    return len(git(cwd, "rev-list", "--parents", "-1", "HEAD").split()) - 1


def test_concluding_a_clean_merge_of_claimed_work_is_quiet(hooked: Path) -> None:
    """Upstream edits, additions and renames inside agent-a's claim are not B's changes."""
    edit(hooked, "src/api/routes.py", "routes\n")
    git(hooked, "add", "-A")
    assert commit(hooked, env=A).code == 0
    git(hooked, "checkout", "-q", "-b", "side")
    edit(hooked, "src/api/auth.py", "side\n")
    edit(hooked, "src/api/new file é.py", "new\n")
    git(hooked, "mv", "src/api/routes.py", "src/api/urls.py")
    git(hooked, "add", "-A")
    assert commit(hooked, env=A).code == 0
    git(hooked, "checkout", "-q", "main")
    edit(hooked, "README.md", "mine\n")
    git(hooked, "add", "-A")
    assert commit(hooked, env=B).code == 0
    git(hooked, "config", "alock.hookMode", "block")
    merged = run_git(hooked, "merge", "-q", "--no-commit", "side", env=B)
    assert merged.code == 0, merged.err
    assert alock(hooked, "check", "--staged", **B).code == 0
    got = commit(hooked, env=B)
    assert got.code == 0 and not alock_lines(got), got.err
    assert parents(hooked) == 2


def test_a_conflict_resolved_inside_a_claim_is_reported(hooked: Path) -> None:
    """Through ``git pull``: the resolution is the committer's; a side taken whole is not."""
    edit(hooked, "src/api/theirs.py", "base\n")
    git(hooked, "add", "-A")
    assert commit(hooked, env=A).code == 0
    side = _branch(
        hooked,
        "side",
        {"src/api/auth.py": "side\n", "src/api/theirs.py": "side\n", "src/api/clean.py": "c\n"},
    )
    edit(hooked, "src/api/auth.py", "main\n")
    edit(hooked, "src/api/theirs.py", "main\n")
    git(hooked, "add", "-A")
    assert commit(hooked, env=A).code == 0
    git(hooked, "config", "alock.hookMode", "block")
    pulled = run_git(hooked, "pull", "-q", "--no-rebase", "--no-edit", ".", "side", env=B)
    assert pulled.code != 0  # the conflicts stop it
    assert hook_paths.merge_heads(str(hooked / "src")) == [side]  # git names the file there
    edit(hooked, "src/api/auth.py", "resolved\n")
    git(hooked, "checkout", "--theirs", "src/api/theirs.py")
    git(hooked, "add", "-A")
    check = alock(hooked, "check", "--staged", **B)
    assert check.code == 1 and check.out.startswith("HELD src/api/auth.py by agent-a")
    assert "clean.py" not in check.out and "theirs.py" not in check.out
    refused = commit(hooked, env=B)
    assert refused.code == 1 and parents(hooked) == 1
    assert held_paths(refused) == ["src/api/auth.py"]
    assert alock_lines(refused)[-1].startswith("alock: REFUSED commit: 1 path")
    warned = run_git(hooked, "-c", "alock.hookMode=warn", "commit", "-q", "-m", "m", env=B)
    assert warned.code == 0 and held_paths(warned) == ["src/api/auth.py"]
    assert parents(hooked) == 2


def test_an_edit_made_during_a_merge_inside_a_claim_is_reported(hooked: Path) -> None:
    _branch(hooked, "side", {"src/api/auth.py": "side\n", "src/api/clean.py": "clean\n"})
    edit(hooked, "notes.txt", "notes\n")
    git(hooked, "add", "-A")
    assert commit(hooked, env=B).code == 0
    assert run_git(hooked, "merge", "-q", "--no-commit", "side", env=B).code == 0
    edit(hooked, "src/api/auth.py", "side, and more\n")  # on top of upstream's change
    edit(hooked, "src/api/extra.py", "extra\n")
    git(hooked, "mv", "notes.txt", "src/api/notes.txt")  # both sides of a rename
    git(hooked, "add", "-A")
    got = commit(hooked, env=B)
    assert got.code == 0 and parents(hooked) == 2
    assert held_paths(got) == ["src/api/auth.py", "src/api/extra.py", "src/api/notes.txt"]
    assert alock_lines(got)[-1].startswith("alock: WARNING: 3 paths")


def test_a_file_both_sides_changed_counts_though_git_merged_it(hooked: Path) -> None:
    edit(hooked, "src/api/auth.py", "one\ntwo\nthree\nfour\nfive\n")
    git(hooked, "add", "-A")
    assert commit(hooked, env=A).code == 0
    _branch(hooked, "side", {"src/api/auth.py": "one\ntwo\nthree\nfour\nFIVE\n"})
    edit(hooked, "src/api/auth.py", "ONE\ntwo\nthree\nfour\nfive\n")
    git(hooked, "add", "-A")
    assert commit(hooked, env=A).code == 0
    assert run_git(hooked, "merge", "-q", "--no-commit", "side", env=B).code == 0
    got = commit(hooked, env=B)
    assert got.code == 0 and held_paths(got) == ["src/api/auth.py"]


def test_an_octopus_merge_in_a_linked_worktree(hooked: Path, tmp_path: Path) -> None:
    """Every head of MERGE_HEAD counts, read from the worktree's own git dir."""
    one = _branch(hooked, "one", {"src/api/one.py": "1\n", "src/api/auth.py": "one\n"})
    two = _branch(hooked, "two", {"src/api/two.py": "2\n"})
    wt = tmp_path / "wt"
    git(hooked, "worktree", "add", "-q", "-b", "octo", str(wt))
    edit(wt, "README.md", "mine\n")
    git(wt, "add", "-A")
    assert commit(wt, env=B).code == 0
    git(hooked, "config", "alock.hookMode", "block")
    assert run_git(wt, "merge", "-q", "--no-commit", "one", "two", env=B).code == 0
    assert hook_paths.merge_heads(str(wt)) == [one, two]
    edit(wt, "src/api/two.py", "2, and more\n")
    git(wt, "add", "-A")
    refused = commit(wt, env=B)
    assert refused.code == 1 and held_paths(refused) == ["src/api/two.py"]
    git(wt, "restore", "--source", "two", "--staged", "--worktree", "src/api/two.py")
    got = commit(wt, env=B)
    assert got.code == 0 and not alock_lines(got), got.err
    assert parents(wt) == 3


def test_a_cherry_pick_is_an_ordinary_commit(hooked: Path) -> None:
    """The commit it makes is new: every path it changes is the committer's doing."""
    _branch(hooked, "side", {"src/api/auth.py": "side\n", "src/api/picked.py": "p\n"})
    edit(hooked, "src/api/auth.py", "main\n")
    git(hooked, "add", "-A")
    assert commit(hooked, env=A).code == 0
    assert run_git(hooked, "cherry-pick", "side", env=B).code != 0
    assert (hooked / ".git" / "CHERRY_PICK_HEAD").exists()
    edit(hooked, "src/api/auth.py", "resolved\n")
    git(hooked, "add", "-A")
    got = commit(hooked, env=B)
    assert got.code == 0
    assert held_paths(got) == ["src/api/auth.py", "src/api/picked.py"]


def test_no_merge_no_extra_git_call(hooked: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []
    real = hook_paths.start_git

    def counting(args: list[str], cwd: str | None = None) -> Process:
        started.append(args[0])
        return real(args, cwd)

    monkeypatch.setattr(hook_paths, "start_git", counting)
    edit(hooked, "src/api/auth.py", "changed\n")
    git(hooked, "add", "-A")
    assert hook_paths.staged_paths(str(hooked)) == ["src/api/auth.py"]
    assert started == ["diff"]
    started.clear()
    assert hook_paths.merge_heads(str(hooked / "src")) == []  # no .git here: git names the file
    assert started == ["rev-parse"]


def test_core_hooks_path(repo: Path) -> None:
    git(repo, "config", "core.hooksPath", "githooks")
    got = alock(repo, "install-hooks")
    assert got.code == 0 and got.word.startswith("INSTALLED pre-commit")
    assert hook_install.is_ours(repo / "githooks" / "pre-commit")
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert alock(repo, "acquire", "src/**", **A).code == 0
    edit(repo, "src/app.py", "changed\n")
    git(repo, "add", "src")
    assert alock_lines(commit(repo, env=B))[0].startswith("alock: HELD src/app.py")


def test_not_installed_says_so_once_and_lets_the_commit_through(repo: Path) -> None:
    target = repo / ".git" / "hooks" / "pre-commit"
    shutil.copy(PROJECT / "hooks" / "pre-commit", target)
    edit(repo, "src/app.py", "changed\n")
    git(repo, "add", "-A")
    env = {"PATH": "/usr/bin:/bin"}
    got = subprocess.run(
        ["git", "commit", "-q", "-m", "c"],
        cwd=repo,
        env={**os.environ, **env},
        text=True,
        capture_output=True,
    )
    assert got.returncode == 0
    assert got.stderr.count("gitlocks is not installed here") == 1


def test_an_interpreter_without_gitlocks_says_so_and_lets_the_commit_through(
    repo: Path, tmp_path: Path
) -> None:
    """The interpreter the hook recorded no longer has gitlocks (uninstalled, a venv
    rebuilt): one clear line, no traceback, and the commit goes through."""
    bare = tmp_path / "python-without-site"
    bare.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S -E "$@"\n')
    bare.chmod(0o755)
    (repo / ".git" / "hooks" / "pre-commit").write_text(
        hook_install.shim_text("pre-commit", str(bare))
    )
    (repo / ".git" / "hooks" / "pre-commit").chmod(0o755)
    edit(repo, "src/app.py", "changed\n")
    git(repo, "add", "-A")
    got = commit(repo, env=B)
    assert got.code == 0, got.err
    assert "Traceback" not in got.err
    assert got.err.count("alock: gitlocks is not importable here") == 1, got.err


# The boot of the shims 0.1 wrote, which read gitlocks' compiled modules from a bundle (gone).
_BUNDLE_BOOT = """    exec "$ALOCK_PYTHON" -c 'import gc, sys
gc.disable()
if sys.path[:1] == [""]:
    del sys.path[0]  # not the repository being committed to (none with -P, PYTHONSAFEPATH)
try:
    from gitlocks import bundle
    bundle.install()
except ImportError:
    pass
try:
"""


def test_a_shim_of_an_older_version_still_runs_and_install_upgrades_it(hooked: Path) -> None:
    path = hooked / ".git" / "hooks" / "pre-commit"
    current = path.read_text()
    boot = current.index('    exec "$ALOCK_PYTHON" -c')
    older = current[:boot] + _BUNDLE_BOOT + current[current.index("    from gitlocks.main") :]
    path.write_text(older)
    edit(hooked, "src/api/auth.py", "changed\n")
    git(hooked, "add", "-A")
    got = commit(hooked, env=B)
    assert got.code == 0 and "Traceback" not in got.err, got.err
    assert alock_lines(got)[0].startswith("alock: HELD src/api/auth.py by agent-a")
    again = alock(hooked, "install-hooks", "--json").json()["hooks"]
    assert [e["status"] for e in again if e["hook"] == "pre-commit"] == ["updated"]
    assert path.read_text() == current


# --- install, chaining, uninstall ----------------------------------------------------------


def test_bundled_shims_are_the_installed_text() -> None:
    for name in hooks.HOOK_NAMES:
        assert (PROJECT / "hooks" / name).read_text() == hook_install.shim_text(name)
        assert os.access(PROJECT / "hooks" / name, os.X_OK)


def test_install_is_idempotent_and_uninstall_cleans_up(repo: Path) -> None:
    first = alock(repo, "install-hooks", "--json")
    assert first.code == 0
    entries = first.json()["hooks"]
    assert [e["hook"] for e in entries] == [
        "pre-commit",
        "commit-msg",
        "prepare-commit-msg",
        "post-commit",
        "post-merge",
        "post-rewrite",
    ]
    assert all(e["status"] == "installed" and e["chained"] is None for e in entries)
    assert alock(repo, "install-hooks").word.startswith("ALREADY INSTALLED pre-commit")
    both = alock(repo, "uninstall-hooks")
    assert both.code == 0
    # Only what was installed is reported: pre-push never was.
    assert [ln.split(" (")[0] for ln in both.out.splitlines()] == [
        "UNINSTALLED pre-commit",
        "UNINSTALLED commit-msg",
        "UNINSTALLED prepare-commit-msg",
        "UNINSTALLED post-commit",
        "UNINSTALLED post-merge",
        "UNINSTALLED post-rewrite",
    ]
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    again = alock(repo, "uninstall-hooks")
    assert [ln.split(" (")[0] for ln in again.out.splitlines()] == ["NOT INSTALLED pre-commit"]


def test_a_hooks_directory_install_made_goes_with_the_last_hook(repo: Path) -> None:
    git(repo, "config", "core.hooksPath", ".githooks")
    assert alock(repo, "install-hooks", "--pre-push").code == 0
    assert (repo / ".githooks" / "pre-commit").is_file()
    got = alock(repo, "uninstall-hooks")
    assert [ln.split(" (")[0] for ln in got.out.splitlines()] == [
        "UNINSTALLED pre-commit",
        "UNINSTALLED commit-msg",
        "UNINSTALLED prepare-commit-msg",
        "UNINSTALLED post-commit",
        "UNINSTALLED post-merge",
        "UNINSTALLED post-rewrite",
        "UNINSTALLED pre-push",
    ]
    assert not (repo / ".githooks").exists()
    (repo / ".githooks").mkdir()  # one the user made stays, even empty
    assert alock(repo, "install-hooks").code == 0
    assert alock(repo, "uninstall-hooks").code == 0
    assert (repo / ".githooks").is_dir()


def test_a_parent_checks_its_sub_agents_path_as_acquire_decides(repo: Path) -> None:
    kid = {"AGENT_ID": "kid", "AGENT_PARENT_ID": "boss"}
    assert alock(repo, "acquire", "src/**", **kid).code == 0
    boss = alock(repo, "check", "src/x.py", AGENT_ID="boss")
    assert boss.code == 1 and boss.word.startswith("HELD src/x.py by kid"), boss
    assert alock(repo, "acquire", "src/x.py", AGENT_ID="boss").code == 1
    assert alock(repo, "acquire", "lib/**", AGENT_ID="boss").code == 0
    mine = alock(repo, "check", "lib/x.py", **kid)
    assert mine.code == 0 and mine.word.startswith("YOURS lib/x.py"), mine


def _foreign(path: Path, body: str, mode: int = 0o751) -> bytes:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(mode)
    return path.read_bytes()


def test_foreign_pre_commit_hook_is_chained_and_restored(repo: Path) -> None:
    hook = repo / ".git" / "hooks" / "pre-commit"
    mark = repo / ".git" / "foreign-ran"
    original = _foreign(hook, f'echo ran >> "{mark}"\nexit "${{FOREIGN_EXIT:-0}}"')
    got = alock(repo, "install-hooks")
    assert "runs your previous hook first, kept as alock-chained/pre-commit" in got.out
    assert alock(repo, "acquire", "src/**", **A).code == 0
    edit(repo, "src/app.py", "changed\n")
    git(repo, "add", "-A")
    failed = commit(repo, env={**B, "FOREIGN_EXIT": "3"})
    assert failed.code != 0 and head_subject(repo) == "initial"
    ok = commit(repo, env=B)
    assert ok.code == 0 and alock_lines(ok)[0].startswith("alock: HELD src/app.py")
    assert mark.read_text() == "ran\nran\n"
    assert alock(repo, "install-hooks").word.startswith("ALREADY INSTALLED")
    gone = alock(repo, "uninstall-hooks")
    assert "your previous hook is back in place" in gone.out
    assert hook.read_bytes() == original
    assert stat.S_IMODE(hook.stat().st_mode) == 0o751
    assert not (hook.parent / "alock-chained").exists()


def test_install_refuses_when_it_cannot_chain(repo: Path) -> None:
    hooks_dir = repo / ".git" / "hooks"
    _foreign(hooks_dir / "pre-commit", "exit 0")
    _foreign(hooks_dir / "pre-commit.alock-chained", "exit 0")
    got = alock(repo, "install-hooks")
    assert got.code == 1 and "already exists" in got.err
    (hooks_dir / "pre-commit.alock-chained").unlink()
    (hooks_dir / "alock-chained").mkdir()
    _foreign(hooks_dir / "alock-chained" / "pre-commit", "exit 0")
    got = alock(repo, "install-hooks")
    assert got.code == 1 and "already exists" in got.err


def test_chained_hook_managers_keep_their_name_and_folder(repo: Path) -> None:
    """Hook managers dispatch on their own file name and read files next to it (husky:
    ``. "$(dirname "$0")/husky.sh"``, then ``case $(basename "$0")``; overcommit)."""
    hooks_dir = repo / ".git" / "hooks"
    mark = repo / ".git" / "ran"
    (hooks_dir / "husky.sh").write_text(
        'case $(basename "$0") in\n'
        f'pre-commit) echo "sh $# $1" >> "{mark}" ;;\n'
        '*) echo "husky: unknown hook $0" >&2; exit 9 ;;\n'
        "esac\n"
    )
    original = _foreign(hooks_dir / "pre-commit", '. "$(dirname "$0")/husky.sh"', 0o755)
    runner = (
        f"#!{sys.executable}\n"
        "import os, sys\n"
        "name = os.path.basename(sys.argv[0])\n"
        f"open({str(mark)!r}, 'a').write(name + chr(10))\n"
        "sys.exit(0 if name == 'pre-push' else 9)\n"
    )
    (hooks_dir / "pre-push").write_text(runner)
    (hooks_dir / "pre-push").chmod(0o755)
    assert alock(repo, "install-hooks", "--pre-push").code == 0
    assert (hooks_dir / "alock-chained" / "pre-commit").read_bytes() == original
    edit(repo, "src/app.py", "changed\n")
    git(repo, "add", "-A")
    got = commit(repo, env=B)
    assert got.code == 0, got.err
    bare = _bare(repo.parent)
    pushed = run_git(repo, "push", "-q", bare, "HEAD:refs/heads/main", env=B)
    assert pushed.code == 0, pushed.err
    assert mark.read_text() == "sh 0 \npre-push\n"
    assert alock(repo, "uninstall-hooks").code == 0
    assert (hooks_dir / "pre-commit").read_bytes() == original
    assert (hooks_dir / "pre-push").read_text() == runner
    assert not (hooks_dir / "alock-chained").exists()


def test_a_relative_symlink_hook_still_resolves_and_is_restored(repo: Path) -> None:
    hooks_dir = repo / ".git" / "hooks"
    scripts = repo / "scripts"
    scripts.mkdir()
    mark = repo / ".git" / "ran"
    _foreign(scripts / "check.sh", f'echo ran >> "{mark}"', 0o755)
    link = os.path.relpath(scripts / "check.sh", hooks_dir)
    (hooks_dir / "pre-commit").symlink_to(link)
    assert alock(repo, "install-hooks").code == 0
    edit(repo, "src/app.py", "changed\n")
    git(repo, "add", "-A")
    assert commit(repo, env=B).code == 0
    assert mark.read_text() == "ran\n"
    assert alock(repo, "uninstall-hooks").code == 0
    assert os.readlink(hooks_dir / "pre-commit") == link


def _old_install(hooks_dir: Path, hook: str, body: str) -> bytes:
    """What an earlier version left: its shim, and the foreign hook beside it."""
    kept = _foreign(hooks_dir / f"{hook}.alock-chained", body, 0o750)
    old_shim = hook_install.shim_text(hook).replace(
        '"$(dirname "$0")/alock-chained/$hook"', '"$(dirname "$0")/$hook.alock-chained"'
    )
    (hooks_dir / hook).write_text(old_shim)
    (hooks_dir / hook).chmod(0o755)
    return kept


def test_the_previous_layout_is_restored_and_upgraded(repo: Path) -> None:
    hooks_dir = repo / ".git" / "hooks"
    kept = _old_install(hooks_dir, "pre-commit", "exit 0")
    gone = alock(repo, "uninstall-hooks")
    assert "your previous hook is back in place" in gone.out
    assert (hooks_dir / "pre-commit").read_bytes() == kept
    assert stat.S_IMODE((hooks_dir / "pre-commit").stat().st_mode) == 0o750
    assert not (hooks_dir / "pre-commit.alock-chained").exists()
    (hooks_dir / "pre-commit").unlink()
    mark = repo / ".git" / "ran"
    kept = _old_install(hooks_dir, "pre-commit", f'echo ran >> "{mark}"')
    again = alock(repo, "install-hooks", "--json").json()["hooks"][0]
    assert again["status"] == "updated"
    assert again["chained"].endswith("alock-chained/pre-commit")
    assert (hooks_dir / "alock-chained" / "pre-commit").read_bytes() == kept
    assert not (hooks_dir / "pre-commit.alock-chained").exists()
    edit(repo, "src/app.py", "changed\n")
    git(repo, "add", "-A")
    assert commit(repo, env=B).code == 0 and mark.read_text() == "ran\n"


def test_foreign_pre_push_hook_sees_stdin_too(hooked: Path, tmp_path: Path) -> None:
    hooks_dir = hooked / ".git" / "hooks"
    alock(hooked, "uninstall-hooks")
    seen = tmp_path / "seen"
    _foreign(hooks_dir / "pre-push", f'cat > "{seen}"', 0o755)
    assert alock(hooked, "install-hooks", "--pre-push").code == 0
    bare = _bare(tmp_path)
    edit(hooked, "src/api/auth.py", "pushed\n")
    git(hooked, "commit", "-q", "--no-verify", "-am", "p")
    got = run_git(hooked, "push", "-q", str(bare), "HEAD:refs/heads/main", env=B)
    assert got.code == 0, got.err
    assert seen.read_text().startswith("HEAD ")
    assert alock_lines(got)[0].startswith("alock: HELD src/api/auth.py")


# --- pre-push --------------------------------------------------------------------------------


def _bare(tmp_path: Path) -> str:
    bare = tmp_path / "remote.git"
    if not bare.exists():
        subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    return f"file://{bare}"


def test_pre_push_warns_blocks_and_skips_what_the_remote_has(hooked: Path, tmp_path: Path) -> None:
    url = _bare(tmp_path)
    git(hooked, "remote", "add", "origin", url)
    first = run_git(hooked, "push", "-q", "origin", "main", env=B)
    # A new branch: every commit not on a remote is checked, including src/api/auth.py's.
    assert first.code == 0 and alock_lines(first)[0].startswith("alock: HELD src/api/auth.py")
    again = run_git(hooked, "push", "-q", "origin", "main", env=B)
    assert not alock_lines(again)
    edit(hooked, "src/web/page.py")
    git(hooked, "add", "-A")
    git(hooked, "commit", "-q", "--no-verify", "-m", "web")
    quiet = run_git(hooked, "push", "-q", "origin", "main", env=B)
    assert quiet.code == 0 and not alock_lines(quiet), "only the new commit is checked"
    git(hooked, "config", "alock.hookMode", "block")
    edit(hooked, "src/api/auth.py", "blocked\n")
    git(hooked, "commit", "-q", "--no-verify", "-am", "api2")
    refused = run_git(hooked, "push", "-q", "origin", "main", env=B)
    assert refused.code != 0
    assert alock_lines(refused)[-1].startswith("alock: REFUSED push")
    assert run_git(hooked, "push", "-q", "origin", "main", env=A).code == 0
    assert run_git(hooked, "push", "-q", "--no-verify", "origin", "main:gone").code == 0
    deleted = run_git(hooked, "push", "-q", "origin", ":gone", env=B)
    assert deleted.code == 0 and not alock_lines(deleted)


def test_pre_push_checks_what_a_merge_itself_changes(hooked: Path, tmp_path: Path) -> None:
    """A conflict resolution inside a claimed area is a change, though both parents are
    already on the remote; a clean merge of pushed work is not the pusher's change."""
    git(hooked, "remote", "add", "origin", _bare(tmp_path))
    # The holder pushes two diverging edits of its file: main and a side branch.
    git(hooked, "checkout", "-q", "-b", "side")
    edit(hooked, "src/api/auth.py", "side\n")
    edit(hooked, "src/api/clean.py", "side only\n")
    git(hooked, "add", "-A")
    git(hooked, "commit", "-q", "--no-verify", "-m", "side")
    git(hooked, "checkout", "-q", "main")
    edit(hooked, "src/api/auth.py", "main\n")
    git(hooked, "commit", "-q", "--no-verify", "-am", "main")
    assert run_git(hooked, "push", "-q", "origin", "main", "side", env=A).code == 0
    git(hooked, "fetch", "-q", "origin")
    git(hooked, "config", "alock.hookMode", "block")
    # Another agent merges them, resolving the conflict inside the claim.
    assert run_git(hooked, "merge", "-q", "--no-verify", "origin/side").code != 0
    edit(hooked, "src/api/auth.py", "resolved\n")
    git(hooked, "add", "-A")
    git(hooked, "commit", "-q", "--no-verify", "--no-edit")
    refused = run_git(hooked, "push", "-q", "origin", "main", env=B)
    assert refused.code != 0, refused.err
    held = [line for line in alock_lines(refused) if line.startswith("alock: HELD ")]
    assert [line.split()[2] for line in held] == ["src/api/auth.py"]
    assert run_git(hooked, "push", "-q", "origin", "main", env=A).code == 0
    # A clean merge of pushed work changes nothing of its own: nothing to report.
    git(hooked, "checkout", "-q", "-b", "other", "origin/side")
    edit(hooked, "notes.txt", "mine\n")
    git(hooked, "add", "-A")
    git(hooked, "commit", "-q", "--no-verify", "-m", "notes")
    git(hooked, "merge", "-q", "--no-verify", "--no-edit", "origin/main")
    clean = run_git(hooked, "push", "-q", "origin", "other", env=B)
    assert clean.code == 0 and not alock_lines(clean), clean.err


def test_parse_name_status_reads_combined_merge_entries() -> None:
    raw = b"MM\0a.py\0a.py\0a.py\0RR\0c.txt\0c2.txt\0c3.txt\0R100\0x\0y\0M\0z\0"
    assert hook_paths.parse_name_status(raw) == ["a.py", "c.txt", "c2.txt", "c3.txt", "x", "y", "z"]
    octopus = b"MMM\0p\0q\0r\0s\0A\0t\0"
    assert hook_paths.parse_name_status(octopus) == ["p", "q", "r", "s", "t"]


def test_pushed_paths_skip_lock_refs_and_deletions(hooked: Path) -> None:
    head = git(hooked, "rev-parse", "HEAD").strip()
    zero = "0" * 40
    updates = [
        hook_paths.RefUpdate("refs/agent-locks/x", head, "refs/agent-locks/x", zero),
        hook_paths.RefUpdate("(delete)", zero, "refs/heads/gone", head),
    ]
    assert hook_paths.pushed_paths(updates, cwd=str(hooked)) == []


def test_control_characters_in_names_and_reasons_are_escaped(hooked: Path) -> None:
    """One printed line per held lock: a newline in a path or a reason cannot fake one."""
    fake = "\nalock: WARNING: nothing here"
    assert alock(hooked, "acquire", "docs/**", "-m", f"docs{fake}\x1b[2J", **A).code == 0
    edit(hooked, f"src/api/evil{fake}.py")
    edit(hooked, "docs/guide.md")
    git(hooked, "add", "-A")
    got = commit(hooked, env=B)
    assert got.code == 0
    lines = got.err.splitlines()
    assert all(line.startswith("alock: ") for line in lines), lines
    assert len(lines) == 3 and "\x1b" not in got.err
    assert lines[0].startswith("alock: HELD docs/guide.md by agent-a")
    assert '"docs\\nalock: WARNING: nothing here\\x1b[2J"' in lines[0]
    assert lines[1].startswith("alock: HELD src/api/evil\\nalock: WARNING: nothing here.py by")
    assert lines[2].startswith("alock: WARNING: 2 paths")


def test_printable() -> None:
    assert printable("plain é ü") == "plain é ü"
    assert printable("a\nb\rc\td") == "a\\nb\\rc\\td"
    assert printable("\x00\x1b\x7f\x85\u2028") == "\\x00\\x1b\\x7f\\x85\\u2028"


def _expired_a_moment_ago(repo: Path) -> None:
    assert alock(repo, "acquire", "src/**", "--ttl", "1", **A).code == 0
    time.sleep(2.2)


def test_remote_mode_allows_for_clock_skew(repo: Path) -> None:
    """In remote mode a lock lives until expiry plus alock.clockSkew, as for the store."""
    _expired_a_moment_ago(repo)
    assert alock(repo, "install-hooks").code == 0
    git(repo, "config", "alock.hookMode", "block")
    edit(repo, "src/app.py", "changed\n")
    git(repo, "add", "-A")
    assert commit(repo, env=B).code == 0, "local mode: expired is expired"
    edit(repo, "src/app.py", "again\n")
    git(repo, "add", "-A")
    git(repo, "config", "alock.remote", "origin")
    got = commit(repo, env=B)
    assert got.code == 1, "remote mode, default allowance: 30s"
    # (The lock remote cannot be asked here: the hook judges by its view, and says so.)
    assert "alock: HELD src/app.py by agent-a" in got.err, got.err
    git(repo, "config", "alock.clockSkew", "2m")
    assert commit(repo, env=B).code == 1
    git(repo, "config", "alock.clockSkew", "0")
    assert commit(repo, env=B).code == 0


@pytest.mark.parametrize(
    ("config", "skew", "warned"),
    [
        ({}, 0, False),
        ({"alock.clockskew": "5m"}, 0, False),
        ({"alock.remote": "origin"}, 30, False),
        ({"alock.remote": ""}, 0, False),
        ({"alock.remote": "origin", "alock.clockskew": "2m"}, 120, False),
        ({"alock.remote": "origin", "alock.clockskew": "0"}, 0, False),
        ({"alock.remote": "origin", "alock.clockskew": "0s"}, 0, False),
        ({"alock.remote": "origin", "alock.clockskew": "soon"}, 30, True),
    ],
)
def test_hook_config_clock_skew(config: dict[str, str], skew: int, warned: bool) -> None:
    raw = b"".join(f"{key}\n{value}\0".encode() for key, value in config.items())
    parsed = hook_config(Settings.parse(raw))
    assert parsed.skew == skew
    assert (parsed.warning is not None) == warned
    if warned:
        assert "alock.clockSkew" in str(parsed.warning)


def test_check_paths_decides_odd_names_from_one_reading(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Names no pattern can spell are checked one lock at a time, but the friends and the
    live locks are worked out once, not once per name."""
    from gitlocks.core.table import Table
    from gitlocks.identity import resolve_identity
    from gitlocks.service import locks
    from gitlocks.service.context import Context
    from gitlocks.store.local import Store

    assert alock(repo, "acquire", "src/**", **A).code == 0
    assert alock(repo, "acquire", "docs/**", **B).code == 0
    calls = []
    family = Table.family

    def counting(self: Table, holder: str, parent: str | None) -> Friends:
        calls.append(holder)
        return family(self, holder, parent)

    monkeypatch.setattr(Table, "family", counting)
    ident = resolve_identity(as_id="agent-b", env={"AGENT_PARENT_ID": "lead-b"})
    ctx = Context(store=Store.discover(repo), identity=ident)

    def statuses(paths: list[str]) -> list[str]:
        calls.clear()
        return [item.status for item in locks.check_paths(ctx, paths)]

    assert statuses(["src/a\nb", "docs/c\td", "free/\x01"]) == ["held", "yours", "free"]
    few = len(calls)
    many = [f"src/{i}\n" for i in range(10)] + [f"docs/{i}\t" for i in range(10)]
    assert statuses(many) == ["held"] * 10 + ["yours"] * 10
    assert len(calls) == few


# --- speed and imports -----------------------------------------------------------------------


def test_hook_path_does_not_import_the_command_line_framework(hooked: Path) -> None:
    edit(hooked, "src/api/auth.py", "changed\n")
    git(hooked, "add", "-A")
    probe = (
        "import sys\n"
        "from gitlocks.main import main\n"
        "code = main(['hook', 'pre-commit'])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', 'pygit2')"
        " or m in ('gitlocks.cli.locks', 'gitlocks.store.local', 'gitlocks.service.locks'))\n"
        "print(code, heavy)\n"
    )
    got = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=hooked,
        capture_output=True,
        text=True,
        env={**os.environ, **B},
    )
    assert got.stdout.strip() == "0 []", got.stderr
    assert "HELD src/api/auth.py" in got.stderr


def test_check_staged_verb(hooked: Path) -> None:
    edit(hooked, "src/api/auth.py", "changed\n")
    edit(hooked, "src/web/page.py")
    git(hooked, "add", "-A")
    got = alock(hooked, "check", "--staged", **B)
    assert got.code == 1
    assert got.out.splitlines()[0].startswith("HELD src/api/auth.py by agent-a")
    assert "FREE src/web/page.py" in got.out
    doc = alock(hooked, "check", "--staged", "--json", **B).json()
    assert [(d["path"], d["status"]) for d in doc] == [
        ("src/api/auth.py", "held"),
        ("src/web/page.py", "free"),
    ]
    assert alock(hooked, "check", "--staged", **A).code == 0


# --- the pre-commit framework ----------------------------------------------------------------


def _manifest() -> list[dict[str, object]]:
    yaml = pytest.importorskip("yaml")
    data = yaml.safe_load((PROJECT / ".pre-commit-hooks.yaml").read_text())
    assert isinstance(data, list)
    return data


def test_framework_manifest_shape_and_entry(hooked: Path) -> None:
    by_id = {hook["id"]: hook for hook in _manifest()}
    commit_hook = by_id["gitlocks"]
    assert commit_hook["language"] == "python" and commit_hook["pass_filenames"] is False
    edit(hooked, "src/api/auth.py", "changed\n")
    git(hooked, "add", "-A")
    entry = str(commit_hook["entry"]).split()
    proc = subprocess.run(
        [os.path.join(BIN, entry[0]), *entry[1:]],
        cwd=hooked,
        capture_output=True,
        text=True,
        env={**os.environ, **B},
    )
    assert proc.returncode == 0 and "alock: HELD src/api/auth.py" in proc.stderr
    if shutil.which("pre-commit", path=BIN):
        check = subprocess.run(
            [os.path.join(BIN, "pre-commit"), "validate-manifest", ".pre-commit-hooks.yaml"],
            cwd=PROJECT,
            capture_output=True,
            text=True,
        )
        assert check.returncode == 0, check.stdout + check.stderr


def test_framework_adds_the_trailer_to_reverts_and_cherry_picks(repo: Path) -> None:
    """The manifest's prepare-commit-msg hook run by the real framework, which stands
    between git and the hook (git, its hook shim, pre-commit, then git-alock): the commits
    of a revert, edited or not, and of a cherry-pick carry the agent's trailer; a plain
    commit gets none from it (commit-msg is not installed here)."""
    framework = shutil.which("pre-commit", path=BIN)
    if framework is None:
        pytest.skip("pre-commit is not installed")
    hook = {h["id"]: h for h in _manifest()}["gitlocks-agent-id-sequenced"]
    assert hook["stages"] == ["prepare-commit-msg"] and hook["pass_filenames"] is True
    entry = str(hook["entry"]).split()
    local = {
        "id": hook["id"],
        "name": hook["name"],
        "entry": " ".join([os.path.join(BIN, entry[0]), *entry[1:]]),
        "language": "system",
        "pass_filenames": True,
        "always_run": True,
        "stages": hook["stages"],
    }
    config = {"repos": [{"repo": "local", "hooks": [local]}]}
    (repo / ".pre-commit-config.yaml").write_text(json.dumps(config))  # JSON is YAML
    env = {**os.environ, "AGENT_ID": "worker-1", "PRE_COMMIT_HOME": str(repo.parent / "pc")}
    installed = subprocess.run(
        [framework, "install", "-t", "prepare-commit-msg"],
        cwd=repo, capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr

    def run(*args: str) -> None:
        proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr

    def trailers() -> list[str]:
        body = git(repo, "log", "-1", "--format=%(trailers:key=Agent-Id,valueonly)")
        return body.split()

    git(repo, "add", ".pre-commit-config.yaml")
    git(repo, "commit", "-qm", "hooks", "--no-verify")
    (repo / "src" / "app.py").write_text("changed\n")
    run("commit", "-qam", "change")
    assert trailers() == []  # commit-msg's to add, and it is not installed here
    run("revert", "--no-edit", "HEAD")
    assert trailers() == ["worker-1"]
    run("-c", "core.editor=true", "revert", "--edit", "HEAD")
    assert trailers() == ["worker-1"]
    run("checkout", "-q", "-b", "side", "HEAD~2")
    (repo / "src" / "app.py").write_text("picked\n")
    run("commit", "-qam", "to pick")
    run("checkout", "-q", "-")
    run("cherry-pick", "side")
    assert trailers() == ["worker-1"]


def _project_copy(tmp_path: Path) -> Path:
    """The project as a fresh one-commit repository: what try-repo installs from."""
    copy = tmp_path / "gitlocks-src"
    copy.mkdir()
    for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        shutil.copy(PROJECT / name, copy / name)
    shutil.copytree(
        PROJECT / "gitlocks", copy / "gitlocks", ignore=shutil.ignore_patterns("__pycache__")
    )
    if (PROJECT / "man").is_dir():  # pyproject.toml installs the manual page as data
        shutil.copytree(PROJECT / "man", copy / "man")
    git(copy, "init", "-q")
    git(copy, "add", "-A")
    git(copy, "commit", "-q", "-m", "gitlocks")
    return copy


@pytest.mark.slow
def test_framework_try_repo(hooked: Path, tmp_path: Path) -> None:
    """The manifest through the real framework: it builds gitlocks into its own venv."""
    framework = shutil.which("pre-commit", path=BIN)
    if framework is None:
        pytest.skip("pre-commit is not installed")
    source = str(_project_copy(tmp_path))
    edit(hooked, "src/api/auth.py", "changed\n")
    git(hooked, "add", "-A")

    def try_repo() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [framework, "try-repo", source, "gitlocks"],
            cwd=hooked,
            capture_output=True,
            text=True,
            env={**os.environ, **B},
            timeout=600,
        )

    warned = try_repo()
    assert warned.returncode == 0, warned.stdout + warned.stderr
    assert "alock: HELD src/api/auth.py by agent-a" in warned.stdout
    git(hooked, "config", "alock.hookMode", "block")
    blocked = try_repo()
    assert blocked.returncode == 1, blocked.stdout
    assert "REFUSED commit" in blocked.stdout


# --- the hook's check equals the command line's ---------------------------------------------


def test_hook_check_agrees_with_locks_check(repo: Path) -> None:
    """The hook restates who is a friend (it cannot import the service layer): hold them equal."""
    from gitlocks.core.record import utcnow
    from gitlocks.identity import resolve_identity
    from gitlocks.service import locks
    from gitlocks.service.context import Context
    from gitlocks.store.local import Store

    family = {
        "lead": None,
        "worker": "lead",
        "worker-sub": "worker",
        "sibling": "lead",
        "stranger": "elsewhere",
    }
    for i, (holder, parent) in enumerate(family.items()):
        env = {"AGENT_ID": holder, "AGENT_PARENT_ID": parent or "root"}
        assert alock(repo, "acquire", f"area{i}/**", "src/*.py", **env).code in (0, 1)
    paths = [f"area{i}/x" for i in range(len(family))] + ["src/app.py", "free/x"]
    for holder, parent in family.items():
        ident = resolve_identity(as_id=holder, env={"AGENT_PARENT_ID": parent or "root"})
        ctx = Context(store=Store.discover(repo), identity=ident)
        expected = {i.path for i in locks.check_paths(ctx, paths) if i.status == "held"}
        table = ctx.store.read_table()
        got = {h.path for h in hooks.find_held(table, ident, utcnow(), paths)}
        assert got == expected, holder


def test_read_table_through_git_equals_the_store(hooked: Path) -> None:
    from gitlocks.store.local import Store

    assert alock(hooked, "acquire", "docs/**", "-m", "docs", **B).code == 0
    store = Store.discover(hooked)
    common = str(store.common_dir)
    found = fast_table.list_refs(str(hooked))
    for kept in (None, common):  # every record read, or the kept verdicts
        objects = fast_table.hook_objects(common, str(hooked))
        table = fast_table.read_table(found, objects, False, 0, kept)
        assert dict(table.records) == dict(store.read_table().records)
        assert len(table.records) == 2 and not table.problems
    table = fast_table.read_lock_table(common, str(hooked), False)
    assert dict(table.records) == dict(store.read_table().records)


def test_hook_and_check_judge_a_dead_holder_alike(repo: Path, sleeper: Any) -> None:
    """A lock whose session died (here, in this pid namespace) blocks no path: not for
    ``check --staged``, not for the hook in block mode."""
    from gitlocks.core.record import utcnow
    from gitlocks.identity import SessionProcess, process_start_time, resolve_identity
    from gitlocks.service import locks
    from gitlocks.service.context import Context
    from gitlocks.store.local import Store

    assert alock(repo, "install-hooks").code == 0
    git(repo, "config", "alock.hookMode", "block")
    start = process_start_time(sleeper.pid)
    assert start
    session = SessionProcess(sleeper.pid, start, "sleeper", os.uname().nodename)
    ident = resolve_identity(None, env={"AGENT_ID": "agent-a"}, session=session)
    ctx = Context(store=Store.discover(repo), identity=ident)
    assert locks.acquire(ctx, [make_entry("src/**")]).status == "acquired"
    edit(repo, "src/app.py", "changed\n")
    git(repo, "add", "-A")
    assert alock(repo, "check", "--staged", **B).word.startswith("HELD")  # alive: held
    sleeper.kill()
    sleeper.wait()
    checked = alock(repo, "check", "--staged", **B)
    assert checked.code == 0 and checked.word.startswith("FREE"), checked
    table = Store.discover(repo).read_table()
    ident_b = resolve_identity(None, env={"AGENT_ID": "agent-b"})
    assert hooks.find_held(table, ident_b, utcnow(), ["src/app.py"]) == []
    done = commit(repo, env=B)
    assert done.code == 0 and not alock_lines(done), done


def test_the_shim_keeps_the_path_python_gives_it_under_safe_path(repo: Path) -> None:
    """The shim drops the working directory Python puts first on ``sys.path`` (the
    repository being committed to); with ``PYTHONSAFEPATH`` Python puts none there, and the
    first entry is a real one (here the only one gitlocks is found through)."""
    text = hook_install.shim_text("commit-msg", sys.executable)
    code = text.split('"$ALOCK_PYTHON" -c \'', 1)[1].split('\' "$hook"', 1)[0]
    message = repo / "MSG"
    message.write_text("a change\n")
    package_parent = str(PROJECT)  # the checkout's gitlocks, found through PYTHONPATH alone
    env = {**os.environ, "PYTHONSAFEPATH": "1", "PYTHONPATH": package_parent}
    done = subprocess.run(
        [sys.executable, "-S", "-c", code, "commit-msg", str(message)],
        cwd=repo, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "not importable" not in done.stderr
