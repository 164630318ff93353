"""`flagcore edge` in front of a real Unleash 8.2: the oracle of issue 33, in the suite.

Unleash is the npm package ``unleash-server@8.2.0`` over a private PostgreSQL (pgserver,
in the test extra), started by ``benchmarks/unleash_peer.py`` on 127.0.0.1: installed on
first use into ``~/.cache/flagcore-bench/unleash-8.2`` (``FLAGCORE_BENCH_UNLEASH_DIR``
moves it), so only the first run on a machine pays the download. The same peer feeds
``benchmarks/edge_unleash.py``, the longer run with throughput figures.

What an SDK sees through the edge is compared with what it sees at Unleash itself, with
Unleash's own answers as the oracle: the payload's bytes and ETag, each flag of the older
format, the official Python SDK's evaluations, the official Node SDK's (delta polling the
edge), the Frontend API's toggles, a change made
in Unleash, usage reports forwarded to Unleash, and serving on while Unleash is down.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from benchmarks.unleash_peer import admin_request, seed_flags, start_unleash, wait_for_frontend
from UnleashClient import UnleashClient

from tests.edge.processes import SPEC, EdgeProcess, get, post, python_sdk, wait_for
from tests.edge.test_sdks import NodeSdk, settled

USERS = [f"u{n}" for n in range(12)]
FEATURES = "/api/admin/projects/default/features"


class Unleash:
    """Unleash 8.2 and its PostgreSQL; `stop` may be called more than once."""

    def __init__(self) -> None:
        self.url, self.admin, self.frontend, self.client, self._stop = start_unleash()
        self._stopped = False

    def stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            self._stop()


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


def test_sdks_see_an_unleash_8_2_upstream_through_the_edge_as_they_see_it_directly(
    unleash: Unleash, tmp_path: Path, edges: list[EdgeProcess]
) -> None:
    names = seed_flags(unleash.url, unleash.admin, 12)
    flags = [*names, "bench.flag-009", "missing"]  # one left off, one that does not exist
    edge = EdgeProcess(tmp_path).start(
        "--upstream",
        unleash.url + "/api",
        "--upstream-token",
        unleash.client,
        "--interval",
        "0.5",
        "--metrics-interval",
        "0.5",
    )
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

    # The official Python SDK and the Frontend API: the same answers either way.
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

        # A change made in Unleash reaches the SDK through the edge.
        first = names[0]
        admin_request(
            unleash.url, unleash.admin, "POST", f"{FEATURES}/{first}/environments/development/off"
        )
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

    # Usage sent to the edge is forwarded to Unleash, which takes it (nothing held).
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
    wait_for(lambda: edge.ready()["usageHeld"] == 0, 15)
    listed = "/api/admin/metrics/applications"
    wait_for(
        lambda: (
            "oracle-usage" in json.dumps(admin_request(unleash.url, unleash.admin, "GET", listed))
        ),
        60,
    )

    # Unleash stops: the edge serves on, the same payload, and says so in /ready.
    served = get(edge.url + "/api/client/features", None, sdk)[1]
    unleash.stop()
    wait_for(lambda: edge.ready()["upstream"] == "unreachable", 30)
    status, body, _ = get(edge.url + "/api/client/features", None, sdk)
    assert (status, body) == (200, served)
    assert edge.ready()["status"] == 200
