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
import difflib
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
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

import pytest

from flagcore.service import Service
from flagcore.testkit import FlagsBuilder, seed_service
from flagcore_cli.stores import open_store
from flagcore_http.config import SETTINGS, ServerConfig

__all__ = [
    "ADMIN_TOKEN",
    "FlagcoreServer",
    "StartServer",
    "client_token_for",
    "flagcore_server",
    "flagcore_server_settings",
    "server_variables",
    "start_server",
]

ADMIN_TOKEN = "*:*.flagcore-testkit-admin-secret"
_LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")
# A start takes well under a second on an idle machine; a test machine may be far from idle.
START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0
_KEPT_STDERR = 20_000  # characters of the server's stderr shown when it fails
_VARIABLES = frozenset(setting.variable for setting in SETTINGS)


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


# Settings the kit decides itself: where it listens (``port=`` picks the port), the seeded
# database, and the tokens its `FlagcoreServer` hands out.
_KIT_SETTINGS = {
    "FLAGCORE_HOST": "a test server listens on 127.0.0.1 only",
    "FLAGCORE_PORT": "give the port as flagcore_server(port=...)",
    "FLAGCORE_DB": "the server runs on the database seeded from the flags",
    "FLAGCORE_INIT_ADMIN_API_TOKENS": "the kit's admin token is server.admin_token",
    "FLAGCORE_INIT_CLIENT_API_TOKENS": "the kit's client token is server.client_token",
}


def server_variables(settings: Mapping[str, str]) -> dict[str, str]:
    """``settings`` checked: `ValueError` naming any that is not a ``flagcore serve``
    variable or that the kit sets itself; values must be text, as in the environment."""
    for name, value in settings.items():
        if name not in _VARIABLES:
            near = difflib.get_close_matches(str(name), sorted(_VARIABLES), n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise ValueError(
                f"flagcore_server settings: {name!r} is not a flagcore serve setting{hint}; "
                "`flagcore serve --help` and docs/http.md list them"
            )
        if name in _KIT_SETTINGS:
            raise ValueError(
                f"flagcore_server settings: {name} is the kit's: {_KIT_SETTINGS[name]}"
            )
        if not isinstance(value, str):
            raise ValueError(
                f"flagcore_server settings: {name}={value!r}: give the value as text, as the "
                f"variable would hold it ({name}={str(value)!r})"
            )
    return dict(settings)


def _port(port: int) -> int:
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"flagcore_server port={port!r}: use 0 (a free port) to 65535")
    return port


@contextlib.contextmanager
def start_server(
    builder: FlagsBuilder,
    directory: Path,
    *,
    port: int = 0,
    settings: Mapping[str, str] | None = None,
) -> Iterator[FlagcoreServer]:
    """Seed ``directory``/flagcore.db from ``builder`` (in the builder's environment),
    start ``flagcore serve`` on it on 127.0.0.1 (``port``, 0 for a free one) with
    ``settings`` (``FLAGCORE_*`` variables, e.g. ``{"FLAGCORE_SDK_FETCH_MODE": "streaming"}``),
    and stop it on leaving. A name that is not a ``flagcore serve`` variable, or one the kit
    sets itself, raises `ValueError` before anything is done; a value the server refuses,
    `RuntimeError` with the server's own message."""
    port = _port(port)
    variables_given = server_variables(settings or {})
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
    variables.update(variables_given)
    variables["FLAGCORE_INIT_ADMIN_API_TOKENS"] = ADMIN_TOKEN
    variables["FLAGCORE_INIT_CLIENT_API_TOKENS"] = client_token_for(builder.environment)
    command = [sys.executable, "-m", "flagcore_http", "serve"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--db", str(database)]
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
        lines.put("")  # the end: a server that stopped at once is reported at once

    threading.Thread(target=read, name="flagcore-serve-stdout", daemon=True).start()
    return lines


class StartServer(Protocol):
    """What the ``flagcore_server`` fixture gives: call it to start a server."""

    def __call__(
        self, *, port: int = 0, settings: Mapping[str, str] | None = None
    ) -> FlagcoreServer: ...


@pytest.fixture
def flagcore_server_settings() -> Mapping[str, str]:
    """``FLAGCORE_*`` settings every ``flagcore_server()`` of its scope starts with; none
    here. Override it in a ``conftest.py`` (or a module, or a class) to set them for a
    suite; ``flagcore_server(settings=...)`` adds to them for one server."""
    return {}


@pytest.fixture
def flagcore_server(
    flags: FlagsBuilder,
    tmp_path_factory: pytest.TempPathFactory,
    flagcore_server_settings: Mapping[str, str],
) -> Iterator[StartServer]:
    """Call it to start ``flagcore serve`` on 127.0.0.1, on a temporary SQLite file seeded
    from ``flags`` as they are at the call (define them first); stopped after the test.
    ``port=`` listens there (0, the default, picks a free port); ``settings=`` are
    ``FLAGCORE_*`` variables, over those of the ``flagcore_server_settings`` fixture."""
    suite = server_variables(flagcore_server_settings)
    with contextlib.ExitStack() as servers:

        def start(*, port: int = 0, settings: Mapping[str, str] | None = None) -> FlagcoreServer:
            directory = tmp_path_factory.mktemp("flagcore-server")
            chosen = {**suite, **(settings or {})}
            return servers.enter_context(start_server(flags, directory, port=port, settings=chosen))

        yield start
