"""Tag types read and edited, custom strategy definitions edited, deprecated, reactivated
and deleted, and the flag search across projects, on Unleash's paths over a real server
and SQLite file."""

from __future__ import annotations

from flagcore.entities import Tag
from flagcore.service import Service
from tests.http.conftest import Api

STRATEGIES = "/api/admin/strategies"
SEARCH = "/api/admin/search/features"


async def test_a_tag_type_is_read_and_its_description_replaced_with_its_event(api: Api) -> None:
    await api.json("POST", "/api/admin/tag-types", 201, json={"name": "team", "description": "a"})
    assert await api.json("GET", "/api/admin/tag-types/team") == {
        "version": 1,
        "tagType": {"name": "team", "description": "a"},
    }
    await api.json("PUT", "/api/admin/tag-types/team", json={"description": "owners"})
    found = await api.json("GET", "/api/admin/tag-types/team")
    assert found["tagType"]["description"] == "owners"
    event = (await api.json("GET", "/api/admin/events"))["events"][0]
    assert event["type"] == "tag-type-updated"
    assert (event["preData"]["description"], event["data"]["description"]) == ("a", "owners")


async def test_an_unknown_tag_type_is_404_and_an_icon_is_refused_not_dropped(api: Api) -> None:
    await api.json("GET", "/api/admin/tag-types/nope", 404)
    await api.json("PUT", "/api/admin/tag-types/nope", 404, json={"description": "x"})
    await api.json("POST", "/api/admin/tag-types", 201, json={"name": "team"})
    refused = await api.json("PUT", "/api/admin/tag-types/team", 400, json={"icon": "star"})
    assert refused["details"][0]["path"] == "$.icon"


async def test_a_custom_strategy_is_updated_deprecated_reactivated_and_deleted(
    api: Api,
) -> None:
    body = {"name": "byPlan", "description": "d", "parameters": [{"name": "plans"}]}
    await api.json("POST", STRATEGIES, 201, json=body)
    update = {
        "name": "byPlan",
        "title": "By plan",
        "description": "on for some plans",
        "parameters": [{"name": "plans", "type": "list", "required": True}],
    }
    await api.json("PUT", f"{STRATEGIES}/byPlan", json=update)
    found = await api.json("GET", f"{STRATEGIES}/byPlan")
    assert found["title"] == "By plan"
    assert found["parameters"] == [
        {"name": "plans", "type": "list", "description": "", "required": True}
    ]
    await api.json("POST", f"{STRATEGIES}/byPlan/deprecate")
    assert (await api.json("GET", f"{STRATEGIES}/byPlan"))["deprecated"] is True
    await api.json("PUT", f"{STRATEGIES}/byPlan", json=update)  # an edit keeps it deprecated
    assert (await api.json("GET", f"{STRATEGIES}/byPlan"))["deprecated"] is True
    await api.json("POST", f"{STRATEGIES}/byPlan/reactivate")
    assert (await api.json("GET", f"{STRATEGIES}/byPlan"))["deprecated"] is False
    await api.json("DELETE", f"{STRATEGIES}/byPlan")
    await api.json("GET", f"{STRATEGIES}/byPlan", 404)
    types = [e["type"] for e in (await api.json("GET", "/api/admin/events"))["events"][:5]]
    assert types == [
        "strategy-deleted",
        "strategy-reactivated",
        "strategy-updated",
        "strategy-deprecated",
        "strategy-updated",
    ]


async def test_a_strategy_in_use_is_not_deleted_and_its_users_are_named(api: Api) -> None:
    await api.json("POST", STRATEGIES, 201, json={"name": "byPlan"})
    await api.json("POST", "/api/admin/projects/default/features", 201, json={"name": "paid"})
    await api.json(
        "POST",
        "/api/admin/projects/default/features/paid/environments/production/strategies",
        200,
        json={"name": "byPlan"},
    )
    refused = await api.json("DELETE", f"{STRATEGIES}/byPlan", 409)
    assert 'flag "paid" in environment "production"' in refused["details"][0]["message"]
    assert (await api.json("GET", f"{STRATEGIES}/byPlan"))["name"] == "byPlan"


async def test_built_in_strategies_are_neither_edited_nor_deleted(api: Api) -> None:
    for method, path in (
        ("PUT", f"{STRATEGIES}/default"),
        ("POST", f"{STRATEGIES}/default/deprecate"),
        ("DELETE", f"{STRATEGIES}/flexibleRollout"),
    ):
        body = {"name": "default"} if method == "PUT" else None
        refused = await api.json(method, path, 409, json=body)
        assert "built-in" in refused["message"]
    await api.json("DELETE", f"{STRATEGIES}/nothing", 404)


async def test_an_update_naming_another_strategy_is_refused_at_its_name(api: Api) -> None:
    await api.json("POST", STRATEGIES, 201, json={"name": "byPlan"})
    refused = await api.json("PUT", f"{STRATEGIES}/byPlan", 400, json={"name": "other"})
    assert refused["details"][0]["path"] == "$.name"


async def test_the_search_lists_flags_of_every_project_with_filters_and_paging(
    api: Api, service: Service
) -> None:
    service.projects.create_project("shop", "Shop")
    service.flags.create_flag("default", "alpha", description="checkout redesign")
    service.flags.create_flag("shop", "beta", type="experiment")
    service.flags.create_flag("shop", "gamma", tags=[Tag("simple", "red")])
    service.flags.create_flag("shop", "gone")
    service.archive.archive_flag("shop", "gone")
    service.environments.set_environment_enabled("shop", "beta", "production", True)
    every = await api.json("GET", SEARCH)
    assert every["total"] == 3
    assert [(f["name"], f["project"]) for f in every["features"]] == [
        ("alpha", "default"),
        ("beta", "shop"),
        ("gamma", "shop"),
    ]
    beta = every["features"][1]
    production = next(e for e in beta["environments"] if e["name"] == "production")
    assert production == {
        "name": "production",
        "environment": "production",
        "type": "production",
        "enabled": True,
        "sortOrder": production["sortOrder"],
    }

    async def names(query: str) -> list[str]:
        found = await api.json("GET", f"{SEARCH}?{query}")
        return [f["name"] for f in found["features"]]

    assert await names("project=IS:shop") == ["beta", "gamma"]
    assert await names("project=IS_ANY_OF:default,shop&type=IS:experiment") == ["beta"]
    assert await names("tag=INCLUDE:simple:red") == ["gamma"]
    assert await names("query=REDESIGN") == ["alpha"]
    assert await names("sortBy=name&sortOrder=desc&limit=2") == ["gamma", "beta"]
    assert await names("sortBy=name&offset=2") == ["gamma"]
    paged = await api.json("GET", f"{SEARCH}?limit=1")
    assert (len(paged["features"]), paged["total"]) == (1, 3)


async def test_a_search_filter_in_another_form_is_refused_at_its_parameter(api: Api) -> None:
    for query, name in (
        ("project=shop", "project"),
        ("type=IS:", "type"),
        ("tag=INCLUDE:red", "tag"),
        ("state=IS:gone", "state"),
        ("sortBy=age", "sortBy"),
        ("limit=0", "limit"),
    ):
        refused = await api.json("GET", f"{SEARCH}?{query}", 400)
        assert refused["details"][0]["path"] == f"/query/{name}"
