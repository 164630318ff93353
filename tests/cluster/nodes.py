"""`flagcore serve` nodes as real subprocesses over one PostgreSQL database."""

from __future__ import annotations

import json
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.forkserver import popen
from tests.http.serving import command, env

__all__ = ["ADMIN", "CLIENT", "Node", "start_node"]

ADMIN = "*:*.cluster-admin-secret-0123456789"
CLIENT = "default:development.cluster-client-secret-0123456789"


class Node:
    """One started node: its URL and plain blocking HTTP helpers."""

    def __init__(self, process: subprocess.Popen[str], stderr: Path) -> None:
        self.process = process
        self.stderr = stderr
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "listening on http://127.0.0.1:" in line, line + stderr.read_text()
        self.url = line.split("listening on ", 1)[1].split(" ", 1)[0]
        self.start_line = line

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = ADMIN,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        if token is not None:
            all_headers["Authorization"] = token
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data, all_headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=15) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read()

    def json(self, method: str, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
        status, _headers, raw = self.request(method, path, body, **kw)
        return status, json.loads(raw) if raw else None

    def features(self, etag: str | None = None) -> tuple[int, dict[str, str], bytes]:
        headers = {"If-None-Match": etag} if etag else {}
        return self.request("GET", "/api/client/features", token=CLIENT, headers=headers)

    def stop(self) -> None:
        stop(self.process)


def stop(process: subprocess.Popen[str]) -> None:
    """SIGTERM (SIGKILL after 20 s), and wait."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.communicate(timeout=20)
            return
        except subprocess.TimeoutExpired:
            process.kill()
    process.communicate(timeout=20)


def start_node(
    url: str, directory: Path, *args: str, db_in_env: bool = False, **variables: str
) -> subprocess.Popen[str]:
    """Start a node (not waiting for it): `node` waits for its start line. ``db_in_env``
    names the database in ``FLAGCORE_DB`` instead of ``--db``."""
    stderr = directory / f"node-{time.monotonic_ns()}.stderr"
    if db_in_env:
        variables["FLAGCORE_DB"] = url
    where = () if db_in_env else ("--db", url)
    with stderr.open("w") as sink:
        process = popen(
            command("serve", "--port", "0", *where, "--no-access-log", *args),
            stdout=subprocess.PIPE,
            stderr=sink,
            text=True,
            env=env(
                FLAGCORE_INIT_ADMIN_API_TOKENS=ADMIN,
                FLAGCORE_INIT_CLIENT_API_TOKENS=CLIENT,
                FLAGCORE_DB_REVISION_CHECK_INTERVAL="1",
                **variables,
            ),
        )
    process.stderr_path = stderr  # type: ignore[attr-defined]
    return process


def node(process: subprocess.Popen[str]) -> Node:
    return Node(process, process.stderr_path)  # type: ignore[attr-defined]
