"""Unleash's export and import paths: /api/admin/features-batch/{export,validate,import}."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flagcore.service import Service
from tests.http.conftest import CLIENT, Api

DATA = Path(__file__).parent.parent / "data" / "unleash-export-8.2"
EXPORT = json.loads((DATA / "unleash-export-8.2.json").read_text())
SEGMENTS = json.loads((DATA / "unleash-export-8.2.segments.json").read_text())["segments"]


async def make_segments(api: Api) -> None:
    for segment in SEGMENTS:
        await api.json("POST", "/api/admin/segments", 201, json=segment)


def body(data: Any, **more: Any) -> dict[str, Any]:
    return {"project": "default", "environment": "development", "data": data, **more}


async def test_an_unleash_export_imports_and_serves_sdks_in_the_files_order(api: Api) -> None:
    await make_segments(api)
    answer = await api.json("POST", "/api/admin/features-batch/import", json=body(EXPORT))
    assert len(answer["created"]) == 60
    features = await api.json(
        "GET", "/api/client/features", token=CLIENT, headers={"Unleash-Client-Spec": "5.0.0"}
    )
    served = {f["name"]: f for f in features["features"]}
    for flag in ("mig.flag-02", "mig.flag-04", "mig.flag-40"):
        in_file = [
            s["name"]
            for s in EXPORT["featureStrategies"]
            if s["featureName"] == flag and not s["disabled"]
        ]
        assert [s["name"] for s in served[flag]["strategies"]] == in_file


async def test_export_writes_unleash_format_that_imports_back_unchanged(api: Api) -> None:
    await make_segments(api)
    await api.json("POST", "/api/admin/features-batch/import", json=body(EXPORT))
    names = [f["name"] for f in EXPORT["features"]]
    response = await api.request(
        "POST",
        "/api/admin/features-batch/export",
        json={"features": names, "environment": "development", "downloadFile": True},
    )
    assert response.status == 200
    assert "attachment" in response.headers["Content-Disposition"]
    exported = await response.json()
    assert set(exported) == {
        "features",
        "featureStrategies",
        "featureEnvironments",
        "contextFields",
        "featureTags",
        "segments",
        "tagTypes",
        "dependencies",
        "links",
    }
    assert {s["sortOrder"] for s in exported["featureStrategies"]} == {None}
    assert [s["name"] for s in exported["segments"]] == ["mig-seg-0", "mig-seg-1", "mig-seg-2"]
    again = await api.json("POST", "/api/admin/features-batch/import", json=body(exported))
    assert again["created"] == []
    assert again["updated"] == []
    assert len(again["unchanged"]) == 60


async def test_a_malformed_export_is_refused_whole_with_each_path(
    api: Api, service: Service
) -> None:
    broken = json.loads(json.dumps(EXPORT))
    broken["featureStrategies"][0]["constraints"] = "userId IN a"
    broken["features"][3]["stale"] = "no"
    problem = await api.json("POST", "/api/admin/features-batch/import", 400, json=body(broken))
    assert problem["name"] == "BadDataError"
    assert {d["path"] for d in problem["details"]} == {
        "$.data.featureStrategies[0].constraints",
        "$.data.features[3].stale",
    }
    assert service.flags.list_flags() == []


async def test_an_export_naming_missing_segments_is_refused_saying_which(
    api: Api, service: Service
) -> None:
    problem = await api.json("POST", "/api/admin/features-batch/import", 400, json=body(EXPORT))
    assert "mig-seg-0" in problem["message"]
    assert [d["path"] for d in problem["details"]] == [
        "$.data.segments[0].name",
        "$.data.segments[1].name",
        "$.data.segments[2].name",
    ]
    assert service.flags.list_flags() == []


async def test_a_conflicting_flag_is_a_409_and_overwrite_replaces_it(
    api: Api, service: Service
) -> None:
    await make_segments(api)
    await api.json(
        "POST",
        "/api/admin/projects/default/features",
        201,
        json={"name": "mig.flag-00", "description": "someone else's"},
    )
    conflict = await api.json("POST", "/api/admin/features-batch/import", 409, json=body(EXPORT))
    assert conflict["details"][0]["path"] == "$.data.features[0]"
    assert "mig.flag-00" in conflict["details"][0]["message"]
    assert [f.name for f in service.flags.list_flags()] == ["mig.flag-00"]
    done = await api.json(
        "POST", "/api/admin/features-batch/import", json=body(EXPORT, overwrite=True)
    )
    assert done["updated"] == ["mig.flag-00"]


async def test_validate_answers_like_unleash_and_writes_nothing(api: Api, service: Service) -> None:
    answer = await api.json("POST", "/api/admin/features-batch/validate", json=body(EXPORT))
    assert set(answer) == {"errors", "warnings", "permissions"}
    assert answer["errors"][0]["affectedItems"] == ["$.data.segments[0].name"]
    await make_segments(api)
    answer = await api.json("POST", "/api/admin/features-batch/validate", json=body(EXPORT))
    assert answer["errors"] == []
    assert len(answer["warnings"]) > 0
    assert service.flags.list_flags() == []


async def test_a_dry_run_import_reports_and_keeps_nothing(api: Api, service: Service) -> None:
    await make_segments(api)
    answer = await api.json(
        "POST", "/api/admin/features-batch/import", json=body(EXPORT, dryRun=True)
    )
    assert answer["dryRun"] is True
    assert len(answer["created"]) == 60
    assert service.flags.list_flags() == []


async def test_the_envelope_is_checked_before_anything_is_read(api: Api) -> None:
    missing = await api.json(
        "POST", "/api/admin/features-batch/import", 400, json={"project": "default"}
    )
    assert missing["details"][0]["path"] == "$.environment"
    no_data = await api.json(
        "POST",
        "/api/admin/features-batch/import",
        400,
        json={"project": "default", "environment": "development"},
    )
    assert no_data["details"][0]["path"] == "$.data"
    unknown = await api.json(
        "POST",
        "/api/admin/features-batch/export",
        404,
        json={"features": ["nope"], "environment": "development"},
    )
    assert "nope" in unknown["message"]


async def test_context_lists_the_built_ins_and_the_fields_an_import_describes(api: Api) -> None:
    await make_segments(api)
    await api.json("POST", "/api/admin/features-batch/import", json=body(EXPORT))
    fields = {f["name"]: f for f in await api.json("GET", "/api/admin/context")}
    assert "plan" in fields
    # Fields the rules name but the file does not describe are not registered (Unleash's way).
    assert not {"age", "email", "version", "tenantId"} & set(fields)


_ENVELOPE_CASES = [
    ("import", {"project": 5}, "$.project"),
    ("import", {"environment": ["development"]}, "$.environment"),
    ("import", {"overwrite": "yes"}, "$.overwrite"),
    ("import", {"dryRun": 1}, "$.dryRun"),
    ("import", {"data": "features"}, "$.data"),
    ("import", {"data": {"features": "mig.flag-00"}}, "$.data.features"),
    ("import", {"data": {"features": [{"name": "x", "type": 5}]}}, "$.data.features[0].type"),
    ("validate", {"project": None}, "$.project"),
    ("validate", {"data": []}, "$.data"),
    ("export", {"environment": 5}, "$.environment"),
    ("export", {"features": "mig.flag-00"}, "$.features"),
    ("export", {"features": [5]}, "$.features[0]"),
    ("export", {"downloadFile": "true"}, "$.downloadFile"),
    ("export", {"tag": 5}, "$.tag"),
    ("export", {"project": ["default"]}, "$.project"),
]


@pytest.mark.parametrize(("route", "change", "path"), _ENVELOPE_CASES, ids=str)
async def test_every_wrong_envelope_field_is_a_400_naming_it_and_nothing_is_stored(
    api: Api, service: Service, route: str, change: dict[str, Any], path: str
) -> None:
    await make_segments(api)
    base: dict[str, Any] = (
        {"features": ["mig.flag-00"], "environment": "development"}
        if route == "export"
        else body(EXPORT)
    )
    revision = service.store.revision()
    problem = await api.json(
        "POST", f"/api/admin/features-batch/{route}", 400, json={**base, **change}
    )
    assert set(problem) == {"name", "message", "details"}
    assert path in [d.get("path") for d in problem["details"]]
    assert service.store.revision() == revision


async def test_export_filters_by_tag_and_project_like_unleash(api: Api) -> None:
    await make_segments(api)
    await api.json("POST", "/api/admin/features-batch/import", json=body(EXPORT))
    tagged = [
        t["featureName"]
        for t in EXPORT["featureTags"]
        if (t["tagType"], t["tagValue"]) == ("team", "core")
    ]
    for tag in ({"type": "team", "value": "core"}, "team:core"):
        exported = await api.json(
            "POST",
            "/api/admin/features-batch/export",
            json={"environment": "development", "tag": tag},
        )
        assert [f["name"] for f in exported["features"]] == sorted(tagged)
        assert {t["name"] for t in exported["tagTypes"]} == {"team", "simple"} & {
            t["tagType"] for t in exported["featureTags"]
        }
    await api.json("POST", "/api/admin/projects", 201, json={"id": "empty", "name": "Empty"})
    none = await api.json(
        "POST",
        "/api/admin/features-batch/export",
        json={"environment": "development", "project": "empty"},
    )
    assert none["features"] == []
    assert none["featureStrategies"] == []
