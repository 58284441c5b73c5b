"""``git alock completion SHELL``: the script that lets a shell complete verbs and options.

The script is click's, for the ``git-alock`` command; for bash it also defines
``_git_alock``, the function git's own completion calls for ``git alock ...``. Completing
runs ``git-alock`` with ``_GIT_ALOCK_COMPLETE`` set, which ``gitlocks.main`` hands to
``gitlocks.cli.app.complete``.
"""

from __future__ import annotations

from gitlocks.cli.common import out
from gitlocks.cli.declare import Argument, Verbs
from gitlocks.errors import UsageError

app = Verbs()

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
