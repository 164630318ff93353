"""Names that differ only in case are different names, as in Unleash 8.2 (its tables
compare names exactly: ``WHERE name = ?`` in PostgreSQL): ``flag-one`` and ``FLAG-ONE``
are two flags, projects ``P2`` and ``p2`` two projects, each addressed by its exact name,
over every store and through an import (issue 24 #6; docs/migrating-from-unleash.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flagcore.errors import NameConflict, NotFound
from flagcore.service import Service
from flagcore.wire import read_export
from tests.service.store_factories import FACTORIES

ENV = "development"


@pytest.fixture(params=sorted(FACTORIES))
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Service]:
    store = FACTORIES[request.param](tmp_path)
    try:
        yield Service(store)
    finally:
        store.close()


def test_flags_differing_only_in_case_are_two_flags(service: Service) -> None:
    service.flags.create_flag("default", "flag-one", description="lower")
    service.flags.create_flag("default", "FLAG-ONE", description="upper")
    service.environments.set_environment_enabled("default", "FLAG-ONE", ENV, True)
    assert service.flags.get_flag("default", "flag-one").flag.description == "lower"
    assert service.flags.get_flag("default", "FLAG-ONE").flag.description == "upper"
    with pytest.raises(NotFound):
        service.flags.get_flag("default", "Flag-One")
    with pytest.raises(NameConflict):
        service.flags.create_flag("default", "FLAG-ONE")
    engine = service.client.engine(ENV)
    assert engine.is_enabled("FLAG-ONE", {})
    assert not engine.is_enabled("flag-one", {})


def test_projects_differing_only_in_case_are_two_projects(service: Service) -> None:
    service.projects.create_project("P2", "upper")
    service.projects.create_project("p2", "lower")
    service.flags.create_flag("P2", "in-upper")
    assert [f.name for f in service.flags.list_flags("P2")] == ["in-upper"]
    assert service.flags.list_flags("p2") == []
    with pytest.raises(NameConflict):
        service.projects.create_project("p2", "again")


def test_an_import_keeps_names_differing_only_in_case_apart(service: Service) -> None:
    service.flags.create_flag("default", "checkout")
    export = read_export(
        {
            "features": [
                {"name": "Checkout", "type": "release", "project": "web"},
                {"name": "CHECKOUT", "type": "release", "project": "web"},
            ],
            "featureStrategies": [],
            "featureEnvironments": [],
            "contextFields": [],
            "featureTags": [],
            "segments": [],
            "tagTypes": [],
            "dependencies": [],
        }
    )
    report = service.importing.import_export("default", ENV, export)
    assert report.created == ("Checkout", "CHECKOUT")
    names = sorted(f.name for f in service.flags.list_flags("default"))
    assert names == ["CHECKOUT", "Checkout", "checkout"]
