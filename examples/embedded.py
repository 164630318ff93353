"""Embed flagcore: a durable SQLite store, the admin rules, and in-process evaluation.

Run: .venv/bin/python examples/embedded.py [path/to/flags.db]

Without a path it uses a new file in a temporary directory. It can run again on the same
file: what already exists is kept (the flag and its strategy are made once).
"""

import argparse
import tempfile
from pathlib import Path

from flagcore import Constraint, Strategy
from flagcore.service import Service
from flagcore_store_sqlite import SqliteStore

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("database", nargs="?", help="SQLite file (default: a new temporary one)")
args = parser.parse_args()
path = Path(args.database or Path(tempfile.mkdtemp()) / "flags.db")

store = SqliteStore(path)
service = Service(store)  # creates the schema, project "default", dev and prod
if "new-checkout" not in {flag.name for flag in service.flags.list_flags("default")}:
    service.flags.create_flag("default", "new-checkout", description="the one-page checkout")
if not service.strategies.list_strategies("default", "new-checkout", "development"):
    nordic = Constraint("country", "IN", ("NO", "SE"))
    rollout = Strategy("flexibleRollout", {"rollout": "30"}, (nordic,))
    service.strategies.add_strategy("default", "new-checkout", "development", rollout)
service.environments.set_environment_enabled("default", "new-checkout", "development", True)

flags = service.client.engine("development")  # follows the store: later writes show up at once
on = sum(flags.is_enabled("new-checkout", {"userId": str(u), "properties": {"country": "NO"}})
         for u in range(1000))  # fmt: skip
print(f"new-checkout is on for {on} of 1000 Norwegian users (rollout 30%); stored in {path}")
store.close()
