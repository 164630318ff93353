"""The playground, export/import and context routes keep their documented contract with
real data: the rich answers (strategies with constraints, segments and variants; disabled,
unknown and host-bound strategies; flag variants with overrides; dependencies; tags)
that schemathesis's generated bodies seldom reach."""

from __future__ import annotations

from typing import Any

from .conftest import Api
from .test_openapi_contract import Conformance

FLAGS = "/api/admin/projects/{project}/features"
DEFAULT = {"project": "default"}
STRATEGIES = FLAGS + "/{name}/environments/{environment}/strategies"
APP = {"appName": "shop", "userId": "a,b", "properties": {"country": "NO"}}


async def _rich_flags(c: Conformance) -> None:
    """``checkout`` (every kind of strategy, flag variants, a tag, a dependency on
    ``parent``), on in development."""
    await c.call("POST", "/api/admin/tag-types", 201, json={"name": "team"})
    await c.call("POST", FLAGS, 201, DEFAULT, json={"name": "parent"})
    await c.call(
        "POST",
        FLAGS,
        201,
        DEFAULT,
        json={"name": "checkout", "tags": [{"type": "team", "value": "pay"}]},
    )
    segment = await c.call(
        "POST",
        "/api/admin/segments",
        201,
        json={
            "name": "beta",
            "constraints": [{"contextName": "userId", "operator": "IN", "values": ["a"]}],
        },
    )
    await c.call("POST", "/api/admin/strategies", 201, json={"name": "mine", "parameters": []})
    at = {**DEFAULT, "name": "checkout", "environment": "development"}
    for strategy in (
        {
            "name": "flexibleRollout",
            "title": "half",
            "parameters": {"rollout": "100", "stickiness": "default", "groupId": "checkout"},
            "constraints": [
                {"contextName": "country", "operator": "IN", "values": ["NO"]},
                {
                    "contextName": "currentTime",
                    "operator": "DATE_AFTER",
                    "value": "2020-01-01T00:00:00Z",
                },
            ],
            "segments": [segment["id"]],
            "variants": [
                {
                    "name": "blue",
                    "weight": 1000,
                    "stickiness": "default",
                    "payload": {"type": "string", "value": "b"},
                }
            ],
        },
        {"name": "default", "disabled": True},
        {"name": "mine"},
        {"name": "applicationHostname", "parameters": {"hostNames": "web1"}},
    ):
        await c.call("POST", STRATEGIES, 200, at, json=strategy)
    variants = [
        {
            "name": "red",
            "weight": 1000,
            "weightType": "variable",
            "stickiness": "default",
            "payload": {"type": "json", "value": "{}"},
            "overrides": [{"contextName": "userId", "values": ["x"]}],
        }
    ]
    await c.call(
        "PUT", FLAGS + "/{name}/environments/{environment}/variants", 200, at, json=variants
    )
    await c.call("POST", FLAGS + "/{name}/environments/{environment}/on", 200, at)
    await c.call("PUT", FLAGS + "/{name}/dependencies", 200, at, json=[{"feature": "parent"}])


async def _conformance(api: Api) -> Conformance:
    async with api.client.get("/docs/openapi.json") as response:
        return Conformance(api, await response.json())


async def test_playground_answers_with_every_kind_of_strategy_conform(api: Api) -> None:
    c = await _conformance(api)
    await _rich_flags(c)
    playground = "/api/admin/playground"
    body = {"environment": "development", "projects": "*", "context": APP}
    answer = await c.call("POST", playground, 200, json=body)
    (checkout,) = [f for f in answer["features"] if f["name"] == "checkout"]
    assert len(checkout["strategies"]["data"]) == 4
    await c.call("POST", playground, 200, json={**body, "context": {"appName": "s", "userId": "x"}})
    await c.call("POST", playground, 400, json={**body, "environment": "nowhere"})
    advanced = {"environments": ["development", "production"], "context": APP}
    answer = await c.call("POST", playground + "/advanced", 200, json=advanced)
    assert answer["features"]
    await c.call("POST", playground + "/advanced", 400, json={**advanced, "projects": ["none"]})
    explain = {"flag": "checkout", "environment": "development", "context": APP}
    for context in (APP, {"userId": "x"}, {}):
        await c.call("POST", playground + "/explain", 200, json={**explain, "context": context})
    await c.call("POST", playground + "/explain", 404, json={**explain, "flag": "nope"})


async def test_export_validate_import_and_context_answers_conform(api: Api) -> None:
    c = await _conformance(api)
    await _rich_flags(c)
    batch = "/api/admin/features-batch"
    export: dict[str, Any] = await c.call(
        "POST",
        batch + "/export",
        200,
        json={"environment": "development", "downloadFile": True, "tag": "team:pay"},
    )
    assert [f["name"] for f in export["features"]] == ["checkout"]
    export = await c.call("POST", batch + "/export", 200, json={"environment": "development"})
    await c.call(
        "POST", batch + "/export", 404, json={"environment": "development", "features": ["nope"]}
    )
    await c.call("POST", "/api/admin/projects", 201, json={"id": "copy", "name": "Copy"})
    target = {"project": "copy", "environment": "development", "data": export}
    check = await c.call("POST", batch + "/validate", 200, json=target)
    assert check["errors"], "the flags exist in another project"
    await c.call("POST", batch + "/validate", 400, json={**target, "data": {"features": 1}})
    await c.call("POST", batch + "/import", 400, json=target)  # they live in "default"
    same = {**target, "project": "default"}
    report = await c.call("POST", batch + "/import", 200, json=same)
    assert report["unchanged"] == ["parent", "checkout"]
    changed = {**export, "features": [{**f, "description": "new"} for f in export["features"]]}
    await c.call("POST", batch + "/validate", 200, json={**same, "data": changed})
    await c.call("POST", batch + "/import", 409, json={**same, "data": changed})
    report = await c.call(
        "POST", batch + "/import", 200, json={**same, "data": changed, "overwrite": True}
    )
    assert report["updated"] == ["parent", "checkout"]
    await c.call("POST", batch + "/import", 404, json={**target, "project": "nowhere"})
    fields = await c.call("GET", "/api/admin/context", 200)
    assert "country" in [f["name"] for f in fields]
