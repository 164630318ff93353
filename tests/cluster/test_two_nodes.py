"""Two real `flagcore serve` nodes over one PostgreSQL database (issue #14).

They start at the same moment on an empty database (one migrates, the other waits and
finds nothing to do); a write on either is served by the other's client API at once
(LISTEN/NOTIFY), with the same bytes and ETag; limits and action sets hold across both;
and when PostgreSQL stops, both keep serving SDKs from memory, refuse writes and
signals with 503, and come back by themselves when it returns.
"""

from __future__ import annotations

import concurrent.futures
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.cluster.nodes import Node, node, start_node, stop
from tests.cluster.postgres_server import PrivateServer, admin_url, private_server

FEATURES = "/api/admin/projects/default/features"
ENDPOINTS = "/api/admin/signal-endpoints"
ACTIONS = "/api/admin/projects/default/actions"


def _empty_database(url: str, name: str) -> str:
    from tests.cluster.postgres_server import _url_for

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")  # type: ignore[arg-type]
        connection.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]
    return _url_for(url, name)


@pytest.fixture
def two_nodes(tmp_path: Path) -> Iterator[tuple[Node, Node, str]]:
    url = _empty_database(admin_url(), "flagcore_cluster_two_nodes")
    processes = [start_node(url, tmp_path), start_node(url, tmp_path)]  # at the same moment
    try:
        nodes = [node(p) for p in processes]
        yield nodes[0], nodes[1], url
    finally:
        for process in processes:
            stop(process)


def _difference(one: bytes, other: bytes) -> str:
    at = next((i for i, (x, y) in enumerate(zip(one, other, strict=False)) if x != y), 0)
    return f"{one[max(0, at - 200) : at + 40]!r} != {other[max(0, at - 200) : at + 40]!r}"


def _names_served(n: Node) -> set[str]:
    status, _headers, body = n.features()
    assert status == 200, body
    return {f["name"] for f in json.loads(body)["features"]}


def test_two_nodes_over_one_database_agree_at_once(two_nodes: tuple[Node, Node, str]) -> None:
    a, b, url = two_nodes
    # Both started on an empty database at once, and it was migrated once.
    with psycopg.connect(url) as connection:
        names = [r[0] for r in connection.execute("SELECT name FROM flagcore_migrations")]
    assert len(names) == len(set(names)) > 0

    # A write on either node is served by the other's client API within a generous bound
    # (the benchmark measures the real latency: a few milliseconds).
    _names_served(a), _names_served(b)  # both have a cached payload to replace
    delays = []
    for index in range(10):
        writer, reader = (a, b) if index % 2 == 0 else (b, a)
        name = f"flag-{index}"
        status, body = writer.json("POST", FEATURES, {"name": name})
        assert status == 201, body
        written = time.monotonic()
        while name not in _names_served(reader):
            assert time.monotonic() - written < 2.0, f"{name} not served by the other node"
            time.sleep(0.002)
        delays.append(time.monotonic() - written)
    assert max(delays) < 2.0

    # Same state, same bytes, same ETag on both; either node's ETag gets a 304 from the other.
    # (A write can be more than one transaction: wait until both have the last one.)
    deadline = time.monotonic() + 2
    while True:
        status_a, headers_a, body_a = a.features()
        status_b, headers_b, body_b = b.features()
        if headers_a["ETag"] == headers_b["ETag"] or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert (status_a, status_b) == (200, 200)
    assert body_a == body_b, _difference(body_a, body_b)
    assert headers_a["ETag"] == headers_b["ETag"]
    assert b.features(headers_a["ETag"])[0] == 304
    assert a.features(headers_b["ETag"])[0] == 304

    # The admin API on one node sees the other's write on its very next request.
    status, _ = b.json("POST", FEATURES, {"name": "read-your-writes"})
    assert status == 201
    status, flag = a.json("GET", f"{FEATURES}/read-your-writes")
    assert (status, flag["name"]) == (200, "read-your-writes")


def test_limits_hold_across_nodes(two_nodes: tuple[Node, Node, str]) -> None:
    a, b, _url = two_nodes
    # Signal endpoints: at most 5 in the system, though 8 are asked for at once on two nodes.
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(
            pool.map(
                lambda i: (a if i % 2 else b).json("POST", ENDPOINTS, {"name": f"ep-{i}"}),
                range(8),
            )
        )
    statuses = sorted(status for status, _ in results)
    assert statuses.count(201) == 5, results
    assert all(status == 400 for status in statuses if status != 201), results
    assert a.json("GET", ENDPOINTS)[0] == 200
    _status, listed = a.json("GET", ENDPOINTS)
    assert len(listed["signalEndpoints"]) == 5
    endpoint = next(body for status, body in results if status == 201)

    # Tokens of one endpoint: at most 5, asked for 8 at once on both nodes.
    tokens_path = f"{ENDPOINTS}/{endpoint['id']}/tokens"
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        made = list(
            pool.map(
                lambda i: (a if i % 2 else b).json("POST", tokens_path, {"name": f"t{i}"}),
                range(8),
            )
        )
    assert [s for s, _ in made].count(201) == 5, made
    token = next(body["token"] for status, body in made if status == 201)

    # The signal rate (1 a second per endpoint): two signals at once, one per node.
    def send(n: Node) -> int:
        return n.request(
            "POST",
            f"/api/signal-endpoint/{endpoint['name']}",
            {"alert": "x"},
            token=None,
            headers={"Authorization": f"Bearer {token}"},
        )[0]

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        sent = sorted(pool.map(send, (a, b)))
    assert sent == [202, 429]


def test_an_action_set_runs_once_per_signal_whichever_node_took_it(
    two_nodes: tuple[Node, Node, str],
) -> None:
    a, b, _url = two_nodes
    assert a.json("POST", FEATURES, {"name": "kill-switch"})[0] == 201
    status, endpoint = a.json("POST", ENDPOINTS, {"name": "alerts"})
    assert status == 201
    status, token = b.json("POST", f"{ENDPOINTS}/{endpoint['id']}/tokens", {"name": "t"})
    assert status == 201
    action_set = {
        "name": "kill-on-alert",
        "enabled": True,
        "actorId": 1,
        "match": {"source": "signal-endpoint", "sourceId": endpoint["id"], "payload": {}},
        "actions": [
            {
                "action": "TOGGLE_FEATURE_ON",
                "sortOrder": 1,
                "executionParams": {
                    "project": "default",
                    "featureName": "kill-switch",
                    "environment": "development",
                },
            }
        ],
    }
    status, created = b.json("POST", ACTIONS, action_set)
    assert status == 201, created
    headers = {"Authorization": f"Bearer {token['token']}"}
    signal_ids = []
    for receiver in (a, b):
        status, _h, raw = receiver.request(
            "POST", "/api/signal-endpoint/alerts", {"n": 1}, token=None, headers=headers
        )
        assert status == 202, raw
        signal_ids.append(json.loads(raw)["id"])
        time.sleep(1.05)  # the endpoint's rate limit
    deadline = time.monotonic() + 10
    while True:
        status, runs = a.json("GET", f"{ACTIONS}/{created['id']}/events?limit=100")
        events = runs["actionSetEvents"]
        if len(events) >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    time.sleep(0.3)  # anything extra would show up now
    status, runs = b.json("GET", f"{ACTIONS}/{created['id']}/events?limit=100")
    ran_for = sorted(e["signal"]["id"] for e in runs["actionSetEvents"])
    assert ran_for == sorted(signal_ids)


@pytest.fixture
def stoppable() -> Iterator[PrivateServer]:
    server = private_server()
    yield server
    server.close()


def _ready(n: Node) -> int:
    return n.request("GET", "/ready", token=None)[0]


def _wait_for(condition: object, within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_an_outage_of_postgresql_is_survived_by_every_node(
    stoppable: PrivateServer, tmp_path: Path
) -> None:
    url = stoppable.database_url("postgres")
    processes = [start_node(url, tmp_path), start_node(url, tmp_path)]
    writing = threading.Event()
    try:
        a, b = (node(p) for p in processes)
        assert a.json("POST", FEATURES, {"name": "before"})[0] == 201
        status, endpoint = a.json("POST", ENDPOINTS, {"name": "alerts"})
        status, token = a.json("POST", f"{ENDPOINTS}/{endpoint['id']}/tokens", {"name": "t"})
        _wait_for(lambda: "before" in _names_served(b), 5, "b never saw the flag")
        etags = {n.url: n.features()[1]["ETag"] for n in (a, b)}
        served_before = {n.url: n.features()[2] for n in (a, b)}

        # Writes keep coming on both nodes through the whole outage: each is either
        # acknowledged (201) or refused (503), and every acknowledged one survives.
        answers: list[tuple[int, str]] = []
        writing.set()

        def keep_writing() -> None:
            index = 0
            while writing.is_set():
                name = f"load-{index}"
                status, _h, _raw = (a, b)[index % 2].request("POST", FEATURES, {"name": name})
                answers.append((status, name))
                index += 1
                time.sleep(0.01)

        writer = threading.Thread(target=keep_writing)
        writer.start()
        time.sleep(0.3)
        stoppable.stop()
        _wait_for(lambda: _ready(a) == 503 and _ready(b) == 503, 10, "/ready stayed ready")

        # SDKs keep being served from memory, with 0 errors, with or without an ETag.
        for _ in range(50):
            for n in (a, b):
                status, _h, body = n.features()
                assert (status, body) == (200, served_before[n.url]), body[:300]
                assert n.features(etags[n.url])[0] == 304
        # Writes and signals are refused with a 503 that says why; nothing half-done.
        for n in (a, b):
            status, error = n.json("POST", FEATURES, {"name": "during"})
            assert status == 503, error
            assert "database is unavailable" in error["message"]
            assert set(error) >= {"name", "message", "details"}
            status, _h, raw = n.request(
                "POST",
                "/api/signal-endpoint/alerts",
                {"n": 1},
                token=None,
                headers={"Authorization": f"Bearer {token['token']}"},
            )
            assert status == 503, raw

        stoppable.start()
        # Back by themselves, no restart: ready, writable, and caught up with each other.
        _wait_for(lambda: _ready(a) == 200 and _ready(b) == 200, 15, "nodes never came back")
        time.sleep(0.3)
        writing.clear()
        writer.join(timeout=30)
        assert {status for status, _ in answers} == {201, 503}, answers
        acknowledged = {name for status, name in answers if status == 201}
        status, _h, raw = a.request("GET", FEATURES)
        assert acknowledged <= {f["name"] for f in json.loads(raw)["features"]}
        status, body = b.json("POST", FEATURES, {"name": "after"})
        assert status == 201, body
        _wait_for(lambda: "after" in _names_served(a), 5, "a never saw the write made after")
        assert "during" not in _names_served(a)
        assert a.process.poll() is None
        assert b.process.poll() is None
    finally:
        writing.clear()
        for process in processes:
            stop(process)
