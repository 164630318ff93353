"""The context-field registry on Unleash's paths, over a real server and SQLite file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flagcore.service import Service
from flagcore_store_sqlite import SqliteStore
from tests.http.conftest import Api

CONTEXT = "/api/admin/context"
DATA = Path(__file__).parent.parent / "data" / "unleash-export-8.2"
EXPORT = json.loads((DATA / "unleash-export-8.2.json").read_text())
SEGMENTS = json.loads((DATA / "unleash-export-8.2.segments.json").read_text())["segments"]

PLAN: dict[str, Any] = {
    "name": "plan",
    "description": "billing plan",
    "legalValues": [{"value": "free"}, {"value": "pro", "description": "paying"}],
    "stickiness": True,
}


async def test_a_fresh_server_lists_the_built_in_fields_in_unleashs_order(api: Api) -> None:
    fields = await api.json("GET", CONTEXT)
    assert [f["name"] for f in fields] == [
        "environment",
        "userId",
        "appName",
        "currentTime",
        "sessionId",
        "remoteAddress",
    ]
    session = next(f for f in fields if f["name"] == "sessionId")
    assert session == {
        "name": "sessionId",
        "description": "Allows you to constrain on sessionId",
        "stickiness": True,
        "sortOrder": 4,
        "legalValues": [],
    }


async def test_a_created_field_is_listed_read_back_and_kept_in_the_file(
    api: Api, service: Service, tmp_path: Path
) -> None:
    created = await api.json("POST", CONTEXT, 201, json=PLAN)
    assert created["legalValues"] == [
        {"value": "free", "description": None},
        {"value": "pro", "description": "paying"},
    ]
    assert created["sortOrder"] == 10
    one = await api.json("GET", f"{CONTEXT}/plan")
    assert one == created
    assert [f["name"] for f in await api.json("GET", CONTEXT)][-1] == "plan"
    # A second server on the same SQLite file sees it: it is stored, not held in memory.
    again = Service(SqliteStore(tmp_path / "flags.db"))
    assert again.context_fields.get_context_field("plan").stickiness is True


async def test_a_second_field_of_the_same_name_is_refused_and_validate_says_so(api: Api) -> None:
    await api.json("POST", CONTEXT + "/validate", 200, json={"name": "plan"})
    await api.json("POST", CONTEXT, 201, json=PLAN)
    taken = await api.json("POST", CONTEXT, 409, json=PLAN)
    assert "plan" in taken["message"]
    await api.json("POST", CONTEXT + "/validate", 409, json={"name": "plan"})
    await api.json("POST", CONTEXT + "/validate", 409, json={"name": "userId"})
    await api.json("POST", CONTEXT, 409, json={"name": "userId"})


async def test_an_update_replaces_the_description_values_and_stickiness(api: Api) -> None:
    await api.json("POST", CONTEXT, 201, json={**PLAN, "sortOrder": 3})
    await api.json(
        "PUT",
        f"{CONTEXT}/plan",
        json={"name": "plan", "description": "tier", "legalValues": [{"value": "gold"}]},
    )
    field = await api.json("GET", f"{CONTEXT}/plan")
    assert field["description"] == "tier"
    assert field["legalValues"] == [{"value": "gold", "description": None}]
    assert field["stickiness"] is False
    assert field["sortOrder"] == 3  # not given: kept
    renamed = await api.json("PUT", f"{CONTEXT}/plan", 400, json={"name": "tier"})
    assert renamed["details"][0]["path"] == "$.name"
    await api.json("PUT", f"{CONTEXT}/nowhere", 404, json={})


async def test_a_bad_update_is_refused_naming_its_path_and_changes_nothing(api: Api) -> None:
    await api.json("POST", CONTEXT, 201, json=PLAN)
    twice = {"legalValues": [{"value": "a"}, {"value": "a"}]}
    refused = await api.json("PUT", f"{CONTEXT}/plan", 400, json=twice)
    assert refused["details"][0]["path"] == "$.legalValues[1].value"
    refused = await api.json("PUT", f"{CONTEXT}/plan", 400, json={"description": 5})
    assert refused["details"][0]["path"] == "$.description"
    field = await api.json("GET", f"{CONTEXT}/plan")
    assert [v["value"] for v in field["legalValues"]] == ["free", "pro"]


async def test_a_bad_name_to_validate_is_refused_at_its_path(api: Api) -> None:
    refused = await api.json("POST", CONTEXT + "/validate", 400, json={"name": "a b"})
    assert refused["details"][0]["path"] == "$.name"


async def test_a_built_in_field_can_be_given_legal_values_but_not_deleted(api: Api) -> None:
    await api.json(
        "PUT", f"{CONTEXT}/appName", json={"legalValues": [{"value": "web"}, {"value": "ios"}]}
    )
    field = await api.json("GET", f"{CONTEXT}/appName")
    assert [v["value"] for v in field["legalValues"]] == ["web", "ios"]
    assert field["sortOrder"] == 2
    refused = await api.json("DELETE", f"{CONTEXT}/appName", 409)
    assert "built-in" in refused["message"]


async def test_deleting_a_field_a_constraint_uses_is_refused_naming_each_user(api: Api) -> None:
    await api.json("POST", CONTEXT, 201, json=PLAN)
    await api.json("POST", "/api/admin/projects/default/features", 201, json={"name": "paid"})
    strategy = await api.json(
        "POST",
        "/api/admin/projects/default/features/paid/environments/development/strategies",
        json={
            "name": "default",
            "constraints": [{"contextName": "plan", "operator": "IN", "values": ["pro"]}],
        },
    )
    await api.json(
        "POST",
        "/api/admin/segments",
        201,
        json={
            "name": "payers",
            "constraints": [{"contextName": "plan", "operator": "IN", "values": ["pro"]}],
        },
    )
    refused = await api.json("DELETE", f"{CONTEXT}/plan", 409)
    where = [d["message"] for d in refused["details"]]
    assert any("paid" in w and "development" in w and strategy["id"] in w for w in where)
    assert any("payers" in w for w in where)
    assert (await api.json("GET", f"{CONTEXT}/plan"))["name"] == "plan"


async def test_deleting_an_unused_field_removes_it(api: Api) -> None:
    await api.json("POST", CONTEXT, 201, json=PLAN)
    await api.json("DELETE", f"{CONTEXT}/plan")
    await api.json("GET", f"{CONTEXT}/plan", 404)
    await api.json("DELETE", f"{CONTEXT}/plan", 404)


_BAD_BODIES = [
    ({"description": "no name"}, "$.name"),
    ({"name": "has space"}, "$.name"),
    ({"name": "f", "description": "x" * 251}, "$.description"),
    ({"name": "f", "legalValues": "free"}, "$.legalValues"),
    ({"name": "f", "legalValues": [{"value": ""}]}, "$.legalValues[0].value"),
    ({"name": "f", "legalValues": [{"value": "v" * 101}]}, "$.legalValues[0].value"),
    ({"name": "f", "legalValues": [{"value": "a"}, {"value": "a"}]}, "$.legalValues[1].value"),
    ({"name": "f", "legalValues": [{"value": str(i)} for i in range(1001)]}, "$.legalValues"),
    (
        {"name": "f", "legalValues": [{"value": "a", "description": "d" * 251}]},
        "$.legalValues[0].description",
    ),
    ({"name": "f", "stickiness": "yes"}, "$.stickiness"),
    ({"name": "f", "sortOrder": 2**40}, "$.sortOrder"),
    ({"name": "f", "project": "default"}, "$.project"),
]


@pytest.mark.parametrize(("sent", "path"), _BAD_BODIES)
async def test_a_bad_field_is_refused_naming_its_path_and_nothing_is_kept(
    api: Api, sent: dict[str, Any], path: str
) -> None:
    refused = await api.json("POST", CONTEXT, 400, json=sent)
    assert path in [d.get("path") for d in refused["details"]]
    assert [f["name"] for f in await api.json("GET", CONTEXT)][-1] == "remoteAddress"


async def test_the_real_exports_six_fields_survive_import_and_come_back_in_an_export(
    api: Api,
) -> None:
    for segment in SEGMENTS:
        await api.json("POST", "/api/admin/segments", 201, json=segment)
    batch = {"project": "default", "environment": "development", "data": EXPORT}
    await api.json("POST", "/api/admin/features-batch/import", json=batch)
    listed = {f["name"]: f for f in await api.json("GET", CONTEXT)}
    plan = listed["plan"]
    assert plan["description"] == "billing plan"
    assert [v["value"] for v in plan["legalValues"]] == ["free", "pro", "enterprise"]
    assert plan["stickiness"] is True
    exported = await api.json(
        "POST",
        "/api/admin/features-batch/export",
        json={"features": [f["name"] for f in EXPORT["features"]], "environment": "development"},
    )
    written = {f["name"]: f for f in exported["contextFields"]}
    for field in EXPORT["contextFields"]:
        back = written[field["name"]]
        assert back["description"] == field["description"]
        assert back["stickiness"] == field["stickiness"]
        assert back["sortOrder"] == field["sortOrder"]
        assert [v["value"] for v in back["legalValues"]] == [
            v["value"] for v in field["legalValues"]
        ]


async def test_an_import_wanting_a_legal_value_the_field_lacks_is_refused(api: Api) -> None:
    await api.json("POST", CONTEXT, 201, json={"name": "plan", "legalValues": [{"value": "pro"}]})
    data = {"features": [], "contextFields": [{**PLAN, "legalValues": [{"value": "gold"}]}]}
    batch = {"project": "default", "environment": "development", "data": data}
    refused = await api.json("POST", "/api/admin/features-batch/import", 400, json=batch)
    assert refused["details"][0]["path"] == "$.data.contextFields[0].legalValues[0].value"
    field = await api.json("GET", f"{CONTEXT}/plan")
    assert [v["value"] for v in field["legalValues"]] == ["pro"]


async def test_validating_an_import_warns_of_the_fields_it_would_create_and_keeps_none(
    api: Api,
) -> None:
    data = {"features": [], "contextFields": [PLAN]}
    batch = {"project": "default", "environment": "development", "data": data}
    check = await api.json("POST", "/api/admin/features-batch/validate", json=batch)
    assert "creates context field 'plan'" in json.dumps(check)
    await api.json("GET", f"{CONTEXT}/plan", 404)
    dry = await api.json("POST", "/api/admin/features-batch/import", json={**batch, "dryRun": True})
    assert dry["dryRun"] is True
    await api.json("GET", f"{CONTEXT}/plan", 404)
