"""The hook verbs: install-hooks and uninstall-hooks."""

from __future__ import annotations

import sys

from gitlocks.cli.common import JSON_OPTION, reply
from gitlocks.cli.declare import Option, Verbs
from gitlocks.hooks import CLIENT_HOOKS
from gitlocks.hooks import install as hooks
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
