"""The ``git-alock`` entry point: reports failures and keeps start-up cheap.

Only this module is imported before we know the verb, so a hook-only path can run
without importing the command-line framework.
"""

from __future__ import annotations

import sys
import traceback

from gitlocks.errors import EXIT_ERROR, EXIT_INTERRUPTED, GitlocksError


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        if args[:1] == ["hook"]:
            # The git hooks' fast path: it runs on every commit, so no command-line
            # framework is imported (gitlocks.cli.locks brings in typer and click).
            from gitlocks.hooks.check import main as hook_main

            return hook_main(args[1:])
        from gitlocks.cli.locks import run

        return run(args)
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        return EXIT_INTERRUPTED
    except GitlocksError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return exc.exit_code
    except BrokenPipeError:
        return EXIT_ERROR
    except Exception as exc:  # a bug: say so, and never exit 1 ("refused") for it
        sys.stderr.write(
            f"error: internal error: {exc.__class__.__name__}: {exc}\n"
            "This is a bug in gitlocks; please report it with the traceback below.\n"
        )
        traceback.print_exc()
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
