"""What a shell is offered for a verb's positional argument: the answers its declaration
names (``Argument(complete=...)``), for ``git alock completion``'s script."""

from __future__ import annotations

import os

from gitlocks.cli.app import COMPLETE_VAR, everything, verb_callback
from gitlocks.cli.common import out
from gitlocks.cli.declare import ArgumentInfo, params
from gitlocks.errors import GitlocksError

# What a shell offers for each kind of positional argument (``Argument(complete=...)``).
ANSWERS = {
    "paths": "file names: the argument is a path or a pattern of paths",
    "directories": "directory names",
    "yours": "the patterns of your live locks",
    "locks": "the ids and patterns of every live lock",
    "remotes": "the repository's git remotes",
    "refs": "the repository's branches and tags",
    "words": "the words its metavar lists (install|show)",
    "text": "nothing: free text",
}


def complete() -> int:
    """Answer the shell's completion request (``COMPLETE_VAR`` says which shell)."""
    if complete_argument(os.environ.get(COMPLETE_VAR, "")):
        return 0  # a positional argument: answered from its declaration
    return int(everything().main(args=[], prog_name="git-alock", complete_var=COMPLETE_VAR,
                                 standalone_mode=True) or 0)  # fmt: skip


def complete_argument(request: str) -> bool:
    """Answer a shell's request (``bash_complete``, ...) for a verb's positional argument,
    from its declaration; False leaves it to click (verbs, options), whose completion never
    asks typer's arguments (a shell then offered file names for a remote or a lock id)."""
    # click reads the request and writes the answer: only a shell's request pays for it.
    from click.shell_completion import CompletionItem, get_completion_class

    shell, _, instruction = request.partition("_")
    found = get_completion_class(shell)
    if found is None or instruction != "complete":
        return False
    comp = found(None, {}, "git-alock", "")  # type: ignore[arg-type]  # only to read and write
    args, incomplete = comp.get_completion_args()
    kind = argument_kind(args, incomplete)
    if kind is None or kind.partition(":")[0] not in ANSWERS:
        return False
    if kind in ("paths", "directories"):
        items = [CompletionItem(incomplete, type="file" if kind == "paths" else "dir")]
    else:
        items = [CompletionItem(w) for w in offered(kind, args) if w.startswith(incomplete)]
    out("\n".join(comp.format_completion(item) for item in items))
    return True


def argument_kind(args: list[str], incomplete: str) -> str | None:
    """What the word being completed is, when it is a verb's positional argument: its
    declared ``complete`` (for ``words``, the metavar's words as ``words:a|b``); else None."""
    if not args or incomplete.startswith("-"):
        return None
    callback = verb_callback(args[0])
    if callback is None:
        return None
    found = params(callback)
    valued = {name for p in found if p.kind == "value" for name in p.declared.names}
    positional = [
        (p.declared, p.kind == "many") for p in found if isinstance(p.declared, ArgumentInfo)
    ]
    count, after = 0, iter(args[1:])
    for word in after:
        if word == "--":
            count += sum(1 for _ in after)
        elif word.startswith("-") and word != "-":
            if word in valued and next(after, None) is None:
                return None  # the word is the option's value
        else:
            count += 1
    for declared, many in positional:
        if many or count == 0:
            kind = declared.complete
            if kind == "words":
                kind += ":" + str(declared.settings.get("metavar", ""))
            return kind
        count -= 1
    return "text"  # more words than the verb takes: nothing to offer


def offered(kind: str, args: list[str]) -> list[str]:
    """The words a shell is offered for an argument of ``kind`` (not a path): a metavar's
    words, remote names, refs, or lock patterns and ids (root-relative patterns as ``:/``
    patterns where the shell is not at the root)."""
    if kind.startswith("words:"):
        return kind.partition(":")[2].split("|")
    if kind == "text":
        return []
    as_id = next((args[i + 1] for i, w in enumerate(args[:-1]) if w == "--as"), None)
    try:
        if kind in ("remotes", "refs"):
            from gitlocks.git.run import Env, output  # git is asked, as for every verb

            refs = ["for-each-ref", "--format=%(refname:short)", "refs/heads", "refs/tags"]
            asked = ["remote"] if kind == "remotes" else [*refs, "refs/remotes"]
            return output(asked, env=Env.INHERIT, error=GitlocksError).decode().split()
        # The table: pygit2 and the store, only for a shell's question about locks.
        from gitlocks.identity import resolve_identity
        from gitlocks.service.context import live_table, open_context

        ctx = open_context(None, lambda: resolve_identity(as_id))
        _, live = live_table(ctx)
        prefix = "" if os.path.samefile(os.getcwd(), ctx.store.root) else ":/"
    except Exception:  # a shell's question: never a traceback on the prompt
        return []
    found: list[str] = []
    for record in live:
        if kind == "yours" and record.holder != ctx.identity.holder:
            continue
        if kind == "locks":
            found.append(record.id)
        found += [prefix + p for p in record.paths]
    return list(dict.fromkeys(found))
