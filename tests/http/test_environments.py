"""Environments through the admin API: Unleash's update, sort order, on/off, delete and
clone, and flagcore's rename, over a real server and SQLite file."""

from __future__ import annotations

from typing import Any

from flagcore.permissions import Grant, Permission, RoleType
from flagcore.service import NewRole, Service
from tests.http.conftest import ALL_PROJECTS_CLIENT, CLIENT, Api, bucket_time

ENVIRONMENTS = "/api/admin/environments"
FEATURES = "/api/admin/projects/default/features"


async def _listed(api: Api) -> list[dict[str, Any]]:
    environments: list[dict[str, Any]] = (await api.json("GET", ENVIRONMENTS))["environments"]
    return environments


async def test_an_update_changes_the_type_and_keeps_the_sort_order_left_out(api: Api) -> None:
    await api.json("POST", ENVIRONMENTS, 201, json={"name": "qa", "sortOrder": 7})
    updated = await api.json("PUT", f"{ENVIRONMENTS}/update/qa", json={"type": "test"})
    assert updated == {"name": "qa", "type": "test", "sortOrder": 7, "enabled": True}
    moved = await api.json(
        "PUT", f"{ENVIRONMENTS}/update/qa", json={"type": "test", "sortOrder": 0}
    )
    assert moved["sortOrder"] == 0
    assert (await _listed(api))[0]["name"] == "qa"
    events = (await api.json("GET", "/api/admin/events"))["events"]
    assert events[0]["type"] == "environment-updated"
    assert events[0]["preData"] == {"type": "test", "sortOrder": 7}


async def test_an_update_without_a_type_or_of_an_unknown_environment_is_refused(api: Api) -> None:
    refused = await api.json("PUT", f"{ENVIRONMENTS}/update/development", 400, json={})
    assert refused["details"][0]["path"] == "$.type"
    blank = await api.json("PUT", f"{ENVIRONMENTS}/update/development", 400, json={"type": " "})
    assert blank["details"][0]["path"] == "$.type"
    await api.json("PUT", f"{ENVIRONMENTS}/update/nowhere", 404, json={"type": "test"})
    assert [e["type"] for e in await _listed(api)] == ["development", "production"]


async def test_the_sort_order_moves_the_named_environments_and_keeps_the_others(
    api: Api,
) -> None:
    await api.json("POST", ENVIRONMENTS, 201, json={"name": "qa"})
    await api.json("PUT", f"{ENVIRONMENTS}/sort-order", json={"production": -1, "qa": 0})
    assert [e["name"] for e in await _listed(api)] == ["production", "qa", "development"]


async def test_a_sort_order_naming_an_unknown_environment_changes_nothing(api: Api) -> None:
    before = await _listed(api)
    refused = await api.json(
        "PUT", f"{ENVIRONMENTS}/sort-order", 404, json={"production": -5, "nowhere": 1}
    )
    assert refused["details"][0]["path"] == "$.nowhere"
    wrong = await api.json("PUT", f"{ENVIRONMENTS}/sort-order", 400, json={"production": "1"})
    assert wrong["details"][0]["path"] == "$.production"
    assert await _listed(api) == before


async def test_an_environment_is_turned_off_and_on_and_its_sdks_are_still_served(
    api: Api,
) -> None:
    await api.json("POST", FEATURES, 201, json={"name": "f"})
    await api.json("POST", f"{FEATURES}/f/environments/development/on")
    await api.json("POST", f"{ENVIRONMENTS}/development/off", 204)
    development = (await _listed(api))[0]
    assert development["enabled"] is False
    served = await api.json("GET", "/api/client/features", token=CLIENT)
    assert [(f["name"], f["enabled"]) for f in served["features"]] == [("f", True)]
    await api.json("POST", f"{ENVIRONMENTS}/development/on", 204)
    assert (await _listed(api))[0]["enabled"] is True
    await api.json("POST", f"{ENVIRONMENTS}/nowhere/on", 404)


async def test_deleting_an_environment_deletes_every_flags_rules_in_it(api: Api) -> None:
    await api.json("POST", ENVIRONMENTS, 201, json={"name": "qa"})
    await api.json("POST", FEATURES, 201, json={"name": "f"})
    await api.json("POST", f"{FEATURES}/f/environments/qa/strategies", json={"name": "default"})
    await api.json("POST", f"{FEATURES}/f/environments/qa/on")
    await api.json("DELETE", f"{ENVIRONMENTS}/qa")
    assert [e["name"] for e in await _listed(api)] == ["development", "production"]
    flag = await api.json("GET", f"{FEATURES}/f")
    assert [e["name"] for e in flag["environments"]] == ["development", "production"]
    event = (await api.json("GET", "/api/admin/events"))["events"][0]
    assert event["type"] == "environment-deleted"
    assert event["preData"]["strategies"] == 1
    # The name is free again, and a new environment of that name starts empty.
    await api.json("POST", ENVIRONMENTS, 201, json={"name": "qa"})
    again = await api.json("GET", f"{FEATURES}/f")
    qa = next(e for e in again["environments"] if e["name"] == "qa")
    assert (qa["enabled"], qa["strategies"]) == (False, [])


async def test_deleting_an_environment_a_token_uses_is_refused_naming_it(api: Api) -> None:
    refused = await api.json("DELETE", f"{ENVIRONMENTS}/development", 409)
    assert 'API token "sdk"' in refused["message"]
    assert [d["message"] for d in refused["details"]] == ['API token "sdk"']
    assert [e["name"] for e in await _listed(api)] == ["development", "production"]
    await api.json("DELETE", f"{ENVIRONMENTS}/nowhere", 404)


async def test_the_last_environment_cannot_be_deleted(api: Api) -> None:
    for token in (await api.json("GET", "/api/admin/api-tokens"))["tokens"]:
        if token["type"] == "client":
            await api.json("DELETE", f"/api/admin/api-tokens/{token['id']}")
    await api.json("DELETE", f"{ENVIRONMENTS}/production")
    refused = await api.json("DELETE", f"{ENVIRONMENTS}/development", 409)
    assert "last environment" in refused["message"]


async def test_a_clone_copies_every_flags_rules_and_the_roles_grants_in_one_go(
    api: Api, service: Service
) -> None:
    await api.json("POST", FEATURES, 201, json={"name": "f"})
    await api.json(
        "PUT",
        f"{FEATURES}/f/environments/development/variants",
        json=[{"name": "a", "weight": 1000, "weightType": "variable", "stickiness": "default"}],
    )
    made = await api.json(
        "POST", f"{FEATURES}/f/environments/development/strategies", json={"name": "default"}
    )
    await api.json("POST", f"{FEATURES}/f/environments/development/on")
    grant = Grant(Permission.UPDATE_FEATURE_ENVIRONMENT, "development")
    role = service.roles.create_role(NewRole("dev switcher", RoleType.CUSTOM, "", (grant,)))
    clone = {"name": "dev-two", "type": "test", "clonePermissions": True}
    created = await api.json("POST", f"{ENVIRONMENTS}/development/clone", 201, json=clone)
    assert (created["name"], created["type"], created["enabled"]) == ("dev-two", "test", True)
    assert (await _listed(api))[-1]["name"] == "dev-two"  # placed last
    flag = await api.json("GET", f"{FEATURES}/f")
    copy = next(e for e in flag["environments"] if e["name"] == "dev-two")
    assert copy["enabled"] is True
    assert [s["name"] for s in copy["strategies"]] == ["default"]
    assert copy["strategies"][0]["id"] != made["id"]
    assert [v["name"] for v in copy["variants"]] == ["a"]
    (again,) = (r for r in service.roles.list_roles() if r.id == role.id)
    assert Grant(Permission.UPDATE_FEATURE_ENVIRONMENT, "dev-two") in again.grants
    await api.json("POST", f"{ENVIRONMENTS}/development/clone", 409, json=clone)


async def test_a_clone_of_some_projects_only_copies_their_flags(api: Api) -> None:
    await api.json("POST", "/api/admin/projects", 201, json={"id": "shop", "name": "Shop"})
    await api.json("POST", FEATURES, 201, json={"name": "f"})
    await api.json("POST", f"{FEATURES}/f/environments/development/on")
    await api.json("POST", "/api/admin/projects/shop/features", 201, json={"name": "g"})
    await api.json("POST", "/api/admin/projects/shop/features/g/environments/development/on")
    body = {"name": "shop-dev", "type": "development", "projects": ["shop"]}
    await api.json("POST", f"{ENVIRONMENTS}/development/clone", 201, json=body)
    f = await api.json("GET", f"{FEATURES}/f")
    g = await api.json("GET", "/api/admin/projects/shop/features/g")
    on = {
        flag["name"]: next(e["enabled"] for e in flag["environments"] if e["name"] == "shop-dev")
        for flag in (f, g)
    }
    assert on == {"f": False, "g": True}
    refused = await api.json(
        "POST",
        f"{ENVIRONMENTS}/development/clone",
        404,
        json={**body, "name": "x", "projects": ["nope"]},
    )
    assert refused["details"][0]["path"] == "$.projects[0]"
    assert "x" not in [e["name"] for e in await _listed(api)]


async def test_a_sort_order_that_is_not_a_whole_number_is_refused(api: Api) -> None:
    before = await _listed(api)
    for order in (1.5, True, "1", None):  # 1.0 is 1, as JSON Schema reads it
        refused = await api.json(
            "PUT", f"{ENVIRONMENTS}/sort-order", 400, json={"production": order}
        )
        assert refused["details"][0]["path"] == "$.production"
    await api.json("PUT", f"{ENVIRONMENTS}/sort-order", 400, json=[["production", 1]])
    assert await _listed(api) == before


async def test_an_update_with_a_sort_order_that_is_not_a_whole_number_is_refused(
    api: Api,
) -> None:
    for order in (1.5, "1", True):
        refused = await api.json(
            "PUT", f"{ENVIRONMENTS}/update/production", 400, json={"type": "x", "sortOrder": order}
        )
        assert refused["details"][0]["path"] == "$.sortOrder"
    assert [e["type"] for e in await _listed(api)] == ["development", "production"]


async def test_one_environment_is_read_by_its_name(api: Api) -> None:
    production = await api.json("GET", f"{ENVIRONMENTS}/production")
    assert production == next(e for e in await _listed(api) if e["name"] == "production")
    await api.json("GET", f"{ENVIRONMENTS}/nowhere", 404)


async def test_a_renamed_environment_keeps_every_rule_and_its_tokens_serve_the_same_flags(
    api: Api, service: Service
) -> None:
    """flagcore's own rename: the SDK token of the environment (its secret still saying
    ``production``) gets the same flags under the new name; usage and roles follow."""
    await api.json("POST", FEATURES, 201, json={"name": "f"})
    await api.json(
        "PUT",
        f"{FEATURES}/f/environments/production/variants",
        json=[{"name": "a", "weight": 1000, "weightType": "variable", "stickiness": "default"}],
    )
    rollout = {"name": "flexibleRollout", "parameters": {"rollout": "40", "stickiness": "default"}}
    await api.json("POST", f"{FEATURES}/f/environments/production/strategies", json=rollout)
    await api.json("POST", f"{FEATURES}/f/environments/production/on")
    grant = Grant(Permission.UPDATE_FEATURE_ENVIRONMENT, "production")
    role = service.roles.create_role(NewRole("prod switcher", RoleType.CUSTOM, "", (grant,)))
    served = await api.json("GET", "/api/client/features", token=ALL_PROJECTS_CLIENT)
    report = {
        "appName": "shop",
        "instanceId": "i-1",
        "bucket": {"start": bucket_time(), "toggles": {"f": {"yes": 3, "no": 1}}},
    }
    await api.json("POST", "/api/client/metrics", 202, token=ALL_PROJECTS_CLIENT, json=report)

    renamed = await api.json("POST", f"{ENVIRONMENTS}/production/rename", json={"name": "prod"})
    assert renamed == {"name": "prod", "type": "production", "sortOrder": 3, "enabled": True}
    assert [e["name"] for e in await _listed(api)] == ["development", "prod"]
    again = await api.json("GET", "/api/client/features", token=ALL_PROJECTS_CLIENT)
    assert again["features"] == served["features"]
    flag = await api.json("GET", f"{FEATURES}/f")
    prod = next(e for e in flag["environments"] if e["name"] == "prod")
    assert (prod["enabled"], [v["name"] for v in prod["variants"]]) == (True, ["a"])
    assert [s["parameters"]["rollout"] for s in prod["strategies"]] == ["40"]
    tokens = (await api.json("GET", "/api/admin/api-tokens"))["tokens"]
    sdk_all = next(t for t in tokens if t["tokenName"] == "sdk-all")
    assert sdk_all["environment"] == "prod"
    (kept,) = (r for r in service.roles.list_roles() if r.id == role.id)
    assert kept.grants == (Grant(Permission.UPDATE_FEATURE_ENVIRONMENT, "prod"),)
    usage = await api.json("GET", "/api/admin/client-metrics/features/f/raw?hoursBack=1")
    assert {(row["environment"], row["yes"]) for row in usage["data"] if row["yes"]} == {
        ("prod", 3)
    }
    event = (await api.json("GET", "/api/admin/events"))["events"][0]
    assert (event["type"], event["environment"]) == ("environment-renamed", "prod")
    assert (event["data"]["name"], event["preData"]) == ("prod", {"name": "production"})
    assert (event["data"]["flags"], event["data"]["apiTokens"]) == (1, 1)


async def test_a_rename_to_a_bad_or_taken_name_or_of_the_unscoped_environment_is_refused(
    api: Api,
) -> None:
    before = await _listed(api)
    events = len((await api.json("GET", "/api/admin/events"))["events"])
    rename = f"{ENVIRONMENTS}/production/rename"
    bad = await api.json("POST", rename, 400, json={"name": "no spaces"})
    assert bad["details"][0]["path"] == "$.name"
    missing = await api.json("POST", rename, 400, json={})
    assert missing["details"][0]["path"] == "$.name"
    same = await api.json("POST", rename, 400, json={"name": "production"})
    assert "already named" in same["message"]
    taken = await api.json("POST", rename, 409, json={"name": "development"})
    assert taken["details"][0]["path"] == "$.name"
    await api.json("POST", f"{ENVIRONMENTS}/nowhere/rename", 404, json={"name": "x"})
    unscoped = await api.json(
        "POST", f"{ENVIRONMENTS}/development/rename", 409, json={"name": "dev"}
    )
    assert "name no environment" in unscoped["message"]
    assert await _listed(api) == before
    assert len((await api.json("GET", "/api/admin/events"))["events"]) == events
