"""Unleash's browser SDK (``unleash-proxy-client``, the "proxy client") pointed at the
edge's Frontend API answers as pointed at the upstream, with the same frontend token and
context, and sees a change made upstream on its next refresh through the edge (issue 33).

The SDK runs as ``tests/http/test_frontend_js_clients.py`` runs it
(``tests/http/node_frontend/proxy_client.js``, one JSON line per event), once per context
and per target; its ``isEnabled`` and ``getVariant`` answers are compared whole.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.edge.processes import CLIENT, EdgeProcess, UpstreamServer, wait_for
from tests.http.test_frontend_js_clients import NodeScript, install_node_frontend

FLAGS = "checkout,pro-only,colour,banner,layout,by-session,dark,missing"
# Each context names its sessionId: the SDK makes up a random one where none is given, and
# two SDKs with two random sessions would rightly get two answers from a rollout on it.
CONTEXTS: list[dict[str, Any]] = [
    {"userId": "1", "sessionId": "s1", "properties": {"plan": "pro", "country": "NO"}},
    {"userId": "2", "sessionId": "s2", "properties": {"plan": "team"}},
    {"userId": "3", "sessionId": "s3", "properties": {"country": "NO"}},
    {"userId": "alice", "sessionId": "s4", "properties": {"plan": "pro", "country": "SE"}},
    {"sessionId": "session-9", "properties": {"country": "NO"}},
    {"sessionId": "session-10"},
]
BASE = "/api/admin/projects/default/features"


def _strategy(upstream: UpstreamServer, name: str, strategy: dict[str, Any]) -> None:
    upstream.admin("POST", BASE, {"name": name})
    upstream.admin("POST", f"{BASE}/{name}/environments/development/strategies", strategy)
    upstream.admin("POST", f"{BASE}/{name}/environments/development/on")


def _flags(upstream: UpstreamServer) -> None:
    """Flags whose answers depend on every part of a context the SDK sends: the userId
    (rollout, segment), the sessionId (default stickiness), properties (constraints), and
    strategy and flag variants with payloads and an override."""
    upstream.admin(
        "POST",
        "/api/admin/segments",
        {
            "name": "testers",
            "constraints": [{"contextName": "userId", "operator": "IN", "values": ["1", "3"]}],
        },
    )
    upstream.add_flag("checkout", rollout=50)
    _strategy(
        upstream,
        "pro-only",
        {
            "name": "default",
            "constraints": [{"contextName": "plan", "operator": "IN", "values": ["pro"]}],
        },
    )
    _strategy(
        upstream,
        "colour",
        {
            "name": "flexibleRollout",
            "parameters": {"rollout": "100", "stickiness": "userId"},
            "constraints": [{"contextName": "country", "operator": "IN", "values": ["NO"]}],
            "variants": [
                {"name": "blue", "weight": 500, "stickiness": "userId"},
                {"name": "red", "weight": 500, "stickiness": "userId"},
            ],
            "segments": [1],
        },
    )
    _strategy(
        upstream,
        "banner",
        {
            "name": "flexibleRollout",
            "parameters": {"rollout": "100", "stickiness": "default"},
            "variants": [
                {
                    "name": "wide",
                    "weight": 500,
                    "stickiness": "default",
                    "payload": {"type": "string", "value": "Hello"},
                },
                {
                    "name": "grid",
                    "weight": 500,
                    "stickiness": "default",
                    "payload": {"type": "json", "value": '{"columns": 3}'},
                },
            ],
        },
    )
    _strategy(
        upstream,
        "by-session",
        {"name": "flexibleRollout", "parameters": {"rollout": "50", "stickiness": "sessionId"}},
    )
    upstream.add_flag("layout")
    upstream.admin(
        "PUT",
        f"{BASE}/layout/environments/development/variants",
        [
            {"name": "list", "weight": 500, "stickiness": "default", "weightType": "variable"},
            {
                "name": "cards",
                "weight": 500,
                "stickiness": "default",
                "weightType": "variable",
                "payload": {"type": "number", "value": "3"},
                "overrides": [{"contextName": "userId", "values": ["2"]}],
            },
        ],
    )
    upstream.add_flag("dark", on=False)


@pytest.fixture
async def scripts() -> AsyncIterator[list[NodeScript]]:
    started: list[NodeScript] = []
    yield started
    for script in started:
        await script.stop()


@pytest.fixture
def edge(tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]) -> EdgeProcess:
    _flags(upstream)
    started = EdgeProcess(tmp_path).follows(upstream, CLIENT)
    edges.append(started)
    wait_for(lambda: started.ready()["status"] == 200)
    return started


async def _proxy_client(
    started: list[NodeScript], url: str, token: str, context: dict[str, Any], post: str
) -> NodeScript:
    sdk = await NodeScript.start(
        install_node_frontend(),
        "proxy_client.js",
        FLAGCORE_URL=url + "/api/frontend",
        FLAGCORE_TOKEN=token,
        FLAGCORE_FLAGS=FLAGS,
        FLAGCORE_CONTEXT=json.dumps(context),
        FLAGCORE_POST=post,
    )
    started.append(sdk)
    return sdk


async def _ready(sdk: NodeScript) -> dict[str, Any]:
    ready = await sdk.wait_for(lambda event: event["event"] in ("ready", "error"))
    assert ready["event"] == "ready", sdk.seen
    state: dict[str, Any] = ready["state"]
    return state


async def _updated(sdk: NodeScript) -> dict[str, Any]:
    """The SDK's state once an update shows ``pro-only`` off and ``dark`` on."""
    update = await sdk.wait_for(
        lambda event: (
            event["event"] == "update"
            and not event["state"]["pro-only"]["enabled"]
            and event["state"]["dark"]["enabled"]
        )
    )
    state: dict[str, Any] = update["state"]
    return state


def _fetches(sdk: NodeScript) -> list[int]:
    return [e["status"] for e in sdk.seen if e["event"] == "http" and e["path"] == "/api/frontend"]


def _errors(sdk: NodeScript) -> list[dict[str, Any]]:
    return [event for event in sdk.seen if event["event"] == "error"]


@pytest.mark.parametrize("post", ["0", "1"], ids=["GET", "POST"])
async def test_the_proxy_client_answers_through_the_edge_as_at_the_upstream_for_each_context(
    upstream: UpstreamServer, edge: EdgeProcess, scripts: list[NodeScript], post: str
) -> None:
    frontend = upstream.frontend_token()
    direct = [await _proxy_client(scripts, upstream.url, frontend, c, post) for c in CONTEXTS]
    through = [await _proxy_client(scripts, edge.url, frontend, c, post) for c in CONTEXTS]
    expected = await asyncio.gather(*(_ready(sdk) for sdk in direct))
    answered = await asyncio.gather(*(_ready(sdk) for sdk in through))
    for context, at_upstream, at_edge in zip(CONTEXTS, expected, answered, strict=True):
        assert at_edge == at_upstream, context
    # The contexts are told apart: the comparison is not of answers all alike.
    for flag in ("checkout", "pro-only", "colour", "by-session"):
        assert len({json.dumps(state[flag], sort_keys=True) for state in expected}) > 1, flag
    assert {state["banner"]["variant"]["name"] for state in expected} == {"wide", "grid"}
    assert expected[1]["layout"]["variant"]["name"] == "cards"  # userId 2's override
    assert not any(state["dark"]["enabled"] or state["missing"]["enabled"] for state in expected)
    for sdk in through:
        assert _fetches(sdk)[0] == 200
        assert {e["status"] for e in sdk.seen if e["event"] == "http"} <= {200, 304}
        assert _errors(sdk) == []


async def test_a_change_upstream_reaches_the_proxy_client_through_the_edge_on_its_refresh(
    upstream: UpstreamServer, edge: EdgeProcess, scripts: list[NodeScript]
) -> None:
    frontend = upstream.frontend_token()
    context = CONTEXTS[0]
    direct = await _proxy_client(scripts, upstream.url, frontend, context, "0")
    through = await _proxy_client(scripts, edge.url, frontend, context, "0")
    before = await _ready(through)
    assert before == await _ready(direct)
    assert before["pro-only"]["enabled"] is True
    assert before["dark"]["enabled"] is False
    # Unchanged flags: the SDK's refresh through the edge sends the ETag back, gets 304.
    await through.wait_for(
        lambda e: e["event"] == "http" and e["path"] == "/api/frontend" and e["status"] == 304
    )
    upstream.switch("pro-only", False)
    upstream.switch("dark", True)
    # The two switches may arrive on one refresh or on two: the last update has both.
    after = await _updated(through)
    assert after == await _updated(direct)
    assert after["pro-only"]["enabled"] is False
    assert after["pro-only"]["variant"]["name"] == "disabled"
    statuses = _fetches(through)
    assert statuses[statuses.index(304) :].count(200) >= 1
    assert _errors(through) == []
