"""The largest stored integers the service accepts are kept by every store, PostgreSQL's
32-bit ``integer`` columns included, and one past them is refused before any store sees
it (issue 23 §3)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flagcore.errors import InvalidInput
from flagcore.model import Strategy
from flagcore.service import Service
from tests.service.store_factories import FACTORIES

INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)
ENV = "development"


@pytest.fixture(params=sorted(FACTORIES))
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Service]:
    store = FACTORIES[request.param](tmp_path)
    try:
        yield Service(store)
    finally:
        store.close()


def test_strategy_sort_orders_at_both_ends_are_stored_and_the_next_is_refused(
    service: Service,
) -> None:
    service.flags.create_flag("default", "f")
    for order in (INT32_MIN, INT32_MAX):
        service.strategies.add_strategy("default", "f", ENV, Strategy("default", sort_order=order))
    stored = service.strategies.list_strategies("default", "f", ENV)
    assert [s.sort_order for s in stored] == [INT32_MIN, INT32_MAX]
    revision = service.store.revision()
    with pytest.raises(InvalidInput) as refused:
        service.strategies.add_strategy("default", "f", ENV, Strategy("default"))
    assert [d.path for d in refused.value.details] == ["$.sortOrder"]
    with pytest.raises(InvalidInput):
        service.strategies.add_strategy(
            "default", "f", ENV, Strategy("default", sort_order=INT32_MAX + 1)
        )
    assert service.store.revision() == revision


def test_environment_sort_orders_at_the_top_are_stored_and_the_next_is_refused(
    service: Service,
) -> None:
    service.environments.create_environment("top", "test", INT32_MAX)
    assert {e.name: e.sort_order for e in service.environments.list_environments()}["top"] == (
        INT32_MAX
    )
    with pytest.raises(InvalidInput) as refused:
        service.environments.create_environment("next", "test")
    assert [d.path for d in refused.value.details] == ["$.sortOrder"]
    with pytest.raises(InvalidInput):
        service.environments.create_environment("past", "test", INT32_MIN - 1)


def test_an_sdk_interval_at_the_top_is_stored_and_past_it_refused(service: Service) -> None:
    service.instances.register_client("app", "i-1", interval=INT32_MAX)
    (instance,) = service.instances.client_instances()
    assert instance.interval == INT32_MAX
    with pytest.raises(InvalidInput) as refused:
        service.instances.register_client("app", "i-2", interval=INT32_MAX + 1)
    assert [d.path for d in refused.value.details] == ["$.interval"]
