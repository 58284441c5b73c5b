import sys

from gitlocks import bundle

bundle.install()  # gitlocks' compiled modules read from one file (docs/design.md §9.12)

from gitlocks.main import main  # noqa: E402

sys.exit(main())
