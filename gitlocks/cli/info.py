"""The verbs that need no lock table, nor the store (and so pygit2) but where ``skill
install`` looks for the repository's root: whoami, version, skill and completion."""

from __future__ import annotations

import os
import sys

from gitlocks import __version__
from gitlocks.cli.common import AS_OPTION, JSON_OPTION, dump_json, out, reply
from gitlocks.cli.declare import Argument, Exit, Option, Verbs
from gitlocks.errors import EXIT_OK, EXIT_REFUSED, NotARepository, UsageError
from gitlocks.identity import resolve_identity
from gitlocks.render.identity import whoami as whoami_text

app = Verbs()


@app.command(tool="Your holder id, parent and session, and where each came from.")
def whoami(as_id: str | None = AS_OPTION, as_json: bool = JSON_OPTION) -> None:
    """Show your agent id and parent, and where each came from.

    Example: AGENT_ID=worker-1 git alock whoami
    """
    ident = resolve_identity(as_id)
    reply(ident.to_dict(), whoami_text(ident), as_json)


@app.command()
def version(as_json: bool = JSON_OPTION) -> None:
    """Show the version.

    Example: git alock version --json
    """
    reply({"version": __version__}, f"gitlocks {__version__}", as_json)


@app.command()
def skill(
    action: str = Argument(metavar="install|show", help="install or show.", complete="words"),
    tool: str = Option("--for", default="claude", help="claude, codex, cursor or agents."),
    into: str | None = Option(
        "--into", default=None, help="Base directory (default: the repository's root)."
    ),
    force: bool = Option("--force", default=False, help="Replace a different existing copy."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Install or show the instructions that teach a coding agent to use git alock.

    claude: .claude/skills/gitlocks/SKILL.md; cursor: .cursor/rules/gitlocks.mdc;
    codex and agents: a marked section of AGENTS.md.

    Example: git alock skill install --for claude
    """
    from gitlocks.service import skill as skills  # only this verb: whoami and version need none

    if action == "show":
        text = skills.text_for(tool)
        if as_json:
            dump_json({"for": tool, "text": text})
        else:
            sys.stdout.write(text)
        raise Exit(EXIT_OK)
    if action != "install":
        raise UsageError(f"unknown skill action {action!r}: use install or show")
    from pathlib import Path  # only to install the skill

    if into:
        base = Path(into)
        if not os.path.isdir(base):  # never raises (a name too long, say)
            raise UsageError(f"--into {into!r}: no such directory (create it first)")
    else:  # the working tree's root, or the current directory outside a repository
        # Imported here: the store brings in pygit2, which only this path of this verb needs.
        from gitlocks.store.local import Store
        from gitlocks.store.location import current_directory

        try:
            base = Path(Store.discover().root)
        except NotARepository:
            base = Path(current_directory())
    done = skills.install(tool, base, force=force)
    if as_json:
        dump_json(done.to_dict())
    elif done.status == "refused":
        out(f"REFUSED {done.path} exists and differs; --force replaces it")
    elif done.status == "unchanged":
        out(f"ALREADY INSTALLED {done.path}")
    else:
        out(f"INSTALLED {done.path}")
    if not as_json and tool == "claude" and done.status != "refused":
        # Only where Claude Code's guard is not installed yet: the hint to install it.
        from gitlocks.agents.doctor import installed_commands

        if not installed_commands(
            base, "claude"
        ):  # the skill asks it to remember; not so the guard
            sys.stderr.write(
                "hint: git alock install-agent-hooks --for claude also makes Claude Code claim "
                "before every edit, whether or not it remembers the skill\n"
            )
    raise Exit(EXIT_REFUSED if done.status == "refused" else EXIT_OK)


SHELLS = ("bash", "zsh", "fish")

# git's bash completion calls _git_<subcommand> for ``git alock ...``: the words after
# ``git`` become git-alock's own command line. git registers its completion with ``-o
# default``, so an empty answer would become the file names here: only an argument that is
# a path asks for them (click's "file" answer turns the option back on).
GIT_BASH_SHIM = """
_git_alock() {
    local COMP_WORDS=("git-alock" "${COMP_WORDS[@]:2}")
    local COMP_CWORD=$((COMP_CWORD - 1))
    compopt +o default +o bashdefault 2>/dev/null
    _git_alock_completion git-alock
}
"""


@app.command()
def completion(
    shell: str = Argument(metavar="bash|zsh|fish", help="The shell.", complete="words"),
) -> None:
    """Print the shell completion script: bash, zsh or fish.

    Example: eval "$(git alock completion bash)"
    """
    if shell not in SHELLS:
        raise UsageError(f"unknown shell {shell!r}: use bash, zsh or fish")
    # click writes the script, from every verb: only this verb pays for both.
    from click.shell_completion import get_completion_class

    from gitlocks.cli.app import COMPLETE_VAR, everything  # the verb table, circular at top

    found = get_completion_class(shell)
    assert found is not None
    script = found(everything(), {}, "git-alock", COMPLETE_VAR).source()
    out(script.rstrip("\n") + ("\n" + GIT_BASH_SHIM.rstrip("\n") if shell == "bash" else ""))
