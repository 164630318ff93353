"""Writing SDK usage the HTTP layer held while the store was away (`Metrics.record_held`),
over every store flagcore ships: the same rules as a report written at once, in one
transaction."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from flagcore.entities import ClientInstance, FlagMetrics
from flagcore.ports import Store
from flagcore.service import HeldCounts, Service
from tests.service.store_factories import FACTORIES

DEV = "development"
HOUR = dt.datetime(2026, 1, 1, 10, tzinfo=dt.UTC)


@pytest.fixture(params=sorted(FACTORIES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    store = FACTORIES[request.param](tmp_path)
    yield store
    store.close()


def _held(flag: str, yes: int, projects: tuple[str, ...] | None = None) -> HeldCounts:
    return HeldCounts(FlagMetrics(flag, "shop", DEV, HOUR, yes, 1, {"blue": yes}), projects)


def test_held_counts_add_to_stored_ones_and_keep_only_existing_flags_in_the_tokens_scope(
    store: Store,
) -> None:
    service = Service(store, clock=lambda: HOUR + dt.timedelta(minutes=30))
    service.projects.create_project("web", "Web")
    service.flags.create_flag("default", "mine")
    service.flags.create_flag("web", "theirs")
    service.metrics.record_metrics("shop", "i-1", DEV, HOUR, {"mine": {"yes": 1}})
    held = [
        _held("mine", 5, ("default",)),
        _held("theirs", 7, ("default",)),  # outside the token's projects
        _held("theirs", 2, None),  # a "*" token's
        _held("made-up", 9),
    ]
    assert service.metrics.record_held(held, []) == 3 - 1

    (mine,) = service.metrics.flag_metrics("mine")
    assert (mine.yes, mine.no, dict(mine.variants)) == (6, 1, {"blue": 5})
    (theirs,) = service.metrics.flag_metrics("theirs")
    assert (theirs.yes, dict(theirs.variants)) == (2, {"blue": 2})
    assert service.metrics.flag_metrics("made-up") == []


def test_held_instances_are_saved_and_one_without_room_only_updates_a_known_one(
    store: Store,
) -> None:
    service = Service(store)
    service.instances.register_client("shop", "known", sdk_version="node:6")
    seen = dt.datetime(2026, 1, 1, 10, 30, tzinfo=dt.UTC)
    instances = [
        (ClientInstance("shop", "known", DEV, None, ("default",), None, 1000, seen), False),
        (ClientInstance("shop", "new", DEV, "node:6", (), None, None, seen), True),
        (ClientInstance("shop", "over-budget", DEV, None, (), None, None, seen), False),
    ]
    service.metrics.record_held([], instances)
    stored = {i.instance_id: i for i in service.instances.client_instances()}
    assert set(stored) == {"known", "new"}
    assert stored["known"].sdk_version == "node:6"  # kept: the held one sent none
    assert stored["known"].strategies == ("default",)
    assert stored["known"].last_seen == seen
