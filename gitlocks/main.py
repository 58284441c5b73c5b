"""The ``git-alock`` entry point: the one place a failure becomes an exit code.

Imported before the verb is known, so the hooks' and guard's fast paths load no framework.
Anything but a ``GitlocksError`` is a bug, never exit 1 ("refused"). Why a command runs
without the cycle collector and ends with ``os._exit``: docs/design.md, section 8.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import sys

from gitlocks.errors import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, GitlocksError


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        gc.disable()  # the long-lived verbs turn it back on (docs/design.md, section 8)
        _open_closed_streams()
        if signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN:
            # Else the kernel reaps each git we start, and a failed one reads as exit 0.
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        sys.stderr = _Unfailing(sys.stderr)
    code = _main(argv)
    if argv is None:  # flush what is left to say, and end without the interpreter's teardown
        try:
            sys.stdout.flush()
        except BrokenPipeError:  # the reader went away: nobody to tell
            pass
        except OSError as exc:
            sys.stderr.write(f"error: cannot write to standard output ({exc.strerror})\n")
            code = code or EXIT_ERROR
        sys.stderr.flush()  # an _Unfailing one: no error to fear
        os._exit(code)
    return code


def _main(argv: list[str] | None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        if argv is None and "_GIT_ALOCK_COMPLETE" in os.environ:
            # A shell asking what could come next (``git alock completion``).
            from gitlocks.cli.answers import complete

            return complete()
        if args[:1] == ["guard"] and not {"-h", "--help"} & set(args):
            # The agent guard's fast path: it runs before every edit an agent makes.
            from gitlocks.agents.guard import main as guard_main

            return guard_main(args[1:])
        if args[:1] == ["hook"]:
            # The git hooks' fast path: it runs on every commit, so no command-line
            # framework is imported (a verb brings in typer and click).
            from gitlocks.hooks import main as hook_main

            return hook_main(args[1:])
        from gitlocks.cli.app import run  # the verb table: imports only the verb run

        return run(args)
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        return EXIT_INTERRUPTED
    except GitlocksError as exc:
        sys.stderr.write(f"error: {exc}\n")
        _json_error(args, exc.to_dict())
        return exc.exit_code
    except BrokenPipeError:  # the reader went away (``| head``): nobody to tell
        _quiet_stdout()
        return EXIT_OK
    except OSError as exc:
        import errno  # only for a failure to tell apart: no other command needs it

        if exc.errno not in (errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG):
            raise
        # Help and usage text that stdout could not take (verbs report their own).
        _quiet_stdout()
        sys.stderr.write(f"error: cannot write to standard output ({exc.strerror})\n")
        return EXIT_ERROR
    except Exception as exc:  # a bug: say so, and never exit 1 ("refused") for it
        error = GitlocksError(f"internal error: {exc.__class__.__name__}: {exc}")
        sys.stderr.write(
            f"error: {error}\nThis is a bug in gitlocks; please report it with the traceback "
            "below.\n"
        )
        import traceback  # only for a bug

        traceback.print_exc()
        _json_error(args, error.to_dict())
        return EXIT_ERROR


def _json_error(args: list[str], doc: dict[str, object]) -> None:
    """An agent that asked for JSON gets a document it can parse, whatever went wrong."""
    if "--json" not in args:
        return
    try:  # stdout itself may be what failed
        sys.stdout.write(json.dumps(doc, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    except OSError:
        pass


class _Unfailing:
    """Standard error whose writes never fail: a warning nobody can read (a full disk) must
    not change the exit code (a claim made is 0, even if its note could not be written)."""

    def __init__(self, stream: object) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self.stream.write(text))  # type: ignore[attr-defined]
        except OSError:
            return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()  # type: ignore[attr-defined]
        except OSError:
            pass

    def __getattr__(self, name: str) -> object:
        return getattr(self.stream, name)


def _open_closed_streams() -> None:
    """Open the null device on each standard stream our caller closed, as git does: no file
    the verb opens then takes a stream's number (where writes meant for it would land)."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        os.open(os.devnull, os.O_RDWR)  # the lowest free number, fd: each lower one is open
        os.set_inheritable(fd, True)
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False))  # noqa: SIM115


def _quiet_stdout() -> None:
    """Point stdout at nothing, so the interpreter's last flush at exit cannot fail again."""
    try:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives until the process ends
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main())
