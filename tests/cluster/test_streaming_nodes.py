"""Streaming and delta polling across `flagcore serve` nodes over one PostgreSQL (issues
#14 and #16).

A write on node A reaches an SSE stream open on node B, and a delta poll on B; while
PostgreSQL is down, B's streams stay open, new streams get a hydration of the last state,
delta polls answer without errors; when it returns, a write on A reaches B's old stream.
"""

from __future__ import annotations

import http.client
import json
import queue
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.nodes import CLIENT, Node, node, start_node, stop
from tests.cluster.postgres_server import PrivateServer, fresh_database, private_server

FEATURES = "/api/admin/projects/default/features"


class Stream:
    """An SSE stream read on a thread: each event (or comment) with the time it arrived."""

    def __init__(self, n: Node) -> None:
        address = urllib.parse.urlsplit(n.url)
        self._connection = http.client.HTTPConnection(
            address.hostname or "127.0.0.1", address.port, timeout=30
        )
        self._connection.request("GET", "/api/client/streaming", headers={"Authorization": CLIENT})
        self.response = self._connection.getresponse()
        assert self.response.status == 200, self.response.read()
        self.received: queue.Queue[tuple[float, dict[str, Any] | None]] = queue.Queue()
        self.ended = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        fields: dict[str, Any] = {}
        try:
            for raw in self.response:
                line = raw.decode("utf-8").rstrip("\n")
                if line.startswith(":"):
                    self.received.put((time.monotonic(), {"comment": line[1:].strip()}))
                elif line:
                    key, _, value = line.partition(": ")
                    fields[key] = json.loads(value) if key == "data" else value
                elif fields:
                    self.received.put((time.monotonic(), fields))
                    fields = {}
        except (OSError, ValueError, AttributeError):
            pass  # closed by `close` (http.client then reads from a closed file)
        finally:
            self.ended.set()
            self.received.put((time.monotonic(), None))  # the end of the stream

    def next(self, within: float = 5.0) -> tuple[float, dict[str, Any]]:
        """The next event or comment; fails if the stream ended or stayed silent."""
        arrived, message = self.received.get(timeout=within)
        assert message is not None, "the stream ended"
        return arrived, message

    def next_event(self, within: float = 5.0) -> tuple[float, dict[str, Any]]:
        """The next event (comments skipped)."""
        deadline = time.monotonic() + within
        while True:
            arrived, message = self.next(max(0.01, deadline - time.monotonic()))
            if "comment" not in message:
                return arrived, message

    def close(self) -> None:
        self._connection.close()


def _delta(n: Node, etag: str | None = None) -> tuple[int, str | None, Any]:
    headers = {"If-None-Match": etag} if etag else {}
    status, answered, raw = n.request("GET", "/api/client/delta", token=CLIENT, headers=headers)
    return status, answered.get("ETag"), json.loads(raw) if raw else None


def _updated_names(message: dict[str, Any]) -> set[str]:
    return {e["feature"]["name"] for e in message["data"]["events"] if "feature" in e}


@pytest.fixture
def stoppable() -> Iterator[PrivateServer]:
    server = private_server()
    yield server
    server.close()


def test_a_write_on_one_node_reaches_a_stream_and_a_delta_poll_on_the_other(
    tmp_path: Path,
) -> None:
    url = fresh_database()
    processes = [start_node(url, tmp_path), start_node(url, tmp_path)]
    try:
        a, b = (node(p) for p in processes)
        status, etag, hydration = _delta(b)
        assert status == 200, hydration
        assert etag is not None
        stream = Stream(b)
        _at, connected = stream.next_event()
        assert connected["event"] == "unleash-connected"

        latencies = []
        for index in range(5):
            name = f"from-a-{index}"
            written = time.monotonic()
            status, body = a.json("POST", FEATURES, {"name": name})
            assert status == 201, body
            arrived, message = stream.next_event(within=5.0)
            assert message["event"] == "unleash-updated"
            assert name in _updated_names(message), message
            latencies.append(arrived - written)
        print(f"node A write -> node B stream: {[round(s * 1000, 1) for s in latencies]} ms")
        assert max(latencies) < 1.0, latencies

        # A delta poll on B with the id it had before the writes gets every one of them.
        status, new_etag, changed = _delta(b, etag)
        assert status == 200, changed
        names = {e["feature"]["name"] for e in changed["events"] if "feature" in e}
        assert names == {f"from-a-{i}" for i in range(5)}
        assert _delta(b, new_etag)[0] == 304
        stream.close()
    finally:
        for process in processes:
            stop(process)


def test_streams_and_delta_polls_survive_an_outage_of_postgresql(
    stoppable: PrivateServer, tmp_path: Path
) -> None:
    url = stoppable.database_url("postgres")
    quick = {"FLAGCORE_STREAMING_KEEPALIVE_SECONDS": "0.3"}
    processes = [start_node(url, tmp_path, **quick), start_node(url, tmp_path, **quick)]
    try:
        a, b = (node(p) for p in processes)
        assert a.json("POST", FEATURES, {"name": "before"})[0] == 201
        deadline = time.monotonic() + 5
        while True:
            status, etag, state = _delta(b)
            served = {e["name"] for e in state["events"][0]["features"]}
            if "before" in served:
                break
            assert time.monotonic() < deadline, "b never saw the flag"
            time.sleep(0.05)
        stream = Stream(b)
        _at, connected = stream.next_event()
        assert {f["name"] for f in connected["data"]["events"][0]["features"]} == {"before"}

        stoppable.stop()
        deadline = time.monotonic() + 10
        while b.request("GET", "/ready", token=None)[0] != 503:
            assert time.monotonic() < deadline, "b never noticed the outage"
            time.sleep(0.05)

        # The open stream stays open: keep-alives keep coming, nothing else.
        for _ in range(3):
            _at, message = stream.next(within=3.0)
            assert message == {"comment": "keep-alive"}, message
        # A new stream gets a hydration of the last state; delta polls answer from memory.
        fresh = Stream(b)
        _at, connected = fresh.next_event()
        assert connected["event"] == "unleash-connected"
        assert {f["name"] for f in connected["data"]["events"][0]["features"]} == {"before"}
        fresh.close()
        assert _delta(b, etag)[0] == 304
        status, _etag, hydration = _delta(b)
        assert status == 200, hydration
        assert {f["name"] for f in hydration["events"][0]["features"]} == {"before"}
        assert not stream.ended.is_set()

        stoppable.start()
        deadline = time.monotonic() + 15
        while a.request("GET", "/ready", token=None)[0] != 200:
            assert time.monotonic() < deadline, "a never came back"
            time.sleep(0.05)
        assert a.json("POST", FEATURES, {"name": "after"})[0] == 201
        deadline = time.monotonic() + 5
        while True:
            _at, message = stream.next(within=max(0.01, deadline - time.monotonic()))
            if "comment" not in message:
                break
        assert message["event"] == "unleash-updated"
        assert "after" in _updated_names(message), message
        stream.close()
        assert a.process.poll() is None
        assert b.process.poll() is None
    finally:
        for process in processes:
            stop(process)
