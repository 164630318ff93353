"""Release plan benchmark (issue 32): what the release plan runner's look costs the store
worker, and what an SDK report's impact metrics cost to record.

Run by hand: ``.venv/bin/python benchmarks/release_plans_bench.py [--plans 100]``.

Over a fresh SQLite file: N flags, each with a plan on its first milestone (a progression
pending) and a safeguard of errors / requests over 5 minutes; one SDK report of the two
counters for every flag recorded (best of 5), then `due_release_plans`, the read every
node makes every ``FLAGCORE_SCHEDULE_CHECK_SECONDS`` (best of 5).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from flagcore.model import Strategy
from flagcore.release_plans import Milestone
from flagcore.service import Service, checked_safeguard
from flagcore.wire import ImpactMetric, ImpactSample
from flagcore_store_sqlite import SqliteStore

DEV = "development"


def _best(runs: int, work: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plans", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = SqliteStore(Path(folder) / "flags.db")
        try:
            service = Service(store)
            steps = [
                Milestone("", f"{p}%", i, (Strategy("flexibleRollout", {"rollout": str(p)}),), 60)
                for i, p in enumerate((10, 50, 100))
            ]
            template = service.release_templates.create_release_plan_template("T", None, steps)
            guard = checked_safeguard("errors", "sum", ">", 0.5, 5, ratio_of="requests")
            plans = service.release_plans
            for i in range(args.plans):
                service.flags.create_flag("default", f"f{i}")
                plan = plans.add_release_plan("default", f"f{i}", DEV, template.id)
                first = plan.milestones[0].id
                plans.start_release_plan_milestone("default", f"f{i}", DEV, plan.id, first)
                plans.put_release_plan_safeguard("default", f"f{i}", DEV, plan.id, guard)
            report = [
                ImpactMetric(
                    name,
                    "counter",
                    tuple(
                        ImpactSample({"featureName": f"f{i}"}, value=1.0) for i in range(args.plans)
                    ),
                )
                for name in ("errors", "requests")
            ]
            record = _best(5, lambda: service.impact_metrics.record_sdk_impact_metrics(DEV, report))
            look = _best(5, plans.due_release_plans)
            due = len(plans.due_release_plans())
        finally:
            store.close()
    print(f"one report of 2 counters x {args.plans} flags recorded: {record * 1000:.1f} ms")
    print(f"due_release_plans over {args.plans} guarded plans: {look * 1000:.1f} ms ({due} due)")


if __name__ == "__main__":
    main()
