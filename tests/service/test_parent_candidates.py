"""The parents a flag's page offers: the project's other active flags, read with a bound."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flagcore.ports import Store
from flagcore.service import Service
from tests.service.store_factories import FACTORIES


@pytest.fixture(params=sorted(FACTORIES))
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Service]:
    store: Store = FACTORIES[request.param](tmp_path)
    yield Service(store)
    store.close()


def test_the_projects_other_active_flags_are_offered_until_there_are_too_many(
    service: Service,
) -> None:
    service.projects.create_project("shop", "Shop")
    for name in ("a", "b", "child", "gone"):
        service.flags.create_flag("default", name)
    service.flags.create_flag("shop", "elsewhere")
    service.archive.archive_flag("default", "gone")
    dependencies = service.dependencies
    assert dependencies.parent_candidates("default", "child", limit=2) == ["a", "b"]
    service.flags.create_flag("default", "c")
    assert dependencies.parent_candidates("default", "child", limit=2) is None
    assert dependencies.parent_candidates("default", "child", limit=3) == ["a", "b", "c"]
