"""`flagcore serve` for the tests of code that uses an Unleash SDK: a real server on
127.0.0.1, on a temporary SQLite file seeded from a `flagcore.testkit.FlagsBuilder`, with
a known client token.

A pytest plugin: ``pytest_plugins = ["flagcore_http.pytest_server"]`` in the top
``conftest.py`` gives the ``flagcore_server`` fixture (it uses ``flags`` from
``flagcore.pytest_plugin``, which pytest loads by itself). `start_server` works outside
pytest too (a ``with`` block).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from flagcore.service import Service
from flagcore.testkit import FlagsBuilder, seed_service
from flagcore_http.cli import open_store
from flagcore_http.config import ServerConfig

__all__ = [
    "ADMIN_TOKEN",
    "FlagcoreServer",
    "client_token_for",
    "flagcore_server",
    "start_server",
]

ADMIN_TOKEN = "*:*.flagcore-testkit-admin-secret"
_LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")
# A start takes well under a second on an idle machine; a test machine may be far from idle.
START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0
_KEPT_STDERR = 20_000  # characters of the server's stderr shown when it fails


def client_token_for(environment: str) -> str:
    """The client token a test server accepts for ``environment`` (every project)."""
    return f"*:{environment}.flagcore-testkit-client-secret"


class FlagcoreServer:
    """A running ``flagcore serve``: where it listens and the tokens it accepts.

    Point an Unleash SDK at `api_url` with `client_token` in its ``Authorization``
    header; `admin` calls the admin API (to change flags while the server runs).
    """

    def __init__(
        self, process: subprocess.Popen[str], url: str, environment: str, stderr: Path
    ) -> None:
        self.process = process
        self.url = url
        self.api_url = url + "/api"
        self.environment = environment
        self.client_token = client_token_for(environment)
        self.admin_token = ADMIN_TOKEN
        self._stderr = stderr

    def admin(self, method: str, path: str, body: Any = None) -> Any:
        """Call the admin API (``/api/admin/...``) with the admin token; the JSON answer.
        An error status raises `urllib.error.HTTPError`, whose body names the problem."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Authorization": self.admin_token, "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read()
        return json.loads(text) if text else None

    def stop(self) -> None:
        """SIGTERM, then wait; `RuntimeError` (with its stderr) if it did not exit cleanly."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=STOP_TIMEOUT)
                raise RuntimeError(
                    f"flagcore serve did not stop within {STOP_TIMEOUT:g} s of SIGTERM"
                    + _tail(self._stderr)
                ) from None
        if self.process.returncode != 0:
            raise RuntimeError(
                f"flagcore serve exited with status {self.process.returncode}" + _tail(self._stderr)
            )


@contextlib.contextmanager
def start_server(builder: FlagsBuilder, directory: Path) -> Iterator[FlagcoreServer]:
    """Seed ``directory``/flagcore.db from ``builder`` (in the builder's environment),
    start ``flagcore serve`` on it on a free port of 127.0.0.1, and stop it on leaving."""
    directory.mkdir(parents=True, exist_ok=True)
    database = directory / "flagcore.db"
    # Opened as `flagcore serve` opens it (only the CLI knows the stores).
    store = open_store(ServerConfig(db=str(database)))
    try:
        seed_service(
            Service(store),
            builder.snapshot(),
            builder.environment,
            custom_strategies=builder.custom_strategies,
        )
    finally:
        store.close()
    stderr = directory / "flagcore-serve.stderr"
    variables = {k: v for k, v in os.environ.items() if not k.startswith("FLAGCORE_")}
    variables["FLAGCORE_INIT_ADMIN_API_TOKENS"] = ADMIN_TOKEN
    variables["FLAGCORE_INIT_CLIENT_API_TOKENS"] = client_token_for(builder.environment)
    command = [sys.executable, "-m", "flagcore_http", "serve"]
    command += ["--host", "127.0.0.1", "--port", "0", "--db", str(database)]
    with stderr.open("w") as sink:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=sink, text=True, env=variables
        )
    lines = _read_lines(process)
    try:
        first: str | None = lines.get(timeout=START_TIMEOUT)
    except queue.Empty:
        first = None
    match = _LISTENING.search(first or "")
    if match is None:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=STOP_TIMEOUT)
        said = f" (it said {first.strip()!r})" if first else ""
        raise RuntimeError(
            f"flagcore serve did not start listening within {START_TIMEOUT:g} s{said}"
            + _tail(stderr)
        )
    server = FlagcoreServer(process, match.group(1), builder.environment, stderr)
    try:
        yield server
    except BaseException:
        # The test's own failure is the one to report; the server is stopped all the same.
        with contextlib.suppress(RuntimeError):
            server.stop()
        raise
    server.stop()


def _tail(stderr: Path) -> str:
    try:
        text = stderr.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "; its stderr:\n" + text[-_KEPT_STDERR:] if text else ""


def _read_lines(process: subprocess.Popen[str]) -> queue.Queue[str]:
    """The server's stdout, line by line, read on a thread (so the pipe never fills)."""
    lines: queue.Queue[str] = queue.Queue()
    stdout = process.stdout
    assert stdout is not None

    def read() -> None:
        for line in stdout:
            lines.put(line)
        stdout.close()

    threading.Thread(target=read, name="flagcore-serve-stdout", daemon=True).start()
    return lines


@pytest.fixture
def flagcore_server(
    flags: FlagsBuilder, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[], FlagcoreServer]]:
    """Call it to start ``flagcore serve`` on 127.0.0.1, on a temporary SQLite file seeded
    from ``flags`` as they are at the call (define them first); stopped after the test."""
    with contextlib.ExitStack() as servers:

        def start() -> FlagcoreServer:
            directory = tmp_path_factory.mktemp("flagcore-server")
            return servers.enter_context(start_server(flags, directory))

        yield start
