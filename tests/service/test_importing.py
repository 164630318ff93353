"""Importing Unleash's feature export (and copying a whole Unleash), over every store:
all or nothing, idempotent, conflicts reported, strategies in the file's order."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flagcore.entities import Environment, Project, StrategyDefinition, Tag, TagType
from flagcore.errors import Conflict, FlagcoreError, InvalidInput
from flagcore.model import Constraint, Segment
from flagcore.service import InstanceCopy, Service
from flagcore.wire import read_export, write_export
from tests.service.store_factories import FACTORIES

ENV = "development"


@pytest.fixture(params=sorted(FACTORIES))
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Service]:
    store = FACTORIES[request.param](tmp_path)
    try:
        yield Service(store)
    finally:
        store.close()


def small_export() -> dict[str, Any]:
    """Two flags as Unleash exports them: a parent with two strategies (the second one
    with variants and a segment) and a child that depends on it."""
    return {
        "features": [
            {
                "name": "checkout",
                "type": "release",
                "description": "new checkout",
                "project": "web",
                "stale": False,
                "impressionData": True,
                "archived": False,
            },
            {
                "name": "checkout-banner",
                "type": "experiment",
                "description": None,
                "project": "web",
                "stale": False,
                "impressionData": False,
                "archived": False,
            },
        ],
        "featureStrategies": [
            {
                "featureName": "checkout",
                "id": "01ABC",
                "name": "userWithId",
                "title": None,
                "disabled": False,
                "parameters": {"userIds": "alice,bob"},
                "constraints": [],
                "segments": [],
                "variants": [
                    {
                        "name": "blue",
                        "weight": 1000,
                        "weightType": "variable",
                        "stickiness": "default",
                    }
                ],
            },
            {
                "featureName": "checkout",
                "id": "01ABD",
                "name": "flexibleRollout",
                "title": "half",
                "disabled": False,
                "parameters": {"rollout": "50", "stickiness": "userId", "groupId": "checkout"},
                "constraints": [
                    {
                        "contextName": "plan",
                        "operator": "IN",
                        "values": ["pro"],
                        "inverted": False,
                        "caseInsensitive": False,
                    }
                ],
                "segments": [7],
                "variants": [
                    {
                        "name": "red",
                        "weight": 500,
                        "weightType": "variable",
                        "stickiness": "userId",
                        "payload": {"type": "string", "value": "r"},
                    },
                    {
                        "name": "green",
                        "weight": 500,
                        "weightType": "variable",
                        "stickiness": "userId",
                    },
                ],
            },
            {
                "featureName": "checkout-banner",
                "id": "01ABE",
                "name": "default",
                "title": None,
                "disabled": False,
                "parameters": {},
                "constraints": [],
                "segments": [],
                "variants": [],
            },
        ],
        "featureEnvironments": [
            {
                "name": "checkout",
                "featureName": "checkout",
                "environment": "production",
                "enabled": True,
                "variants": [],
            },
            {
                "name": "checkout-banner",
                "featureName": "checkout-banner",
                "environment": "production",
                "enabled": False,
                "variants": [],
            },
        ],
        "contextFields": [
            {
                "name": "plan",
                "description": "billing plan",
                "legalValues": [{"value": "pro"}],
                "stickiness": False,
                "sortOrder": 0,
            }
        ],
        "featureTags": [{"featureName": "checkout", "tagType": "team", "tagValue": "payments"}],
        "segments": [{"id": 7, "name": "beta-users"}],
        "tagTypes": [{"name": "team", "description": "owning team", "color": None, "icon": None}],
        "dependencies": [
            {
                "feature": "checkout-banner",
                "dependencies": [{"feature": "checkout", "enabled": True, "variants": []}],
            }
        ],
        "links": [],
    }


def with_segment(service: Service) -> Segment:
    return service.segments.create_segment(
        "beta-users", [Constraint("userId", "STR_STARTS_WITH", ("beta-",))]
    )


def test_an_import_creates_every_flag_with_its_rules_in_the_files_order(
    service: Service,
) -> None:
    segment = with_segment(service)
    report = service.importing.import_export("default", ENV, read_export(small_export()))
    assert report.created == ("checkout", "checkout-banner")
    assert report.tag_types_created == ("team",)
    details = service.flags.get_flag("default", "checkout")
    assert details.flag.impression_data
    assert details.flag.description == "new checkout"
    assert details.tags == (Tag("team", "payments"),)
    state = next(e for e in details.environments if e.environment.name == ENV)
    assert state.enabled
    assert [s.name for s in state.strategies] == ["userWithId", "flexibleRollout"]
    rollout = state.strategies[1]
    assert rollout.segments == (segment.id,)  # mapped by name, not the exporter's id 7
    assert rollout.title == "half"
    assert [v.name for v in rollout.variants] == ["green", "red"]  # as Unleash stores them
    child = service.flags.get_flag("default", "checkout-banner").flag
    assert [d.feature for d in child.dependencies] == ["checkout"]
    # What SDKs see: the first strategy decides for alice.
    engine = service.client.engine(ENV)
    assert engine.get_variant("checkout", {"userId": "alice"}).name == "blue"


def test_running_an_import_again_changes_nothing(service: Service) -> None:
    with_segment(service)
    export = read_export(small_export())
    service.importing.import_export("default", ENV, export)
    revision = service.store.revision()
    again = service.importing.import_export("default", ENV, export)
    assert again.created == ()
    assert again.updated == ()
    assert again.unchanged == ("checkout", "checkout-banner")
    assert service.store.revision() == revision


def test_an_export_read_back_imports_as_the_same_flags(service: Service) -> None:
    with_segment(service)
    service.importing.import_export("default", ENV, read_export(small_export()))
    written = write_export(service.exporting.export_flags(ENV, project="default"))
    assert [s["sortOrder"] for s in written["featureStrategies"]] == [None, None, None]
    assert {c["name"] for c in written["contextFields"]} >= {"plan", "userId"}
    again = service.importing.import_export("default", ENV, read_export(written))
    assert again.unchanged == ("checkout", "checkout-banner")


def test_an_export_naming_a_missing_segment_is_refused_saying_which(service: Service) -> None:
    before = service.store.revision()
    with pytest.raises(InvalidInput) as refused:
        service.importing.import_export("default", ENV, read_export(small_export()))
    assert "beta-users" in refused.value.message
    assert [d.path for d in refused.value.details] == ["$.segments[0].name"]
    assert service.store.revision() == before
    assert service.flags.list_flags("default") == []


def test_a_file_with_several_problems_is_refused_as_a_whole_with_each_path(
    service: Service,
) -> None:
    with_segment(service)
    data = small_export()
    data["featureStrategies"][1]["parameters"]["rollout"] = "150"
    data["featureStrategies"][2]["name"] = "no-such-strategy"
    data["featureTags"].append({"featureName": "ghost", "tagType": "team", "tagValue": "x1"})
    with pytest.raises(InvalidInput) as refused:
        service.importing.import_export("default", ENV, read_export(data))
    assert [d.path for d in refused.value.details] == [
        "$.featureTags[1].featureName",
        "$.featureStrategies[1].parameters.rollout",
        "$.featureStrategies[2].name",
    ]
    assert service.flags.list_flags("default") == []
    assert [t.name for t in service.tags.list_tag_types()] == ["simple"]


def test_a_differing_flag_is_a_conflict_unless_overwriting(service: Service) -> None:
    with_segment(service)
    service.flags.create_flag("default", "checkout", description="mine")
    export = read_export(small_export())
    with pytest.raises(Conflict) as refused:
        service.importing.import_export("default", ENV, export)
    assert "checkout" in refused.value.message
    assert refused.value.details[0].path == "$.features[0]"
    assert "metadata" in refused.value.details[0].message
    assert [f.name for f in service.flags.list_flags("default")] == ["checkout"]
    report = service.importing.import_export("default", ENV, export, overwrite=True)
    assert report.updated == ("checkout",)
    assert report.created == ("checkout-banner",)
    assert service.flags.get_flag("default", "checkout").flag.description == "new checkout"


def test_a_flag_of_another_project_is_refused_even_when_overwriting(service: Service) -> None:
    with_segment(service)
    service.projects.create_project("web", "Web")
    service.flags.create_flag("web", "checkout")
    with pytest.raises(InvalidInput) as refused:
        service.importing.import_export("default", ENV, read_export(small_export()), overwrite=True)
    assert 'project "web"' in refused.value.details[0].message


def test_a_dry_run_reports_and_keeps_nothing(service: Service) -> None:
    with_segment(service)
    before = service.store.revision()
    report = service.importing.import_export(
        "default", ENV, read_export(small_export()), dry_run=True
    )
    assert report.dry_run
    assert report.created == ("checkout", "checkout-banner")
    assert service.store.revision() == before
    assert service.flags.list_flags("default") == []


def test_one_file_imports_into_two_environments_side_by_side(service: Service) -> None:
    with_segment(service)
    export = read_export(small_export())
    service.importing.import_export("default", "development", export)
    service.importing.import_export("default", "production", export)
    for environment in ("development", "production"):
        strategies = service.strategies.list_strategies("default", "checkout", environment)
        assert [s.name for s in strategies] == ["userWithId", "flexibleRollout"]


def test_validation_lists_errors_conflicts_and_warnings_without_writing(
    service: Service,
) -> None:
    service.flags.create_flag("default", "checkout")
    check = service.importing.validate("default", ENV, read_export(small_export()))
    assert [d.path for d in check.errors] == ["$.segments[0].name"]
    with_segment(service)
    check = service.importing.validate("default", ENV, read_export(small_export()))
    assert check.errors == ()
    assert [d.path for d in check.conflicts] == ["$.features[0]"]
    assert any("checkout-banner" in w for w in check.warnings)
    assert [f.name for f in service.flags.list_flags("default")] == ["checkout"]


def _instance() -> InstanceCopy:
    data = small_export()
    production = copy.deepcopy(data)
    production["featureEnvironments"][0]["enabled"] = False
    return InstanceCopy(
        projects=(Project("web", "Web shop"),),
        environments=(Environment("qa", "test", 5),),
        strategy_definitions=(StrategyDefinition("by-region", "custom"),),
        tag_types=(TagType("team", "owning team"),),
        segments=(
            Segment(7, "beta-users", (Constraint("userId", "STR_STARTS_WITH", ("beta-",)),)),
        ),
        flags={"web": {"development": read_export(data), "qa": read_export(production)}},
    )


def test_copying_an_instance_is_idempotent_and_keeps_each_environment(
    service: Service,
) -> None:
    report = service.importing.copy_instance(_instance())
    assert report.kinds["flags"].created == ("checkout", "checkout-banner")
    assert report.kinds["segments"].created == ("beta-users",)
    assert report.kinds["projects"].created == ("web",)
    details = service.flags.get_flag("web", "checkout")
    on = {e.environment.name: e.enabled for e in details.environments}
    assert on["development"]
    assert not on["qa"]
    revision = service.store.revision()
    again = service.importing.copy_instance(_instance())
    assert again.kinds["flags"].unchanged == ("checkout", "checkout-banner")
    assert again.kinds["segments"].unchanged == ("beta-users",)
    assert service.store.revision() == revision


def test_a_copy_that_fails_half_way_leaves_nothing(service: Service) -> None:
    broken = _instance()
    data = small_export()
    data["featureStrategies"][0]["name"] = "no-such-strategy"
    broken = InstanceCopy(
        projects=broken.projects,
        segments=broken.segments,
        tag_types=broken.tag_types,
        flags={"web": {"development": read_export(data)}},
    )
    with pytest.raises(FlagcoreError):
        service.importing.copy_instance(broken)
    assert [p.id for p in service.projects.list_projects()] == ["default"]
    assert service.segments.list_segments() == []


def test_names_from_the_file_are_echoed_cut_short(service: Service) -> None:
    with_segment(service)
    data = small_export()
    data["featureTags"][0]["featureName"] = "x" * 100_000
    with pytest.raises(InvalidInput) as refused:
        service.importing.import_export("default", ENV, read_export(data))
    (detail,) = refused.value.details
    assert detail.path == "$.featureTags[0].featureName"
    assert len(detail.message) < 200
    assert len(refused.value.message) < 300


def test_dependencies_follow_unleashs_rules_or_the_file_is_refused(service: Service) -> None:
    with_segment(service)
    data = small_export()
    data["dependencies"].append(
        {"feature": "checkout", "dependencies": [{"feature": "nowhere", "enabled": True}]}
    )
    with pytest.raises(InvalidInput) as refused:
        service.importing.import_export("default", ENV, read_export(data))
    assert [d.path for d in refused.value.details] == [
        # checkout-banner's parent now has a parent of its own: one level only.
        "$.dependencies[0].dependencies[0].feature",
        "$.dependencies[1].dependencies[0].feature",
        "$.dependencies[1].feature",
    ]
    assert service.flags.list_flags("default") == []
