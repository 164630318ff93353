"""The documented API through a real server on 127.0.0.1, over SQLite."""

from __future__ import annotations

import gzip
from typing import Any

from flagcore import Engine
from tests.http.conftest import ALL_PROJECTS_CLIENT, CLIENT, Api, bucket_time

F = "/api/admin/projects/default/features"


async def _flag(api: Api, name: str, *, project: str = "default", on: bool = True) -> str:
    await api.json("POST", f"/api/admin/projects/{project}/features", 201, json={"name": name})
    strategy = await api.json(
        "POST",
        f"/api/admin/projects/{project}/features/{name}/environments/development/strategies",
        json={"name": "flexibleRollout", "parameters": {"rollout": 100}},
    )
    if on:
        await api.json(
            "POST",
            f"/api/admin/projects/{project}/features/{name}/environments/development/on",
        )
    return str(strategy["id"])


async def _features(api: Api, query: str = "", **kwargs: Any) -> Any:
    return await api.json("GET", f"/api/client/features{query}", token=CLIENT, **kwargs)


async def test_segments_lifecycle(api: Api) -> None:
    constraints = [{"contextName": "userId", "operator": "IN", "values": ["u1", "u2"]}]
    created = await api.json(
        "POST", "/api/admin/segments", 201, json={"name": "beta", "constraints": constraints}
    )
    segment_id = created["id"]
    assert created["constraints"][0]["values"] == ["u1", "u2"]
    listed = await api.json("GET", "/api/admin/segments")
    assert [s["name"] for s in listed["segments"]] == ["beta"]
    await api.json(
        "PUT",
        f"/api/admin/segments/{segment_id}",
        204,
        json={"name": "beta-users", "constraints": [], "description": "all"},
    )
    fetched = await api.json("GET", f"/api/admin/segments/{segment_id}")
    assert (fetched["name"], fetched["description"]) == ("beta-users", "all")

    strategy_id = await _flag(api, "seg-flag")
    body = {
        "projectId": "default",
        "strategyId": strategy_id,
        "environmentId": "development",
        "segmentIds": [segment_id],
    }
    await api.json("POST", "/api/admin/segments/strategies", 201, json=body)
    using = await api.json("GET", f"/api/admin/segments/{segment_id}/strategies")
    assert [(s["id"], s["featureName"], s["projectId"]) for s in using["strategies"]] == [
        (strategy_id, "seg-flag", "default")
    ]
    of_strategy = await api.json("GET", f"/api/admin/segments/strategies/{strategy_id}")
    assert [s["id"] for s in of_strategy["segments"]] == [segment_id]
    conflict = await api.json("DELETE", f"/api/admin/segments/{segment_id}", 409)
    assert conflict["name"] == "ConflictError"
    await api.json("POST", "/api/admin/segments/strategies", 201, json={**body, "segmentIds": []})
    assert (await api.json("GET", f"/api/admin/segments/strategies/{strategy_id}")) == {
        "segments": []
    }
    await api.json("DELETE", f"/api/admin/segments/{segment_id}", 204)
    missing = await api.json("GET", f"/api/admin/segments/{segment_id}", 404)
    assert missing["name"] == "NotFoundError"


async def test_replacing_strategy_segments_with_an_unknown_id_changes_nothing(api: Api) -> None:
    segment = await api.json(
        "POST", "/api/admin/segments", 201, json={"name": "s", "constraints": []}
    )
    strategy_id = await _flag(api, "f")
    body = {"projectId": "default", "strategyId": strategy_id, "environmentId": "development"}
    await api.json(
        "POST", "/api/admin/segments/strategies", 201, json={**body, "segmentIds": [segment["id"]]}
    )
    await api.json(
        "POST",
        "/api/admin/segments/strategies",
        404,
        json={**body, "segmentIds": [segment["id"], 999]},
    )
    await api.json(
        "POST",
        "/api/admin/segments/strategies",
        404,
        json={**body, "strategyId": "nope", "segmentIds": []},
    )
    kept = await api.json("GET", f"/api/admin/segments/strategies/{strategy_id}")
    assert [s["id"] for s in kept["segments"]] == [segment["id"]]


async def test_updating_a_strategy_without_segments_keeps_them_as_unleash_does(api: Api) -> None:
    segment = await api.json(
        "POST", "/api/admin/segments", 201, json={"name": "kept", "constraints": []}
    )
    strategy_id = await _flag(api, "keeps")
    flag = "/api/admin/projects/default/features/keeps"
    path = f"{flag}/environments/development/strategies/{strategy_id}"
    body = {"name": "flexibleRollout", "parameters": {"rollout": 100, "stickiness": "default"}}
    await api.json("PUT", path, json={**body, "segments": [segment["id"]]})
    updated = await api.json("PUT", path, json={**body, "parameters": {"rollout": 40}})
    assert updated["segments"] == [segment["id"]]  # a body naming no segments keeps them
    assert updated["parameters"]["rollout"] in (40, "40")
    cleared = await api.json("PUT", path, json={**body, "segments": []})
    assert cleared["segments"] == []  # an empty list is a choice: it clears them


async def test_projects_are_listed_created_updated_and_deleted(api: Api) -> None:
    created = await api.json(
        "POST", "/api/admin/projects", 201, json={"id": "web", "name": "Web", "description": "shop"}
    )
    assert created["id"] == "web"
    updated = await api.json("PUT", "/api/projects/web", json={"name": "Web shop"})
    assert updated["name"] == "Web shop"
    listing = await api.json("GET", "/api/admin/projects")
    assert listing["version"] == 1
    assert {p["id"]: p["name"] for p in listing["projects"]} == {
        "default": "Default",
        "web": "Web shop",
    }
    assert all(p["createdAt"] for p in listing["projects"])
    await _flag(api, "web-flag", project="web")
    await api.json("DELETE", "/api/admin/projects/web", 409)
    await api.json("DELETE", "/api/admin/projects/web-nope", 404)
    await api.json("POST", "/api/admin/projects", 409, json={"id": "web", "name": "again"})


async def test_sdks_without_a_spec_get_format_1_with_legacy_fields_and_inlined_segments(
    api: Api,
) -> None:
    segment = await api.json(
        "POST",
        "/api/admin/segments",
        201,
        json={
            "name": "s",
            "constraints": [{"contextName": "userId", "operator": "IN", "values": ["1"]}],
        },
    )
    strategy_id = await _flag(api, "f")
    await api.json(
        "POST",
        "/api/admin/segments/strategies",
        201,
        json={
            "projectId": "default",
            "strategyId": strategy_id,
            "environmentId": "development",
            "segmentIds": [segment["id"]],
        },
    )
    v1 = await _features(api)
    assert v1["version"] == 1
    assert v1["query"]["inlineSegmentConstraints"] is True
    assert "segments" not in v1
    (flag,) = v1["features"]
    # The legacy keys: the first strategy's name and parameters, as documented for version 1.
    assert flag["strategy"] == "flexibleRollout"
    assert flag["parameters"] == flag["strategies"][0]["parameters"]
    assert flag["parameters"]["rollout"] == "100"
    assert "segments" not in flag["strategies"][0]
    assert flag["strategies"][0]["constraints"][0]["values"] == ["1"]
    v2 = await _features(api, headers={"Unleash-Client-Spec": "5.1.9"})
    assert v2["version"] == 2
    assert "strategy" not in v2["features"][0]
    assert "parameters" not in v2["features"][0]
    assert v2["features"][0]["strategies"][0]["segments"] == [segment["id"]]
    assert [s["id"] for s in v2["segments"]] == [segment["id"]]
    for payload in (v1, v2):
        engine = Engine.from_client_features(payload)
        assert engine.is_enabled("f", {"userId": "1"})
        assert not engine.is_enabled("f", {"userId": "2"})
    # The list answers 200 or 304 only: an unreadable spec header gets format 1.
    for spec in ("garbage", "4.1.9"):
        old = await _features(api, headers={"Unleash-Client-Spec": spec})
        assert (old["version"], old["query"]["inlineSegmentConstraints"]) == (1, True)
        assert old["features"][0]["strategy"] == "flexibleRollout"
        assert "segments" not in old


async def test_format_1_says_default_for_a_flag_without_strategies(api: Api) -> None:
    # Enabling a flag gives it a strategy; one never enabled is served without any.
    await api.json("POST", F, 201, json={"name": "bare"})
    (flag,) = (await _features(api))["features"]
    assert (flag["enabled"], flag["strategies"]) == (False, [])
    assert (flag["strategy"], flag["parameters"]) == ("default", {})
    single = await api.json("GET", "/api/client/features/bare", token=CLIENT)
    assert (single["strategy"], single["parameters"]) == ("default", {})
    # What "default" stands for: an enabled flag without strategies is on for everyone.
    on = Engine.from_client_features({"version": 1, "features": [{**flag, "enabled": True}]})
    assert on.is_enabled("bare", {"userId": "anyone"})


async def test_a_plain_http_client_without_the_header_gets_the_documented_version_1(
    api: Api,
) -> None:
    """What curl or any script gets: no SDK headers at all, not even Accept."""
    await _flag(api, "f")
    second = await api.json(
        "POST",
        f"{F}/f/environments/development/strategies",
        json={"name": "userWithId", "parameters": {"userIds": "7"}},
    )
    assert second["name"] == "userWithId"
    raw = await api.client.session.get(
        api.client.make_url("/api/client/features"),
        headers={"Authorization": CLIENT},
        skip_auto_headers=("Accept", "Accept-Encoding", "User-Agent"),
    )
    assert raw.status == 200
    body = await raw.json()
    assert body["version"] == 1
    (flag,) = body["features"]
    assert [s["name"] for s in flag["strategies"]] == ["flexibleRollout", "userWithId"]
    assert (flag["strategy"], flag["parameters"]["rollout"]) == ("flexibleRollout", "100")
    assert set(body) == {"version", "features", "query", "meta"}


async def test_etag_gives_304_and_a_write_is_visible_on_the_next_request(api: Api) -> None:
    await _flag(api, "f")
    first = await api.request("GET", "/api/client/features", token=CLIENT)
    etag = first.headers["ETag"]
    assert etag.startswith('"')
    assert etag.endswith('"')
    again = await api.request(
        "GET", "/api/client/features", token=CLIENT, headers={"If-None-Match": etag}
    )
    assert again.status == 304
    assert await again.read() == b""
    weak = await api.request(
        "GET", "/api/client/features", token=CLIENT, headers={"If-None-Match": f"W/{etag}"}
    )
    assert weak.status == 304
    await api.json("POST", f"{F}/f/environments/development/off")
    after = await api.request(
        "GET", "/api/client/features", token=CLIENT, headers={"If-None-Match": etag}
    )
    assert after.status == 200
    assert after.headers["ETag"] != etag
    assert (await after.json())["features"][0]["enabled"] is False


async def test_gzip_when_the_client_accepts_it(api: Api) -> None:
    await _flag(api, "f")
    response = await api.request(
        "GET", "/api/client/features", token=CLIENT, headers={"Accept-Encoding": "gzip"}
    )
    assert response.headers["Content-Encoding"] == "gzip"
    assert (await response.json())["features"][0]["name"] == "f"
    raw = await api.client.session.get(
        api.client.make_url("/api/client/features"),
        headers={"Authorization": CLIENT, "Accept-Encoding": "gzip"},
        auto_decompress=False,
    )
    assert gzip.decompress(await raw.read()).startswith(b'{"version"')


async def test_client_filters_combine(api: Api) -> None:
    await api.json("POST", "/api/admin/projects", 201, json={"id": "web", "name": "Web"})
    for name, project in (("app.one", "default"), ("app.two", "web"), ("other", "web")):
        await _flag(api, name, project=project)
    await api.json(
        "POST", "/api/admin/features/app.one/tags", 201, json={"type": "simple", "value": "t1"}
    )
    await api.json(
        "POST", "/api/admin/features/other/tags", 201, json={"type": "simple", "value": "t2"}
    )

    async def names(query: str) -> list[str]:
        payload = await api.json("GET", f"/api/client/features{query}", token=ALL_PROJECTS_CLIENT)
        return sorted(f["name"] for f in payload["features"])

    assert await names("") == ["app.one", "app.two", "other"]
    assert await names("?project=web") == ["app.two", "other"]
    assert await names("?project=web&project=default") == ["app.one", "app.two", "other"]
    assert await names("?namePrefix=app.") == ["app.one", "app.two"]
    assert await names("?tag[]=simple:t1&tag[]=simple:t2") == ["app.one", "other"]
    assert await names("?tag=simple:t1") == ["app.one"]
    assert await names("?tag=simple:t2&namePrefix=app") == []
    assert await names("?tag[]=simple") == []  # not type:value: matches nothing, still 200
    # A project-scoped token wins over the query.
    scoped = await _features(api, "?project=web")
    assert [f["name"] for f in scoped["features"]] == ["app.one"]


async def test_single_client_feature(api: Api) -> None:
    strategy_id = await _flag(api, "f")
    segment = await api.json(
        "POST",
        "/api/admin/segments",
        201,
        json={
            "name": "beta",
            "constraints": [{"contextName": "userId", "operator": "IN", "values": ["u1"]}],
        },
    )
    await api.json(
        "POST",
        "/api/admin/segments/strategies",
        201,
        json={
            "strategyId": strategy_id,
            "segmentIds": [segment["id"]],
            "projectId": "default",
            "environmentId": "development",
        },
    )
    # Spec 4.2+: segment ids on the strategy, as in the list; older SDKs: constraints inlined.
    flag = await api.json(
        "GET", "/api/client/features/f", token=CLIENT, headers={"Unleash-Client-Spec": "5.0.0"}
    )
    assert flag["name"] == "f"
    assert "version" not in flag
    assert flag["strategies"][0]["segments"] == [segment["id"]]
    assert "strategy" not in flag
    inlined = await api.json("GET", "/api/client/features/f", token=CLIENT)
    assert "version" not in inlined
    assert inlined["strategies"][0]["constraints"][0]["values"] == ["u1"]
    assert (inlined["strategy"], inlined["parameters"]["rollout"]) == ("flexibleRollout", "100")
    await api.json("GET", "/api/client/features/nope", 404, token=CLIENT)
    # Outside the token's projects, or archived: not there for SDKs either.
    await api.json("POST", "/api/admin/projects", 201, json={"id": "web", "name": "Web"})
    await _flag(api, "elsewhere", project="web")
    await api.json("GET", "/api/client/features/elsewhere", 404, token=CLIENT)
    await api.json("GET", "/api/client/features/elsewhere", token=ALL_PROJECTS_CLIENT)
    archived = await api.request("DELETE", "/api/admin/projects/default/features/f")
    assert archived.status == 202
    await api.json("GET", "/api/client/features/f", 404, token=CLIENT)


async def test_archive_revive_and_delete(api: Api) -> None:
    await _flag(api, "f")
    await api.json(
        "POST", "/api/admin/features/f/tags", 201, json={"type": "simple", "value": "keep"}
    )
    await api.json("DELETE", f"{F}/f", 202)
    archived = await api.json("GET", "/api/admin/archive/features")
    (entry,) = archived["features"]
    assert (entry["name"], entry["strategy"], entry["tags"]) == (
        "f",
        "flexibleRollout",
        [{"type": "simple", "value": "keep"}],
    )
    assert (await _features(api))["features"] == []
    await api.json("POST", "/api/admin/archive/revive/f")
    revived = await api.json("GET", f"{F}/f")
    assert [e["enabled"] for e in revived["environments"]] == [False, False]
    assert revived["environments"][0]["strategies"][0]["name"] == "flexibleRollout"
    refused = await api.json("DELETE", "/api/admin/archive/f", 409)
    assert "archive it first" in refused["message"]
    await api.json("DELETE", f"{F}/f", 202)
    await api.json("DELETE", "/api/admin/archive/f")
    await api.json("DELETE", "/api/admin/archive/f", 404)
    await api.json("POST", "/api/admin/archive/revive/f", 404)


async def test_strategy_admin_and_validation_errors_name_paths(api: Api) -> None:
    await api.json("POST", F, 201, json={"name": "f"})
    base = f"{F}/f/environments/development/strategies"
    bad = await api.json(
        "POST",
        base,
        400,
        json={
            "name": "default",
            "constraints": [{"contextName": "age", "operator": "NUM_GT", "value": "old"}],
        },
    )
    assert bad["name"] == "BadDataError"
    assert bad["details"][0]["path"] == "$.constraints[0].value"
    typed = await api.json(
        "POST", base, 400, json={"name": "default", "constraints": [{"contextName": "a"}]}
    )
    assert typed["details"][0]["path"].startswith("$.constraints[0]")
    first = await api.json("POST", base, json={"name": "default"})
    second = await api.json(
        "POST", base, json={"name": "userWithId", "parameters": {"userIds": "a,b"}}
    )
    await api.json("POST", f"{base}/set-sort-order", json=[{"id": first["id"], "sortOrder": 9}])
    ordered = await api.json("GET", base)
    assert [s["id"] for s in ordered] == [second["id"], first["id"]]
    updated = await api.json(
        "PUT",
        f"{base}/{first['id']}",
        json={"name": "flexibleRollout", "parameters": {"rollout": "5"}},
    )
    assert updated["parameters"]["groupId"] == "f"
    await api.json("DELETE", f"{base}/{first['id']}")
    await api.json("GET", f"{base}/{first['id']}", 404)
    patched = await api.json(
        "PATCH", f"{F}/f", json=[{"op": "replace", "path": "/description", "value": "p"}]
    )
    assert patched["description"] == "p"


async def test_register_and_metrics_are_accepted_and_stored(api: Api, service: Any) -> None:
    service.flags.create_flag("default", "f")  # metrics count only flags that exist
    register = {
        "appName": "shop",
        "instanceId": "i-1",
        "sdkVersion": "unleash-python-sdk:6.9.1",
        "strategies": [],
        "started": "2026-11-22T08:23:08.951132+00:00",
        "interval": 60,
    }
    await api.json("POST", "/api/client/register", 202, token=CLIENT, json=register)
    metrics = {
        "appName": "shop",
        "instanceId": "i-1",
        "bucket": {
            "start": bucket_time(2)[:-1] + ".945994537Z",
            "stop": bucket_time()[:-1] + ".469051162Z",
            "toggles": {"f": {"yes": 2, "no": 1, "variants": {"a": 2}}},
        },
    }
    await api.json("POST", "/api/client/metrics", 202, token=CLIENT, json=metrics)
    await api.usage_written()
    (row,) = service.metrics.flag_metrics("f")
    assert (row.yes, row.no, row.app_name, row.environment) == (2, 1, "shop", "development")
    (instance,) = service.instances.client_instances()
    assert instance.sdk_version == "unleash-python-sdk:6.9.1"
    await api.json("POST", "/api/client/metrics", 400, token=CLIENT, json={"foo": 1})


async def test_tokens_events_health_and_openapi(api: Api) -> None:
    created = await api.json(
        "POST",
        "/api/admin/api-tokens",
        201,
        json={"tokenName": "ci", "type": "client", "environment": "development", "projects": ["*"]},
    )
    assert created["secret"].startswith("*:development.")
    listed = await api.json("GET", "/api/admin/api-tokens")
    assert all("secret" not in token for token in listed["tokens"])
    await api.json("GET", "/api/client/features", token=created["secret"])
    events = await api.json("GET", "/api/admin/events?limit=5")
    assert events["events"][0]["type"] == "api-token-created"
    assert (await api.json("GET", "/health", token=None)) == {"health": "GOOD"}
    assert (await api.json("GET", "/ready", token=None)) == {"health": "GOOD"}
    document = await api.json("GET", "/docs/openapi.json", token=None)
    assert "/api/admin/segments/{id}" in document["paths"]
    assert "/api/client/features" in document["paths"]


async def test_the_client_list_answers_only_200_or_304_to_an_authenticated_client(api: Api) -> None:
    await _flag(api, "f")
    queries = [
        "",
        "?tag=x",
        "?tag[]=a:b:c",
        "?tag=",
        "?project=nope",
        "?project[]=&project=",
        "?namePrefix=%00%ff",
        "?environment=nowhere",
        "?foo=bar&tag[]=simple:x",
        "?" + "a=1&" * 500,
    ]
    headers = [
        {},
        {"Unleash-Client-Spec": "garbage"},
        {"Unleash-Client-Spec": "5"},
        {"If-None-Match": "nonsense"},
        {"Accept-Encoding": "br"},
    ]
    for query in queries:
        for extra in headers:
            response = await api.request(
                "GET", f"/api/client/features{query}", token=CLIENT, headers=extra
            )
            assert response.status in (200, 304), (query, extra, await response.text())
