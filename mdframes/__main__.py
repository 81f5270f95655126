"""``python -m mdframes``: the same as the ``mdframes`` command."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
