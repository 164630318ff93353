"""Usage-history benchmark (issue 32): a year of metric buckets in SQLite, the roll-up of
hours into days, and a flag's series, each against a plain query of the same rows.

Run by hand: ``.venv/bin/python benchmarks/history.py [--flags 1000] [--environments 3]
[--apps 5] [--series 200]``.

Setup (not measured): F flags × E environments × A applications, each with 335 day
buckets, 30 days of hour buckets (720) and one more day of hours past the hourly
retention, written with ``executemany`` into a fresh SQLite file (WAL, as the store opens
it). Then, in the same run:

1. the roll-up: `Retention.prune` in the server's batches (500 hour buckets a
   transaction) until the extra day is moved into day buckets, per hour bucket moved;
   the ceiling is a plain ``SELECT`` and ``DELETE`` of the same rows in one transaction
   (what any roll-up must at least read and remove);
2. the series the API and the flag page ask for (48 hours hourly, 30 days hourly, 365
   days daily) of random flags through ``service.usage_history.series``; the ceiling is a
   plain ``SELECT`` of the rows that series reads, on its own connection.

The ratios (ours over the ceiling) are what to compare between runs; the header prints the
load average, since this machine is shared.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from flagcore.service import RetentionSettings, Service
from flagcore_sql.mapping import time_text
from flagcore_store_sqlite import SqliteStore

NOW = dt.datetime.now(dt.UTC).replace(minute=30, second=0, microsecond=0)
TODAY = NOW.replace(hour=0, minute=0)
HOURLY_DAYS = 30
YEAR_DAYS = 365
BATCH = 500  # flagcore_http.calls' prune batch


def _series_keys(flags: int, environments: int, apps: int) -> Iterator[tuple[str, str, str]]:
    for f in range(flags):
        for e in range(environments):
            for a in range(apps):
                yield f"flag-{f:05d}", f"env-{e}", f"app-{a}"


def seed(path: Path, flags: int, environments: int, apps: int) -> tuple[int, int]:
    """A year of buckets per (flag, environment, app); returns (hour rows, day rows)."""
    store = SqliteStore(path)
    service = Service(store)
    for f in range(flags):
        service.flags.create_flag("default", f"flag-{f:05d}")
    store.close()
    first_hour = TODAY - dt.timedelta(days=HOURLY_DAYS + 1)  # one day past retention
    hours = [time_text(first_hour + dt.timedelta(hours=h)) for h in range(24 * (HOURLY_DAYS + 1))]
    days = [time_text(TODAY - dt.timedelta(days=d)) for d in range(HOURLY_DAYS + 2, YEAR_DAYS + 1)]
    variants = '{"blue": 3, "red": 1}'
    hour_rows = day_rows = 0
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=OFF")  # setup only
        for flag, env, app in _series_keys(flags, environments, apps):
            db.executemany(
                "INSERT INTO flag_metrics VALUES (?, ?, ?, ?, 3, 1, ?)",
                ((flag, app, env, hour, variants) for hour in hours),
            )
            db.executemany(
                "INSERT INTO flag_metrics_daily VALUES (?, ?, ?, ?, 72, 24, ?)",
                ((flag, app, env, day, variants) for day in days),
            )
            hour_rows += len(hours)
            day_rows += len(days)
        db.commit()
    return hour_rows, day_rows


def _timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def roll_up(path: Path) -> tuple[int, float, float]:
    """(hour buckets moved, seconds ours, seconds of the plain SELECT + DELETE ceiling),
    each on a copy of the same file."""
    ceiling_copy = path.with_name("ceiling.db")
    with (
        contextlib.closing(sqlite3.connect(path)) as db,
        contextlib.closing(sqlite3.connect(ceiling_copy)) as copy,
    ):
        db.backup(copy)
    cutoff = time_text(NOW - dt.timedelta(days=HOURLY_DAYS))

    def plain() -> None:
        with contextlib.closing(sqlite3.connect(ceiling_copy, isolation_level=None)) as db:
            db.execute("BEGIN IMMEDIATE")
            db.execute("SELECT * FROM flag_metrics WHERE hour < ?", (cutoff,)).fetchall()
            db.execute("DELETE FROM flag_metrics WHERE hour < ?", (cutoff,))
            db.execute("COMMIT")

    ceiling = _timed(plain)
    store = SqliteStore(path)
    service = Service(store, clock=lambda: NOW)
    moved = 0

    def ours() -> None:
        nonlocal moved
        while step := service.retention.prune(RetentionSettings(), now=NOW, batch=BATCH).metrics:
            moved += step

    seconds = _timed(ours)
    store.close()
    return moved, seconds, ceiling


def series(path: Path, flags: int, count: int) -> list[tuple[str, float, float, int]]:
    """Per span: (its name, median seconds ours, median seconds of the plain SELECT,
    points answered)."""
    store = SqliteStore(path)
    service = Service(store, clock=lambda: NOW)
    rng = random.Random(7)
    names = [f"flag-{rng.randrange(flags):05d}" for _ in range(count)]
    results = []
    spans = (("48 hours, hourly", 48, False), ("30 days, hourly", 720, False))
    spans += (("365 days, daily", 365 * 24, True),)
    with contextlib.closing(sqlite3.connect(path)) as db:
        for label, hours_back, daily in spans:
            ours, plain, points = [], [], 0
            since = time_text(
                TODAY - dt.timedelta(days=hours_back // 24 - 1)
                if daily
                else NOW.replace(minute=0) - dt.timedelta(hours=hours_back - 1)
            )
            for name in names:
                start = time.perf_counter()
                answer = service.usage_history.series(name, hours_back, hour_buckets_hours=720)
                ours.append(time.perf_counter() - start)
                points = len(answer.points)
                start = time.perf_counter()
                db.execute(
                    "SELECT * FROM flag_metrics WHERE flag = ? AND hour >= ?", (name, since)
                ).fetchall()
                if daily:
                    db.execute(
                        "SELECT * FROM flag_metrics_daily WHERE flag = ? AND hour >= ?",
                        (name, since),
                    ).fetchall()
                plain.append(time.perf_counter() - start)
            results.append((label, statistics.median(ours), statistics.median(plain), points))
    store.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flags", type=int, default=1000)
    parser.add_argument("--environments", type=int, default=3)
    parser.add_argument("--apps", type=int, default=5)
    parser.add_argument("--series", type=int, default=200, help="flags asked per span")
    args = parser.parse_args()
    print(
        f"load average {os.getloadavg()[0]:.1f}; {args.flags} flags x {args.environments} "
        f"environments x {args.apps} applications"
    )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "history.db"
        started = time.perf_counter()
        hours, days = seed(path, args.flags, args.environments, args.apps)
        size = sum(p.stat().st_size for p in Path(folder).glob("history.db*"))
        print(
            f"setup: {hours:,} hour and {days:,} day buckets, {size / 1e6:.0f} MB, "
            f"{time.perf_counter() - started:.0f} s"
        )
        moved, ours, ceiling = roll_up(path)
        print(
            f"roll-up: {moved:,} hour buckets into days in {ours:.2f} s "
            f"({ours / max(moved, 1) * 1e6:.0f} us each); plain SELECT + DELETE "
            f"{ceiling:.2f} s; ratio {ours / ceiling:.1f}x"
        )
        for label, mine, plain, points in series(path, args.flags, args.series):
            print(
                f"series {label}: {points} points, median {mine * 1e3:.2f} ms; plain SELECT "
                f"{plain * 1e3:.2f} ms; ratio {mine / plain:.1f}x"
            )


if __name__ == "__main__":
    main()
