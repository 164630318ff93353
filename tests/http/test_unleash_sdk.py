"""End to end: `flagcore serve` as a subprocess, driven by the real UnleashClient SDK.

The admin API creates flags; the official Python SDK (from PyPI) registers, polls with
If-None-Match, evaluates, and posts metrics. The server's access log shows the 304s.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from UnleashClient import UnleashClient
from UnleashClient.events import UnleashFetchedEvent

from flagcore.service import Service
from flagcore_store_sqlite import SqliteStore

ADMIN = "*:*.e2e-admin-secret"
CLIENT = "default:development.e2e-client-secret"


class Server:
    def __init__(self, process: subprocess.Popen[str], url: str, log: Path) -> None:
        self.process = process
        self.url = url
        self.log = log

    def admin(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Authorization": ADMIN, "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read()
        return json.loads(text) if text else None


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    log = tmp_path / "server.log"
    env = {
        **os.environ,
        "FLAGCORE_INIT_ADMIN_API_TOKENS": ADMIN,
        "FLAGCORE_INIT_CLIENT_API_TOKENS": CLIENT,
        "FLAGCORE_DB": str(tmp_path / "flags.db"),
        "FLAGCORE_ACCESS_LOG": "all",  # the SDK's every request is read back from the log
    }
    with log.open("w") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "flagcore_http", "serve", "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=sink,
            text=True,
            env=env,
        )
        assert process.stdout is not None
        first = process.stdout.readline()
        match = re.search(r"listening on (http://127\.0\.0\.1:\d+)", first)
        assert match, first + log.read_text()
        try:
            yield Server(process, match.group(1), log)
        finally:
            process.send_signal(signal.SIGTERM)
            rest, _ = process.communicate(timeout=20)
            assert process.returncode == 0, rest + log.read_text()
            assert "flagcore stopped" in rest


def _wait_for(condition: Any, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_the_official_sdk_works_against_flagcore_serve(server: Server, tmp_path: Path) -> None:
    base = "/api/admin/projects/default/features"
    server.admin("POST", base, {"name": "checkout"})
    testers = server.admin(
        "POST",
        "/api/admin/segments",
        {
            "name": "testers",
            "constraints": [{"contextName": "userId", "operator": "IN", "values": ["7"]}],
        },
    )
    server.admin(
        "POST",
        f"{base}/checkout/environments/development/strategies",
        {
            "name": "flexibleRollout",
            "parameters": {"rollout": "100", "stickiness": "userId"},
            "constraints": [{"contextName": "country", "operator": "IN", "values": ["NO"]}],
            "variants": [
                {"name": "blue", "weight": 1000, "payload": {"type": "string", "value": "b"}}
            ],
            "segments": [testers["id"]],
        },
    )
    server.admin("POST", f"{base}/checkout/environments/development/on")
    fetched: list[dict[str, Any]] = []

    client = UnleashClient(
        url=server.url + "/api",
        app_name="e2e-shop",
        instance_id="e2e-1",
        refresh_interval=1,
        metrics_interval=1,
        custom_headers={"Authorization": CLIENT},
        cache_directory=str(tmp_path / "sdk-cache"),
        event_callback=lambda event: (
            fetched.append(json.loads(event.raw_features))
            if isinstance(event, UnleashFetchedEvent)
            else None
        ),
    )
    client.initialize_client()
    try:
        norway = {"userId": "7", "properties": {"country": "NO"}}
        assert client.is_enabled("checkout", norway)
        assert not client.is_enabled("checkout", {"userId": "7", "properties": {"country": "SE"}})
        assert not client.is_enabled("checkout", {"userId": "8", "properties": {"country": "NO"}})
        # The SDK announces its spec, so it gets format 2: segments by id, no legacy keys.
        _wait_for(lambda: bool(fetched))
        assert fetched[0]["version"] == 2
        assert [segment["id"] for segment in fetched[0]["segments"]] == [testers["id"]]
        (served,) = fetched[0]["features"]
        assert served["strategies"][0]["segments"] == [testers["id"]]
        assert "strategy" not in served
        variant = client.get_variant("checkout", norway)
        assert (variant["name"], variant["payload"]) == ("blue", {"type": "string", "value": "b"})

        server.admin("POST", f"{base}/checkout/environments/development/off")
        _wait_for(lambda: not client.is_enabled("checkout", norway))
        # Unchanged polls after that are answered 304 from the cache.
        _wait_for(
            lambda: (
                len(re.findall(r'"GET /api/client/features[^"]*" 304', server.log.read_text())) >= 2
            )
        )
    finally:
        client.destroy()

    store = SqliteStore(tmp_path / "flags.db")
    try:
        service = Service(store)
        _wait_for(
            lambda: any(i.app_name == "e2e-shop" for i in service.instances.client_instances())
        )
        (instance,) = [i for i in service.instances.client_instances() if i.instance_id == "e2e-1"]
        assert instance.sdk_version
        assert "python" in instance.sdk_version
        _wait_for(lambda: bool(service.metrics.flag_metrics("checkout")))
        counted = sum(row.yes + row.no for row in service.metrics.flag_metrics("checkout"))
        assert counted >= 3
    finally:
        store.close()
    log = server.log.read_text()
    assert re.search(r'"POST /api/client/register[^"]*" 202', log)
    assert re.search(r'"POST /api/client/metrics[^"]*" 202', log)
    assert CLIENT not in log
    assert ADMIN not in log
