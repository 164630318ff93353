"""`flagcore edge` in front of a real Unleash 8.2: the oracle of issue 33, in the suite.

Unleash is the npm package ``unleash-server@8.2.0`` over a private PostgreSQL (pgserver,
in the test extra), started by ``benchmarks/unleash_peer.py`` on 127.0.0.1: installed on
first use into ``~/.cache/flagcore-bench/unleash-8.2`` (``FLAGCORE_BENCH_UNLEASH_DIR``
moves it), so only the first run on a machine pays the download. The same peer feeds
``benchmarks/edge_unleash.py``, the longer run with throughput figures.

What an SDK sees through the edge is compared with what it sees at Unleash itself, with
Unleash's own answers as the oracle: the payload's bytes and ETag, each flag of the older
format, the official Python SDK's evaluations, the official Node SDK's (delta polling the
edge), the Frontend API's toggles, Unleash's browser SDK (``unleash-proxy-client``), a
change made in Unleash, usage reports (an SDK's and a downstream edge's bulk post)
forwarded to Unleash, ``/edge/validate``; then Unleash stopped, the edge restarted while
it is away, Unleash started again, with SDKs polling the edge throughout (0 failed
requests), the edge serving Unleash's answers again and a change made after reaching them.

One test, so that ``pytest -n 2`` starts one Unleash, not one per worker.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from benchmarks.unleash_peer import admin_request, seed_flags, start_unleash, wait_for_frontend
from UnleashClient import UnleashClient

from tests.edge.processes import (
    SPEC,
    EdgeProcess,
    Poller,
    get,
    post,
    python_sdk,
    send,
    wait_for,
)
from tests.edge.test_sdks import NodeSdk, settled
from tests.http.test_frontend_js_clients import NodeScript, install_node_frontend

USERS = [f"u{n}" for n in range(12)]
FEATURES = "/api/admin/projects/default/features"


class Unleash:
    """Unleash 8.2 and its PostgreSQL; `stop` may be called more than once;
    `stop_server` / `start_server` stop and start Unleash alone (same port and data)."""

    def __init__(self) -> None:
        self.url, self.admin, self.frontend, self.client, self._stop = start_unleash()
        self._stopped = False

    def stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            self._stop()

    def stop_server(self) -> None:
        self._stop.stop_server()

    def start_server(self) -> None:
        self._stop.start_server()

    def request(self, method: str, path: str, body: Any = None) -> Any:
        return admin_request(self.url, self.admin, method, path, body)


@pytest.fixture(scope="module")
def unleash() -> Iterator[Unleash]:
    started = Unleash()
    try:
        yield started
    finally:
        started.stop()


def _answers(client: UnleashClient, flags: list[str]) -> list[Any]:
    contexts = [{"userId": user, "properties": {"plan": "pro"}} for user in USERS]
    return [
        (client.is_enabled(flag, context), client.get_variant(flag, context)["name"])
        for context in contexts
        for flag in flags
    ]


def _toggles(base: str, token: str) -> list[Any]:
    seen = []
    for user in USERS:
        url = f"{base}/api/frontend?userId={user}&properties%5Bplan%5D=pro"
        status, body, _ = get(url, token)
        assert status == 200, body
        toggles = json.loads(body)["toggles"]
        seen.append(sorted((t["name"], t["enabled"], t["variant"]["name"]) for t in toggles))
    return seen


def _by_name(base: str, token: str) -> dict[str, Any]:
    status, body, _ = get(base + "/api/client/features", token)
    assert status == 200, body
    return {flag["name"]: flag for flag in json.loads(body)["features"]}


def _node_flags(unleash: Unleash) -> None:
    """The flags `tests/http/node/follow.js` evaluates for users 1-8 in Norway."""
    flags: dict[str, dict[str, Any]] = {
        "checkout": {
            "name": "flexibleRollout",
            "parameters": {"rollout": "50", "stickiness": "userId", "groupId": "checkout"},
        },
        "colour": {
            "name": "flexibleRollout",
            "parameters": {"rollout": "100", "stickiness": "userId", "groupId": "colour"},
            "constraints": [{"contextName": "country", "operator": "IN", "values": ["NO"]}],
            "variants": [
                {"name": "blue", "weight": 500, "weightType": "variable", "stickiness": "userId"},
                {"name": "red", "weight": 500, "weightType": "variable", "stickiness": "userId"},
            ],
        },
    }
    for name, strategy in flags.items():
        admin_request(unleash.url, unleash.admin, "POST", FEATURES, {"name": name})
        env = f"{FEATURES}/{name}/environments/development"
        admin_request(unleash.url, unleash.admin, "POST", f"{env}/strategies", strategy)
        admin_request(unleash.url, unleash.admin, "POST", f"{env}/on")


# Browser contexts for the proxy client; each names its sessionId (the SDK makes up a
# random one otherwise) and differs in what the seeded flags look at (plan, rollout).
PROXY_CONTEXTS: list[dict[str, Any]] = [
    {"userId": "u1", "sessionId": "s1", "properties": {"plan": "pro"}},
    {"userId": "u7", "sessionId": "s2", "properties": {"plan": "team"}},
    {"userId": "u3", "sessionId": "s3", "properties": {"plan": "enterprise"}},
]


async def _proxy_client_states(
    bases: tuple[str, str], token: str, flags: list[str]
) -> list[list[dict[str, Any]]]:
    """Unleash's browser SDK's first answers (``isEnabled``, ``getVariant`` of ``flags``)
    for each context, pointed at each base URL's Frontend API."""
    folder = install_node_frontend()
    started: list[NodeScript] = []
    try:
        for base in bases:
            for context in PROXY_CONTEXTS:
                sdk = await NodeScript.start(
                    folder,
                    "proxy_client.js",
                    FLAGCORE_URL=base + "/api/frontend",
                    FLAGCORE_TOKEN=token,
                    FLAGCORE_FLAGS=",".join(flags),
                    FLAGCORE_CONTEXT=json.dumps(context),
                    FLAGCORE_POST="0",
                )
                started.append(sdk)
        states = []
        for sdk in started:
            ready = await sdk.wait_for(lambda event: event["event"] in ("ready", "error"))
            assert ready["event"] == "ready", sdk.seen
            states.append(ready["state"])
        return [states[: len(PROXY_CONTEXTS)], states[len(PROXY_CONTEXTS) :]]
    finally:
        for sdk in started:
            await sdk.stop()


class CountedSdk:
    """The official Python SDK polling the edge every second, every feature fetch counted:
    each one it begins (its own log line), each answer (a ``requests`` response hook) and
    each failure (its own log line for any fetch that failed: a status other than 200 or
    304, or no answer at all). ``pause`` stops its polling once no fetch is in flight."""

    def __init__(self, url: str, token: str, tmp_path: Path, name: str) -> None:
        self.statuses: Counter[int] = Counter()
        self.began = 0
        self.failed = 0
        self._lock = threading.Lock()
        self._logger = logging.getLogger("UnleashClient")
        self._level = self._logger.level
        counter = self

        class _Fetches(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                message = record.getMessage()
                with counter._lock:
                    if message == "Getting feature flag.":
                        counter.began += 1
                    elif message.startswith("Unleash Client feature fetch failed"):
                        counter.failed += "exception" in message

        self._handler = _Fetches()
        self._logger.addHandler(self._handler)
        self._logger.setLevel(logging.INFO)
        self.client = UnleashClient(
            url=url + "/api",
            app_name=f"edge-{name}",
            instance_id=f"edge-{name}-1",
            refresh_interval=1,
            metrics_interval=1,
            custom_headers={"Authorization": token},
            custom_options={"hooks": {"response": self._answered}},
            cache_directory=str(tmp_path / f"sdk-cache-{name}"),
        )
        self.client.initialize_client()

    def _answered(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        if "/client/features" in response.url:
            with self._lock:
                self.statuses[response.status_code] += 1

    def in_flight(self) -> int:
        with self._lock:
            bad = sum(n for status, n in self.statuses.items() if status not in (200, 304))
            return self.began - sum(self.statuses.values()) - (self.failed - bad)

    def pause(self) -> None:
        self.client.unleash_scheduler.pause()
        wait_for(lambda: self.in_flight() == 0, 15)

    def resume(self) -> None:
        self.client.unleash_scheduler.resume()

    def close(self) -> None:
        self.client.destroy()
        self._logger.removeHandler(self._handler)
        self._logger.setLevel(self._level)


def _payload(base: str, token: str) -> tuple[bytes, str]:
    status, body, headers = get(base + "/api/client/features", token, SPEC)
    assert status == 200, body
    return body, headers["ETag"]


def _bulk(flag: str, now: str) -> dict[str, Any]:
    """What a downstream Unleash Edge posts to the edge in front of it."""
    return {
        "applications": [
            {
                "appName": "oracle-bulk",
                "instanceId": "oracle-bulk-1",
                "environment": "development",
                "interval": 15,
                "started": now,
                "strategies": ["default"],
                "sdkVersion": "unleash-client-node:6.1.0",
                "connectVia": [{"appName": "unleash-edge", "instanceId": "edge-pod-1"}],
            }
        ],
        "metrics": [
            {
                "featureName": flag,
                "appName": "oracle-bulk",
                "environment": "development",
                "timestamp": now,
                "yes": 4,
                "no": 2,
                "variants": {},
            }
        ],
    }


def test_sdks_see_an_unleash_8_2_upstream_through_the_edge_as_they_see_it_directly(
    unleash: Unleash, tmp_path: Path, edges: list[EdgeProcess]
) -> None:
    names = seed_flags(unleash.url, unleash.admin, 12)
    flags = [*names, "bench.flag-009", "missing"]  # one left off, one that does not exist
    edge_args = (
        "--upstream",
        unleash.url + "/api",
        "--upstream-token",
        unleash.client,
        "--interval",
        "0.5",
        "--metrics-interval",
        "0.5",
    )
    edge = EdgeProcess(tmp_path).start(*edge_args)
    edges.append(edge)
    wait_for(lambda: edge.ready()["status"] == 200, 30)

    # The payload: Unleash's bytes and ETag in format 2, each flag the same in format 1.
    sdk = {"Authorization": unleash.client, **SPEC}
    at_unleash = get(unleash.url + "/api/client/features", None, sdk)
    at_edge = wait_for(
        lambda: (
            (got := get(edge.url + "/api/client/features", None, sdk))[1] == at_unleash[1] and got
        ),
        10,
    )
    assert at_edge[2]["ETag"] == at_unleash[2]["ETag"]
    assert _by_name(edge.url, unleash.client) == _by_name(unleash.url, unleash.client)
    unknown = "default:development.not-a-token-unleash-knows"
    assert get(edge.url + "/api/client/features", unknown)[0] == 401

    # /edge/validate: what Unleash answers a downstream Unleash Edge, the edge answers.
    tokens = {"tokens": [unleash.client, unleash.frontend, unknown]}
    validated = send(edge.url + "/edge/validate", None, tokens)
    assert validated[:2] == send(unleash.url + "/edge/validate", None, tokens)[:2]
    assert len(validated[1]["tokens"]) == 2

    # The official Python SDK, the Frontend API and Unleash's browser SDK (the proxy
    # client): the same answers either way.
    direct = python_sdk(unleash.url, unleash.client, tmp_path, "direct")
    through = python_sdk(edge.url, unleash.client, tmp_path, "through")
    try:
        wait_for(lambda: any(on for on, _variant in _answers(direct, flags)), 15)
        wait_for(lambda: _answers(through, flags) == _answers(direct, flags), 15)
        assert any(variant not in ("disabled",) for _on, variant in _answers(direct, flags))
        # Unleash's Frontend API follows writes a few seconds late: wait until it shows
        # every flag seeded, then for the edge's answers and its to be the same.
        wait_for_frontend(unleash.url, unleash.frontend, names)
        wait_for(
            lambda: _toggles(edge.url, unleash.frontend) == _toggles(unleash.url, unleash.frontend),
            30,
        )
        at_unleash_states, at_edge_states = asyncio.run(
            _proxy_client_states((unleash.url, edge.url), unleash.frontend, flags)
        )
        assert at_edge_states == at_unleash_states
        assert len({json.dumps(state, sort_keys=True) for state in at_unleash_states}) == 3
        assert any(answer["enabled"] for answer in at_unleash_states[0].values())

        # A change made in Unleash reaches the SDK through the edge.
        first = names[0]
        unleash.request("POST", f"{FEATURES}/{first}/environments/development/off")
        wait_for(lambda: not any(through.is_enabled(first, {"userId": u}) for u in USERS), 15)
        wait_for(lambda: _answers(through, flags) == _answers(direct, flags), 15)
    finally:
        direct.destroy()
        through.destroy()

    # The official Node SDK, polling and delta polling the edge, as it polls Unleash: two
    # flags its follower evaluates (a 50% rollout; strategy variants behind a constraint).
    _node_flags(unleash)
    direct_node = NodeSdk(unleash.url, tmp_path, "node-direct", token=unleash.client)
    through_node = NodeSdk(edge.url, tmp_path, "node-through", "delta", token=unleash.client)
    try:
        node_expected = settled(direct_node)
        assert any(variant != "disabled" for _on, variant in node_expected["colour"])
        assert settled(through_node, node_expected) == node_expected
    finally:
        direct_node.close()
        through_node.close()

    # Usage sent to the edge, by an SDK and by a downstream edge's bulk post, is forwarded
    # to Unleash (in bulk posts), which takes it: nothing held, nothing refused.
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    report = {
        "appName": "oracle-usage",
        "instanceId": "oracle-usage-1",
        "bucket": {
            "start": now,
            "stop": now,
            "toggles": {names[1]: {"yes": 3, "no": 1, "variants": {}}},
        },
    }
    registration = {
        "appName": "oracle-usage",
        "instanceId": "oracle-usage-1",
        "sdkVersion": "unleash-client-python:6.0.0",
        "strategies": ["default", "flexibleRollout"],
        "started": now,
        "interval": 1000,
    }
    assert post(edge.url + "/api/client/register", unleash.client, registration) == 202
    assert post(edge.url + "/api/client/metrics", unleash.client, report) == 202
    assert post(edge.url + "/api/client/metrics/bulk", unleash.client, _bulk(names[1], now)) == 202
    wait_for(lambda: edge.ready()["usageHeld"] == 0, 15)
    listed = "/api/admin/metrics/applications"
    wait_for(
        lambda: (
            {"oracle-usage", "oracle-bulk"}
            <= {app["appName"] for app in unleash.request("GET", listed)["applications"]}
        ),
        60,
    )
    usage = edge.metrics()
    assert usage["flagcore_edge_usage_refused_total"] == 0
    assert usage["flagcore_edge_usage_bulk_posts_total"] >= 1

    _outage(unleash, tmp_path, edge, edge_args, names, flags)


def _outage(
    unleash: Unleash,
    tmp_path: Path,
    edge: EdgeProcess,
    edge_args: tuple[str, ...],
    names: list[str],
    flags: list[str],
) -> None:
    """Unleash stopped, the edge restarted while it is away, Unleash started again: SDKs
    polling the edge all along (the official Python SDK, raw pollers of the client API
    with the followed token and with a token only an SDK gave, and of the Frontend API)
    get every answer; then the edge serves what Unleash serves, and a change made after
    reaches them."""
    sdk_token = unleash.request(
        "POST",
        "/api/admin/api-tokens",
        {
            "tokenName": "sdk",
            "type": "client",
            "environment": "development",
            "projects": ["default"],
        },
    )["secret"]
    frontend_path = "/api/frontend?userId=u1&properties%5Bplan%5D=pro"
    counted = CountedSdk(edge.url, unleash.client, tmp_path, "counted")
    pollers = [
        Poller(edge, unleash.client),
        Poller(edge, sdk_token),  # checked upstream on first use, then followed
        Poller(edge, unleash.frontend, frontend_path),
    ]
    try:
        wait_for(lambda: all(poller.names for poller in pollers), 15)
        wait_for(lambda: counted.statuses[200] >= 1, 15)
        before = _payload(edge.url, unleash.client)

        unleash.stop_server()
        wait_for(lambda: edge.ready()["upstream"] == "unreachable", 30)
        answered = [poller.answered for poller in pollers]
        wait_for(lambda: all(p.answered > n + 20 for p, n in zip(pollers, answered, strict=True)))
        fetched = sum(counted.statuses.values())
        wait_for(lambda: sum(counted.statuses.values()) >= fetched + 2, 15)

        # The edge restarts while Unleash is away (its SDKs wait, as behind a load
        # balancer draining it): it serves its snapshot file from the first request.
        counted.pause()
        for poller in pollers:
            poller.pause()
        edge.stop()
        edge.start(*edge_args)
        assert edge.ready()["status"] == 200
        assert edge.ready()["upstream"] in ("unknown", "unreachable")
        for poller in pollers:
            poller.resume()
        counted.resume()
        answered = [poller.answered for poller in pollers]
        wait_for(lambda: all(p.answered > n + 20 for p, n in zip(pollers, answered, strict=True)))
        fetched = sum(counted.statuses.values())
        wait_for(lambda: sum(counted.statuses.values()) >= fetched + 2, 15)
        assert _payload(edge.url, unleash.client) == before

        # Unleash back: the edge serves its bytes and ETag again, then follows a change.
        unleash.start_server()
        wait_for(lambda: edge.ready()["upstream"] == "reachable", 30)
        wait_for(
            lambda: _payload(edge.url, unleash.client) == _payload(unleash.url, unleash.client), 15
        )
        second = names[1]
        assert second in pollers[0].names
        unleash.request("POST", f"{FEATURES}/{second}/environments/development/off")
        wait_for(lambda: second not in pollers[0].names and second not in pollers[1].names, 15)
        wait_for(
            lambda: _payload(edge.url, unleash.client) == _payload(unleash.url, unleash.client), 15
        )
        direct = python_sdk(unleash.url, unleash.client, tmp_path, "after")
        try:
            wait_for(lambda: any(on for on, _variant in _answers(direct, flags)), 15)
            wait_for(lambda: _answers(counted.client, flags) == _answers(direct, flags), 15)
        finally:
            direct.destroy()
    finally:
        counted.close()
        for poller in pollers:
            poller.close()

    for poller in pollers:
        assert set(poller.statuses) <= {200, 304}, (poller.path, poller.statuses)
        assert poller.statuses[304] > 0
    assert counted.failed == 0, counted.statuses
    assert set(counted.statuses) <= {200, 304}, counted.statuses
    assert sum(counted.statuses.values()) > 5
