"""``python -m gitlocks``: the ``git-alock`` command, as its entry point runs it."""

import sys

from gitlocks.main import main

if __name__ == "__main__":
    sys.exit(main())
