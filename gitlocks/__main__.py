import gc
import sys

# A command lives for milliseconds: the cycle collector would only walk its objects again
# and again (a table of 10,000 locks is made of many). The long-lived verbs (mcp, ui,
# watch) turn it back on (docs/design.md §8).
gc.disable()

from gitlocks import bundle  # noqa: E402

bundle.install()  # gitlocks' compiled modules read from one file (docs/design.md §9.12)

from gitlocks.main import main  # noqa: E402

sys.exit(main())
