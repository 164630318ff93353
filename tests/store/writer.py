"""A writer process for the durability tests: creates flags and acknowledges each commit.

Usage: python -m tests.store.writer DB PREFIX COUNT
Prints one line per committed flag ("ok <name>"), flushing after each, so the parent
knows exactly which writes were acknowledged before it kills this process.
"""

from __future__ import annotations

import sys

from flagcore.model import Constraint, Strategy
from flagcore.service import Service
from flagcore_store_sqlite import SqliteStore


def main(path: str, prefix: str, count: int) -> None:
    service = Service(SqliteStore(path))
    for index in range(count):
        name = f"{prefix}-{index}"
        service.flags.create_flag("default", name)
        service.strategies.add_strategy(
            "default",
            name,
            "development",
            Strategy("flexibleRollout", {"rollout": "50"}, (Constraint("userId", "IN", ("a",)),)),
        )
        print(f"ok {name}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
