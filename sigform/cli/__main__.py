"""``python -m sigform.cli`` is the same as the ``sigform`` console script."""

import sys

from sigform.cli import main

sys.exit(main())
