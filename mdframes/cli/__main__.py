"""``python -m mdframes.cli``: the same as the ``mdframes`` command."""

import sys

from . import main

sys.exit(main())
