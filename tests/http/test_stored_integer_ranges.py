"""Every integer the server stores stays within what both stores hold (PostgreSQL's
``integer`` is 32-bit), whether a person gave it or the server computed it; a value
outside is a 400 naming its JSON path, and the range is published in the OpenAPI document.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.http.conftest import Api

INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)
STRATEGIES = "/api/admin/projects/default/features/f/environments/development/strategies"


async def _flag(api: Api) -> None:
    await api.json("POST", "/api/admin/projects/default/features", 201, json={"name": "f"})


def _paths(body: Any) -> list[str]:
    return [detail.get("path") for detail in body["details"]]


@pytest.mark.parametrize("sort_order", [INT32_MAX + 1, INT32_MIN - 1, 2**63 - 1])
async def test_a_strategy_sort_order_outside_32_bits_is_refused_with_its_path(
    api: Api, sort_order: int
) -> None:
    await _flag(api)
    body = {"name": "default", "sortOrder": sort_order}
    refused = await api.json("POST", STRATEGIES, 400, json=body)
    assert _paths(refused) == ["$.sortOrder"]
    assert await api.json("GET", STRATEGIES) == []


async def test_the_largest_strategy_sort_order_is_kept_and_the_next_one_is_refused(
    api: Api,
) -> None:
    await _flag(api)
    last = await api.json("POST", STRATEGIES, json={"name": "default", "sortOrder": INT32_MAX})
    assert last["sortOrder"] == INT32_MAX
    refused = await api.json("POST", STRATEGIES, 400, json={"name": "default"})
    assert _paths(refused) == ["$.sortOrder"]
    assert str(INT32_MAX) in refused["message"]
    # Given explicitly, a strategy still goes in; reordering makes room again.
    await api.json("POST", STRATEGIES, json={"name": "default", "sortOrder": 5})
    await api.json(
        "POST", STRATEGIES + "/set-sort-order", json=[{"id": last["id"], "sortOrder": 9}]
    )
    added = await api.json("POST", STRATEGIES, json={"name": "default"})
    assert added["sortOrder"] == 10


async def test_turning_a_flag_on_after_a_disabled_strategy_at_the_top_is_refused_not_a_500(
    api: Api,
) -> None:
    await _flag(api)
    body = {"name": "default", "sortOrder": INT32_MAX, "disabled": True}
    await api.json("POST", STRATEGIES, json=body)
    on = "/api/admin/projects/default/features/f/environments/development/on"
    await api.json("POST", on, 400)
    flag = await api.json("GET", "/api/admin/projects/default/features/f")
    development = next(e for e in flag["environments"] if e["name"] == "development")
    assert development["enabled"] is False
    assert len(development["strategies"]) == 1


async def test_reordering_past_32_bits_is_refused_and_changes_nothing(api: Api) -> None:
    await _flag(api)
    first = await api.json("POST", STRATEGIES, json={"name": "default"})
    second = await api.json("POST", STRATEGIES, json={"name": "default"})
    order = [{"id": first["id"], "sortOrder": 3}, {"id": second["id"], "sortOrder": INT32_MAX + 1}]
    refused = await api.json("POST", STRATEGIES + "/set-sort-order", 400, json=order)
    assert _paths(refused) == ["$[1].sortOrder"]
    kept = await api.json("GET", STRATEGIES)
    assert [s["sortOrder"] for s in kept] == [0, 1]


async def test_updating_a_strategy_past_32_bits_is_refused(api: Api) -> None:
    await _flag(api)
    added = await api.json("POST", STRATEGIES, json={"name": "default"})
    body = {"name": "default", "sortOrder": INT32_MAX + 1}
    refused = await api.json("PUT", f"{STRATEGIES}/{added['id']}", 400, json=body)
    assert _paths(refused) == ["$.sortOrder"]


async def test_an_environment_sort_order_outside_32_bits_is_refused(api: Api) -> None:
    body = {"name": "qa", "type": "test", "sortOrder": INT32_MAX + 1}
    refused = await api.json("POST", "/api/admin/environments", 400, json=body)
    assert _paths(refused) == ["$.sortOrder"]
    names = [e["name"] for e in (await api.json("GET", "/api/admin/environments"))["environments"]]
    assert "qa" not in names


async def test_the_environment_after_the_largest_sort_order_is_refused_not_a_500(
    api: Api,
) -> None:
    body = {"name": "last", "type": "test", "sortOrder": INT32_MAX}
    created = await api.json("POST", "/api/admin/environments", 201, json=body)
    assert created["sortOrder"] == INT32_MAX
    refused = await api.json("POST", "/api/admin/environments", 400, json={"name": "next"})
    assert _paths(refused) == ["$.sortOrder"]
    given = {"name": "next", "sortOrder": 3}
    assert (await api.json("POST", "/api/admin/environments", 201, json=given))["sortOrder"] == 3


async def test_an_sdk_registration_interval_past_32_bits_is_refused(api: Api) -> None:
    body = {"appName": "a", "interval": INT32_MAX + 1, "started": 0, "strategies": []}
    client = "default:development.client-secret-for-tests"
    refused = await api.json("POST", "/api/client/register", 400, json=body, token=client)
    assert _paths(refused) == ["$.interval"]
    body["interval"] = INT32_MAX
    await api.json("POST", "/api/client/register", 202, json=body, token=client)


async def test_the_openapi_document_declares_the_stored_ranges(api: Api) -> None:
    document = await api.json("GET", "/docs/openapi.json")
    schemas = document["components"]["schemas"]
    for component in ("Strategy", "CreateEnvironment", "SortOrderItem"):
        sort_order = schemas[component]["properties"]["sortOrder"]
        assert (sort_order["minimum"], sort_order["maximum"]) == (INT32_MIN, INT32_MAX)
    weight = schemas["Variant"]["properties"]["weight"]
    assert (weight["minimum"], weight["maximum"]) == (0, 1000)
    register = document["paths"]["/api/client/register"]["post"]["requestBody"]
    interval = register["content"]["application/json"]["schema"]["properties"]["interval"]
    assert interval["maximum"] == INT32_MAX
