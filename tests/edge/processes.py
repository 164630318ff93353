"""A flagcore server (the upstream) and `flagcore edge` as real subprocesses on 127.0.0.1."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from UnleashClient import UnleashClient

from tests.forkserver import popen

__all__ = [
    "ADMIN",
    "CLIENT",
    "SPEC",
    "EdgeProcess",
    "Poller",
    "UpstreamServer",
    "get",
    "python_sdk",
    "send",
    "wait_for",
]

ADMIN = "*:*.edge-admin-secret"
CLIENT = "default:development.edge-client-secret"
SPEC = {"Unleash-Client-Spec": "5.2.0"}


def wait_for(condition: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def get(
    url: str, token: str | None, headers: dict[str, str] | None = None
) -> tuple[int, bytes, dict[str, str]]:
    """A GET as an SDK sends it: the status, the raw body, the headers."""
    sent = {**(headers or {})}
    if token is not None:
        sent["Authorization"] = token
    request = urllib.request.Request(url, headers=sent)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read(), dict(error.headers)


def post(url: str, token: str, body: Any) -> int:
    return send(url, token, body)[0]


def send(url: str, token: str | None, body: Any) -> tuple[int, Any, dict[str, str]]:
    """A JSON POST: the status, the answer's JSON (None if empty), the headers."""
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = token
    request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, raw, answered = response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        status, raw, answered = error.code, error.read(), dict(error.headers)
    return status, json.loads(raw) if raw else None, answered


def _started(command: list[str], log: Path, env: dict[str, str], pattern: str) -> tuple[Any, str]:
    with log.open("a") as sink:
        process = popen(command, stdout=subprocess.PIPE, stderr=sink, text=True, env=env)
    assert process.stdout is not None
    first = process.stdout.readline()
    match = re.search(pattern, first)
    assert match, first + log.read_text()
    return process, match.group(1)


def _stopped(process: Any, log: Path, last_words: str) -> None:
    process.send_signal(signal.SIGTERM)
    rest, _ = process.communicate(timeout=30)
    assert process.returncode == 0, rest + log.read_text()
    assert last_words in rest, rest


class UpstreamServer:
    """`flagcore serve` on a SQLite file; stopped and started again on the same port."""

    def __init__(self, tmp_path: Path) -> None:
        self.db = tmp_path / "upstream.db"
        self.log = tmp_path / "upstream.log"
        self.port = 0
        self.process: subprocess.Popen[str] | None = None
        self.url = ""
        self.markers = 0

    def start(self) -> UpstreamServer:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("FLAGCORE_")},
            "FLAGCORE_INIT_ADMIN_API_TOKENS": ADMIN,
            "FLAGCORE_INIT_CLIENT_API_TOKENS": CLIENT,
            "FLAGCORE_DB": str(self.db),
            "FLAGCORE_ACCESS_LOG": "all",
            "FLAGCORE_USAGE_FLUSH_INTERVAL_SECONDS": "0.2",
        }
        command = [sys.executable, "-m", "flagcore_http", "serve", "--port", str(self.port)]
        self.process, self.url = _started(
            command, self.log, env, r"listening on (http://127\.0\.0\.1:\d+)"
        )
        self.port = int(self.url.rsplit(":", 1)[1])
        return self

    def stop(self) -> None:
        if self.process is not None:
            _stopped(self.process, self.log, "flagcore stopped")
            self.process = None

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

    def add_flag(self, name: str, *, rollout: int = 100, on: bool = True) -> None:
        base = "/api/admin/projects/default/features"
        self.admin("POST", base, {"name": name})
        self.admin(
            "POST",
            f"{base}/{name}/environments/development/strategies",
            {
                "name": "flexibleRollout",
                "parameters": {"rollout": str(rollout), "stickiness": "userId"},
            },
        )
        if on:
            self.admin("POST", f"{base}/{name}/environments/development/on")

    def switch(self, name: str, on: bool) -> None:
        state = "on" if on else "off"
        self.admin(
            "POST", f"/api/admin/projects/default/features/{name}/environments/development/{state}"
        )

    def frontend_token(self, project: str = "default") -> str:
        created = self.admin(
            "POST",
            "/api/admin/api-tokens",
            {
                "tokenName": "site",
                "type": "frontend",
                "environment": "development",
                "projects": [project],
            },
        )
        return str(created["secret"])

    def client_token(self, name: str, projects: list[str]) -> str:
        created = self.admin(
            "POST",
            "/api/admin/api-tokens",
            {
                "tokenName": name,
                "type": "client",
                "environment": "development",
                "projects": projects,
            },
        )
        return str(created["secret"])

    def requests_logged(self, pattern: str) -> int:
        """Requests in the access log matching ``pattern``, once every request made so far
        is in it (the log is written behind the answers: a marker request is waited for)."""
        self.markers += 1
        marker = f"/health?marker={self.markers}"
        get(self.url + marker, None)
        wait_for(lambda: marker in self.log.read_text())
        return len(re.findall(pattern, self.log.read_text()))


class EdgeProcess:
    """`flagcore edge` in a subprocess, over a data directory kept across restarts."""

    def __init__(self, tmp_path: Path, name: str = "edge") -> None:
        self.data_dir = tmp_path / f"{name}-data"
        self.log = tmp_path / f"{name}.log"
        self.process: subprocess.Popen[str] | None = None
        self.url = ""
        self.port = 0

    def start(self, *args: str, env: dict[str, str] | None = None) -> EdgeProcess:
        """Start with ``args`` (after ``--port`` and ``--data-dir``) and, of the
        ``FLAGCORE_*`` variables, only those ``env`` gives."""
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("FLAGCORE_")},
            **(env or {}),
        }
        command = [
            sys.executable,
            "-m",
            "flagcore_cli",
            "edge",
            "--port",
            str(self.port),
            "--data-dir",
            str(self.data_dir),
            *args,
        ]
        self.process, self.url = _started(
            command, self.log, env, r"edge listening on (http://127\.0\.0\.1:\d+)"
        )
        self.port = int(self.url.rsplit(":", 1)[1])
        return self

    def stop(self) -> None:
        if self.process is not None:
            _stopped(self.process, self.log, "flagcore edge stopped")
            self.process = None

    def fails(self, env: dict[str, str], *args: str) -> tuple[int, str]:
        """A start that should not get as far as listening: its exit code and stderr."""
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("FLAGCORE_")}, **env}
        done = subprocess.run(
            [sys.executable, "-m", "flagcore_cli", "edge", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return done.returncode, done.stderr

    def ready(self) -> dict[str, Any]:
        status, body, _ = get(self.url + "/ready", None)
        return {"status": status, **json.loads(body)}

    def metrics(self) -> dict[str, float]:
        """``/internal-backstage/prometheus`` as {series with its labels: value}."""
        text = get(self.url + "/internal-backstage/prometheus", None)[1].decode()
        return {
            line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line and not line.startswith("#")
        }

    def follows(self, upstream: UpstreamServer, *tokens: str, interval: str = "0.2") -> EdgeProcess:
        args = ["--upstream", upstream.url + "/api", "--interval", interval]
        for token in tokens:
            args += ["--upstream-token", token]
        return self.start(*args, "--metrics-interval", "0.3")


def python_sdk(url: str, token: str, tmp_path: Path, name: str) -> UnleashClient:
    """The official Python SDK (``UnleashClient``) polling ``url`` every second with
    ``token``, its cache in ``tmp_path``; ``destroy()`` it after."""
    client = UnleashClient(
        url=url + "/api",
        app_name=f"edge-{name}",
        instance_id=f"edge-{name}-1",
        refresh_interval=1,
        metrics_interval=1,
        custom_headers={"Authorization": token},
        cache_directory=str(tmp_path / f"sdk-cache-{name}"),
    )
    client.initialize_client()
    return client


class Poller:
    """An SDK's polling of ``path`` at the edge, as fast as it goes, with its ETag; counts
    every status. ``names``: the flags on in the last 200 (client features, or the
    Frontend API's toggles)."""

    def __init__(self, edge: EdgeProcess, token: str, path: str = "/api/client/features") -> None:
        self.edge = edge
        self.token = token
        self.path = path
        self.statuses: Counter[int] = Counter()
        self.names: list[str] = []
        self.paused = threading.Event()
        self.idle = threading.Event()  # set by the poller once paused, between requests
        self.stopped = threading.Event()
        self._etag: str | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self.stopped.is_set():
            if self.paused.is_set():
                self.idle.set()
                self.stopped.wait(0.02)
                continue
            self.idle.clear()
            headers = {**SPEC, **({"If-None-Match": self._etag} if self._etag else {})}
            status, body, answer_headers = get(self.edge.url + self.path, self.token, headers)
            self.statuses[status] += 1
            if status == 200:
                self._etag = answer_headers["ETag"]
                answer = json.loads(body)
                if "toggles" in answer:
                    self.names = sorted(t["name"] for t in answer["toggles"])
                else:
                    self.names = sorted(f["name"] for f in answer["features"] if f["enabled"])
            self.stopped.wait(0.02)

    @property
    def answered(self) -> int:
        return sum(self.statuses.values())

    def pause(self) -> None:
        """Stop polling once the request in flight (if any) is answered."""
        self.paused.set()
        assert self.idle.wait(15), "the poller did not pause"

    def resume(self) -> None:
        self.idle.clear()
        self.paused.clear()

    def close(self) -> None:
        self.stopped.set()
        self._thread.join(timeout=15)
