"""Integrations across nodes (issue 31), counted at a real receiver.

Two `flagcore serve` processes over one PostgreSQL database send to a receiver that fails
its first tries; the node sending is killed with SIGKILL mid-delivery: no event lost, none
acknowledged twice but the one in flight when its sender died, order kept. Two processes
over one SQLite file, both healthy: each event delivered exactly once, in order."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from flagcore.service import Service
from flagcore.tables import INTEGRATION_CURSORS
from flagcore_store_postgres import PostgresStore
from tests.cluster.nodes import node, start_node, stop
from tests.cluster.postgres_server import fresh_database

FEATURES = "/api/admin/projects/default/features"
SETTINGS = {
    "FLAGCORE_INTEGRATION_ALLOW_LIST": "127.0.0.1",
    "FLAGCORE_INTEGRATION_TIMEOUT_SECONDS": "1",
    "FLAGCORE_INTEGRATION_RETRY_SECONDS": "300",
}


class Receiver:
    """Answers 503 to its first ``failures`` requests, then 200, each after a short
    pause (so a kill lands mid-delivery); keeps (webhook-id, flag, status) of each."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.received: list[tuple[str, str, int]] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                time.sleep(0.05)
                with receiver.lock:
                    status = 503 if receiver.failures > 0 else 200
                    receiver.failures -= 1
                    flag = json.loads(body)["featureName"]
                    receiver.received.append((self.headers["webhook-id"], flag, status))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def acknowledged(self) -> list[tuple[str, str]]:
        with self.lock:
            return [(hook_id, flag) for hook_id, flag, status in self.received if status == 200]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver(failures=3)
    yield made
    made.server.shutdown()
    made.server.server_close()


def _wait(done: Any, seconds: float = 120) -> None:
    """Until ``done()`` (a bound, not a speed: a failure here is a hang)."""
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "gave up waiting"
        time.sleep(0.05)


def _sending_pid(url: str) -> int | None:
    store = PostgresStore(url)
    try:
        Service(store)
        with store.transaction(write=False) as tx:
            (cursor,) = tx.list_records(INTEGRATION_CURSORS)
        return None if cursor.holder is None else int(cursor.holder.split(":")[1])
    finally:
        store.close()


def test_a_node_killed_mid_delivery_loses_nothing_and_the_healthy_node_repeats_nothing(
    tmp_path: Path, receiver: Receiver
) -> None:
    url = fresh_database()
    processes = [start_node(url, tmp_path, **SETTINGS) for _ in range(2)]
    try:
        nodes = [node(p) for p in processes]
        status, made = nodes[0].json(
            "POST",
            "/api/admin/addons",
            {
                "provider": "webhook",
                "enabled": True,
                "parameters": {"url": receiver.url},
                "events": ["feature-created"],
            },
        )
        assert status == 201, made
        names = [f"f{index}" for index in range(24)]
        for index, name in enumerate(names[:12]):
            assert nodes[index % 2].request("POST", FEATURES, {"name": name})[0] == 201
        _wait(lambda: len(receiver.acknowledged()) >= 3)
        pid = _sending_pid(url)
        victim = next(p for p in processes if p.pid == pid) if pid else processes[0]
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=20)
        survivor = nodes[1 - processes.index(victim)]
        for name in names[12:]:
            assert survivor.request("POST", FEATURES, {"name": name})[0] == 201
        _wait(lambda: {flag for _id, flag in receiver.acknowledged()} >= set(names))
        acknowledged = receiver.acknowledged()
        ids = [hook_id for hook_id, _flag in acknowledged]
        repeated = {hook_id for hook_id in ids if ids.count(hook_id) > 1}
        assert len(repeated) <= 1  # only the delivery in flight when its sender died
        first_seen = list(dict.fromkeys(flag for _id, flag in acknowledged))
        assert first_seen == names  # none lost, in the event log's order
        assert receiver.received[0][2] == 503  # the receiver did fail its first tries
    finally:
        for process in processes:
            stop(process)


def test_two_processes_on_one_sqlite_file_deliver_each_event_once_in_order(
    tmp_path: Path,
) -> None:
    receiver = Receiver(failures=0)
    database = str(tmp_path / "shared.db")
    processes: list[Any] = []
    nodes = []
    try:
        # One after the other: the second opens a file the first has made and migrated.
        for _ in range(2):
            # Each node looks at the outbox every 0.2 s too, so both contend all along.
            settings = {**SETTINGS, "FLAGCORE_INTEGRATION_SWEEP_SECONDS": "0.2"}
            processes.append(start_node(database, tmp_path, **settings))
            nodes.append(node(processes[-1]))
        status, made = nodes[1].json(
            "POST",
            "/api/admin/addons",
            {
                "provider": "webhook",
                "enabled": True,
                "parameters": {"url": receiver.url},
                "events": ["feature-created"],
            },
        )
        assert status == 201, made
        names = [f"f{index}" for index in range(20)]
        for index, name in enumerate(names):
            assert nodes[index % 2].request("POST", FEATURES, {"name": name})[0] == 201

        def logged() -> list[Any]:
            status, log = nodes[0].json(
                "GET", f"/api/admin/addons/{made['id']}/deliveries?limit=100"
            )
            assert status == 200, log
            return list(log["deliveries"])

        _wait(lambda: len(logged()) >= len(names))
        assert {d["state"] for d in logged()} == {"delivered"}
        # One more event, sent after all of these, marks that none is still on its way.
        assert nodes[0].request("POST", FEATURES, {"name": "last"})[0] == 201
        _wait(lambda: len(logged()) == len(names) + 1)
        received = receiver.acknowledged()
        ids = [hook_id for hook_id, _flag in received]
        assert len(ids) == len(set(ids)) == len(names) + 1  # none sent twice
        assert [flag for _id, flag in received] == [*names, "last"]  # the log's order
    finally:
        for process in processes:
            stop(process)
        receiver.server.shutdown()
        receiver.server.server_close()
