"""A flag's lifecycle (issue 32) derived from what happened to it, over every store:
made → initial, first SDK metrics outside production → pre-live, in production → live,
marked completed (and unmarked), archived; each stage with the time it was entered."""

from __future__ import annotations

import datetime as dt

import pytest

from flagcore.errors import InvalidInput, NotFound
from flagcore.ports import Store
from flagcore.service import Service
from tests.clock import HandClock as _Clock


def _at(hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(2026, 1, 1, hour, minute, tzinfo=dt.UTC)


@pytest.fixture
def store(every_store: Store) -> Store:
    return every_store


def _stages(service: Service, name: str = "checkout") -> list[tuple[str, dt.datetime]]:
    return [(s.stage, s.entered_at) for s in service.lifecycle.lifecycle_of("default", name)]


def test_stages_follow_creation_sdk_metrics_per_environment_completion_and_archiving(
    store: Store,
) -> None:
    clock = _Clock(_at(9))
    service = Service(store, clock=clock)
    service.flags.create_flag("default", "checkout")
    created = service.flags.get_flag("default", "checkout").flag.created_at
    assert _stages(service) == [("initial", created)]

    clock.now = _at(10, 5)
    service.metrics.record_metrics("shop", "i-1", "development", _at(10), {"checkout": {"yes": 1}})
    clock.now = _at(11, 5)
    # Seen again outside production: pre-live keeps its first time.
    service.metrics.record_metrics("shop", "i-1", "development", _at(11), {"checkout": {"no": 2}})
    clock.now = _at(12, 5)
    service.metrics.record_metrics("shop", "i-2", "production", _at(12), {"checkout": {"yes": 3}})
    assert _stages(service)[1:] == [("pre-live", _at(10, 5)), ("live", _at(12, 5))]

    clock.now = _at(13)
    service.lifecycle.complete_flag("default", "checkout", "kept", "variant-b")
    (completed,) = [
        s for s in service.lifecycle.lifecycle_of("default", "checkout") if s.stage == "completed"
    ]
    assert (completed.entered_at, completed.status, completed.status_value) == (
        _at(13),
        "kept",
        "variant-b",
    )
    # The time spent in each stage: to the next stage's entry; the current one, to now.
    clock.now = _at(13, 30)
    timeline = service.lifecycle.lifecycle_timeline("default", "checkout")
    assert [(t.stage.stage, t.left_at, t.spent) for t in timeline] == [
        ("initial", _at(10, 5), _at(10, 5) - created),
        ("pre-live", _at(12, 5), dt.timedelta(hours=2)),
        ("live", _at(13), dt.timedelta(minutes=55)),
        ("completed", None, dt.timedelta(minutes=30)),
    ]
    clock.now = _at(14)
    service.lifecycle.complete_flag("default", "checkout", "discarded")
    completed = service.lifecycle.lifecycle_of("default", "checkout")[-1]
    assert (completed.entered_at, completed.status) == (_at(13), "discarded")
    events = [e.type for e in service.events.list_events(limit=10)]
    assert events.count("feature-completed") == 2

    service.lifecycle.uncomplete_flag("default", "checkout")
    assert [s for s, _ in _stages(service)] == ["initial", "pre-live", "live"]
    assert service.events.list_events(limit=1)[0].type == "feature-uncompleted"

    clock.now = _at(15)
    service.archive.archive_flag("default", "checkout")
    assert _stages(service)[-1][0] == "archived"
    assert [s for s, _ in _stages(service)] == ["initial", "pre-live", "live", "archived"]


def test_metrics_that_count_nothing_and_names_that_are_no_flag_add_no_stage(
    store: Store,
) -> None:
    service = Service(store, clock=_Clock(_at(9)))
    service.flags.create_flag("default", "checkout")
    service.metrics.record_metrics(
        "shop", "i-1", "production", _at(9), {"checkout": {"yes": 0, "no": 0}, "ghost": {"yes": 1}}
    )
    assert [s for s, _ in _stages(service)] == ["initial"]


def test_a_bad_completion_is_refused_and_nothing_changes(store: Store) -> None:
    service = Service(store, clock=_Clock(_at(9)))
    service.flags.create_flag("default", "checkout")
    with pytest.raises(InvalidInput) as refused:
        service.lifecycle.complete_flag("default", "checkout", "maybe")
    assert refused.value.details[0].path == "$.status"
    with pytest.raises(InvalidInput) as refused:
        service.lifecycle.complete_flag("default", "checkout", "kept", "v" * 256)
    assert refused.value.details[0].path == "$.statusValue"
    with pytest.raises(NotFound):
        service.lifecycle.lifecycle_of("default", "nope")
    with pytest.raises(NotFound):
        service.lifecycle.complete_flag("other", "checkout", "kept")
    assert [s for s, _ in _stages(service)] == ["initial"]


def test_deleting_a_flag_for_good_deletes_its_stages(store: Store) -> None:
    service = Service(store, clock=_Clock(_at(9)))
    service.flags.create_flag("default", "checkout")
    service.metrics.record_metrics("shop", "i-1", "production", _at(9), {"checkout": {"yes": 1}})
    service.archive.archive_flag("default", "checkout")
    service.archive.delete_flag("checkout")
    service.flags.create_flag("default", "checkout")
    assert [s for s, _ in _stages(service)] == ["initial"]
