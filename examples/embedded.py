"""Embed flagcore: a durable SQLite store, the admin rules, and in-process evaluation.

Run: .venv/bin/python examples/embedded.py [path/to/flags.db]
"""

import sys
import tempfile
from pathlib import Path

from flagcore import Constraint, Strategy
from flagcore.service import Service
from flagcore_store_sqlite import SqliteStore

path = Path(sys.argv[-1] if sys.argv[-1].endswith(".db") else tempfile.mkdtemp() + "/flags.db")
service = Service(SqliteStore(path))  # creates the schema, project "default", dev and prod
service.flags.create_flag("default", "new-checkout", description="the one-page checkout")
service.strategies.add_strategy(
    "default", "new-checkout", "development",
    Strategy("flexibleRollout", {"rollout": "30"}, (Constraint("country", "IN", ("NO", "SE")),)),
)  # fmt: skip
service.environments.set_environment_enabled("default", "new-checkout", "development", True)

flags = service.client.engine("development")  # follows the store: later writes show up at once
on = sum(flags.is_enabled("new-checkout", {"userId": str(u), "properties": {"country": "NO"}})
         for u in range(1000))  # fmt: skip
print(f"new-checkout is on for {on} of 1000 Norwegian users (rollout 30%); stored in {path}")
