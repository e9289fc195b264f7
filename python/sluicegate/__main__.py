"""`python -m sluicegate`: the same as the `sluicegate` console script."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
