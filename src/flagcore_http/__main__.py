"""``python -m flagcore_http serve``: the same as ``flagcore serve``."""

import sys

from flagcore_http.cli import main

sys.exit(main())
