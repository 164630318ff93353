"""The official SDKs pointed at the edge answer as pointed at the upstream; a change
upstream reaches them through the edge; their metrics and registrations reach the
upstream."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from UnleashClient import UnleashClient

from flagcore.service import Service
from flagcore_client import FlagClient
from flagcore_store_sqlite import SqliteStore
from tests.edge.processes import (
    CLIENT,
    EdgeProcess,
    UpstreamServer,
    get,
    post,
    python_sdk,
    wait_for,
)
from tests.node_packages import installed

NODE_DIR = Path(__file__).parents[1] / "http" / "node"
USERS = [str(n) for n in range(1, 9)]


def _flags(upstream: UpstreamServer) -> None:
    upstream.admin(
        "POST",
        "/api/admin/segments",
        {
            "name": "testers",
            "constraints": [{"contextName": "userId", "operator": "IN", "values": ["1", "2", "3"]}],
        },
    )
    upstream.add_flag("checkout", rollout=50)
    base = "/api/admin/projects/default/features"
    upstream.admin("POST", base, {"name": "colour"})
    upstream.admin(
        "POST",
        f"{base}/colour/environments/development/strategies",
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
    upstream.admin("POST", f"{base}/colour/environments/development/on")


def _python_sdk(url: str, tmp_path: Path, name: str) -> UnleashClient:
    return python_sdk(url, CLIENT, tmp_path, name)


def _answers(client: UnleashClient) -> list[Any]:
    contexts = [{"userId": user, "properties": {"country": "NO"}} for user in USERS]
    return [
        (client.is_enabled(flag, context), client.get_variant(flag, context)["name"])
        for context in contexts
        for flag in ("checkout", "colour", "missing")
    ]


@pytest.fixture
def edge(tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]) -> EdgeProcess:
    _flags(upstream)
    started = EdgeProcess(tmp_path).follows(upstream, CLIENT)
    edges.append(started)
    wait_for(lambda: started.ready()["status"] == 200)
    return started


def test_the_python_sdk_answers_through_the_edge_as_at_the_upstream_and_follows_changes(
    tmp_path: Path, upstream: UpstreamServer, edge: EdgeProcess
) -> None:
    direct = _python_sdk(upstream.url, tmp_path, "direct")
    through = _python_sdk(edge.url, tmp_path, "through")
    try:
        wait_for(lambda: any(on for on, _variant in _answers(direct)))
        wait_for(lambda: any(on for on, _variant in _answers(through)))
        assert _answers(through) == _answers(direct)
        upstream.switch("checkout", False)
        wait_for(lambda: not any(through.is_enabled("checkout", {"userId": u}) for u in USERS))
        assert _answers(through) == _answers(direct)
    finally:
        direct.destroy()
        through.destroy()
    store = SqliteStore(upstream.db)
    try:
        service = Service(store)
        wait_for(
            lambda: any(i.app_name == "edge-through" for i in service.instances.client_instances())
        )
        wait_for(lambda: bool(service.metrics.flag_metrics("colour")))
    finally:
        store.close()


def test_usage_held_while_the_upstream_is_away_reaches_it_when_it_is_back(
    tmp_path: Path, upstream: UpstreamServer, edge: EdgeProcess
) -> None:
    upstream.stop()
    wait_for(lambda: edge.ready()["upstream"] == "unreachable")
    # A bucket of the last minute: the upstream keeps only buckets near now (security.md).
    stop = dt.datetime.now(dt.UTC).replace(microsecond=0)
    report = {
        "appName": "held-app",
        "instanceId": "held-1",
        "bucket": {
            "start": (stop - dt.timedelta(minutes=1)).isoformat().replace("+00:00", "Z"),
            "stop": stop.isoformat().replace("+00:00", "Z"),
            "toggles": {"checkout": {"yes": 3, "no": 1, "variants": {}}},
        },
    }
    assert post(edge.url + "/api/client/metrics", CLIENT, report) == 202
    assert post(edge.url + "/api/client/metrics", CLIENT, {"appName": 5}) == 400
    wait_for(lambda: edge.ready()["usageHeld"] == 1)
    upstream.start()
    wait_for(lambda: edge.ready()["usageHeld"] == 0)
    store = SqliteStore(upstream.db)
    try:
        service = Service(store)
        rows = wait_for(lambda: service.metrics.flag_metrics("checkout"))
        assert sum(row.yes for row in rows) == 3
    finally:
        store.close()


class NodeSdk:
    """The official Node SDK (`tests/http/node/follow.js`) polling ``url``."""

    def __init__(
        self, url: str, tmp_path: Path, name: str, mode: str = "polling", token: str = CLIENT
    ) -> None:
        script = installed(NODE_DIR, "unleash-client", "Node SDK") / "follow.js"
        env = {
            **os.environ,
            "FLAGCORE_URL": url + "/api",
            "FLAGCORE_TOKEN": token,
            "FLAGCORE_MODE": mode,
            "FLAGCORE_FLAGS": "checkout,colour",
        }
        self.log = tmp_path / f"node-{name}.log"
        with self.log.open("w") as sink:
            self.process = subprocess.Popen(
                ["node", str(script)], stdout=subprocess.PIPE, stderr=sink, text=True, env=env
            )

    def states(self) -> Iterator[dict[str, Any]]:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            yield json.loads(line)["state"]

    def close(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=10)
        assert self.process.stdout is not None
        self.process.stdout.close()


def settled(sdk: NodeSdk, wanted: Any = None) -> dict[str, Any]:
    """The SDK's first evaluation with every flag known (each on for someone), or equal
    to ``wanted`` (an upstream's API may show a new flag a poll or two after another)."""
    for state in sdk.states():
        if wanted is None and all(any(on for on, _v in users) for users in state.values()):
            return state
        if wanted is not None and state == wanted:
            return state
    raise AssertionError(sdk.log.read_text())


@pytest.mark.parametrize("mode", ["polling", "delta", "streaming"])
def test_the_node_sdk_answers_through_the_edge_as_at_the_upstream(
    tmp_path: Path, upstream: UpstreamServer, edge: EdgeProcess, mode: str
) -> None:
    direct = NodeSdk(upstream.url, tmp_path, "direct")
    through = NodeSdk(edge.url, tmp_path, "through", mode)
    try:
        expected = settled(direct)
        assert settled(through, expected) == expected
        upstream.switch("colour", False)
        off = {**expected, "colour": [[False, "disabled"]] * len(USERS)}
        assert settled(through, off) == off
    finally:
        direct.close()
        through.close()
    assert get(edge.url + "/health", None)[0] == 200


@pytest.mark.parametrize("mode", ["streaming", "delta", "polling"])
def test_flagcores_own_client_follows_the_edge_in_each_mode(
    upstream: UpstreamServer, edge: EdgeProcess, mode: str
) -> None:
    client = FlagClient(
        edge.url + "/api", CLIENT, app_name="edge-own", mode=mode, refresh_interval=0.2
    )
    try:
        norway = {"userId": "2", "properties": {"country": "NO"}}
        wait_for(lambda: client.is_enabled("colour", norway))
        assert client.mode == mode
        upstream.switch("colour", False)
        wait_for(lambda: not client.is_enabled("colour", norway))
        assert client.mode == mode
    finally:
        client.close()
