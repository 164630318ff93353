"""``python -m flagcore_http serve``: the same as ``flagcore serve`` (`flagcore_cli`)."""

import sys

from flagcore_cli.main import main

sys.exit(main())
