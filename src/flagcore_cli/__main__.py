"""``python -m flagcore_cli``: the ``flagcore`` command."""

import sys

from flagcore_cli.main import main

sys.exit(main())
