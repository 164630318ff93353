"""The official SDKs in streaming and delta-polling mode against a real `flagcore serve`.

The Node SDK (``unleash-client`` from npm, pinned in ``tests/http/node/package-lock.json``)
runs under the machine's ``node``; a session fixture runs ``npm ci`` when its
``node_modules`` is missing. By hand: ``cd tests/http/node && npm ci`` then
``.venv/bin/python -m pytest tests/http/test_streaming_sdks.py``.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from UnleashClient import UnleashClient

from flagcore import Engine
from tests.node_packages import installed

ADMIN = "*:*.streaming-admin-secret"
CLIENT = "default:development.streaming-client-secret"
NODE_DIR = Path(__file__).parent / "node"
FLAGS = "/api/admin/projects/default/features"
USERS = [str(i) for i in range(1, 9)]
NORWAY = {"country": "NO"}


class Server:
    """`flagcore serve` on a SQLite file; `restart` keeps the file and the port."""

    def __init__(self, tmp_path: Path, **settings: str) -> None:
        self.tmp_path = tmp_path
        self.settings = settings
        self.log = tmp_path / "server.log"
        self.port = 0
        self.url = ""
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        env = {
            **os.environ,
            "FLAGCORE_INIT_ADMIN_API_TOKENS": ADMIN,
            "FLAGCORE_INIT_CLIENT_API_TOKENS": CLIENT,
            "FLAGCORE_DB": str(self.tmp_path / "flags.db"),
            "FLAGCORE_ACCESS_LOG": "all",  # the SDKs' requests are read back from the log
            **self.settings,
        }
        with self.log.open("a") as sink:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "flagcore_http", "serve", "--port", str(self.port)],
                stdout=subprocess.PIPE,
                stderr=sink,
                text=True,
                env=env,
            )
        assert self.process.stdout is not None
        first = self.process.stdout.readline()
        match = re.search(r"listening on (http://127\.0\.0\.1:(\d+))", first)
        assert match, first + self.log.read_text()
        self.url, self.port = match.group(1), int(match.group(2))

    def stop(self) -> None:
        assert self.process is not None
        asked = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        rest, _ = self.process.communicate(timeout=20)
        # Open streams do not hold the shutdown back: it is clean, and far quicker than
        # the 10 s the server would wait for requests still running.
        assert self.process.returncode == 0, rest + self.log.read_text()
        assert "flagcore stopped" in rest
        assert time.monotonic() - asked < 5

    def restart(self) -> None:
        self.stop()
        self.start()

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

    def features(self) -> dict[str, Any]:
        request = urllib.request.Request(
            self.url + "/api/client/features",
            headers={"Authorization": CLIENT, "Unleash-Client-Spec": "5.2.0"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            payload: dict[str, Any] = json.loads(response.read())
        return payload


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    server = Server(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _wait_for(condition: Callable[[], bool], timeout: float) -> float:
    """Seconds until ``condition()`` held; fails after ``timeout``."""
    start = time.monotonic()
    while not condition():
        assert time.monotonic() - start < timeout, "timed out"
        time.sleep(0.005)
    return time.monotonic() - start


def _expected(server: Server, flags: list[str]) -> dict[str, list[list[Any]]]:
    """What a polling SDK evaluates now: the full payload through the engine."""
    engine = Engine.from_client_features(server.features())
    state = {}
    for flag in flags:
        rows = []
        for user in USERS:
            context = {"userId": user, "properties": NORWAY}
            rows.append([engine.is_enabled(flag, context), engine.get_variant(flag, context).name])
        state[flag] = rows
    return state


def _setup_flags(server: Server) -> int:
    for name in ("checkout", "banner"):
        server.admin("POST", FLAGS, {"name": name})
        server.admin(
            "POST",
            f"{FLAGS}/{name}/environments/development/strategies",
            {"name": "flexibleRollout", "parameters": {"rollout": "50", "stickiness": "userId"}},
        )
        server.admin("POST", f"{FLAGS}/{name}/environments/development/on")
    segment = server.admin(
        "POST",
        "/api/admin/segments",
        {
            "name": "nordics",
            "constraints": [{"contextName": "country", "operator": "IN", "values": ["NO"]}],
        },
    )
    segment_id: int = segment["id"]
    return segment_id


def _changes(segment_id: int) -> list[tuple[str, str, Any]]:
    """One of each kind of change an SDK must see (each alters what the users get)."""
    strategies = f"{FLAGS}/checkout/environments/development/strategies"
    return [
        ("POST", f"{FLAGS}/checkout/environments/development/off", None),
        ("POST", f"{FLAGS}/checkout/environments/development/on", None),
        (
            "PUT",
            f"{FLAGS}/checkout/environments/development/variants",
            [{"name": "blue", "weight": 1000, "weightType": "variable", "stickiness": "userId"}],
        ),
        (
            "POST",
            strategies,
            {"name": "default", "segments": [segment_id]},
        ),
        (
            "PUT",
            f"/api/admin/segments/{segment_id}",
            {
                "name": "nordics",
                "constraints": [{"contextName": "country", "operator": "IN", "values": ["SE"]}],
            },
        ),
        ("DELETE", f"{FLAGS}/checkout", None),  # archive
        # A revived flag is off everywhere, as an archived one is unknown: no visible change
        # here; the next step turns it on again.
        ("POST", "/api/admin/archive/revive/checkout", None),
        ("POST", f"{FLAGS}/checkout/environments/development/on", None),
    ]


def _python_state(client: UnleashClient, flags: list[str]) -> dict[str, list[list[Any]]]:
    state = {}
    for flag in flags:
        rows = []
        for user in USERS:
            context = {"userId": user, "properties": NORWAY}
            rows.append(
                [client.is_enabled(flag, context), client.get_variant(flag, context)["name"]]
            )
        state[flag] = rows
    return state


def test_the_python_sdk_streams_every_change_within_a_second(
    server: Server, tmp_path: Path
) -> None:
    segment_id = _setup_flags(server)
    flags = ["checkout", "banner"]

    def sdk(mode: dict[str, str] | None, name: str) -> UnleashClient:
        return UnleashClient(
            url=server.url + "/api",
            app_name=f"py-{name}",
            instance_id=name,
            refresh_interval=1,
            metrics_interval=1,
            custom_headers={"Authorization": CLIENT},
            cache_directory=str(tmp_path / name),
            experimental_mode=mode,  # type: ignore[arg-type]
        )

    streaming = sdk({"type": "streaming"}, "streaming")
    polling = sdk(None, "polling")
    streaming.initialize_client()
    polling.initialize_client()
    try:
        _wait_for(lambda: _python_state(streaming, flags) == _expected(server, flags), 10)
        for method, path, body in _changes(segment_id):
            before = _python_state(streaming, flags)
            server.admin(method, path, body)
            expected = _expected(server, flags)
            assert expected != before or "revive" in path, (method, path)
            took = _wait_for(lambda want=expected: _python_state(streaming, flags) == want, 1.0)
            assert took < 1.0
        # The same answers as a polling SDK once it has polled.
        _wait_for(lambda: _python_state(polling, flags) == _python_state(streaming, flags), 5)

        server.restart()
        server.admin("POST", f"{FLAGS}/banner/environments/development/off")
        expected = _expected(server, flags)
        # The SDK reconnects by itself (it backs off 2 s at first, with jitter, then more).
        _wait_for(lambda: _python_state(streaming, flags) == expected, 30)
        log = server.log.read_text()
        assert re.search(r'"GET /api/client/streaming[^"]*" 200', log)
    finally:
        streaming.destroy()
        polling.destroy()


@pytest.fixture(scope="session")
def node_sdk() -> Path:
    return installed(NODE_DIR, "unleash-client", "Node SDK") / "follow.js"


class NodeFollower:
    """The Node SDK in a subprocess; its evaluations arrive as JSON lines."""

    def __init__(self, script: Path, server: Server, mode: str, flags: list[str]) -> None:
        env = {
            **os.environ,
            "FLAGCORE_URL": server.url + "/api",
            "FLAGCORE_TOKEN": CLIENT,
            "FLAGCORE_MODE": mode,
            "FLAGCORE_FLAGS": ",".join(flags),
        }
        self.stderr = server.tmp_path / f"node-{mode}.log"
        with self.stderr.open("w") as sink:
            self.process = subprocess.Popen(
                ["node", str(script)], stdout=subprocess.PIPE, stderr=sink, text=True, env=env
            )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.state: dict[str, Any] = {}
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(json.loads(line))

    def current(self) -> dict[str, Any]:
        while True:
            try:
                self.state = self.lines.get_nowait()["state"]
            except queue.Empty:
                return self.state

    def close(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=10)
        self._reader.join(timeout=10)  # it stops at the end of the output
        assert self.process.stdout is not None
        self.process.stdout.close()


@pytest.mark.parametrize("mode", ["streaming", "delta"])
def test_the_node_sdk_follows_every_change_within_a_second(
    server: Server, node_sdk: Path, mode: str
) -> None:
    segment_id = _setup_flags(server)
    flags = ["checkout", "banner"]
    follower = NodeFollower(node_sdk, server, mode, flags)
    polling = NodeFollower(node_sdk, server, "polling", flags)  # the full payload, 200 ms
    try:
        _wait_for(lambda: follower.current() == _expected(server, flags), 15)
        for method, path, body in _changes(segment_id):
            before = follower.current()
            server.admin(method, path, body)
            expected = _expected(server, flags)
            assert expected != before or "revive" in path, (method, path)
            took = _wait_for(lambda want=expected: follower.current() == want, 1.0)
            assert took < 1.0, follower.stderr.read_text()
        # The same answers as the same SDK polling the full payload.
        _wait_for(lambda: polling.current() == follower.current(), 5)

        server.restart()
        server.admin("POST", f"{FLAGS}/banner/environments/development/off")
        expected = _expected(server, flags)
        # The SDK reconnects on its own backoff (growing while the server was away), not
        # ours: generous, as the Python SDK's below; speed is pinned by the changes above.
        try:
            _wait_for(lambda: follower.current() == expected, 30)
        except AssertionError as error:
            told = follower.stderr.read_text()[-3000:]
            log = server.log.read_text()[-6000:]
            raise AssertionError(f"{error}\nSDK: {told}\nserver: {log}") from error
    finally:
        follower.close()
        polling.close()
    log = server.log.read_text()
    path = "/api/client/streaming" if mode == "streaming" else "/api/client/delta"
    assert re.search(rf'"GET {path}[^"]*" (200|304)', log)
