"""The hook verbs: install-hooks, uninstall-hooks, and for commits already made, verify
(CI, reviewers) and install-remote-hook."""

from __future__ import annotations

import os
import sys

from gitlocks.cli.common import JSON_OPTION, out, reply
from gitlocks.cli.declare import Argument, Exit, Option, Verbs
from gitlocks.errors import UsageError
from gitlocks.hooks import CLIENT_HOOKS
from gitlocks.hooks import install as hooks
from gitlocks.hooks.receive import HOOK, remote_hooks_dir
from gitlocks.hooks.verify import verify_range
from gitlocks.render import verify as render
from gitlocks.render.hooks import installed

app = Verbs()


@app.command("install-hooks")
def install_hooks(
    pre_push: bool = Option("--pre-push", default=False, help="Also check the commits you push."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Install the commit hooks (and pre-push with --pre-push) into this repository.

    pre-commit checks the staged paths against others' claims; commit-msg adds an
    Agent-Id trailer naming the agent (prepare-commit-msg, to reverts and cherry-picks,
    which run no commit-msg); post-commit renews your claims on the paths you
    commit; post-merge and post-rewrite release your --until-merged claims whose work a
    merge or rebase has landed. An existing hook is kept and still runs first. Warns by
    default; git config alock.hookMode block makes the checks refuse.

    Example: git alock install-hooks --pre-push
    """
    wanted = [h for h in CLIENT_HOOKS if pre_push or h != "pre-push"]
    changes = hooks.install(hooks.hooks_dir(), wanted, sys.executable)
    reply({"hooks": [c.to_dict() for c in changes]}, installed(changes), as_json)


@app.command("uninstall-hooks")
def uninstall_hooks(as_json: bool = JSON_OPTION) -> None:
    """Remove the bundled hooks and put back any hook they had chained.

    Example: git alock uninstall-hooks
    """
    changes = hooks.uninstall(hooks.hooks_dir())
    reply({"hooks": [c.to_dict() for c in changes]}, installed(changes), as_json)


FORMATS = ("text", "json", "github")


@app.command()
def verify(
    revisions: list[str] = Argument(
        metavar="RANGE...",
        help="Commits as git rev-list takes them: origin/main..HEAD, a branch, ^a b.",
        complete="refs",
    ),
    as_json: bool = JSON_OPTION,
    output: str | None = Option(
        "--format",
        default=None,
        metavar="FORMAT",
        help="text (default), json, or github (annotations).",
    ),
    no_table_ok: bool = Option(
        "--no-table-ok",
        default=False,
        help="Pass where no lock table was ever fetched (else exit 2 with the fetch to run).",
    ),
    shallow_ok: bool = Option(
        "--shallow-ok",
        default=False,
        help="Skip, with a warning, commits where a shallow clone was cut (else exit 2).",
    ),
) -> None:
    """Report commits that changed paths inside another holder's live claim.

    A commit's agents are its Agent-Id trailers; a commit without one is judged against
    every claim. Exit 1 when anything is reported. The lock table is this repository's
    (in remote mode the local view: git alock sync first); where none was ever fetched,
    exit 2 names the fetch to run.

    Example: git alock verify origin/main..HEAD --format github
    """
    chosen = (output or "text").strip().lower()
    if chosen not in FORMATS:
        raise UsageError(f"unknown --format {output!r}: use {', '.join(FORMATS)}")
    if as_json and chosen not in ("text", "json"):
        raise UsageError("--json and --format github cannot be used together")
    result = verify_range(revisions, no_table_ok=no_table_ok, shallow_ok=shallow_ok)
    if chosen == "github":  # never with --json (above)
        out(render.github(result))
    else:
        sys.stderr.write(render.warnings(result))
        reply(result.to_dict(), render.report(result), as_json or chosen == "json")
    raise Exit(result.exit_code)


@app.command("install-remote-hook")
def install_remote_hook(
    repository: str = Argument(
        metavar="BARE-REPO",
        help="The repository you host, e.g. /srv/git/app.git.",
        complete="directories",
    ),
    uninstall: bool = Option(
        "--uninstall", default=False, help="Remove the hook and restore any it chained."
    ),
    force: bool = Option(
        "--force", default=False, help="Install into a repository with a working tree too."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Make a repository you host refuse pushes into others' live claims (pre-receive).

    Commits are judged as verify judges them, against the lock table stored in that
    repository. An existing pre-receive hook is kept and still runs first.
    git config alock.hookMode warn (in that repository) reports and accepts instead.

    Example: git alock install-remote-hook /srv/git/app.git
    """
    directory = remote_hooks_dir(repository, force=force or uninstall)
    if uninstall:
        changes = hooks.uninstall(directory, [HOOK])
    else:
        changes = hooks.install(directory, [HOOK], sys.executable)
    data = {"repository": os.path.abspath(repository), "hooks": [c.to_dict() for c in changes]}
    reply(data, installed(changes), as_json)
