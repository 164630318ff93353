"""Unleash's playground API over a real server and SQLite file: Unleash 8.2's shape, and
always the answer an SDK evaluating /api/client/features gives."""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
from pathlib import Path
from typing import Any

import attrs
from aiohttp.test_utils import TestClient, TestServer
from hypothesis import HealthCheck, given, settings
from yggdrasil_engine.engine import UnleashEngine

from flagcore import Engine
from flagcore.errors import FlagcoreError
from flagcore.service import Service
from flagcore.service.playground import MAX_CONTEXT_VALUE_LENGTH
from flagcore.wire import read_client_features
from flagcore_http import ServerConfig, create_app
from flagcore_store_sqlite import SqliteStore
from tests.differential.flag_strategies import Scenario, scenarios
from tests.http.conftest import ADMIN, CLIENT, Api

PLAYGROUND = "/api/admin/playground"
ADVANCED = "/api/admin/playground/advanced"
EXPLAIN = "/api/admin/playground/explain"
BASE = "/api/admin/projects/default/features"
APP = {"appName": "shop"}


async def _checkout(api: Api) -> None:
    """A flag with a disabled strategy, a user list, a rollout with a constraint, a
    segment and variants, and flag variants; on in development."""
    segment = await api.json(
        "POST",
        "/api/admin/segments",
        json={
            "name": "nordics",
            "constraints": [{"contextName": "country", "operator": "IN", "values": ["NO", "SE"]}],
        },
        status=201,
    )
    await api.json("POST", BASE, json={"name": "checkout"}, status=201)
    strategies = f"{BASE}/checkout/environments/development/strategies"
    await api.json("POST", strategies, json={"name": "default", "disabled": True}, status=200)
    await api.json(
        "POST",
        strategies,
        json={"name": "userWithId", "title": "staff", "parameters": {"userIds": "7,8"}},
    )
    await api.json(
        "POST",
        strategies,
        json={
            "name": "flexibleRollout",
            "parameters": {"rollout": "100", "stickiness": "userId", "groupId": "checkout"},
            "constraints": [{"contextName": "plan", "operator": "IN", "values": ["pro"]}],
            "segments": [segment["id"]],
            "variants": [
                {
                    "name": "blue",
                    "weight": 1000,
                    "stickiness": "userId",
                    "weightType": "variable",
                    "payload": {"type": "string", "value": "b"},
                }
            ],
        },
    )
    await api.json(
        "PUT",
        f"{BASE}/checkout/environments/development/variants",
        json=[{"name": "old", "weight": 1000, "weightType": "variable", "stickiness": "default"}],
    )
    await api.json("POST", f"{BASE}/checkout/environments/development/on")


async def _playground(api: Api, context: dict[str, Any], **body: Any) -> dict[str, Any]:
    request = {"environment": "development", "projects": "*", "context": context, **body}
    answer: dict[str, Any] = await api.json("POST", PLAYGROUND, json=request)
    assert answer["input"] == request
    return answer


def _feature(answer: dict[str, Any], name: str) -> dict[str, Any]:
    (feature,) = [f for f in answer["features"] if f["name"] == name]
    return feature


async def test_playground_explains_each_strategy_as_unleash_does(api: Api) -> None:
    await _checkout(api)
    context = {**APP, "userId": "42", "properties": {"plan": "pro", "country": "NO"}}

    feature = _feature(await _playground(api, context), "checkout")

    assert feature["projectId"] == "default"
    assert feature["isEnabled"] is True
    assert feature["isEnabledInCurrentEnvironment"] is True
    assert feature["hasUnsatisfiedDependency"] is False
    disabled, staff, rollout = feature["strategies"]["data"]
    assert disabled["disabled"] is True
    assert disabled["result"] == {"enabled": "unknown", "evaluationStatus": "unevaluated"}
    assert staff["title"] == "staff"
    assert staff["result"] == {"enabled": False, "evaluationStatus": "complete"}
    assert rollout["result"]["enabled"] is True
    assert rollout["result"]["evaluationStatus"] == "complete"
    assert rollout["result"]["variant"] == {
        "name": "blue",
        "enabled": True,
        "payload": {"type": "string", "value": "b"},
    }
    assert [v["name"] for v in rollout["result"]["variants"]] == ["blue"]
    (plan,) = rollout["constraints"]
    assert (plan["contextName"], plan["values"], plan["result"]) == ("plan", ["pro"], True)
    (nordics,) = rollout["segments"]
    assert (nordics["name"], nordics["result"]) == ("nordics", True)
    assert nordics["constraints"][0]["result"] is True
    assert rollout["links"]["edit"] == (
        "/projects/default/features/checkout/strategies/edit"
        f"?environmentId=development&strategyId={rollout['id']}"
    )
    assert feature["strategies"]["result"] is True
    assert feature["variant"] == {  # a strategy's variant: no featureEnabled, as in Unleash
        "name": "blue",
        "enabled": True,
        "payload": {"type": "string", "value": "b"},
        "feature_enabled": True,
    }
    assert [v["name"] for v in feature["variants"]] == ["blue"]


async def test_failed_segment_turns_the_strategy_off_and_shows_flag_variants(api: Api) -> None:
    await _checkout(api)
    context = {**APP, "userId": "7", "properties": {"plan": "pro", "country": "DK"}}

    feature = _feature(await _playground(api, context), "checkout")

    _disabled, staff, rollout = feature["strategies"]["data"]
    assert staff["result"]["enabled"] is True
    assert rollout["result"]["enabled"] is False
    assert rollout["segments"][0]["result"] is False
    assert rollout["segments"][0]["constraints"][0]["result"] is False
    assert feature["isEnabled"] is True
    assert feature["variant"] == {
        "name": "old",
        "enabled": True,
        "feature_enabled": True,
        "featureEnabled": True,
    }
    assert feature["variants"] == [
        {"name": "old", "weight": 1000, "weightType": "variable", "stickiness": "default"}
    ]


async def test_segments_are_listed_in_the_order_they_were_attached_as_unleash_does(
    api: Api,
) -> None:
    """Unleash keeps the links a change keeps and adds new ones after them (issue 23 §5)."""
    ids = []
    for name in ("a", "b", "c", "d"):
        constraint = {"contextName": "userId", "operator": "IN", "values": [name]}
        created = await api.json(
            "POST", "/api/admin/segments", 201, json={"name": name, "constraints": [constraint]}
        )
        ids.append(created["id"])
    a, b, c, d = ids
    base = "/api/admin/projects/default/features"
    await api.json("POST", base, 201, json={"name": "f"})
    strategies = f"{base}/f/environments/development/strategies"
    created = await api.json("POST", strategies, 200, json={"name": "default", "segments": [c, a]})
    strategy = f"{strategies}/{created['id']}"
    updated = await api.json("PUT", strategy, 200, json={"name": "default", "segments": [d, a, b]})
    assert updated["segments"] == [a, d, b]  # a kept; d and b attached after it, as sent

    async def listed() -> list[int]:
        context = {"appName": "web", "userId": "a"}
        body = {"environment": "development", "projects": "*", "context": context}
        result = await api.json("POST", "/api/admin/playground", 200, json=body)
        (rule,) = result["features"][0]["strategies"]["data"]
        return [segment["id"] for segment in rule["segments"]]

    assert await listed() == [a, d, b]
    link = {"projectId": "default", "environmentId": "development", "strategyId": created["id"]}
    await api.json(
        "POST", "/api/admin/segments/strategies", 201, json={**link, "segmentIds": [c, b, a]}
    )
    assert await listed() == [a, b, c]


async def test_flag_off_in_the_environment_is_evaluated_but_not_enabled(api: Api) -> None:
    await _checkout(api)
    await api.json("POST", f"{BASE}/checkout/environments/development/off")
    context = {**APP, "userId": "7"}

    feature = _feature(await _playground(api, context), "checkout")

    assert feature["isEnabledInCurrentEnvironment"] is False
    assert feature["isEnabled"] is False
    assert feature["strategies"]["result"] is True  # the strategies would let user 7 in
    assert feature["variant"] == {"name": "disabled", "enabled": False, "feature_enabled": False}


async def test_unknown_strategy_makes_the_result_unknown_and_the_flag_off(api: Api) -> None:
    await api.json(
        "POST", "/api/admin/strategies", json={"name": "mine", "parameters": []}, status=201
    )
    await api.json("POST", BASE, json={"name": "custom"}, status=201)
    await api.json(
        "POST", f"{BASE}/custom/environments/development/strategies", json={"name": "mine"}
    )
    await api.json("POST", f"{BASE}/custom/environments/development/on")

    feature = _feature(await _playground(api, APP), "custom")

    (strategy,) = feature["strategies"]["data"]
    assert strategy["result"] == {"enabled": "unknown", "evaluationStatus": "incomplete"}
    assert feature["strategies"]["result"] == "unknown"
    assert feature["isEnabled"] is False


async def test_unsatisfied_dependency_is_reported(api: Api) -> None:
    for name in ("parent", "child"):
        await api.json("POST", BASE, json={"name": name}, status=201)
    await api.json("PUT", f"{BASE}/child/dependencies", json=[{"feature": "parent"}])
    await api.json("POST", f"{BASE}/child/environments/development/on")

    feature = _feature(await _playground(api, APP), "child")

    assert feature["hasUnsatisfiedDependency"] is True
    assert feature["isEnabled"] is False
    assert feature["strategies"]["result"] is True


async def test_projects_filter_the_flags(api: Api) -> None:
    await _checkout(api)
    await api.json("POST", "/api/admin/projects", json={"id": "other", "name": "Other"}, status=201)
    await api.json(
        "POST", "/api/admin/projects/other/features", json={"name": "elsewhere"}, status=201
    )

    only_other = await _playground(api, APP, projects=["other"])
    everything = await _playground(api, APP)

    assert [f["name"] for f in only_other["features"]] == ["elsewhere"]
    assert {f["name"] for f in everything["features"]} == {"checkout", "elsewhere"}


async def test_advanced_playground_combines_comma_separated_values_per_environment(
    api: Api,
) -> None:
    await _checkout(api)
    body = {
        "environments": ["development", "production"],
        "projects": "*",
        "context": {**APP, "userId": "7,42", "properties": {"plan": "pro,free", "country": "NO"}},
    }

    answer = await api.json("POST", ADVANCED, json=body)

    assert answer["input"] == body
    (feature,) = answer["features"]
    assert (feature["name"], feature["projectId"]) == ("checkout", "default")
    development = feature["environments"]["development"]
    production = feature["environments"]["production"]
    assert [r["context"] for r in development] == [
        {"appName": "shop", "userId": user, "plan": plan, "country": "NO"}
        for user in ("7", "42")
        for plan in ("pro", "free")
    ]
    assert [r["isEnabled"] for r in development] == [True, True, True, False]
    assert all(r["environment"] == "development" for r in development)
    assert [r["isEnabled"] for r in production] == [False] * 4
    assert all(r["isEnabledInCurrentEnvironment"] is False for r in production)


async def test_advanced_playground_combines_fields_in_the_order_sent_as_unleash_does(
    api: Api,
) -> None:
    """Unleash splits and combines the context's keys in the order they come (its
    generateObjectCombinations), the first varying slowest; a null field is not set."""
    await _checkout(api)
    context = {"userId": "7,42", "sessionId": None, "properties": {"plan": "a,b"}}
    body = {"environments": ["development"], "context": {**context, "appName": "x,y"}}

    answer = await api.json("POST", ADVANCED, json=body)

    (feature,) = answer["features"]
    assert [r["context"] for r in feature["environments"]["development"]] == [
        {"userId": user, "plan": plan, "appName": app}
        for user in ("7", "42")
        for plan in ("a", "b")
        for app in ("x", "y")
    ]
    keys = {tuple(r["context"]) for r in feature["environments"]["development"]}
    assert keys == {("userId", "plan", "appName")}


async def test_advanced_playground_refuses_too_many_combinations(api: Api) -> None:
    await _checkout(api)
    many = ",".join(str(n) for n in range(200))
    body = {
        "environments": ["development"],
        "context": {**APP, "userId": many, "properties": {"plan": many}},
    }

    error = await api.json("POST", ADVANCED, status=400, json=body)

    assert "40000 combinations" in error["details"][0]["message"]


async def test_bad_playground_input_is_a_clear_400(api: Api) -> None:
    cases = [
        ({"environment": "nowhere", "context": APP}, "$.environment"),
        ({"environment": "development", "projects": ["nope"], "context": APP}, "$.projects[0]"),
        ({"environment": "development", "projects": "some", "context": APP}, "$.projects"),
        ({"environment": "development", "context": {**APP, "userId": 7}}, "$.context.userId"),
        ({"environment": "development", "context": {**APP, "plan": "pro"}}, "$.context"),
        (
            {"environment": "development", "context": {**APP, "properties": {"a": ["x"]}}},
            "$.context.properties.a",
        ),
        ({"environment": "development", "context": {**APP, "userId": "x" * 5000}}, None),
        ({"environment": "development", "context": {"userId": "1"}}, "$.context.appName"),
        ({"environment": "development", "context": {**APP, "currentTime": "soon"}}, None),
        ({"environment": "development"}, "$.context"),
        ({"environment": "development", "context": APP, "extra": 1}, "$"),
        ([], "$"),
    ]
    for body, path in cases:
        error = await api.json("POST", PLAYGROUND, status=400, json=body)
        assert error["name"], body
        assert error["message"], body
        if path is not None:
            assert error["details"][0]["path"] == path, (body, error)
    error = await api.json("POST", ADVANCED, status=400, json={"environments": [], "context": APP})
    assert error["details"][0]["path"] == "$.environments"
    error = await api.json(
        "POST",
        ADVANCED,
        status=400,
        json={"environments": ["development", "nowhere"], "context": APP},
    )
    assert error["details"][0]["path"] == "$.environments[1]"


async def test_playground_needs_an_admin_token(api: Api) -> None:
    body = {"environment": "development", "context": APP}
    for token in (None, CLIENT):
        response = await api.request("POST", PLAYGROUND, token=token, json=body)
        assert response.status in (401, 403)


async def test_playground_answers_as_unleash_sdk_engine_on_the_client_api(api: Api) -> None:
    await _checkout(api)
    payload = await api.json("GET", "/api/client/features", token=CLIENT)
    sdk = UnleashEngine()  # the engine inside Unleash's Python SDK
    sdk.take_state(json.dumps(payload))
    for user in ("7", "42", "1000"):
        for plan in ("pro", "free"):
            context = {**APP, "userId": user, "properties": {"plan": plan, "country": "SE"}}
            feature = _feature(await _playground(api, context), "checkout")
            assert feature["isEnabled"] is sdk.check_enabled("checkout", context).is_enabled
            variant = sdk.check_variant("checkout", context).variant
            assert feature["variant"]["name"] == variant.name
            assert feature["variant"]["enabled"] is variant.enabled


# --- randomized: the playground against SDK engines over /api/client/features --------


def _store_scenario(service: Service, scenario: Scenario) -> list[str]:
    """Store what the admin API accepts of a generated payload; the stored flag names."""
    snapshot = read_client_features(scenario.payload).snapshot
    segment_ids = {}
    for segment in snapshot.segments:
        try:
            created = service.segments.create_segment(f"segment-{segment.id}", segment.constraints)
        except FlagcoreError:
            continue
        segment_ids[segment.id] = created.id
    stored = []
    for flag in snapshot.features:
        try:
            service.flags.create_flag("default", flag.name)
        except FlagcoreError:
            continue
        stored.append(flag.name)
        for strategy in flag.strategies:
            segments = tuple(segment_ids[i] for i in strategy.segments if i in segment_ids)
            with contextlib.suppress(FlagcoreError):
                service.strategies.add_strategy(
                    "default",
                    flag.name,
                    "development",
                    attrs.evolve(strategy, segments=segments, id=None, sort_order=None),
                )
        with contextlib.suppress(FlagcoreError):
            service.variants.set_flag_variants("default", flag.name, "development", flag.variants)
        if flag.enabled:
            service.environments.set_environment_enabled("default", flag.name, "development", True)
    for flag in snapshot.features:
        if flag.name in stored and flag.dependencies:
            with contextlib.suppress(FlagcoreError):
                service.dependencies.set_dependencies("default", flag.name, flag.dependencies)
    return stored


def _as_request_context(context: dict[str, Any]) -> dict[str, Any]:
    """A generated context as the playground takes it: Unleash's fields as strings,
    everything else a string property."""
    out: dict[str, Any] = {"appName": "shop"}
    properties = {}
    for key, value in context.items():
        if key == "properties" and isinstance(value, dict):
            properties.update({k: v for k, v in value.items() if type(v) is str and k})
        elif type(value) is not str:
            continue
        elif key in ("userId", "sessionId", "remoteAddress", "environment", "currentTime"):
            out[key] = value
        elif key != "appName":
            properties[key] = value
    if properties:
        out["properties"] = {k[:100]: v for k, v in properties.items()}
    return out


async def _compare(service: Service, scenario: Scenario) -> None:
    stored = _store_scenario(service, scenario)
    app = create_app(service, ServerConfig())
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        api = Api(client)
        payload = await api.json("GET", "/api/client/features", token=CLIENT)
        sdk = Engine.from_client_features(payload)
        unleash_sdk = UnleashEngine()  # the engine inside Unleash's Python SDK
        unleash_sdk.take_state(json.dumps(payload))
        for raw in scenario.contexts:
            context = _as_request_context(raw)
            response = await api.request(
                "POST", PLAYGROUND, json={"environment": "development", "context": context}
            )
            if response.status == 400:  # a date the playground refuses as currentTime, or a
                refused = await response.text()  # value over its bound (the pools' huge versions)
                assert "currentTime" in refused or (
                    f"at most {MAX_CONTEXT_VALUE_LENGTH} characters" in refused
                ), refused
                continue
            assert response.status == 200, await response.text()
            answer = await response.json()
            assert sorted(f["name"] for f in answer["features"]) == sorted(stored)
            for feature in answer["features"]:
                name = feature["name"]
                expected = sdk.get_variant(name, context)
                assert feature["isEnabled"] is sdk.is_enabled(name, context), (name, context)
                assert feature["variant"]["name"] == expected.name, (name, context)
                assert feature["variant"]["enabled"] is expected.enabled
                assert feature["variant"].get("payload") == (
                    None if expected.payload is None else dict(expected.payload)
                )
                theirs = unleash_sdk.check_variant(name, context).variant
                assert feature["isEnabled"] is unleash_sdk.check_enabled(name, context).is_enabled
                assert (feature["variant"]["name"], feature["variant"]["enabled"]) == (
                    theirs.name,
                    theirs.enabled,
                ), (name, context)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_playground_answers_as_the_client_api_on_random_flags(scenario: Scenario) -> None:
    with tempfile.TemporaryDirectory() as directory:
        store = SqliteStore(Path(directory) / "flags.db")
        try:
            service = Service(store)
            service.tokens.create_token("admin", "admin", secret=ADMIN)
            service.tokens.create_token(
                "sdk", "client", projects=["default"], environment="development", secret=CLIENT
            )
            asyncio.run(_compare(service, scenario))
        finally:
            store.close()


async def test_explain_endpoint_answers_one_flag_as_the_engine_explains_it(api: Api) -> None:
    await _checkout(api)
    body = {"flag": "checkout", "environment": "development", "context": {"userId": "7"}}

    explanation = await api.json("POST", EXPLAIN, json=body)

    assert explanation["environment"] == "development"
    assert explanation["enabled"] is True
    # SDKs never see the disabled strategy: the user list is the first strategy here.
    assert [s["name"] for s in explanation["strategies"]] == ["userWithId", "flexibleRollout"]
    assert explanation["matchedStrategy"] == 0
    assert explanation["variant"]["name"] == "old"
    missing = await api.json("POST", EXPLAIN, status=404, json={**body, "flag": "nope"})
    assert '"nope"' in missing["message"]
    wrong = await api.json("POST", EXPLAIN, status=400, json={**body, "context": {"x": "1"}})
    assert wrong["details"][0]["path"] == "$.context"
    refused = await api.request("POST", EXPLAIN, token=CLIENT, json=body)
    assert refused.status == 403


async def test_a_flag_whose_strategies_are_all_disabled_answers_as_sdks_see_it(api: Api) -> None:
    await api.json("POST", BASE, json={"name": "paused"}, status=201)
    strategies = f"{BASE}/paused/environments/development/strategies"
    created = await api.json("POST", strategies, json={"name": "default"})
    await api.json("POST", f"{BASE}/paused/environments/development/on")
    await api.json(
        "PUT", f"{strategies}/{created['id']}", json={"name": "default", "disabled": True}
    )
    payload = await api.json("GET", "/api/client/features", token=CLIENT)
    sdk = UnleashEngine()
    sdk.take_state(json.dumps(payload))

    feature = _feature(await _playground(api, APP), "paused")

    (disabled,) = feature["strategies"]["data"]
    assert disabled["result"] == {"enabled": "unknown", "evaluationStatus": "unevaluated"}
    assert feature["strategies"]["result"] == "unknown"
    # The client API serves the flag with no strategy: SDKs answer from that, and so does
    # the playground (Unleash's own playground would say false; docs/migrating-from-unleash.md).
    assert feature["isEnabled"] is sdk.check_enabled("paused", APP).is_enabled
