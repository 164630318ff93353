"""Rate limits and the auth-failure tarpit (issue #12): abusers are throttled from their
headers alone, other clients and well-behaved SDKs are not."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import pytest
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer

from flagcore.entities import TokenType
from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from flagcore_http.config import ConfigError
from flagcore_http.keys import CACHE
from flagcore_http.rate_limits import RateLimiter, sdk_write_burst
from tests.http.conftest import ALL_PROJECTS_CLIENT, CLIENT, Api, bucket_time

FEATURES = "/api/client/features"
METRICS = "/api/client/metrics"
REGISTER = "/api/client/register"
FRONTEND = "default:development.frontend-secret-for-rate-tests"


@asynccontextmanager
async def serving(service: Service, **settings: Any) -> AsyncIterator[Api]:
    app = create_app(service, ServerConfig(**settings))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        yield Api(client)


def _networks(*addresses: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(address) for address in addresses)


def _report(app: str = "checkout") -> dict[str, Any]:
    return {
        "appName": app,
        "instanceId": "pod-1",
        "bucket": {
            "start": bucket_time(2),
            "stop": bucket_time(),
            "toggles": {"known": {"yes": 1, "no": 0}},
        },
    }


def _registration(instance: str = "pod-1") -> dict[str, Any]:
    return {
        "appName": "checkout",
        "instanceId": instance,
        "interval": 15000,
        "started": "2026-01-01T00:00:00Z",
        "strategies": ["default"],
    }


async def _post(
    api: Api, path: str, body: Any, *, token: str = CLIENT, via: str | None = None
) -> ClientResponse:
    headers = {"X-Forwarded-For": via} if via else {}
    response = await api.request("POST", path, token=token, json=body, headers=headers)
    await response.read()
    return response


# --- 429 before the body ---


async def _answer_without_sending_the_body(api: Api, path: str, token: str) -> Any:
    """POST ``path`` declaring a large body and sending none of it; the answer cannot have
    waited for it. Returns (status, headers, JSON body, whether the server then closed)."""
    server = api.client.server
    reader, writer = await asyncio.open_connection(server.host, server.port)
    try:
        writer.write(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {token}\r\n".encode()
            + b"Content-Type: application/json\r\nContent-Length: 90000\r\n\r\n"
        )
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        lines = head.decode("latin-1").split("\r\n")
        headers = {
            k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])
        }
        body = json.loads(await reader.readexactly(int(headers["content-length"])))
        closed = await asyncio.wait_for(reader.read(), 10) == b""
        return int(lines[0].split()[1]), headers, body, closed
    finally:
        writer.close()


async def test_a_limited_client_gets_429_with_retry_after_before_its_body_is_sent(
    service: Service,
) -> None:
    service.flags.create_flag("default", "known")
    async with serving(service, metrics_rate_limit=2) as api:
        for _ in range(2):
            assert (await _post(api, METRICS, _report())).status == 202
        status, headers, body, closed = await _answer_without_sending_the_body(api, METRICS, CLIENT)
        assert status == 429
        assert int(headers["retry-after"]) >= 1
        assert body["name"] == "RateLimitedError"
        assert body["details"][0]["message"]
        assert closed  # the unread body is not waited for: the connection closes
    # Only the two allowed reports were counted.
    assert [row.yes for row in service.metrics.flag_metrics("known")] == [2]


async def test_a_signal_burst_is_refused_before_its_body_is_read(api: Api) -> None:
    endpoints = "/api/admin/signal-endpoints"
    created = await api.json("POST", endpoints, 201, json={"name": "alerts"})
    token = await api.json("POST", f"{endpoints}/{created['id']}/tokens", 201, json={"name": "t"})
    secret = f"Bearer {token['token']}"
    await api.json("POST", "/api/signal-endpoint/alerts", 202, token=secret, json={"n": 1})
    status, headers, body, closed = await _answer_without_sending_the_body(
        api, "/api/signal-endpoint/alerts", secret
    )
    assert (status, headers["retry-after"], body["name"]) == (429, "1", "RateLimitedError")
    assert closed


async def test_registrations_are_limited_like_unleash_and_answered_in_the_json_shape(
    service: Service,
) -> None:
    async with serving(service, register_rate_limit=1) as api:
        assert (await _post(api, REGISTER, _registration())).status == 202
        refused = await api.request("POST", REGISTER, token=CLIENT, json=_registration())
        assert refused.status == 429
        assert refused.headers["Retry-After"] == "60"  # one a minute: the next in 60 s
        assert (await refused.json())["name"] == "RateLimitedError"


async def test_frontend_metrics_and_registrations_have_their_own_limits(
    service: Service,
) -> None:
    service.tokens.create_token(
        "web", TokenType.FRONTEND, projects=["default"], environment="development", secret=FRONTEND
    )
    settings = {"frontend_metrics_rate_limit": 1, "frontend_register_rate_limit": 1}
    async with serving(service, **settings) as api:
        frontend_metrics = "/api/frontend/client/metrics"
        assert (await _post(api, frontend_metrics, _report(), token=FRONTEND)).status == 200
        assert (await _post(api, frontend_metrics, _report(), token=FRONTEND)).status == 429
        register = "/api/frontend/client/register"
        assert (await _post(api, register, {"appName": "web"}, token=FRONTEND)).status == 200
        assert (await _post(api, register, {"appName": "web"}, token=FRONTEND)).status == 429
        # The server SDK limits are separate.
        assert (await _post(api, METRICS, _report())).status == 202


# --- per key ---


async def test_limits_are_per_token_and_per_address_behind_a_trusted_proxy(
    service: Service,
) -> None:
    async with serving(
        service, metrics_rate_limit=1, trusted_proxies=_networks("127.0.0.1")
    ) as api:
        assert (await _post(api, METRICS, _report(), via="10.0.0.1")).status == 202
        assert (await _post(api, METRICS, _report(), via="10.0.0.1")).status == 429
        # Another address behind the proxy, or another token from the same address: own budget.
        assert (await _post(api, METRICS, _report(), via="10.0.0.2")).status == 202
        other = ALL_PROJECTS_CLIENT
        assert (await _post(api, METRICS, _report(), token=other, via="10.0.0.1")).status == 202
        # Entries left of the proxy's own are the client's word: not believed.
        spoofed = "10.0.0.99, 10.0.0.1"
        assert (await _post(api, METRICS, _report(), via=spoofed)).status == 429


async def test_forwarded_for_is_ignored_unless_the_proxy_is_trusted(service: Service) -> None:
    async with serving(service, metrics_rate_limit=1, trusted_proxies=_networks("10.9.9.9")) as api:
        assert (await _post(api, METRICS, _report(), via="10.0.0.1")).status == 202
        # 127.0.0.1 is not a trusted proxy: its header names nobody, so this is the same
        # caller again.
        assert (await _post(api, METRICS, _report(), via="10.0.0.2")).status == 429


# --- well-behaved SDKs at default settings ---


async def test_a_fleet_of_polling_sdks_is_never_limited_at_default_settings(
    service: Service,
) -> None:
    """100 SDK instances behind one address and one token, each doing what an SDK does
    at start (register, poll, post metrics) and then polling: nothing is refused, and
    every instance is tracked."""
    service.flags.create_flag("default", "known")
    async with serving(service) as api:
        first = await api.request("GET", FEATURES, token=CLIENT)
        etag = first.headers["ETag"]
        await first.read()

        async def sdk(index: int) -> list[int]:
            statuses = [(await _post(api, REGISTER, _registration(f"pod-{index}"))).status]
            headers = {
                "UNLEASH-APPNAME": "checkout",
                "UNLEASH-INSTANCEID": f"pod-{index}",
                "If-None-Match": etag,
            }
            for _ in range(3):
                poll = await api.request("GET", FEATURES, token=CLIENT, headers=headers)
                await poll.read()
                statuses.append(poll.status)
            statuses.append((await _post(api, METRICS, _report())).status)
            return statuses

        results = await asyncio.gather(*(sdk(i) for i in range(100)))
        assert {status for statuses in results for status in statuses} == {202, 304}
        cache = api.client.server.app[CACHE]
        assert all(("checkout", f"pod-{i}") in cache.seen_instances for i in range(100))
    assert sum(row.yes for row in service.metrics.flag_metrics("known")) == 100


async def test_new_instances_past_the_limit_are_served_but_not_tracked(
    service: Service,
) -> None:
    async with serving(service, new_instances_rate_limit=3) as api:
        cache = api.client.server.app[CACHE]
        for i in range(10):
            headers = {"UNLEASH-APPNAME": "probe", "UNLEASH-INSTANCEID": f"made-up-{i}"}
            response = await api.request("GET", FEATURES, token=CLIENT, headers=headers)
            assert response.status == 200
            await response.read()
        tracked = [i for i in range(10) if ("probe", f"made-up-{i}") in cache.seen_instances]
        assert tracked == [0, 1, 2]
        # An instance already tracked is noted again as before, limit or not.
        headers = {"UNLEASH-APPNAME": "probe", "UNLEASH-INSTANCEID": "made-up-0"}
        assert (await api.request("GET", FEATURES, token=CLIENT, headers=headers)).status == 200


# --- the auth-failure tarpit ---


async def _timed(api: Api, token: str) -> tuple[int, float]:
    start = time.perf_counter()
    response = await api.request("GET", FEATURES, token=token)
    await response.read()
    return response.status, time.perf_counter() - start


async def test_repeated_auth_failures_are_delayed_but_a_valid_token_is_not(
    service: Service,
) -> None:
    delay = 2.0
    settings = {"auth_failures_free_per_minute": 3, "auth_failure_delay": delay}
    async with serving(service, **settings) as api:
        for i in range(3):  # the free allowance: answered at once
            status, took = await _timed(api, f"default:development.guess-{i}")
            assert (status, took < delay) == (401, True)
        guess = asyncio.ensure_future(_timed(api, "default:development.guess-4"))
        await asyncio.sleep(0.2)
        # While the guesser waits, a valid token from the same address is served at once,
        # even one not cached yet.
        status, took = await _timed(api, ALL_PROJECTS_CLIENT)
        assert status == 200
        assert took < delay
        assert not guess.done()
        status, took = await guess
        assert status == 401
        assert took >= delay
        # Secrets too long to be real count as guesses too.
        status, took = await _timed(api, "x" * 5000)
        assert status == 401
        assert took >= delay


async def test_the_tarpit_can_be_turned_off(service: Service) -> None:
    async with serving(service, auth_failures_free_per_minute=0, auth_failure_delay=5) as api:
        for i in range(5):
            status, took = await _timed(api, f"default:development.guess-{i}")
            assert status == 401
            assert took < 5


# --- settings ---


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("FLAGCORE_METRICS_RATE_LIMIT_PER_MINUTE", "lots"),
        ("FLAGCORE_REGISTER_RATE_LIMIT_PER_MINUTE", "-1"),
        ("FLAGCORE_FRONTEND_METRICS_RATE_LIMIT_PER_MINUTE", "1.5"),
        ("FLAGCORE_FRONTEND_REGISTER_RATE_LIMIT_PER_MINUTE", ""),
        ("FLAGCORE_NEW_INSTANCES_RATE_LIMIT_PER_MINUTE", "99999999999"),
        ("FLAGCORE_AUTH_FAILURES_FREE_PER_MINUTE", "ten"),
        ("FLAGCORE_AUTH_FAILURE_DELAY_SECONDS", "NaN"),
        ("FLAGCORE_AUTH_FAILURE_DELAY_SECONDS", "61"),
        ("FLAGCORE_TRUSTED_PROXIES", "10.0.0.1,proxy.local"),
    ],
)
def test_bad_rate_limit_settings_are_config_errors_naming_the_setting(
    variable: str, value: str
) -> None:
    with pytest.raises(ConfigError, match=variable):
        ServerConfig.from_env({variable: value})


def test_rate_limit_settings_are_read_with_unleash_like_defaults() -> None:
    default = ServerConfig.from_env({})
    assert (default.metrics_rate_limit, default.register_rate_limit) == (6000, 6000)
    assert default.trusted_proxies == ()
    config = ServerConfig.from_env(
        {
            "FLAGCORE_METRICS_RATE_LIMIT_PER_MINUTE": "120",
            "FLAGCORE_AUTH_FAILURE_DELAY_SECONDS": "0.5",
            "FLAGCORE_TRUSTED_PROXIES": "10.0.0.0/8, ::1",
        },
        trusted_proxies=None,
    )
    assert (config.metrics_rate_limit, config.auth_failure_delay) == (120, 0.5)
    assert [str(network) for network in config.trusted_proxies] == ["10.0.0.0/8", "::1/128"]
    with pytest.raises(ConfigError, match="--trusted-proxies"):
        ServerConfig.from_env({}, trusted_proxies="everyone")


# --- the limiter itself ---


def test_a_bucket_allows_a_minutes_burst_then_refills_evenly() -> None:
    now = [0.0]
    limiter = RateLimiter(60, clock=lambda: now[0])
    assert [limiter.take("a") for _ in range(60)] == [0.0] * 60
    assert limiter.take("a") == pytest.approx(1.0)  # one a second from now on
    now[0] += 0.5
    assert limiter.take("a") == pytest.approx(0.5)
    now[0] += 0.5
    assert limiter.take("a") == 0.0
    assert limiter.take("b") == 0.0  # another key has its own bucket


def test_the_limiter_remembers_a_bounded_number_of_keys() -> None:
    limiter = RateLimiter(1, max_keys=100)
    for key in range(10_000):
        limiter.take(key)
    assert len(limiter) == 100
    assert limiter.take(9_999) > 0  # the most recent keys are the ones kept
    assert RateLimiter(0).take("anyone") == 0.0  # 0 turns a limit off


def test_an_hourly_budget_is_reserved_up_front_and_what_was_not_used_given_back() -> None:
    now = [0.0]
    budget = RateLimiter(100, clock=lambda: now[0], period=3600.0)
    assert budget.reserve("a", 30) == 30
    assert budget.reserve("a", 100) == 70  # what is left, though 100 were asked
    assert budget.reserve("a", 5) == 0
    budget.refund("a", 60)  # the second post created 10 of its 70
    assert budget.reserve("a", 100) == 60
    now[0] += 36.0  # a hundredth of the hour: one more row
    assert budget.reserve("a", 100) == 1
    assert RateLimiter(0, period=3600.0).reserve("a", 5) is None  # 0: no budget applies


def test_sdk_writes_burst_one_seconds_worth_yet_keep_the_minutes_average() -> None:
    now = [0.0]
    config = ServerConfig()
    limiter = RateLimiter(6000, clock=lambda: now[0], burst=sdk_write_burst(6000, config))
    taken = [limiter.take("flood") for _ in range(150)]
    assert taken[:100] == [0.0] * 100  # one second's worth at once
    assert all(wait > 0 for wait in taken[100:])  # then refused until it refills
    now[0] += 60.0  # a minute later: the bucket is full again, never fuller
    assert sum(limiter.take("flood") == 0.0 for _ in range(150)) == 100
    # A small limit keeps its whole (small) allowance as a burst; 60 s is Unleash's window.
    assert sdk_write_burst(2, config) == 2
    assert sdk_write_burst(6000, attrs.evolve(config, sdk_write_burst_seconds=60.0)) == 6000


async def test_a_flood_of_metrics_is_refused_past_its_burst_not_its_minutes_budget(
    service: Service,
) -> None:
    service.flags.create_flag("default", "known")
    async with serving(service, metrics_rate_limit=60) as api:  # burst: 10, not 60
        statuses = [(await _post(api, METRICS, _report())).status for _ in range(11)]
    assert statuses == [202] * 10 + [429]
