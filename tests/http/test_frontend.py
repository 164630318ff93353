"""The Frontend API (issue #17): browsers and phones get answers, not rules."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from flagcore.model import Constraint, Payload, Strategy, Variant
from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from tests.http.conftest import ADMIN, CLIENT, Api, bucket_time

FRONTEND = "default:development.frontend-secret-for-tests"
OTHER_PROJECT_FRONTEND = "web:development.frontend-web-project-secret"


def _flag(service: Service, name: str, *, project: str = "default", **strategy: Any) -> None:
    service.flags.create_flag(project, name)
    service.strategies.add_strategy(
        project,
        name,
        "development",
        Strategy(strategy.pop("strategy", "default"), strategy.pop("parameters", {}), **strategy),
    )
    service.environments.set_environment_enabled(project, name, "development", True)


@pytest.fixture
def flags(service: Service) -> Service:
    service.tokens.create_token(
        "web", "frontend", projects=["default"], environment="development", secret=FRONTEND
    )
    _flag(service, "on-for-all")
    _flag(
        service,
        "only-alice",
        constraints=(Constraint("userId", "IN", ("alice",)),),
    )
    _flag(service, "beta-plan", constraints=(Constraint("plan", "IN", ("beta",)),))
    service.flags.create_flag("default", "switched-off")  # no strategy, never enabled
    _flag(service, "colour")
    service.variants.set_flag_variants(
        "default",
        "colour",
        "development",
        [Variant("blue", 1000, payload=Payload("string", "#00f"))],
    )
    return service


def _names(body: dict[str, Any]) -> list[str]:
    return [toggle["name"] for toggle in body["toggles"]]


async def test_get_lists_only_the_flags_on_for_the_context(api: Api, flags: Service) -> None:
    body = await api.json("GET", "/api/frontend?userId=bob", token=FRONTEND)
    assert _names(body) == ["colour", "on-for-all"]
    alice = await api.json("GET", "/api/frontend?userId=alice", token=FRONTEND)
    assert _names(alice) == ["colour", "on-for-all", "only-alice"]


async def test_toggles_have_unleash_s_shape_with_both_spellings_of_feature_enabled(
    api: Api, flags: Service
) -> None:
    body = await api.json("GET", "/api/frontend", token=FRONTEND)
    by_name = {toggle["name"]: toggle for toggle in body["toggles"]}
    assert by_name["on-for-all"] == {
        "name": "on-for-all",
        "enabled": True,
        "impressionData": False,
        "variant": {
            "name": "disabled",
            "enabled": False,
            "feature_enabled": True,
            "featureEnabled": True,
        },
    }
    assert by_name["colour"]["variant"] == {
        "name": "blue",
        "enabled": True,
        "payload": {"type": "string", "value": "#00f"},
        "feature_enabled": True,
        "featureEnabled": True,
    }


async def test_properties_come_from_the_query_brackets_and_the_post_body(
    api: Api, flags: Service
) -> None:
    got = await api.json("GET", "/api/frontend?properties[plan]=beta", token=FRONTEND)
    assert "beta-plan" in _names(got)
    # As in Unleash, a top-level field that is not a standard one is a property.
    top_level = await api.json("GET", "/api/frontend?plan=beta", token=FRONTEND)
    assert "beta-plan" in _names(top_level)
    posted = await api.json(
        "POST",
        "/api/frontend",
        token=FRONTEND,
        json={"context": {"userId": "alice", "properties": {"plan": "beta", "team": None}}},
    )
    # null means "not set", for properties as for top-level fields.
    assert _names(posted) == ["beta-plan", "colour", "on-for-all", "only-alice"]


async def test_a_write_shows_on_the_very_next_request(api: Api, flags: Service) -> None:
    before = await api.json("GET", "/api/frontend", token=FRONTEND)
    assert "new-flag" not in _names(before)
    await api.json("POST", "/api/admin/projects/default/features", 201, json={"name": "new-flag"})
    await api.json(
        "POST",
        "/api/admin/projects/default/features/new-flag/environments/development/strategies",
        json={"name": "default"},
    )
    await api.json(
        "POST", "/api/admin/projects/default/features/new-flag/environments/development/on"
    )
    after = await api.json("GET", "/api/frontend", token=FRONTEND)
    assert "new-flag" in _names(after)
    await api.json(
        "POST", "/api/admin/projects/default/features/new-flag/environments/development/off"
    )
    assert "new-flag" not in _names(await api.json("GET", "/api/frontend", token=FRONTEND))


async def test_remote_address_defaults_to_the_caller_s_address(api: Api, service: Service) -> None:
    service.tokens.create_token(
        "web", "frontend", projects=("default",), environment="development", secret=FRONTEND
    )
    _flag(service, "office-only", strategy="remoteAddress", parameters={"IPs": "127.0.0.1"})
    assert _names(await api.json("GET", "/api/frontend", token=FRONTEND)) == ["office-only"]
    elsewhere = await api.json("GET", "/api/frontend?remoteAddress=10.1.1.1", token=FRONTEND)
    assert _names(elsewhere) == []
    # X-Forwarded-For is not trusted unless the server is told it sits behind a proxy.
    forwarded = await api.json(
        "GET", "/api/frontend", token=FRONTEND, headers={"X-Forwarded-For": "10.1.1.1"}
    )
    assert _names(forwarded) == ["office-only"]


async def test_behind_a_trusted_proxy_the_last_forwarded_address_counts(
    service: Service,
) -> None:
    service.tokens.create_token(
        "web", "frontend", projects=("default",), environment="development", secret=FRONTEND
    )
    _flag(service, "office-only", strategy="remoteAddress", parameters={"IPs": "10.1.1.1"})
    app = create_app(service, ServerConfig(trust_forwarded_for=True))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        headers = {"Authorization": FRONTEND, "X-Forwarded-For": "6.6.6.6, 10.1.1.1"}
        response = await client.get("/api/frontend", headers=headers)
        assert _names(await response.json()) == ["office-only"]
        headers["X-Forwarded-For"] = "10.1.1.1, 6.6.6.6"  # the client wrote the first one
        response = await client.get("/api/frontend", headers=headers)
        assert _names(await response.json()) == []


async def test_frontend_tokens_are_made_through_the_tokens_api_and_scope_the_answer(
    api: Api, service: Service
) -> None:
    service.projects.create_project("web", "Web")
    _flag(service, "web-flag", project="web")
    _flag(service, "default-flag")
    created = await api.json(
        "POST",
        "/api/admin/api-tokens",
        201,
        json={
            "tokenName": "site",
            "type": "frontend",
            "environment": "development",
            "projects": ["web"],
        },
    )
    assert created["type"] == "frontend"
    assert created["secret"].startswith("web:development.")
    body = await api.json("GET", "/api/frontend", token=created["secret"])
    assert _names(body) == ["web-flag"]


async def test_each_token_kind_gets_the_documented_answer_on_each_path(
    api: Api, flags: Service
) -> None:
    assert (await api.request("GET", "/api/frontend", token=None)).status == 401
    assert (await api.request("GET", "/api/frontend", token="nope")).status == 401
    for wrong in (CLIENT, ADMIN):
        refused = await api.request("GET", "/api/frontend", token=wrong)
        assert refused.status == 403
        assert (await refused.json())["name"] == "ForbiddenError"
    assert (await api.request("GET", "/api/client/features", token=FRONTEND)).status == 403
    assert (await api.request("GET", "/api/admin/projects", token=FRONTEND)).status == 403


async def test_etag_answers_304_and_moves_only_with_what_this_caller_sees(
    api: Api, flags: Service
) -> None:
    first = await api.request("GET", "/api/frontend?userId=bob", token=FRONTEND)
    etag = first.headers["ETag"]
    again = await api.request(
        "GET", "/api/frontend?userId=bob", token=FRONTEND, headers={"If-None-Match": etag}
    )
    assert again.status == 304
    assert await again.read() == b""
    # A change elsewhere (another project, which this token cannot see) leaves it alone,
    # so the ETag says nothing about flags the caller cannot see.
    flags.projects.create_project("secret", "Secret")
    _flag(flags, "hidden-launch", project="secret")
    unchanged = await api.request("GET", "/api/frontend?userId=bob", token=FRONTEND)
    assert unchanged.headers["ETag"] == etag
    # Another user with the same answer shares it; a different answer does not.
    assert (await api.request("GET", "/api/frontend?userId=carol", token=FRONTEND)).headers[
        "ETag"
    ] == etag
    alice = await api.request("GET", "/api/frontend?userId=alice", token=FRONTEND)
    assert alice.headers["ETag"] != etag


async def test_metrics_and_registration_from_browsers_are_recorded(
    api: Api, flags: Service
) -> None:
    metrics = await api.request(
        "POST",
        "/api/frontend/client/metrics",
        token=FRONTEND,
        json={
            "appName": "web-shop",
            "instanceId": "browser-1",
            "bucket": {
                "start": bucket_time(2),
                "stop": bucket_time(),
                "toggles": {"on-for-all": {"yes": 3, "no": 1, "variants": {}}},
            },
        },
    )
    assert metrics.status == 200, await metrics.text()
    registered = await api.request(
        "POST",
        "/api/frontend/client/register",
        token=FRONTEND,
        json={"appName": "web-shop", "instanceId": "browser-1", "sdkVersion": "unleash-js@3"},
    )
    assert registered.status == 200, await registered.text()
    await api.usage_written()
    counted = flags.metrics.flag_metrics("on-for-all")
    assert [(m.app_name, m.environment, m.yes, m.no) for m in counted] == [
        ("web-shop", "development", 3, 1)
    ]
    await api.usage_written()
    instances = flags.instances.client_instances()
    assert [(i.app_name, i.instance_id, i.environment) for i in instances] == [
        ("web-shop", "browser-1", "development")
    ]


async def test_browser_metrics_count_only_variant_names_the_flag_can_have_given(
    api: Api, flags: Service
) -> None:
    """A browser only ever gets the variants its flags define (or ``disabled``): other
    names, each a stored key a public token could make up by the hundred, are dropped."""
    made_up = {f"made-up-{n}-" + "x" * 200: 1 for n in range(100)}
    posted = await api.request(
        "POST",
        "/api/frontend/client/metrics",
        token=FRONTEND,
        json={
            "appName": "web-shop",
            "bucket": {
                "start": bucket_time(2),
                "stop": bucket_time(),
                "toggles": {
                    "colour": {"yes": 3, "variants": {"blue": 2, "disabled": 1, **made_up}},
                    "on-for-all": {"yes": 1, "variants": made_up},
                },
            },
        },
    )
    assert posted.status == 200, await posted.text()
    await api.usage_written()
    [colour] = flags.metrics.flag_metrics("colour")
    assert (colour.yes, dict(colour.variants)) == (3, {"blue": 2, "disabled": 1})
    await api.usage_written()
    [on] = flags.metrics.flag_metrics("on-for-all")
    assert (on.yes, dict(on.variants)) == (1, {})


async def test_a_browser_sdk_s_version_from_its_header_is_recorded_with_its_metrics(
    api: Api, flags: Service
) -> None:
    """Browser SDKs name themselves in ``Unleash-SDK`` and may never register: Unleash
    records that version when their metrics arrive, and so do we (an over-long header is
    dropped, not a reason to refuse the report)."""
    for instance, sdk in (("browser-1", "unleash-client-js:3.8.2"), ("browser-2", "x" * 300)):
        posted = await api.request(
            "POST",
            "/api/frontend/client/metrics",
            token=FRONTEND,
            headers={"Unleash-SDK": sdk},
            json={
                "appName": "web-shop",
                "instanceId": instance,
                "bucket": {
                    "start": bucket_time(2),
                    "stop": bucket_time(),
                    "toggles": {"on-for-all": {"yes": 1, "no": 0}},
                },
            },
        )
        assert posted.status == 200, await posted.text()
    await api.usage_written()
    versions = {i.instance_id: i.sdk_version for i in flags.instances.client_instances()}
    assert versions == {"browser-1": "unleash-client-js:3.8.2", "browser-2": None}


@pytest.mark.parametrize(
    ("request_kwargs", "path"),
    [
        ({"json": {"context": "alice"}}, "$.context"),
        ({"json": {"context": {"userId": 42}}}, "$.context.userId"),
        ({"json": {"context": {"properties": {"plan": ["beta"]}}}}, "$.context.properties.plan"),
        ({"json": {"context": {"properties": []}}}, "$.context.properties"),
        ({"json": {"context": {"currentTime": "yesterday"}}}, "$.context.currentTime"),
        ({"json": ["context"]}, "$"),
        (
            {"json": {"context": {"properties": {f"p{i}": "x" for i in range(101)}}}},
            "$.context.properties",
        ),
        ({"json": {"context": {"userId": "x" * 5000}}}, "$.context.userId"),
    ],
)
async def test_a_malformed_context_is_a_400_naming_the_field(
    api: Api, flags: Service, request_kwargs: dict[str, Any], path: str
) -> None:
    response = await api.request("POST", "/api/frontend", token=FRONTEND, **request_kwargs)
    body = await response.json()
    assert response.status == 400, body
    assert body["name"] in ("BadDataError", "ExceedsLimitError")
    assert path in [detail.get("path") for detail in body["details"]], body


async def test_query_context_errors_name_the_query_parameter(api: Api, flags: Service) -> None:
    repeated = await api.request("GET", "/api/frontend?userId=a&userId=b", token=FRONTEND)
    assert repeated.status == 400
    assert (await repeated.json())["details"][0]["path"] == "/query/userId"
    long_value = await api.request(
        "GET", "/api/frontend?properties[plan]=" + "x" * 5000, token=FRONTEND
    )
    assert long_value.status == 400
    assert (await long_value.json())["details"][0]["path"] == "/query/properties[plan]"


async def test_a_context_body_over_64_kb_is_413_before_it_is_read(api: Api, flags: Service) -> None:
    response = await api.request(
        "POST",
        "/api/frontend",
        token=FRONTEND,
        json={"context": {"properties": {"big": "x" * 70_000}}},
    )
    assert response.status == 413
    assert (await response.json())["name"] == "ContentTooLarge"


@pytest.fixture
async def pinned_origins(service: Service) -> AsyncIterator[TestClient[Any, Any]]:
    service.tokens.create_token(
        "web", "frontend", projects=("default",), environment="development", secret=FRONTEND
    )
    config = ServerConfig(frontend_origins=("https://shop.example",))
    async with TestClient(TestServer(create_app(service, config), host="127.0.0.1")) as client:
        yield client


async def test_preflight_is_answered_for_an_allowed_origin_without_a_token(
    pinned_origins: TestClient[Any, Any],
) -> None:
    response = await pinned_origins.options(
        "/api/frontend",
        headers={
            "Origin": "https://shop.example",
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "authorization",
        },
    )
    assert response.status == 204
    assert response.headers["Access-Control-Allow-Origin"] == "https://shop.example"
    assert "Authorization" in response.headers["Access-Control-Allow-Headers"]
    assert "Origin" in response.headers.getall("Vary")
    answer = await pinned_origins.get(
        "/api/frontend", headers={"Origin": "https://shop.example", "Authorization": FRONTEND}
    )
    assert answer.status == 200
    assert answer.headers["Access-Control-Allow-Origin"] == "https://shop.example"
    assert "ETag" in answer.headers["Access-Control-Expose-Headers"]
    # Refusals carry CORS headers too, so the page can read why.
    refused = await pinned_origins.get("/api/frontend", headers={"Origin": "https://shop.example"})
    assert refused.status == 401
    assert refused.headers["Access-Control-Allow-Origin"] == "https://shop.example"


async def test_a_disallowed_origin_gets_a_403_preflight_and_no_cors_headers(
    pinned_origins: TestClient[Any, Any],
) -> None:
    preflight = await pinned_origins.options(
        "/api/frontend",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"},
    )
    assert preflight.status == 403
    assert (await preflight.json())["name"] == "ForbiddenError"
    assert "Access-Control-Allow-Origin" not in preflight.headers
    answer = await pinned_origins.get(
        "/api/frontend", headers={"Origin": "https://evil.example", "Authorization": FRONTEND}
    )
    assert "Access-Control-Allow-Origin" not in answer.headers


async def test_admin_and_client_paths_never_carry_cors_headers(api: Api, flags: Service) -> None:
    origin = {"Origin": "https://shop.example"}
    admin = await api.request("GET", "/api/admin/projects", headers=origin)
    client = await api.request("GET", "/api/client/features", token=CLIENT, headers=origin)
    frontend = await api.request("GET", "/api/frontend", token=FRONTEND, headers=origin)
    assert admin.status == client.status == frontend.status == 200
    assert "Access-Control-Allow-Origin" not in admin.headers
    assert "Access-Control-Allow-Origin" not in client.headers
    assert frontend.headers["Access-Control-Allow-Origin"] == "*"  # Unleash's default
    preflight = await api.request("OPTIONS", "/api/admin/projects", token=None, headers=origin)
    assert "Access-Control-Allow-Origin" not in preflight.headers


def test_origins_and_proxy_trust_come_from_flags_and_environment() -> None:
    from_flag = ServerConfig.from_env({}, frontend_origins="https://a.example, https://b.example")
    assert from_flag.frontend_origins == ("https://a.example", "https://b.example")
    from_env = ServerConfig.from_env(
        {"FLAGCORE_FRONTEND_ORIGINS": "https://c.example", "FLAGCORE_TRUST_FORWARDED_FOR": "true"}
    )
    assert from_env.frontend_origins == ("https://c.example",)
    assert from_env.trust_forwarded_for is True
    assert ServerConfig().frontend_origins == ("*",)
    assert ServerConfig().trust_forwarded_for is False
    with pytest.raises(ValueError, match="FLAGCORE_TRUST_FORWARDED_FOR"):
        ServerConfig.from_env({"FLAGCORE_TRUST_FORWARDED_FOR": "maybe"})
