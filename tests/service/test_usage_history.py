"""Usage history (issue 32): hour buckets rolled up into day buckets by the retention run,
exactly once across nodes, and read back as a flag's series, over every store."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from flagcore.entities import FlagMetrics
from flagcore.errors import InvalidInput, NotFound
from flagcore.ports import Store
from flagcore.service import RetentionSettings, Service
from flagcore_store_postgres import PostgresStore
from flagcore_store_sqlite import SqliteStore
from tests.clock import HandClock as _Clock
from tests.cluster.postgres_server import fresh_database

DEV = "development"
PROD = "production"
NOW = dt.datetime(2026, 6, 30, 12, 20, tzinfo=dt.UTC)
HOUR = dt.timedelta(hours=1)
DAY = dt.timedelta(days=1)


@pytest.fixture
def store(every_store: Store) -> Store:
    return every_store


def _hour(days_ago: int, hour: int) -> dt.datetime:
    day = NOW.replace(hour=0, minute=0) - DAY * days_ago
    return day + HOUR * hour


def _seed(store: Store, rows: list[FlagMetrics]) -> None:
    """Buckets as SDKs would have written them over the past weeks (intake only takes the
    last 48 hours, so history is written through the port)."""
    with store.transaction() as tx:
        tx.add_flag_metrics(rows)


def _totals(service: Service, flag: str) -> tuple[int, int, dict[str, int]]:
    """Every count of the flag, hours and days together."""
    with service.store.transaction(write=False) as tx:
        rows = [*tx.list_flag_metrics(flag), *tx.list_daily_flag_metrics(flag)]
    variants: dict[str, int] = {}
    for row in rows:
        for name, count in row.variants.items():
            variants[name] = variants.get(name, 0) + count
    return sum(r.yes for r in rows), sum(r.no for r in rows), variants


def test_hours_past_their_retention_become_day_buckets_that_add_up(store: Store) -> None:
    service = Service(store, clock=_Clock(NOW))
    service.flags.create_flag("default", "checkout")
    _seed(
        store,
        [
            FlagMetrics("checkout", "shop", DEV, _hour(40, 3), 1, 2, {"blue": 1}),
            FlagMetrics("checkout", "shop", DEV, _hour(40, 20), 10, 0, {"blue": 2, "red": 1}),
            FlagMetrics("checkout", "shop", PROD, _hour(40, 5), 0, 4, {}),
            FlagMetrics("checkout", "shop", DEV, _hour(2, 7), 5, 5, {}),
        ],
    )
    report = service.retention.prune(RetentionSettings(), now=NOW)
    assert report.metrics == 3  # the three hours older than 30 days moved
    with store.transaction(write=False) as tx:
        assert list(tx.list_daily_flag_metrics("checkout")) == [
            FlagMetrics("checkout", "shop", DEV, _hour(40, 0), 11, 2, {"blue": 3, "red": 1}),
            FlagMetrics("checkout", "shop", PROD, _hour(40, 0), 0, 4, {}),
        ]
        assert [m.hour for m in tx.list_flag_metrics("checkout")] == [_hour(2, 7)]
    assert service.retention.prune(RetentionSettings(), now=NOW).total == 0
    # A year on (the default keeps days 365 days), the day goes too.
    later = service.retention.prune(RetentionSettings(), now=NOW + DAY * 330)
    assert later.daily_metrics == 2


def test_a_roll_up_in_small_batches_and_repeated_counts_each_evaluation_once(
    store: Store,
) -> None:
    service = Service(store, clock=_Clock(NOW))
    service.flags.create_flag("default", "checkout")
    _seed(
        store,
        [
            FlagMetrics("checkout", app, DEV, _hour(35, h), h, 1, {"v": 2})
            for h in range(24)
            for app in ("shop", "admin")
        ],
    )
    before = _totals(service, "checkout")
    moved = [service.retention.prune(now=NOW, batch=7).metrics for _ in range(9)]
    assert moved == [7, 7, 7, 7, 7, 7, 6, 0, 0]
    assert _totals(service, "checkout") == before
    with store.transaction(write=False) as tx:
        assert len(tx.list_daily_flag_metrics("checkout")) == 2  # one day, two apps


def _node_opener(kind: str, tmp_path: Path) -> Callable[[], Store]:
    """Opens one more store over the same database: another node, or a restart."""
    if kind == "postgres":
        url = fresh_database()
        return lambda: PostgresStore(url)
    return lambda: SqliteStore(tmp_path / "shared.db")


@pytest.mark.parametrize("kind", ["sqlite-file", "postgres"])
def test_two_nodes_rolling_up_at_once_and_a_restart_never_double_count(
    kind: str, tmp_path: Path
) -> None:
    open_node = _node_opener(kind, tmp_path)
    first, second = open_node(), open_node()
    try:
        one = Service(first, clock=_Clock(NOW))
        one.flags.create_flag("default", "checkout")
        two = Service(second, clock=_Clock(NOW))
        _seed(
            first,
            [
                FlagMetrics("checkout", f"app-{a}", DEV, _hour(d, h), 3, 1, {"v": 1})
                for d in (31, 32, 33)
                for h in range(0, 24, 2)
                for a in range(4)
            ],
        )
        before = _totals(one, "checkout")
        assert before == (3 * 144, 144, {"v": 144})
        errors: list[BaseException] = []

        def roll_up(service: Service) -> None:
            try:
                while service.retention.prune(now=NOW, batch=5).metrics:
                    pass
            except BaseException as error:  # reported by the assertion below
                errors.append(error)

        racers = [threading.Thread(target=roll_up, args=(s,)) for s in (one, two, one, two)]
        for racer in racers:
            racer.start()
        for racer in racers:
            racer.join()
        assert errors == []
        assert _totals(two, "checkout") == before
        with second.transaction(write=False) as tx:
            assert list(tx.list_flag_metrics("checkout")) == []
            assert len(tx.list_daily_flag_metrics("checkout")) == 3 * 4
    finally:
        first.close()
        second.close()
    # A restart: the same file or database opened again rolls nothing up twice.
    again = open_node()
    try:
        service = Service(again, clock=_Clock(NOW))
        assert service.retention.prune(now=NOW).metrics == 0
        assert _totals(service, "checkout") == before
    finally:
        again.close()


def test_a_series_is_hourly_while_hours_are_kept_and_zero_filled_per_environment_and_app(
    store: Store,
) -> None:
    service = Service(store, clock=_Clock(NOW))
    service.flags.create_flag("default", "checkout")
    _seed(
        store,
        [
            FlagMetrics("checkout", "shop", DEV, _hour(0, 12), 4, 1, {"blue": 4}),
            FlagMetrics("checkout", "admin", PROD, _hour(0, 10), 0, 2, {}),
            FlagMetrics("checkout", "shop", DEV, _hour(0, 8), 9, 9, {}),  # before the window
        ],
    )
    series = service.usage_history.series("checkout", 3, hour_buckets_hours=720)
    assert not series.daily
    assert [(p.hour, p.environment, p.app_name, p.yes, p.no) for p in series.points] == [
        (_hour(0, 10), DEV, "shop", 0, 0),
        (_hour(0, 10), PROD, "admin", 0, 2),
        (_hour(0, 11), DEV, "shop", 0, 0),
        (_hour(0, 11), PROD, "admin", 0, 0),
        (_hour(0, 12), DEV, "shop", 4, 1),
        (_hour(0, 12), PROD, "admin", 0, 0),
    ]
    assert dict(series.points[4].variants) == {"blue": 4}


def test_a_series_past_the_kept_hours_is_daily_from_day_buckets_and_hours_together(
    store: Store,
) -> None:
    service = Service(store, clock=_Clock(NOW))
    service.flags.create_flag("default", "checkout")
    _seed(
        store,
        [
            FlagMetrics("checkout", "shop", DEV, _hour(45, 1), 1, 0, {"a": 1}),
            FlagMetrics("checkout", "shop", DEV, _hour(45, 23), 2, 0, {"a": 2}),
            FlagMetrics("checkout", "shop", DEV, _hour(1, 5), 0, 3, {}),
            FlagMetrics("checkout", "shop", DEV, _hour(0, 1), 5, 0, {}),
        ],
    )
    # The retention moved the first hour of that day already; the last is still an hour.
    service.retention.prune(now=_hour(15, 2), batch=1)
    series = service.usage_history.series("checkout", 24 * 60, hour_buckets_hours=720)
    assert series.daily
    assert len(series.points) == 60
    by_day = {p.hour: (p.yes, p.no, dict(p.variants)) for p in series.points}
    assert by_day[_hour(45, 0)] == (3, 0, {"a": 3})
    assert by_day[_hour(1, 0)] == (0, 3, {})
    assert by_day[_hour(0, 0)] == (5, 0, {})
    assert sum(p.yes + p.no for p in series.points) == 11


def test_a_series_refuses_a_bad_hours_back_and_an_unknown_flag(store: Store) -> None:
    service = Service(store, clock=_Clock(NOW))
    service.flags.create_flag("default", "checkout")
    for bad in (0, 24 * 366 + 1):
        with pytest.raises(InvalidInput) as refused:
            service.usage_history.series("checkout", bad, hour_buckets_hours=720)
        assert refused.value.details[0].path == "/query/hoursBack"
    with pytest.raises(NotFound):
        service.usage_history.series("nope", 24, hour_buckets_hours=720)


def test_the_summary_and_last_seen_name_each_environment_and_application(store: Store) -> None:
    service = Service(store, clock=_Clock(NOW))
    service.flags.create_flag("default", "checkout")
    _seed(
        store,
        [
            FlagMetrics("checkout", "shop", DEV, _hour(0, 12), 4, 1, {}),
            FlagMetrics("checkout", "admin", DEV, _hour(0, 11), 1, 0, {}),
            FlagMetrics("checkout", "admin", PROD, _hour(0, 12), 0, 2, {}),
            FlagMetrics("checkout", "batch", DEV, _hour(3, 12), 7, 0, {}),
        ],
    )
    summary = service.usage_history.summary("checkout")
    assert [(u.environment, u.yes, u.no) for u in summary.last_hour] == [(DEV, 5, 1), (PROD, 0, 2)]
    assert summary.seen_applications == ("admin", "shop")
    with store.transaction() as tx:
        tx.add_daily_flag_metrics([FlagMetrics("checkout", "cron", DEV, _hour(50, 0), 1, 0, {})])
    seen = service.usage_history.last_seen("checkout")
    assert [(s.app_name, s.last_seen, s.by_day) for s in seen] == [
        ("admin", _hour(0, 12), False),
        ("batch", _hour(3, 12), False),
        ("cron", _hour(50, 0), True),
        ("shop", _hour(0, 12), False),
    ]


def test_past_100_applications_a_day_the_rest_are_counted_together_not_as_rows(
    store: Store,
) -> None:
    service = Service(store, clock=_Clock(NOW))
    service.flags.create_flag("default", "checkout")
    _seed(
        store,
        [
            FlagMetrics("checkout", f"app-{n:03d}", env, _hour(40, n % 24), 1, 2, {"v": 1})
            for n in range(105)
            for env in (DEV, PROD)
        ],
    )
    before = _totals(service, "checkout")
    while service.retention.prune(now=NOW, batch=30).metrics:
        pass
    assert _totals(service, "checkout") == before
    with store.transaction(write=False) as tx:
        days = list(tx.list_daily_flag_metrics("checkout"))
    for env in (DEV, PROD):
        apps = {d.app_name: d for d in days if d.environment == env}
        assert len(apps) == 101  # 100 by name, the rest as one
        assert (apps[""].yes, apps[""].no) == (5, 10)
    # A later roll-up of a named application still adds to its own row.
    _seed(store, [FlagMetrics("checkout", "app-000", DEV, _hour(40, 23), 7, 0, {})])
    service.retention.prune(now=NOW)
    with store.transaction(write=False) as tx:
        named = [d for d in tx.list_daily_flag_metrics("checkout") if d.app_name == "app-000"]
    assert sorted((d.environment, d.yes) for d in named) == [(DEV, 8), (PROD, 1)]
