"""Store benchmark: client snapshots from SQLite, the cost of "nothing changed", admin writes.

Run by hand: ``.venv/bin/python benchmarks/store_bench.py [--flags 10000] [--writes 1000]``.

Prints, with the in-memory store measured in the same run as the peer:
1. building the client snapshot of N flags (2 strategies, 3 constraints each) from a
   freshly opened SQLite file ("cold": new connection, empty caches of ours), and the
   engine compile on top of it;
2. what an unchanged store costs a live engine per evaluation (one ``revision()`` call
   at most per poll interval), against a plain evaluation;
3. admin writes per second (flag create + strategy add, each its own transaction) on a
   file database with the durability settings the store uses (WAL, synchronous=FULL);
4. the server's cold client-features render (snapshot + JSON, as ``FLAGCORE_GC_PAUSE``
   sees it) with the collector paused and running, alternating in the same run.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from flagcore import Engine, unstructure_client_features
from flagcore.entities import FlagDefinition, FlagEnvironment, StrategyPlacement
from flagcore.memory import MemoryStore
from flagcore.model import Constraint, Strategy
from flagcore.ports import Store
from flagcore.service import Service
from flagcore.service.strategies import new_strategy_id
from flagcore_store_sqlite import SqliteStore

ENV = "development"


def _strategy(rng: random.Random, flag: str, order: int) -> Strategy:
    constraints = (
        Constraint("userId", "IN", tuple(f"user-{rng.randrange(10_000)}" for _ in range(20))),
        Constraint(
            "appVersion", "SEMVER_GTE", value=f"{rng.randrange(1, 5)}.{rng.randrange(10)}.0"
        ),
        Constraint("country", "STR_STARTS_WITH", ("N", "S"), case_insensitive=True),
    )
    return Strategy(
        "flexibleRollout",
        {"rollout": str(rng.randrange(101)), "stickiness": "userId", "groupId": flag},
        constraints,
        id=new_strategy_id(1_700_000_000_000 + order),
        sort_order=order,
    )


def fill(store: Store, flags: int, seed: int = 7) -> None:
    """Bulk-load ``flags`` flags in one transaction (setup, not what is measured)."""
    rng = random.Random(seed)
    Service(store)
    with store.transaction() as tx:
        for index in range(flags):
            name = f"flag-{index:05d}"
            tx.save_flag(FlagDefinition(name, "default"))
            tx.save_flag_environment(FlagEnvironment(name, ENV, enabled=index % 10 != 0))
            for order in range(2):
                tx.save_strategy(StrategyPlacement(name, ENV, _strategy(rng, name, order)))
        tx.append_event("bulk-load", "benchmark")


def _best(samples: list[float]) -> str:
    return f"best {min(samples) * 1000:8.1f} ms  median {statistics.median(samples) * 1000:8.1f} ms"


def snapshot_benchmark(path: Path, flags: int, repeats: int) -> None:
    print(f"\n1. client snapshot of {flags:,} flags (2 strategies x 3 constraints each)")
    sqlite_times, compile_times = [], []
    for _ in range(repeats):
        store = SqliteStore(path)
        start = time.perf_counter()
        snapshot = Service(store).client.client_features(ENV)
        sqlite_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        Engine(snapshot).compile_all()
        compile_times.append(time.perf_counter() - start)
        store.close()
        # Freeing 10,000 flags' objects is not building the next snapshot: outside the clock.
        del snapshot
        gc.collect()
    memory = MemoryStore()
    fill(memory, flags)
    memory_times = []
    for _ in range(repeats):
        start = time.perf_counter()
        Service(memory).client.client_features(ENV)
        memory_times.append(time.perf_counter() - start)
    print(f"   SQLite file, fresh connection : {_best(sqlite_times)}   (target < 1000 ms)")
    print(f"   memory store (peer)           : {_best(memory_times)}")
    print(f"   ratio SQLite / memory         : {min(sqlite_times) / min(memory_times):.2f}x")
    print(f"   engine compile of the snapshot: {_best(compile_times)}")


def gc_pause_benchmark(path: Path, flags: int, repeats: int) -> None:
    print(f"\n4. cold client-features render of {flags:,} flags, collector paused or running")
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(repeats):
        for pause_gc in (True, False):
            store = SqliteStore(path)
            gc.collect()
            start = time.perf_counter()
            snapshot = Service(store, pause_gc=pause_gc).client.client_features(ENV)
            payload = unstructure_client_features(snapshot, version=2)
            json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
            times[pause_gc].append(time.perf_counter() - start)
            store.close()
            del snapshot, payload
    print(f"   paused (the default)          : {_best(times[True])}")
    print(f"   running (FLAGCORE_GC_PAUSE=off): {_best(times[False])}")
    print(f"   ratio running / paused        : {min(times[False]) / min(times[True]):.2f}x")


def unchanged_benchmark(path: Path, evaluations: int) -> None:
    print(f"\n2. an unchanged store, {evaluations:,} evaluations")
    store = SqliteStore(path)
    service = Service(store)
    live = service.client.engine(ENV, poll_interval=0.0)  # worst case: ask the store every call
    plain = Engine(service.client.client_features(ENV))
    context = {"userId": "user-1", "properties": {"country": "NO", "appVersion": "3.1.0"}}
    timings = {}
    for label, target in (("plain engine", plain), ("live engine, poll every call", live)):
        start = time.perf_counter()
        for _ in range(evaluations):
            target.is_enabled("flag-00001", context)
        timings[label] = (time.perf_counter() - start) / evaluations
    start = time.perf_counter()
    for _ in range(evaluations):
        store.revision()
    revision = (time.perf_counter() - start) / evaluations
    for label, seconds in timings.items():
        print(f"   {label:30}: {seconds * 1e6:8.2f} µs/evaluation")
    print(f"   one revision() call           : {revision * 1e6:8.2f} µs (all 'unchanged' costs)")
    ratio = timings["live engine, poll every call"] / timings["plain engine"]
    print(f"   ratio live / plain            : {ratio:.1f}x (1 s poll interval makes it ~1x)")
    store.close()


def write_benchmark(path: Path, writes: int) -> None:
    print(f"\n3. {writes:,} admin writes (create flag + add strategy), one transaction each")
    results = {}
    for label, store in (
        ("SQLite file (WAL, synchronous=FULL)", SqliteStore(path)),
        ("memory store (peer)", MemoryStore()),
    ):
        service = Service(store)
        start = time.perf_counter()
        for index in range(writes):
            name = f"write-{index}"
            service.flags.create_flag("default", name)
            service.strategies.add_strategy(
                "default",
                name,
                ENV,
                Strategy(
                    "flexibleRollout", {"rollout": "50"}, (Constraint("userId", "IN", ("a",)),)
                ),
            )
        elapsed = time.perf_counter() - start
        results[label] = writes / elapsed
        print(
            f"   {label:36}: {writes / elapsed:9.0f} flag+strategy pairs/s "
            f"({2 * writes / elapsed:9.0f} transactions/s)"
        )
        store.close()
    sqlite_rate, memory_rate = results.values()
    print(f"   ratio SQLite / memory               : {sqlite_rate / memory_rate:.3f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flags", type=int, default=10_000)
    parser.add_argument("--writes", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        snapshot_db = Path(folder) / "snapshot.db"
        store = SqliteStore(snapshot_db)
        start = time.perf_counter()
        fill(store, args.flags)
        store.close()
        print(f"setup: bulk-loaded {args.flags:,} flags in {time.perf_counter() - start:.1f} s")
        snapshot_benchmark(snapshot_db, args.flags, args.repeats)
        unchanged_benchmark(snapshot_db, 20_000)
        write_benchmark(Path(folder) / "writes.db", args.writes)
        gc_pause_benchmark(snapshot_db, args.flags, args.repeats)


if __name__ == "__main__":
    main()
