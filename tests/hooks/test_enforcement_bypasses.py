"""An outsider's attacks on enforcement: the guard, the commit hooks, verify and the
remote's pre-receive check, each driven as it really runs (real repositories, real
pushes to bare remotes with the hook installed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git
from support.cli import alock, run_git
from support.remote import make_bare, make_clone

from gitlocks.core.ignore import IgnoreList, newly_exempt

A = {"AGENT_ID": "agent-a"}
B = {"AGENT_ID": "agent-b"}
JOURNAL = "refs/agent-locks-meta/journal"


def commit(cwd: Path, message: str, agent: str, files: dict[str, str]) -> str:
    for rel, text in files.items():
        path = cwd / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(cwd, "add", "-A")
    git(cwd, "commit", "-q", "-m", message, "--trailer", f"Agent-Id: {agent}")
    return git(cwd, "rev-parse", "HEAD").strip()


def hosted_with_ignore(tmp_path: Path, ignore: str) -> tuple[Path, Path, Path]:
    """A bare repository with the hook whose main commits ``ignore`` as its .alockignore,
    then a claim of agent-a on src/api/**; and a plain clone of agent-b's."""
    bare = make_bare(tmp_path / "hosted.git")
    assert alock(tmp_path, "install-remote-hook", str(bare)).code == 0
    holder = make_clone(bare.as_uri(), tmp_path / "holder")
    commit(holder, "ignore list", "agent-a", {".alockignore": ignore})
    git(holder, "push", "-q", "origin", "HEAD:main")
    got = alock(holder, "acquire", "src/api/**", "-m", "rewrite auth", **A)
    assert got.code == 0, got.err
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", bare.as_uri(), "other")
    return bare, holder, other


# --- .alockignore: a change that exempts without adding a line ------------------------------


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # The last matching line decides: the same two lines, swapped.
        ("src/api/**\n!src/api/**\n", "!src/api/**\nsrc/api/**\n"),
        # A line already there, repeated after the negation that overrode it.
        ("src/api/**\n!src/api/**\n", "src/api/**\n!src/api/**\nsrc/api/**\n"),
        # A directory-only line (it matches no file) made a line for files too.
        ("src/api/auth.py/\n", "src/api/auth.py\n"),
    ],
)
def test_an_ignore_change_that_exempts_without_a_new_line_is_seen(old: str, new: str) -> None:
    before, after = IgnoreList(old), IgnoreList(new)
    assert not before.ignored("src/api/auth.py") and after.ignored("src/api/auth.py")
    assert newly_exempt(before, after), "the change exempts src/api/auth.py"


def test_reordering_the_ignore_list_is_no_two_push_bypass_of_the_remote(tmp_path: Path) -> None:
    _, _, other = hosted_with_ignore(tmp_path, "src/api/**\n!src/api/**\n")
    commit(other, "reorder", "agent-b", {".alockignore": "!src/api/**\nsrc/api/**\n"})
    first = run_git(other, "push", "origin", "HEAD:main")
    commit(other, "b edits api", "agent-b", {"src/api/auth.py": "b\n"})
    second = run_git(other, "push", "origin", "HEAD:main")
    assert first.code != 0 or second.code != 0, "agent-b edited inside agent-a's live claim"


# --- pre-push: a new branch is judged under the list before it, not its own ----------------


def test_pre_push_of_a_new_branch_judges_under_the_list_before_it(
    repo: Path, tmp_path: Path
) -> None:
    bare = tmp_path / "plain.git"
    git(tmp_path, "init", "-q", "--bare", bare.name)
    git(repo, "remote", "add", "origin", bare.as_uri())
    git(repo, "push", "-q", "origin", "HEAD:refs/heads/main")
    git(repo, "fetch", "-q", "origin")
    assert alock(repo, "acquire", "src/**", "-m", "rewrite", **A).code == 0
    assert alock(repo, "install-hooks", "--pre-push").code == 0
    git(repo, "config", "alock.hookMode", "block")
    # Committed past the pre-commit check: the list and the edit it would exempt at once.
    (repo / ".alockignore").write_text("src/\n")
    (repo / "src" / "app.py").write_text("b\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", "b edits app", "--trailer", "Agent-Id: agent-b")
    pushed = run_git(repo, "push", "origin", "HEAD:refs/heads/feature", env=B)
    assert pushed.code != 0, pushed.err
    assert "src/app.py" in pushed.err


def test_pre_push_of_a_tag_naming_a_blob_is_no_error(repo: Path, tmp_path: Path) -> None:
    bare = tmp_path / "plain.git"
    git(tmp_path, "init", "-q", "--bare", bare.name)
    git(repo, "remote", "add", "origin", bare.as_uri())
    assert alock(repo, "install-hooks", "--pre-push").code == 0
    git(repo, "config", "alock.hookMode", "block")
    git(repo, "tag", "readme", "HEAD:README.md")
    pushed = run_git(repo, "push", "origin", "refs/tags/readme")
    assert pushed.code == 0, pushed.err


# --- the table guard: a journal commit of the old shape on top of a table ----------------


@pytest.fixture
def hosted(tmp_path: Path) -> tuple[Path, Path]:
    """A bare repository with the hook, and a clone in remote mode where agent-a holds
    src/api/**."""
    bare = make_bare(tmp_path / "hosted.git")
    assert alock(tmp_path, "install-remote-hook", str(bare)).code == 0
    holder = make_clone(bare.as_uri(), tmp_path / "holder")
    got = alock(holder, "acquire", "src/api/**", "-m", "rewrite auth", **A)
    assert got.code == 0, got.err
    return bare, holder


def test_a_journal_commit_without_a_table_on_top_of_one_is_refused(
    hosted: tuple[Path, Path], tmp_path: Path
) -> None:
    bare, holder = hosted
    git(holder, "fetch", "-q", "origin", f"{JOURNAL}:refs/tmp/journal")
    tip = git(holder, "rev-parse", "refs/tmp/journal").strip()
    message = git(holder, "log", "-1", "--format=%B", tip)
    empty_tree = git(holder, "mktree").strip()
    # The shape of a journal commit from before commits carried the table: an empty tree.
    legacy = git(holder, "commit-tree", empty_tree, "-p", tip, "-m", message).strip()
    lock_ref = git(bare, "for-each-ref", "--format=%(refname)", "refs/agent-locks/").strip()
    wiped = run_git(holder, "push", "--atomic", "origin", f"{legacy}:{JOURNAL}", f":{lock_ref}")
    assert wiped.code != 0, "the table guard let the claim's lock ref go with the table"
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", bare.as_uri(), "other")
    commit(other, "b edits api", "agent-b", {"src/api/auth.py": "b\n"})
    assert run_git(other, "push", "-q", "origin", "main").code != 0


def test_a_client_notices_its_claims_lost_to_a_journal_commit_without_a_table(
    tmp_path: Path,
) -> None:
    bare = make_bare(tmp_path / "plain.git")  # a plain host: no hook
    holder = make_clone(bare.as_uri(), tmp_path / "holder", shards=1)
    assert alock(holder, "acquire", "src/api/**", "-m", "rewrite auth", **A).code == 0
    git(holder, "fetch", "-q", "origin", f"{JOURNAL}:refs/tmp/journal")
    tip = git(holder, "rev-parse", "refs/tmp/journal").strip()
    message = git(holder, "log", "-1", "--format=%B", tip)
    legacy = git(holder, "commit-tree", git(holder, "mktree").strip(), "-p", tip, "-m", message)
    lock_ref = git(bare, "for-each-ref", "--format=%(refname)", "refs/agent-locks/").strip()
    wiped = run_git(holder, "push", "origin", f"{legacy.strip()}:{JOURNAL}", f":{lock_ref}")
    assert wiped.code == 0, wiped.err
    listed = alock(holder, "list", "--fresh", "--json")
    assert listed.code == 2, listed.out
    assert "which carries no lock table" in listed.err
    assert alock(holder, "remote", "--restore").code == 0
    other = make_clone(bare.as_uri(), tmp_path / "other")
    assert alock(other, "acquire", "src/api/auth.py", **B).code == 1


# --- Codex: patches whose file names the shell makes ----------------------------------------


@pytest.fixture
def codex(tmp_path: Path) -> Path:
    """A stand-in ``codex`` running the guard through ``sh -c``, as Codex runs its hooks."""
    bindir = tmp_path / "harness"
    bindir.mkdir()
    program = bindir / "codex"
    program.write_text("#!/bin/sh\nsh -c 'git alock guard --for codex'\n")
    program.chmod(0o755)
    return program


@pytest.fixture
def api(repo: Path) -> Path:
    """``repo`` with src/api/auth.py, claimed by another agent."""
    (repo / "src" / "api").mkdir()
    (repo / "src" / "api" / "auth.py").write_text("a\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "api")
    assert alock(repo, "acquire", "src/api/**", "-m", "auth", AGENT_ID="other-agent").code == 0
    return repo


def run_codex(codex: Path, repo: Path, command: object) -> dict[str, object] | None:
    """The guard's answer to Codex's shell tool running ``command``: the hook output, or
    None for silence (the call goes on)."""
    event = {"session_id": "s-1", "turn_id": "turn-1", "transcript_path": None,
             "cwd": str(repo), "hook_event_name": "PreToolUse", "model": "gpt-5",
             "permission_mode": "default", "tool_name": "Bash", "tool_use_id": "call-1",
             "tool_input": {"command": command}}  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "AGENT_ID"}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(
        [str(codex)], cwd=repo, env=env, input=json.dumps(event), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["hookSpecificOutput"] if proc.stdout.strip() else None


def patch_of(header: str) -> str:
    return f"*** Begin Patch\n*** Update File: {header}\n@@\n-a\n+b\n*** End Patch\n"


def where_bash_applies(tmp_path: Path, argv: list[str]) -> list[str]:
    """The file names a stand-in ``apply_patch`` receives when bash runs ``argv`` for
    real (standard input or its argument)."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    log = tmp_path / "got"
    (bindir / "apply_patch").write_text(
        f'#!/bin/sh\n{{ if [ $# -gt 0 ]; then printf "%s" "$1"; else cat; fi; }} >> {log}\n'
    )
    (bindir / "apply_patch").chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, check=True)
    text = log.read_text()
    return [line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("*** Up")]


SHELL_MADE = {
    # An unquoted here-document: the shell expands it before apply_patch reads it.
    "substitution": "true; apply_patch <<EOF\n" + patch_of("$(echo src/api)/auth.py") + "EOF\n",
    "continued": "true; apply_patch <<EOF\n" + patch_of("src/ap\\\ni/auth.py") + "EOF\n",
    "variable": "D=src/api; apply_patch <<EOF\n" + patch_of("$D/auth.py") + "EOF\n",
}


@pytest.mark.parametrize("script", SHELL_MADE.values(), ids=SHELL_MADE.keys())
def test_a_file_name_the_shell_expands_is_never_judged_as_written(
    api: Path, codex: Path, tmp_path: Path, script: str
) -> None:
    assert where_bash_applies(tmp_path, ["bash", "-c", script]) == ["src/api/auth.py"]
    answer = run_codex(codex, api, script)
    assert answer is not None and answer["permissionDecision"] == "deny", answer
    assert alock(api, "list", "--json").json()[0]["holder"] == "other-agent"
    assert len(alock(api, "list", "--json").json()) == 1, "nothing claimed on a guess"


def test_a_patch_passed_to_the_shells_script_as_an_argument_is_judged(
    api: Path, codex: Path, tmp_path: Path
) -> None:
    argv = ["bash", "-c", 'cd src/api && apply_patch "$1"', "bash", patch_of("auth.py")]
    (tmp_path / "src" / "api").mkdir(parents=True)
    assert where_bash_applies(tmp_path, argv) == ["auth.py"]  # in src/api: bash cd'd there
    answer = run_codex(codex, api, argv)
    assert answer is not None and answer["permissionDecision"] == "deny", answer


@pytest.mark.parametrize("delimiter", ["E\\OF", 'E"O"F', "E'O'F"])
def test_a_here_document_ends_where_the_shell_ends_it(
    api: Path, codex: Path, tmp_path: Path, delimiter: str
) -> None:
    """A partly quoted delimiter ends at its unquoted word: what follows is the script
    again, and a second patch there is applied from the directory it cds to."""
    add = "*** Begin Patch\n*** Add File: x.py\n+x\n*** End Patch\n"
    script = (
        f"apply_patch <<{delimiter}\n{add}EOF\n"
        f"cd src/api && apply_patch <<'EOF'\n{patch_of('auth.py')}EOF\n"
    )
    (tmp_path / "src" / "api").mkdir(parents=True)
    assert where_bash_applies(tmp_path, ["bash", "-c", script]) == ["auth.py"]
    answer = run_codex(codex, api, script)
    assert answer is not None and answer["permissionDecision"] == "deny", answer


NOT_IN_SIGHT = {
    # A double-quoted patch: the shell expands $F in the header before apply_patch reads it.
    "double-quoted": 'F=src/api/auth.py; apply_patch "' + patch_of("$F") + '"',
    # $'...': one line to the guard, a patch once the shell turns each \n into a newline.
    "ansi-c": "apply_patch $'" + patch_of("src/api/auth.py").replace("\n", "\\n") + "'",
    # The patch applied is the file's; the one in sight is never read.
    "from-a-file": "apply_patch < p.txt; : '" + patch_of("free.py") + "'",
}


@pytest.mark.parametrize("script", NOT_IN_SIGHT.values(), ids=NOT_IN_SIGHT.keys())
def test_a_patch_argument_the_guard_cannot_read_is_denied(
    api: Path, codex: Path, tmp_path: Path, script: str
) -> None:
    """apply_patch given a patch the shell makes or reads elsewhere: the guard never judges
    the text in sight as the patch, nor claims a file named by it."""
    (tmp_path / "p.txt").write_text(patch_of("src/api/auth.py"))
    assert where_bash_applies(tmp_path, ["bash", "-c", script]) == ["src/api/auth.py"]
    answer = run_codex(codex, api, script)
    assert answer is not None and answer["permissionDecision"] == "deny", answer
    assert "apply_patch <<'EOF'" in str(answer["permissionDecisionReason"])
    listed = alock(api, "list", "--json").json()
    assert [(r["holder"], r["paths"]) for r in listed] == [("other-agent", ["src/api/**"])]


# --- verify in CI decides on the journal's table, as every client does ------------------------

FETCH_TABLE = (
    "+refs/agent-locks/*:refs/agent-locks/*",
    "+refs/agent-locks-meta/*:refs/agent-locks-meta/*",
)


def test_verify_in_ci_is_not_blinded_by_a_lock_ref_deleted_on_a_plain_host(
    tmp_path: Path,
) -> None:
    bare = make_bare(tmp_path / "plain.git")  # GitHub-like: no hook, verify in CI instead
    holder = make_clone(bare.as_uri(), tmp_path / "holder")
    assert alock(holder, "acquire", "src/api/**", "-m", "rewrite auth", **A).code == 0
    lock_ref = git(bare, "for-each-ref", "--format=%(refname)", "refs/agent-locks/").strip()
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", bare.as_uri(), "other")
    commit(other, "b edits api", "agent-b", {"src/api/auth.py": "b\n"})
    git(other, "push", "-q", "origin", f":{lock_ref}", "HEAD:refs/heads/feature")
    ci = tmp_path / "ci"
    git(tmp_path, "clone", "-q", bare.as_uri(), "ci")
    git(ci, "fetch", "-q", "--no-tags", "origin", *FETCH_TABLE)
    got = alock(ci, "verify", "origin/main..origin/feature")
    assert got.code == 1, got.out + got.err
    assert "src/api/auth.py" in got.out


# --- the remote: a ref moved so that claimed work is undone -----------------------------------


@pytest.mark.parametrize("how", ["force", "merge-order"])
def test_claimed_work_undone_on_a_branch_is_refused(
    hosted: tuple[Path, Path], tmp_path: Path, how: str
) -> None:
    bare, holder = hosted
    stale = tmp_path / "stale"
    git(tmp_path, "clone", "-q", bare.as_uri(), "stale")
    commit(holder, "a's work", "agent-a", {"src/api/auth.py": "a\n"})
    git(holder, "push", "-q", "origin", "HEAD:main")
    if how == "force":  # a careless agent's force push from a clone that never pulled
        commit(stale, "b's work", "agent-b", {"lib/x.py": "b\n"})
        pushed = run_git(stale, "push", "--force", "origin", "HEAD:main")
    else:  # a merge whose first parent is from before a's work, its tree without it
        git(stale, "fetch", "-q", "origin")
        old = git(stale, "rev-parse", "HEAD").strip()
        git(stale, "merge", "-q", "--no-ff", "-s", "ours", "origin/main", "-m", "merge")
        git(stale, "commit", "-q", "--amend", "-m", "merge\n\nAgent-Id: agent-b")
        assert git(stale, "rev-parse", "HEAD^1").strip() == old
        pushed = run_git(stale, "push", "origin", "HEAD:main")
    assert pushed.code != 0, "agent-a's work in its live claim was undone on main"
    assert git(bare, "show", "main:src/api/auth.py") == "a\n"


def test_the_holder_may_undo_its_own_work_and_others_work_elsewhere_lands(
    hosted: tuple[Path, Path], tmp_path: Path
) -> None:
    bare, holder = hosted
    first = git(holder, "rev-parse", "HEAD").strip()
    commit(holder, "a's work", "agent-a", {"src/api/auth.py": "a\n"})
    git(holder, "push", "-q", "origin", "HEAD:main")
    # A branch pushed, then landed on main by a fast-forward: its commits were judged.
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", bare.as_uri(), "other")
    commit(other, "b's work", "agent-b", {"lib/x.py": "b\n"})
    assert run_git(other, "push", "-q", "origin", "HEAD:feature").code == 0
    assert run_git(other, "push", "-q", "origin", "HEAD:main").code == 0
    # The holder rewinds main past its own commit: its claim, its tip's trailer.
    git(holder, "fetch", "-q", "origin")
    git(holder, "reset", "-q", "--hard", first)
    commit(holder, "a starts over", "agent-a", {"src/api/other.py": "a\n"})
    pushed = run_git(holder, "push", "--force", "origin", "HEAD:main")
    assert pushed.code == 0, pushed.err


@pytest.mark.parametrize("how", ["fast-forward", "merged-into-the-branch"])
def test_a_branch_pushed_before_a_claim_does_not_land_inside_it(
    hosted: tuple[Path, Path], tmp_path: Path, how: str
) -> None:
    """agent-b pushes a branch that edits src/api before agent-a's claim (accepted, nothing
    was claimed), then lands it on main while the claim is live: refused, as verify of the
    range reports it. Commits already on main that land on another branch are not judged
    again."""
    bare, holder = hosted
    assert alock(holder, "release", "--all", **A).code == 0
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", bare.as_uri(), "other")
    git(other, "checkout", "-q", "-b", "feature")
    commit(other, "b edits api", "agent-b", {"src/api/auth.py": "b\n"})
    assert run_git(other, "push", "-q", "origin", "feature").code == 0
    assert alock(holder, "acquire", "src/api/**", "-m", "rewrite auth", **A).code == 0
    if how == "fast-forward":
        pushed = run_git(other, "push", "origin", "feature:main")
    else:  # main merged into the branch: the merge's first parent holds the edit already
        commit(holder, "a's other work", "agent-a", {"lib/y.py": "a\n"})
        git(holder, "push", "-q", "origin", "HEAD:main")
        git(other, "fetch", "-q", "origin")
        git(other, "merge", "-q", "--no-ff", "--no-edit", "origin/main")
        git(other, "commit", "-q", "--amend", "-m", "merge main\n\nAgent-Id: agent-b")
        pushed = run_git(other, "push", "origin", "feature:main")
    assert pushed.code != 0, "b's edit landed on main inside a's live claim"
    assert "HELD src/api/auth.py" in pushed.err, pushed.err
    # Work on main landing on another branch was judged when it reached main.
    assert alock(holder, "release", "--all", **A).code == 0
    assert run_git(other, "push", "-q", "origin", "feature:main").code == 0
    assert run_git(other, "push", "-q", "origin", "feature~1:refs/heads/release").code == 0
    assert alock(holder, "acquire", "src/api/**", **A).code == 0
    assert run_git(other, "push", "origin", "feature:release").code == 0


# --- verify: what it could not see -------------------------------------------------------------


def test_verify_in_a_shallow_ci_clone_is_not_clean(tmp_path: Path) -> None:
    bare = make_bare(tmp_path / "plain.git")
    holder = make_clone(bare.as_uri(), tmp_path / "holder")
    assert alock(holder, "acquire", "src/api/**", "-m", "rewrite auth", **A).code == 0
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", bare.as_uri(), "other")
    commit(other, "b edits api", "agent-b", {"src/api/auth.py": "b\n"})
    git(other, "push", "-q", "origin", "HEAD:main")
    ci = tmp_path / "ci"  # actions/checkout's default: fetch-depth 1
    git(tmp_path, "clone", "-q", "--depth", "1", bare.as_uri(), "ci")
    git(ci, "fetch", "-q", "--no-tags", "origin", *FETCH_TABLE)
    got = alock(ci, "verify", "HEAD")
    assert got.code == 2 and "fetch-depth: 0" in got.err, got.out + got.err


DISGUISED = {
    "quotes-inside": "ap''ply_patch <<'EOF'\n" + patch_of("src/api/auth.py") + "EOF\n",
    "backslash": "a\\pply_patch <<'EOF'\n" + patch_of("src/api/auth.py") + "EOF\n",
    "by-path": "$(command -v apply_patch) <<'EOF'\n" + patch_of("src/api/auth.py") + "EOF\n",
}


@pytest.mark.parametrize("script", DISGUISED.values(), ids=DISGUISED.keys())
def test_apply_patch_spelled_otherwise_is_not_silence(
    api: Path, codex: Path, tmp_path: Path, script: str
) -> None:
    assert where_bash_applies(tmp_path, ["bash", "-c", script]) == ["src/api/auth.py"]
    answer = run_codex(codex, api, script)
    assert answer is not None and answer["permissionDecision"] == "deny", answer
