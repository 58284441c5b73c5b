"""Codex CLI's patches: which files an ``apply_patch`` writes, and from which directory.

A patch given to Codex's shell tool (hook tool ``Bash``) names its files relative to where
the shell is when ``apply_patch`` runs: the script before it is read as the shell would run
it, as far as that is certain (literal ``cd``/``pushd``, ``env -C``, sequences, groups,
subshells, harmless commands). A ``cd`` that may fail before ``;`` leaves several candidate
directories (``Candidates``); anything else (a variable, ``||``, a pipe, an unknown command)
raises ``Unjudgeable`` and no file is guessed. Loaded only for a Codex patch or shell call.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from gitlocks.agents.edits import Candidates, Unjudgeable
from gitlocks.agents.shell_words import NAME, Word, word_at, words

TYPE_CHECKING = False  # typing is for mypy: docs/design.md, section 8
if TYPE_CHECKING:
    from typing import Any

# Codex's apply_patch envelope (openai/codex, codex-rs/apply-patch/src/parser.rs): a hunk
# starts with one of these; an Update hunk may move the file (both names are written).
BEGIN, END = "*** Begin Patch", "*** End Patch"
ADD, DELETE, UPDATE, MOVE = (
    "*** Add File: ",
    "*** Delete File: ",
    "*** Update File: ",
    "*** Move to: ",
)
EOF_MARK = "*** End of File"
HEREDOCS = ("<<EOF", "<<'EOF'", '<<"EOF"')
# What Rust's str::trim strips (char::is_whitespace, Unicode White_Space). Python's
# str.strip also strips U+001C..U+001F, which Codex keeps in a file name.
RUST_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)
APPLY_NAMES = ("apply_patch", "applypatch")
SHELLS = ("bash", "sh", "zsh", "dash", "ksh")
# Commands that cannot change the shell's directory (a function of the same name would be
# defined in the script first, which is never read as harmless).
HARMLESS = frozenset(
    {
        *("echo", "printf", "true", ":", "mkdir", "ls", "pwd", "test", "[", "cat", "touch"),
        *("rm", "cp", "mv", "git", "sed", "grep", "head", "tail", "wc", "sleep", "chmod"),
        *("date", "which", "set", "rg", "find", "stat", "diff", "sort", "uniq", "tree"),
    }
)
# Variables that move ``cd``'s idea of where a name is, or of where the shell is.
MOVING_NAMES = frozenset({"CDPATH", "PWD", "OLDPWD", "HOME"})


def _trim(text: str) -> str:
    return text.strip(RUST_SPACE)


def _lines(text: str) -> list[str]:
    """``text`` split as Rust's ``str::lines`` does: at line feeds only (``splitlines``
    also breaks at a form feed, U+2028 and more, inside a line Codex reads whole)."""
    parts = text.split("\n")
    last = parts.pop()
    lines = [part[:-1] if part.endswith("\r") else part for part in parts]
    return [*lines, last] if last else lines


def parse_patch(text: str) -> tuple[str, ...] | None:
    """Every file an apply_patch patch writes, read as Codex's own (lenient) parser reads
    it; None when Codex would refuse the patch (so it writes nothing)."""
    lines = _lines(_trim(text))
    if len(lines) >= 4 and lines[0] in HEREDOCS and lines[-1].endswith("EOF"):
        lines = lines[1:-1]  # the heredoc a model sometimes wraps it in
    if len(lines) < 2 or _trim(lines[0]) != BEGIN or _trim(lines[-1]) != END:
        return None
    body, found, i = lines[1:-1], [], 0
    while i < len(body):
        head = _trim(body[i])
        i += 1
        if head.startswith(ADD):
            found.append(head[len(ADD) :])
            while i < len(body) and body[i].startswith("+"):
                i += 1
        elif head.startswith(DELETE):
            found.append(head[len(DELETE) :])
        elif head.startswith(UPDATE):
            found.append(head[len(UPDATE) :])
            if i < len(body) and body[i].startswith(MOVE):
                # Untrimmed, and possibly empty: Codex then fails on this hunk, but only
                # after writing the hunks before it.
                found.append(body[i][len(MOVE) :])
                i += 1
            # Its chunks run to the next line starting with "*" (bar the end-of-file mark).
            while i < len(body) and (not body[i].startswith("*") or _trim(body[i]) == EOF_MARK):
                i += 1
        else:
            return None  # no hunk header: Codex refuses the patch itself
    return tuple(found) if found else None


def _files(text: str) -> tuple[str, ...]:
    """The files of the patch in ``text`` (first "*** Begin Patch" to last "*** End Patch");
    when that does not parse, every hunk header counts: a file too many rather than too few."""
    lines = _lines(text)
    starts = [n for n, line in enumerate(lines) if BEGIN in line]
    ends = [n for n, line in enumerate(lines) if starts and END in line and n > starts[0]]
    if not ends:
        return ()
    span = lines[starts[0] : ends[-1] + 1]
    span[0] = span[0][span[0].index(BEGIN) :]
    span[-1] = span[-1][: span[-1].rindex(END) + len(END)]
    found = parse_patch("\n".join(span))
    if found is None:
        heads = [_trim(line) for line in span]
        found = tuple(
            [head[len(m) :] for head in heads for m in (ADD, DELETE, UPDATE) if head.startswith(m)]
            + [line[len(MOVE) :] for line in span if line.startswith(MOVE)]
        )
    return found


class _Walk:
    """The directories the shell may be in, relative to where it starts ("" for there):
    ``here`` when every command of the current ``&&`` list succeeded, ``failed`` where one
    of them failed (the next command after ``;`` runs there too)."""

    def __init__(self) -> None:
        self.here: list[str] = [""]
        self.failed: list[str] = []
        self.saved: list[tuple[list[str], list[str]]] = []  # at each open "("

    def run(self, tokens: Sequence[Word | str]) -> list[str]:
        """The directories the command after ``tokens`` starts in."""
        command: list[Word] = []
        for token in tokens:
            if isinstance(token, Word):
                command.append(token)
            elif token == "(":
                if command:  # "name()": a function is defined
                    raise Unjudgeable("a function is defined before apply_patch")
                self.saved.append((self.here, self.failed))
                self.failed = []
            elif token not in ("&&", ";", ")"):
                raise Unjudgeable(f"'{token}' before apply_patch")
            else:
                self._command(command)
                command = []
                if token == ";":
                    self.here, self.failed = _merge(self.here, self.failed), []
                elif token == ")":
                    if not self.saved:
                        raise Unjudgeable("an unbalanced ')' before apply_patch")
                    self.here, failed = self.saved.pop()  # a subshell moves nobody
                    self.failed = _merge(failed, self.here)
        self._prefix(command)
        return self.here

    def _command(self, command: list[Word]) -> None:
        """One whole command before apply_patch."""
        while command and command[0].text in ("{", "}") and not command[0].dynamic:
            command = command[1:]  # a group: the shell's own, no directory of its own
        if not command:
            return
        name = command[0]
        if _assignment(name):
            self._assign(command)
            return
        if name.dynamic:
            raise Unjudgeable("a command named by an expansion before apply_patch")
        if name.text in ("cd", "pushd"):
            self._cd(command[1:], name.text)
        elif name.text == "export":
            for word in command[1:]:
                if word.text.partition("=")[0] in MOVING_NAMES:
                    raise Unjudgeable(f"export {word.text.partition('=')[0]} before apply_patch")
            self.failed = _merge(self.failed, self.here)
        elif name.text in HARMLESS:
            self.failed = _merge(self.failed, self.here)  # it may fail: the list stops
        else:
            raise Unjudgeable(f"{name.text!r} runs before apply_patch")

    def _assign(self, command: list[Word]) -> None:
        for word in command:
            if not _assignment(word):
                self._command(command[command.index(word) :])
                return
            if word.text.partition("=")[0] in MOVING_NAMES:
                raise Unjudgeable(f"{word.text.partition('=')[0]} is set before apply_patch")

    def _cd(self, args: list[Word], name: str) -> None:
        args = [a for a in args if a.text not in ("-P", "-L", "--") or a.dynamic]
        if len(args) != 1 or args[0].text in ("", "-") or args[0].text.startswith("-"):
            raise Unjudgeable(f"{name} without one literal directory before apply_patch")
        target = _directory(args[0], name)
        self.failed = _merge(self.failed, self.here)  # a cd that fails leaves it as it was
        self.here = [_join(d, target) for d in self.here]

    def _prefix(self, command: list[Word]) -> None:
        """The words before apply_patch in its own command: assignments, ``env`` (its
        ``-C DIR``), ``exec``, ``command``."""
        rest = list(command)
        while rest:
            word = rest.pop(0)
            if word.text == "{" and not word.dynamic:
                continue  # a group opened around it
            if _assignment(word):
                if word.text.partition("=")[0] in MOVING_NAMES:
                    raise Unjudgeable(f"{word.text.partition('=')[0]} is set for apply_patch")
            elif word.dynamic:
                raise Unjudgeable("an expansion before apply_patch")
            elif word.text in ("exec", "command", "time", "nohup"):
                continue
            elif word.text == "env":
                rest = self._env(rest)
            else:
                raise Unjudgeable(f"apply_patch is run through {word.text!r}")

    def _env(self, rest: list[Word]) -> list[Word]:
        """``env``'s options; the words after them."""
        while rest and (rest[0].text.startswith("-") or _assignment(rest[0])):
            word = rest.pop(0)
            if word.dynamic:
                raise Unjudgeable("an expansion in env's arguments before apply_patch")
            target = None
            if word.text in ("-C", "--chdir") and rest:
                target = _directory(rest.pop(0), "env -C")
            elif word.text.startswith("--chdir="):
                target = _directory(Word(word.text.partition("=")[2]), "env --chdir")
            elif word.text.startswith("-C") and len(word.text) > 2:
                target = _directory(Word(word.text[2:]), "env -C")
            elif word.text in ("-u", "--unset") and rest:
                rest.pop(0)
            elif _assignment(word):
                if word.text.partition("=")[0] in MOVING_NAMES:
                    raise Unjudgeable(f"{word.text.partition('=')[0]} is set for apply_patch")
            elif word.text not in ("-i", "--ignore-environment", "-", "--") and not (
                word.text.startswith("--unset=")
            ):
                raise Unjudgeable(f"env {word.text} before apply_patch")
            if target is not None:
                self.here = [_join(d, target) for d in self.here]
        return rest


def _assignment(word: Word) -> bool:
    name, eq, _ = word.text.partition("=")
    return bool(eq) and not word.pwd and NAME.fullmatch(name) is not None


def _directory(word: Word, how: str) -> str:
    """A literal directory (``$PWD`` leading it stands for where the shell is)."""
    if word.dynamic or not (word.text or word.pwd):
        raise Unjudgeable(f"{how} to a directory known only when the shell runs")
    if word.pwd:
        return "./" + word.text.lstrip("/") if word.text else "."
    return word.text


def _join(here: str, target: str) -> str:
    joined = os.path.join(here, target)
    return os.path.normpath(joined) if joined else ""


def _merge(a: list[str], b: list[str]) -> list[str]:
    return list(dict.fromkeys([*a, *b]))


_APPLY = re.compile(r"(?<![\w./-])(?:apply_patch|applypatch)(?![\w.-])")
_HEREDOC = re.compile(r"[ \t]*<<(-?)[ \t]*(?=[^\s;&|()<>])")


def shell_patch_paths(tool_input: Any) -> tuple[str, ...] | None:
    """Every file a shell command applying a patch writes, named from where the shell
    starts; None when it applies none; ``Unjudgeable`` when its directory is uncertain."""
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if isinstance(command, list) and all(isinstance(word, str) for word in command):
        return _argv(command)
    if not isinstance(command, str):
        return None
    return _script(command)


def codex_shell_paths(tool_input: Any) -> tuple[str, ...] | None:
    """Every file a Codex shell call applying a patch writes, from the call's ``workdir``
    when its input has one (Codex 0.171.0's hook input does not); else a patch naming a file
    from the directory the shell starts in is ``Unjudgeable``, never guessed to be ``cwd``."""
    found = shell_patch_paths(tool_input)
    if not found:
        return found
    workdir = tool_input.get("workdir") if isinstance(tool_input, dict) else None
    if isinstance(workdir, str) and workdir:
        joined = tuple(os.path.join(workdir, name) for name in found)
        return Candidates(joined) if isinstance(found, Candidates) else joined
    if any(not os.path.isabs(name) for name in found):
        raise Unjudgeable(
            "Codex applies a patch given to its shell in the call's working directory "
            "(workdir), which its hook does not say"
        )
    return found


def _argv(argv: list[str]) -> tuple[str, ...] | None:
    """A command given as an argument vector: a shell running a script, or a program run
    with its arguments (no shell: nothing in them is expanded)."""
    if not argv or not any(BEGIN in word for word in argv):
        return None
    at_script = _shell_script(argv)
    if at_script is not None:
        script, place = at_script
        if _APPLY.search(script) and _files("\n".join(argv[place + 1 :])):
            # "$1", "$@": the script's own arguments reach apply_patch unread here.
            raise Unjudgeable("the patch is an argument of the shell's script")
        return _script(script)
    names = [os.path.basename(word) for word in argv]
    at = next((i for i, name in enumerate(names) if name in APPLY_NAMES), None)
    if at is None:
        if _APPLY.search("\n".join(argv)) and _files("\n".join(argv)):
            raise Unjudgeable("apply_patch is run in a way that cannot be read")
        return None
    files = _files("\n".join(argv[at + 1 :]))
    if not files:
        return None  # no patch for it to apply
    walk = _Walk()
    return _named(files, walk.run([Word(word) for word in argv[:at]]))


def _shell_script(argv: list[str]) -> tuple[str, int] | None:
    """The script of ``[SHELL, options..., -c, SCRIPT, args...]`` (``-lc`` and the like
    too) and its place in ``argv``; None when ``argv`` is no shell running a script."""
    if os.path.basename(argv[0]) not in SHELLS:
        return None
    for i, word in enumerate(argv[1:], 1):
        if not word.startswith("-") or word == "--":
            return None
        if "c" in word[1:] and not word.startswith("--"):
            return (argv[i + 1], i + 1) if i + 1 < len(argv) else None
    return None


def _script(script: str) -> tuple[str, ...] | None:
    """A shell script that may apply a patch (None: it writes no file)."""
    if BEGIN not in script:
        return None
    found = _APPLY.search(script)
    if found is None:
        if _files(script):  # ap''ply_patch, a\pply_patch: the shell runs apply_patch
            raise Unjudgeable("a patch applied by a command the guard cannot read")
        return None
    if found.start() >= script.find(BEGIN):
        if _files(script):
            raise Unjudgeable("the patch comes before apply_patch reads it")
        return None
    tail = script[found.end() :]
    heredoc = _HEREDOC.match(tail)
    if heredoc is not None:
        body, rest, quoted = _heredoc(tail, heredoc)
    else:
        (body, rest), quoted = _argument(tail), True
    files = _files(body)
    if not files:
        if heredoc is None and _files(tail):
            # apply_patch reads another patch (a file, a variable): the one in sight is
            # not what it applies.
            raise Unjudgeable("a patch apply_patch does not read from where it is written")
        return None
    if not quoted and any(c in body for c in "$`\\"):
        # An unquoted delimiter: the shell expands $, ` and \ in the body first, and a
        # file name (or a whole hunk header) may come out of that.
        raise Unjudgeable("an unquoted here-document the shell expands")
    if _APPLY.search(rest) or (heredoc is None and len(_APPLY.findall(script)) > 1):
        raise Unjudgeable("several apply_patch calls in one command")
    return _named(files, _Walk().run(words(script[: found.start()])))


def _argument(tail: str) -> tuple[str, str]:
    """The patch ``apply_patch`` takes as its argument (``tail``: the script after its
    name), and the script after it. Only a literal word is read: one the shell expands
    first, or input from elsewhere, is ``Unjudgeable`` when a patch is in sight."""
    at = len(tail) - len(tail.lstrip(" \t"))
    if at >= len(tail) or tail[at] in "\n;&|<>()":
        if _names_files(tail):
            raise Unjudgeable("apply_patch reads its patch from its input, not the text in sight")
        return "", tail
    word, end = word_at(tail, at)
    raw = tail[at:end]
    if word.dynamic or (not raw.startswith("'") and any(c in raw for c in "$`\\")):
        if _names_files(tail):
            raise Unjudgeable("a patch argument the shell expands before apply_patch reads it")
        return "", tail[end:]
    return word.text, tail[end:]


def _names_files(text: str) -> bool:
    """Whether ``text`` holds a patch naming a file, as lines or within one (``\\n``)."""
    return bool(_files(text)) or any(mark.rstrip() in text for mark in (ADD, DELETE, UPDATE))


def _heredoc(tail: str, heredoc: re.Match[str]) -> tuple[str, str, bool]:
    """The here-document ``heredoc`` opens: its body, the script after it, and whether its
    delimiter is quoted (then the body is not expanded), read as the shell reads them."""
    word, end = word_at(tail, heredoc.end())
    raw = tail[heredoc.end() : end]
    if "$" in raw or "`" in raw:
        raise Unjudgeable("a here-document delimiter the guard does not read")
    quoted = any(c in raw for c in "'\"\\")
    start = tail.find("\n", end)
    if start < 0:
        return "", "", quoted
    lines = tail[start + 1 :].split("\n")
    for n, line in enumerate(lines):
        if (line.lstrip("\t") if heredoc.group(1) == "-" else line) == word.text:
            return "\n".join(lines[:n]), "\n".join(lines[n + 1 :]), quoted
    return "\n".join(lines), "", quoted  # unterminated: the shell reads to the end


def _named(files: Sequence[str], directories: Sequence[str]) -> tuple[str, ...]:
    """Each file as named from each directory the shell may be in (``Candidates``: several)."""
    found = tuple(
        dict.fromkeys(os.path.join(d, name) if d else name for d in directories for name in files)
    )
    return Candidates(found) if len(directories) > 1 and found else found
