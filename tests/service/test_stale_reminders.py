"""The daily reminder of potentially stale flags (issue 32), over every store: one
``feature-potentially-stale-reminder`` event per project naming its flags still
potentially stale, once per interval, whatever the nodes: the due time is kept in the
store and moved in the unit that writes the events."""

from __future__ import annotations

import datetime as dt
import functools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from flagcore.entities import FlagDefinition
from flagcore.ports import Store
from flagcore.service import REMINDER_EVENT, Service
from flagcore_store_postgres import PostgresStore
from flagcore_store_sqlite import SqliteStore
from tests.clock import HandClock as _Clock
from tests.cluster.postgres_server import fresh_database

_T = TypeVar("_T")
T0 = dt.datetime(2026, 6, 1, 8, 0, tzinfo=dt.UTC)
DAY = dt.timedelta(days=1)


@pytest.fixture
def store(every_store: Store) -> Store:
    return every_store


def _seed(service: Service) -> None:
    """Flags made 50 days before T0 (a release flag lives 40), and some that are not
    potentially stale: fresh, a kill switch, marked stale already, archived."""
    service.projects.create_project("web", "Web shop")
    old = T0 - dt.timedelta(days=50)
    with service.store.transaction() as tx:  # made then (a flag's creation time is kept)
        for project, name, kind in (
            ("default", "old-b", "release"),
            ("default", "old-a", "experiment"),
            ("web", "old-c", "release"),
            ("default", "switch", "kill-switch"),
            ("default", "marked", "release"),
            ("default", "gone", "release"),
        ):
            tx.save_flag(FlagDefinition(name, project=project, type=kind, created_at=old))
    service.flags.create_flag("default", "fresh")
    service.flags.mark_stale("default", "marked", True)
    service.archive.archive_flag("default", "gone")


def _reminders(service: Service) -> list[tuple[str | None, str | None, object]]:
    return [
        (event.project, event.feature_name, event.data)
        for event in reversed(service.events.list_events(limit=100))
        if event.type == REMINDER_EVENT
    ]


def test_each_project_is_reminded_of_its_stale_flags_once_per_interval(store: Store) -> None:
    clock = _Clock(T0)
    service = Service(store, clock=clock)
    _seed(service)
    remind = service.feature_types.remind_potentially_stale

    # The first look only sets the first due time, a day on: a start writes no event.
    assert remind(DAY) == {}
    clock.now = T0 + dt.timedelta(hours=23, minutes=59)
    assert remind(DAY) == {}
    assert _reminders(service) == []

    clock.now = T0 + DAY
    assert remind(DAY) == {"default": ["old-a", "old-b"], "web": ["old-c"]}
    assert _reminders(service) == [
        ("default", None, {"features": ["old-a", "old-b"], "count": 2}),
        ("web", None, {"features": ["old-c"], "count": 1}),
    ]
    assert remind(DAY) == {}  # the next look, that same hour: already done
    clock.now = T0 + DAY + dt.timedelta(hours=1)
    assert remind(DAY) == {}

    # A person deals with one; the next day names the others only.
    service.archive.archive_flag("default", "old-a")
    clock.now = T0 + 2 * DAY + dt.timedelta(minutes=5)
    assert remind(DAY) == {"default": ["old-b"], "web": ["old-c"]}

    # Down for days: one reminder when back, and the cadence kept (due at T0 + 6 days).
    clock.now = T0 + 5 * DAY + dt.timedelta(hours=3)
    assert remind(DAY) == {"default": ["old-b"], "web": ["old-c"]}
    clock.now = T0 + 6 * DAY - dt.timedelta(seconds=1)
    assert remind(DAY) == {}
    clock.now = T0 + 6 * DAY
    assert remind(DAY) == {"default": ["old-b"], "web": ["old-c"]}
    assert len(_reminders(service)) == 2 + 2 + 2 + 2


def test_no_project_has_a_stale_flag_so_no_event_is_written(store: Store) -> None:
    clock = _Clock(T0)
    service = Service(store, clock=clock)
    service.flags.create_flag("default", "fresh")
    remind = service.feature_types.remind_potentially_stale
    assert remind(DAY) == {}
    clock.now = T0 + DAY
    assert remind(DAY) == {}
    assert _reminders(service) == []


def _node_opener(kind: str, tmp_path: Path) -> Callable[[], Store]:
    """Opens one more store over the same database: another node."""
    if kind == "postgres":
        url = fresh_database()
        return lambda: PostgresStore(url)
    return lambda: SqliteStore(tmp_path / "shared.db")


def _race(calls: list[Callable[[], _T]]) -> list[_T]:
    """Each call on a thread of its own, let go at once; their results."""
    results: list[_T] = []
    errors: list[BaseException] = []
    start = threading.Barrier(len(calls))

    def run(call: Callable[[], _T]) -> None:
        try:
            start.wait()
            results.append(call())
        except BaseException as error:  # reported by the assertion below
            errors.append(error)

    racers = [threading.Thread(target=run, args=(call,)) for call in calls]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    assert errors == []
    return results


@pytest.mark.parametrize("kind", ["sqlite-file", "postgres"])
def test_two_nodes_due_at_the_same_instant_remind_once(kind: str, tmp_path: Path) -> None:
    open_node = _node_opener(kind, tmp_path)
    first, second = open_node(), open_node()
    try:
        clock = _Clock(T0)
        one, two = Service(first, clock=clock), Service(second, clock=clock)
        _seed(one)
        assert one.feature_types.remind_potentially_stale(DAY) == {}  # the first due time
        clock.now = T0 + DAY
        results = _race(
            [
                functools.partial(service.feature_types.remind_potentially_stale, DAY)
                for service in (one, two, one, two)
            ]
        )
        assert sorted(results, key=len) == [
            {},
            {},
            {},
            {"default": ["old-a", "old-b"], "web": ["old-c"]},
        ]
        assert [project for project, _flag, _data in _reminders(two)] == ["default", "web"]
    finally:
        first.close()
        second.close()


@pytest.mark.parametrize("kind", ["sqlite-file", "postgres"])
def test_two_nodes_checking_at_the_same_instant_announce_each_flag_once(
    kind: str, tmp_path: Path
) -> None:
    open_node = _node_opener(kind, tmp_path)
    first, second = open_node(), open_node()
    try:
        one, two = Service(first), Service(second)
        _seed(one)
        announced = _race(
            [
                functools.partial(service.feature_types.announce_potentially_stale, T0)
                for service in (one, two, one, two)
            ]
        )
        assert sorted(name for names in announced for name in names) == [
            "old-a",
            "old-b",
            "old-c",
        ]
        events = two.events.list_events(limit=100)
        assert sorted(
            e.feature_name for e in events if e.type == "feature-potentially-stale-on"
        ) == [
            "old-a",
            "old-b",
            "old-c",
        ]
    finally:
        first.close()
        second.close()
