import sys

from gitlocks.main import main

sys.exit(main())
