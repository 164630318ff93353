"""SDK usage survives a PostgreSQL outage under two nodes (issue 25).

While the database is stopped, metrics posts and registrations keep arriving on both
nodes: every one is accepted (202), held in the node's buffer (shown by ``/ready`` and
Prometheus), and written when the database is back, so every count is in the store. A
node stopped while the database is still away says how many counts it drops.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.cluster.nodes import CLIENT, Node, node, start_node, stop
from tests.cluster.postgres_server import PrivateServer, private_server

FEATURES = "/api/admin/projects/default/features"
TOGGLES = {
    "checkout": {"yes": 1, "no": 2, "variants": {"blue": 1}},
    "search": {"yes": 3, "no": 0},
}
SDKS = 8
# The rate limits are not what this test is about: SDKs here post as fast as they can.
UNLIMITED = {
    "FLAGCORE_METRICS_RATE_LIMIT_PER_MINUTE": "0",
    "FLAGCORE_REGISTER_RATE_LIMIT_PER_MINUTE": "0",
}


@pytest.fixture
def stoppable() -> Iterator[PrivateServer]:
    server = private_server()
    yield server
    server.close()


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _metrics(instance: str) -> dict[str, Any]:
    return {
        "appName": "shop",
        "instanceId": instance,
        "bucket": {"start": _now(), "stop": _now(), "toggles": TOGGLES},
    }


def _registration(instance: str) -> dict[str, Any]:
    return {
        "appName": "shop",
        "instanceId": instance,
        "sdkVersion": "unleash-client-node:6.1.0",
        "strategies": ["default"],
        "started": _now(),
        "interval": 250,
    }


def _ready(n: Node) -> tuple[int, dict[str, Any]]:
    status, _headers, raw = n.request("GET", "/ready", token=None)
    return status, json.loads(raw)


def _buffering(n: Node) -> float:
    _status, _headers, raw = n.request("GET", "/internal-backstage/prometheus", token=None)
    line = next(x for x in raw.decode().splitlines() if x.startswith("flagcore_usage_buffering "))
    return float(line.split()[1])


def _wait_for(condition: Callable[[], bool], within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


class Sdks:
    """SDK instances posting metrics (and now and then registering) to both nodes in
    turn, keeping every answer and what each accepted post counted."""

    def __init__(self, nodes: tuple[Node, Node]) -> None:
        self.nodes = nodes
        self.running = threading.Event()
        self.answers: Counter[tuple[str, int]] = Counter()
        self.registered: set[str] = set()
        self.threads = [threading.Thread(target=self._sdk, args=(i,)) for i in range(SDKS)]
        self._lock = threading.Lock()

    def __enter__(self) -> Sdks:
        self.running.set()
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.running.clear()
        for thread in self.threads:
            thread.join(timeout=60)

    def _sdk(self, index: int) -> None:
        instance = f"sdk-{index}"
        sent = 0
        while self.running.is_set():
            n = self.nodes[sent % 2]
            if sent % 5 == 0:
                status = n.request(
                    "POST", "/api/client/register", _registration(instance), token=CLIENT
                )[0]
                with self._lock:
                    self.answers["register", status] += 1
                    if status == 202:
                        self.registered.add(instance)
            status = n.request("POST", "/api/client/metrics", _metrics(instance), token=CLIENT)[0]
            with self._lock:
                self.answers["metrics", status] += 1
            sent += 1
            time.sleep(0.01)

    @property
    def accepted_metrics(self) -> int:
        return self.answers["metrics", 202]


def _stored(url: str) -> tuple[dict[str, tuple[int, int, int]], set[str]]:
    """Per flag (yes, no, blue), and the instance ids, as PostgreSQL holds them."""
    totals: dict[str, tuple[int, int, int]] = {}
    with psycopg.connect(url) as connection:
        for flag, yes, no, variants in connection.execute(
            "SELECT flag, yes, no, variants FROM flag_metrics WHERE app_name = 'shop'"
        ):
            blue = json.loads(variants).get("blue", 0) if variants else 0
            old = totals.get(flag, (0, 0, 0))
            totals[flag] = (old[0] + yes, old[1] + no, old[2] + blue)
        instances = {
            row[0]
            for row in connection.execute(
                "SELECT instance_id FROM client_instances WHERE app_name = 'shop'"
            )
        }
    return totals, instances


def test_every_sdk_count_sent_during_a_postgresql_outage_is_in_the_store_after(
    stoppable: PrivateServer, tmp_path: Path
) -> None:
    url = stoppable.database_url("postgres")
    processes = [start_node(url, tmp_path, **UNLIMITED) for _ in range(2)]
    try:
        a, b = (node(p) for p in processes)
        for name in TOGGLES:
            assert a.json("POST", FEATURES, {"name": name})[0] == 201
        for n in (a, b):  # both know the flags (a report's names are checked against them)
            _wait_for(
                lambda n=n: n.features()[2].count(b'"name":"search"') == 1, 10, "flag not served"
            )

        with Sdks((a, b)) as sdks:
            _wait_for(lambda: sdks.accepted_metrics > 20, 20, "no metrics accepted")
            stoppable.stop()
            _wait_for(lambda: _ready(a)[0] == 503 and _ready(b)[0] == 503, 10, "still ready")
            # While the database is away both nodes hold usage and say so.
            for n in (a, b):
                _wait_for(
                    lambda n=n: _ready(n)[1].get("usageBuffer", {}).get("evaluations", 0) > 0,
                    10,
                    "/ready never showed held usage",
                )
                # Behind: its flushes fail (tried every flush interval).
                _wait_for(lambda n=n: _buffering(n) == 1, 10, "never said it was behind")
            during = sdks.accepted_metrics
            _wait_for(lambda: sdks.accepted_metrics > during + 40, 20, "posts stalled")
            stoppable.start()
            _wait_for(lambda: _ready(a)[0] == 200 and _ready(b)[0] == 200, 20, "never back")
            after = sdks.accepted_metrics
            _wait_for(lambda: sdks.accepted_metrics > after + 20, 20, "posts stalled after")

        # Nothing was refused, and once both buffers are written every count is stored.
        assert set(sdks.answers) == {("metrics", 202), ("register", 202)}, sdks.answers
        for n in (a, b):
            _wait_for(lambda n=n: "usageBuffer" not in _ready(n)[1], 30, "never flushed")
            assert _buffering(n) == 0
        posts = sdks.accepted_metrics
        expected = {"checkout": (posts, 2 * posts, posts), "search": (3 * posts, 0, 0)}
        # The last posts wait for their node's next regular flush (one interval).
        _wait_for(lambda: _stored(url)[0] == expected, 10, "not every count was written")
        totals, instances = _stored(url)
        assert totals == expected
        assert instances == sdks.registered == {f"sdk-{i}" for i in range(SDKS)}

        # A node stopped while the database is away says what it drops.
        stoppable.stop()
        _wait_for(lambda: _ready(a)[0] == 503, 10, "still ready")
        status = a.request("POST", "/api/client/metrics", _metrics("last"), token=CLIENT)[0]
        assert status == 202
        assert _ready(a)[1]["usageBuffer"]["evaluations"] == 6
        a.stop()
        assert "dropping 6 held evaluation counts and 1 held registrations" in (
            a.stderr.read_text()
        )
        stoppable.start()
    finally:
        for process in processes:
            stop(process)
