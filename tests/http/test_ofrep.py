"""OFREP (issue #17), driven by OpenFeature's own OFREP provider from PyPI
(``openfeature-provider-ofrep``) through the real ``openfeature-sdk`` client, and by raw
requests for what a provider never sends."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from openfeature import api as openfeature_api
from openfeature.client import OpenFeatureClient
from openfeature.contrib.provider.ofrep import OFREPProvider
from openfeature.evaluation_context import EvaluationContext
from openfeature.exception import ErrorCode
from openfeature.flag_evaluation import Reason

from flagcore.model import Constraint, Payload, Strategy, Variant
from flagcore.service import Service
from tests.http.conftest import ADMIN, CLIENT, Api

FRONTEND = "default:development.frontend-secret-for-tests"
_domains = itertools.count()


def _flag(service: Service, name: str, *variants: Variant, **strategy: Any) -> None:
    service.flags.create_flag("default", name)
    service.strategies.add_strategy(
        "default", name, "development", Strategy("default", {}, **strategy)
    )
    service.environments.set_environment_enabled("default", name, "development", True)
    if variants:
        service.variants.set_flag_variants("default", name, "development", list(variants))


@pytest.fixture
def flags(service: Service) -> Service:
    service.tokens.create_token(
        "web", "frontend", projects=["default"], environment="development", secret=FRONTEND
    )
    _flag(service, "checkout", constraints=(Constraint("userId", "IN", ("alice",)),))
    _flag(service, "banner", Variant("wide", 1000, payload=Payload("string", "Hello")))
    _flag(service, "retries", Variant("three", 1000, payload=Payload("number", "3")))
    _flag(service, "ratio", Variant("half", 1000, payload=Payload("number", "0.5")))
    _flag(service, "layout", Variant("grid", 1000, payload=Payload("json", '{"columns": 3}')))
    service.flags.create_flag("default", "dormant")  # never enabled
    return service


@pytest.fixture
def of_client(api: Api) -> Iterator[Callable[..., OpenFeatureClient]]:
    """A real OpenFeature client over OFREPProvider pointed at the test server."""
    base = str(api.client.make_url("/"))

    def make(headers: dict[str, str] | None = None) -> OpenFeatureClient:
        sent = headers if headers is not None else {"Authorization": f"Bearer {CLIENT}"}
        provider = OFREPProvider(base, headers_factory=lambda: dict(sent), timeout=10)
        domain = f"ofrep-test-{next(_domains)}"
        openfeature_api.set_provider(provider, domain)
        return openfeature_api.get_client(domain)

    yield make
    openfeature_api.clear_providers()


async def _in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    # The provider is synchronous (requests): run it beside the server's event loop.
    return await asyncio.to_thread(fn, *args)


async def test_a_boolean_flag_follows_the_targeting_key(
    flags: Service, of_client: Callable[..., OpenFeatureClient]
) -> None:
    client = of_client()
    alice = await _in_thread(
        client.get_boolean_details, "checkout", False, EvaluationContext("alice")
    )
    assert (alice.value, alice.reason, alice.error_code) == (True, Reason.TARGETING_MATCH, None)
    bob = await _in_thread(client.get_boolean_details, "checkout", True, EvaluationContext("bob"))
    assert (bob.value, bob.reason, bob.variant) == (False, Reason.DISABLED, "disabled")


async def test_variant_payloads_come_back_typed(
    flags: Service, of_client: Callable[..., OpenFeatureClient]
) -> None:
    client = of_client()
    context = EvaluationContext("alice")
    banner = await _in_thread(client.get_string_details, "banner", "none", context)
    assert (banner.value, banner.variant, banner.reason) == ("Hello", "wide", "TARGETING_MATCH")
    retries = await _in_thread(client.get_integer_details, "retries", 0, context)
    assert (retries.value, retries.variant) == (3, "three")
    ratio = await _in_thread(client.get_float_details, "ratio", 0.0, context)
    assert ratio.value == 0.5
    layout = await _in_thread(client.get_object_details, "layout", {}, context)
    assert layout.value == {"columns": 3}
    # Asking for the wrong type gives the caller's default, as OpenFeature defines.
    wrong = await _in_thread(client.get_integer_details, "banner", 7, context)
    assert (wrong.value, wrong.error_code) == (7, ErrorCode.TYPE_MISMATCH)


async def test_an_unknown_flag_is_flag_not_found(
    api: Api, flags: Service, of_client: Callable[..., OpenFeatureClient]
) -> None:
    details = await _in_thread(of_client().get_boolean_details, "no-such-flag", True)
    assert (details.value, details.error_code) == (True, ErrorCode.FLAG_NOT_FOUND)
    raw = await api.request(
        "POST", "/ofrep/v1/evaluate/flags/no-such-flag", token=CLIENT, json={"context": {}}
    )
    assert raw.status == 404
    body = await raw.json()
    assert (body["key"], body["errorCode"]) == ("no-such-flag", "FLAG_NOT_FOUND")
    assert body["name"] == "NotFoundError"


async def test_x_api_key_and_frontend_tokens_are_accepted_admin_tokens_are_not(
    flags: Service, of_client: Callable[..., OpenFeatureClient]
) -> None:
    by_api_key = of_client({"X-API-Key": FRONTEND})
    details = await _in_thread(
        by_api_key.get_boolean_details, "checkout", False, EvaluationContext("alice")
    )
    assert (details.value, details.error_code) == (True, None)
    as_admin = of_client({"Authorization": ADMIN})
    refused = await _in_thread(as_admin.get_boolean_details, "checkout", False)
    assert (refused.value, refused.error_code, refused.error_message) == (
        False,
        ErrorCode.GENERAL,
        "forbidden",
    )
    nobody = await _in_thread(of_client({}).get_boolean_details, "checkout", False)
    assert nobody.error_message == "unauthorized"


@pytest.mark.parametrize(
    ("request_kwargs", "code", "path"),
    [
        (
            {"data": b"{not json", "headers": {"Content-Type": "application/json"}},
            "PARSE_ERROR",
            "$",
        ),
        ({"json": {"context": "alice"}}, "INVALID_CONTEXT", "$.context"),
        ({"json": {"context": {"targetingKey": 42}}}, "INVALID_CONTEXT", "$.context.targetingKey"),
        ({"json": {"context": {"team": {"a": 1}}}}, "INVALID_CONTEXT", "$.context.team"),
        ({"json": {"context": {"sessionId": 5}}}, "INVALID_CONTEXT", "$.context.sessionId"),
        ({"json": [1]}, "INVALID_CONTEXT", "$"),
    ],
)
async def test_a_bad_request_gets_ofrep_s_error_code_and_our_error_shape(
    api: Api, flags: Service, request_kwargs: dict[str, Any], code: str, path: str
) -> None:
    for url in ("/ofrep/v1/evaluate/flags/checkout", "/ofrep/v1/evaluate/flags"):
        response = await api.request("POST", url, token=CLIENT, **request_kwargs)
        body = await response.json()
        assert response.status == 400, body
        assert body["errorCode"] == code
        assert body["errorDetails"]
        assert body["name"] == "BadDataError"
        assert path in [detail.get("path") for detail in body["details"]], body


async def test_number_and_boolean_attributes_are_matched_as_unleash_reads_them(
    flags: Service, of_client: Callable[..., OpenFeatureClient]
) -> None:
    _flag(flags, "big-orders", constraints=(Constraint("total", "NUM_GT", value="100"),))
    client = of_client()
    big = await _in_thread(
        client.get_boolean_value, "big-orders", False, EvaluationContext("u", {"total": 250})
    )
    small = await _in_thread(
        client.get_boolean_value, "big-orders", True, EvaluationContext("u", {"total": 99.5})
    )
    assert (big, small) == (True, False)


async def test_bulk_evaluation_with_a_client_token_lists_every_flag_off_ones_included(
    api: Api, flags: Service
) -> None:
    context = {"context": {"targetingKey": "bob"}}
    response = await api.request("POST", "/ofrep/v1/evaluate/flags", token=CLIENT, json=context)
    by_key = {item["key"]: item for item in (await response.json())["flags"]}
    assert set(by_key) == {"banner", "checkout", "dormant", "layout", "ratio", "retries"}
    assert (by_key["dormant"]["value"], by_key["dormant"]["reason"]) == (False, "DISABLED")
    assert (by_key["checkout"]["value"], by_key["checkout"]["reason"]) == (False, "DISABLED")


async def test_bulk_evaluation_with_a_frontend_token_lists_what_the_frontend_api_lists(
    api: Api, flags: Service
) -> None:
    """A frontend token is public: its bulk answer names only the flags on for its context,
    exactly the toggles the Frontend API gives the same token and context."""
    for user in ("alice", "bob"):
        ofrep = await api.json(
            "POST",
            "/ofrep/v1/evaluate/flags",
            token=FRONTEND,
            json={"context": {"targetingKey": user}},
        )
        frontend = await api.json(
            "POST", "/api/frontend", token=FRONTEND, json={"context": {"userId": user}}
        )
        listed = [item["key"] for item in ofrep["flags"]]
        assert listed == [toggle["name"] for toggle in frontend["toggles"]]
        assert "dormant" not in listed
        assert ("checkout" in listed) is (user == "alice")
        assert all(item["metadata"]["featureEnabled"] for item in ofrep["flags"])
    # Asked by name, an off flag still answers (as Unleash Edge's single-flag route does).
    single = await api.json(
        "POST", "/ofrep/v1/evaluate/flags/dormant", token=FRONTEND, json={"context": {}}
    )
    assert (single["value"], single["reason"]) == (False, "DISABLED")


async def test_bulk_evaluation_answers_304_for_its_etag_and_200_after_a_write(
    api: Api, flags: Service
) -> None:
    url = "/ofrep/v1/evaluate/flags"
    context = {"context": {"targetingKey": "alice"}}
    response = await api.request("POST", url, token=FRONTEND, json=context)
    assert response.status == 200
    body = await response.json()
    by_key = {item["key"]: item for item in body["flags"]}
    assert set(by_key) == {"banner", "checkout", "layout", "ratio", "retries"}
    assert by_key["layout"]["value"] == {"columns": 3}
    assert by_key["checkout"]["metadata"] == {"project": "default", "featureEnabled": True}
    etag = response.headers["ETag"]
    same = await api.request(
        "POST", url, token=FRONTEND, json=context, headers={"If-None-Match": etag}
    )
    assert same.status == 304
    bob = await api.request(
        "POST",
        url,
        token=FRONTEND,
        json={"context": {"targetingKey": "bob"}},
        headers={"If-None-Match": etag},
    )
    assert bob.status == 200  # checkout is off for bob: another answer, another ETag
    flags.environments.set_environment_enabled("default", "dormant", "development", True)
    flags.strategies.add_strategy("default", "dormant", "development", Strategy("default"))
    changed = await api.request(
        "POST", url, token=FRONTEND, json=context, headers={"If-None-Match": etag}
    )
    assert changed.status == 200  # a write shows on the next request
    assert {i["key"]: i["value"] for i in (await changed.json())["flags"]}["dormant"] is True


async def test_ofrep_answers_cors_preflights_for_web_providers(api: Api, flags: Service) -> None:
    response = await api.request(
        "OPTIONS",
        "/ofrep/v1/evaluate/flags",
        token=None,
        headers={"Origin": "https://app.example", "Access-Control-Request-Method": "POST"},
    )
    assert response.status == 204
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    assert "X-API-Key" in response.headers["Access-Control-Allow-Headers"]


async def test_a_context_sent_in_chunks_is_read_whole(flags: Service, api: Api) -> None:
    """A body that arrives in pieces (chunked, or split across packets) is one context:
    the server reads to its end, not just what has arrived at the first read."""

    async def pieces() -> Any:
        yield b'{"context": {"targetingKey": "al'
        await asyncio.sleep(0.2)  # the second piece arrives after the server began reading
        yield b'ice"}}'

    response = await api.request(
        "POST",
        "/ofrep/v1/evaluate/flags/checkout",
        token=f"Bearer {CLIENT}",
        data=pieces(),
        headers={"Content-Type": "application/json"},
    )
    assert response.status == 200, await response.text()
    assert (await response.json())["value"] is True
