"""The last hour's yes/no counts per application and flag (the Applications page's table),
over every store flagcore ships."""

from __future__ import annotations

import datetime as dt

import pytest

from flagcore.ports import Store
from flagcore.service import Service
from flagcore.service.metrics import AppFlagCounts
from tests.clock import HandClock as _Clock

DEV = "development"
PROD = "production"


def _at(hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(2026, 1, 1, hour, minute, tzinfo=dt.UTC)


@pytest.fixture
def store(every_store: Store) -> Store:
    return every_store


def test_last_hour_sums_environments_and_the_two_overlapping_hours_per_app_and_flag(
    store: Store,
) -> None:
    clock = _Clock(_at(10, 20))
    service = Service(store, clock=clock)
    for name in ("checkout", "banner"):
        service.flags.create_flag("default", name)
    record = service.metrics.record_metrics
    record("shop", "i-1", DEV, _at(8, 30), {"checkout": {"yes": 100, "no": 100}})  # too old
    record("shop", "i-1", DEV, _at(9, 10), {"checkout": {"yes": 1, "no": 2}})
    record("shop", "i-1", DEV, _at(10, 5), {"checkout": {"yes": 3}, "banner": {"no": 4}})
    record("shop", "i-2", DEV, _at(10, 15), {"checkout": {"yes": 2**63 - 1}})
    record("shop", "i-3", PROD, _at(10, 2), {"banner": {"no": 1}})
    record("admin", "a-1", DEV, _at(10, 1), {"checkout": {"no": 7}})

    last_hour = service.metrics.last_hour_by_flag()
    assert last_hour.counts == [
        AppFlagCounts("admin", "checkout", 0, 7),
        AppFlagCounts("shop", "banner", 0, 5),
        AppFlagCounts("shop", "checkout", 2**63 - 1, 2),  # saturates, as stored counts do
    ]
    assert not last_hour.truncated

    clock.now = _at(11, 5)  # the 9:00 bucket no longer overlaps the last hour
    assert service.metrics.last_hour_by_flag().counts == [
        AppFlagCounts("admin", "checkout", 0, 7),
        AppFlagCounts("shop", "banner", 0, 5),
        AppFlagCounts("shop", "checkout", 2**63 - 1, 0),
    ]
    clock.now = _at(12, 0)
    assert service.metrics.last_hour_by_flag().counts == []


def test_last_hour_reads_a_bounded_number_of_buckets_and_says_when_it_cut(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("flagcore.service.metrics.LAST_HOUR_ROWS", 2)
    service = Service(store, clock=_Clock(_at(10, 20)))
    for name in ("a", "b", "c"):
        service.flags.create_flag("default", name)
    service.metrics.record_metrics("shop", "i", DEV, _at(10), {"a": {"yes": 1}, "b": {"yes": 1}})
    assert not service.metrics.last_hour_by_flag().truncated
    service.metrics.record_metrics("shop", "i", DEV, _at(10), {"c": {"yes": 1}})
    cut = service.metrics.last_hour_by_flag()
    assert [c.flag for c in cut.counts] == ["a", "b"]
    assert cut.truncated
