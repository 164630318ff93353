"""A real Unleash 8.2 server on 127.0.0.1, for benchmarks that compare flagcore side by side.

Importable by any benchmark::

    from benchmarks.unleash_peer import start_unleash, seed_flags

    base_url, admin_token, frontend_token, client_token, stop = start_unleash()
    try:
        ...  # Unleash's admin API with admin_token, /api/frontend with frontend_token,
        ...  # /api/client/features with client_token
    finally:
        stop()

What it does, once per call:

1. ``npm install unleash-server@8.2.0`` into ``~/.cache/flagcore-bench/unleash-8.2`` the
   first time (``FLAGCORE_BENCH_UNLEASH_DIR`` moves it); later calls reuse it. Unleash 8.2
   declares ``node >= 22`` but runs on the machine's node 20.
2. Starts a private PostgreSQL 16 with `pgserver` (PyPI, in our ``test`` extra) in a
   temporary directory, on a Unix socket, and creates the ``unleash`` database. Or uses
   ``FLAGCORE_BENCH_UNLEASH_DB`` (a ``postgresql://`` URL of an empty database).
3. Runs a small launcher (written next to the install) with node:
   ``require('unleash-server').start({...})`` on a free port, open-source authentication
   with API tokens only, the three tokens from ``INIT_*_API_TOKENS``, no telemetry or
   version check (nothing leaves the machine), log level ``warn``, and the per-IP limits
   that would otherwise measure Unleash's rate limiter instead of Unleash raised to 10
   million a minute (``SDK_API_RATE_LIMIT_PER_MINUTE``,
   ``TOKEN_AUTHENTICATION_RATE_LIMIT_PER_MINUTE``, the metrics and registration limits).
   Everything else is Unleash's default (its pool of 4 database connections, one
   process).
4. Waits until ``/health`` answers (the first start runs Unleash's migrations, ~20-60 s).

``seed_flags`` writes flags through the admin API paths both servers share
(``/api/admin/projects/default/features...``), so one seeding function feeds both.
``wait_for_frontend`` polls ``/api/frontend`` until the seeded flags show: Unleash's
Frontend API answers from a cache that follows writes a few seconds late.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

__all__ = [
    "ADMIN_TOKEN",
    "CLIENT_TOKEN",
    "FRONTEND_TOKEN",
    "UNLEASH_VERSION",
    "Stop",
    "admin_request",
    "install_unleash",
    "seed_flags",
    "start_unleash",
    "wait_for_frontend",
]

UNLEASH_VERSION = "8.2.0"
ADMIN_TOKEN = "*:*.peer-bench-admin-secret"
FRONTEND_TOKEN = "default:development.peer-bench-frontend-secret"
CLIENT_TOKEN = "default:development.peer-bench-client-secret"
RAISED_LIMIT = str(10_000_000)

_LAUNCHER = r"""
// Written by benchmarks/unleash_peer.py: starts Unleash with the options in
// FLAGCORE_PEER_OPTIONS (JSON) and prints one line, "listening <port>", once it serves.
const unleash = require('unleash-server');
const options = JSON.parse(process.env.FLAGCORE_PEER_OPTIONS);
unleash
  .start({
    ...options,
    authentication: { type: 'open-source', enableApiToken: true, createAdminUser: false },
    versionCheck: { enable: false },
    telemetry: false,
    logLevel: 'warn',
  })
  .then(() => console.log(`listening ${options.server.port}`))
  .catch((error) => {
    console.error(error);
    process.exit(1);
  });
"""


def _cache_dir() -> Path:
    given = os.environ.get("FLAGCORE_BENCH_UNLEASH_DIR")
    return Path(given) if given else Path.home() / ".cache" / "flagcore-bench" / "unleash-8.2"


def install_unleash() -> Path:
    """The folder holding ``node_modules/unleash-server`` 8.2 (installed on first use)."""
    folder = _cache_dir()
    installed = folder / "node_modules" / "unleash-server" / "package.json"
    if installed.is_file():
        version = json.loads(installed.read_text())["version"]
        if version == UNLEASH_VERSION:
            return folder
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not on PATH: cannot install unleash-server")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "package.json").write_text('{"name": "unleash-peer", "private": true}\n')
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", f"unleash-server@{UNLEASH_VERSION}"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        raise RuntimeError(f"npm install unleash-server failed: {done.stderr[-1000:]}")
    return folder


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _postgres() -> tuple[dict[str, Any], Callable[[], None], int | None]:
    """Unleash's ``db`` option, how to stop the database (a private pgserver) and its
    postmaster's pid (None for a database we did not start)."""
    given = os.environ.get("FLAGCORE_BENCH_UNLEASH_DB")
    if given:
        parts = urllib.parse.urlsplit(given)
        query = urllib.parse.parse_qs(parts.query)
        return (
            {
                "host": query.get("host", [parts.hostname or "127.0.0.1"])[0],
                "port": parts.port or 5432,
                "user": urllib.parse.unquote(parts.username or "postgres"),
                "password": urllib.parse.unquote(parts.password or ""),
                "database": parts.path.lstrip("/") or "unleash",
                "ssl": False,
            },
            lambda: None,
            None,
        )
    with warnings.catch_warnings():
        # platformdirs warns that XDG_RUNTIME_DIR is unset; pgserver copes.
        warnings.simplefilter("ignore")
        import pgserver

    server: Any = pgserver.get_server(
        tempfile.mkdtemp(prefix="flagcore-unleash-pg-"), cleanup_mode="delete"
    )
    server.psql("CREATE DATABASE unleash;")
    info = server.get_postmaster_info()
    db = {
        "host": str(info.socket_dir),  # node-postgres reads a leading "/" as a socket dir
        "port": int(info.port or 5432),
        "user": "postgres",
        "password": "",
        "database": "unleash",
        "ssl": False,
    }
    return db, server.cleanup, int(info.pid)


def admin_request(base_url: str, token: str, method: str, path: str, body: Any = None) -> Any:
    """One JSON request; raises with the server's answer on a status >= 400."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": token, "Content-Type": "application/json"}
    request = urllib.request.Request(base_url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read()
    except urllib.error.HTTPError as error:
        raise RuntimeError(f"{method} {path}: {error.code} {error.read()[:500]!r}") from None
    return json.loads(raw) if raw else None


def seed_flags(
    base_url: str, admin_token: str, flags: int, environment: str = "development"
) -> list[str]:
    """``flags`` flags in project ``default``, the same on flagcore and Unleash.

    Each is a flexible rollout (20-99 %) with a ``plan IN (free, pro, team)`` constraint;
    every third has two strategy variants with payloads (a string and a JSON one); every tenth stays
    off in ``environment``. Returns the names of the flags turned on.
    """
    features = "/api/admin/projects/default/features"
    enabled = []
    for index in range(flags):
        name = f"bench.flag-{index:03d}"
        admin_request(base_url, admin_token, "POST", features, {"name": name})
        env = f"{features}/{name}/environments/{environment}"
        strategy: dict[str, Any] = {
            "name": "flexibleRollout",
            "parameters": {
                "rollout": str(20 + index % 80),
                "stickiness": "default",
                "groupId": name,
            },
            "constraints": [
                {"contextName": "plan", "operator": "IN", "values": ["free", "pro", "team"]}
            ],
        }
        if index % 3 == 0:
            # Strategy variants: Unleash 8.2 refuses environment variants on new flags.
            strategy["variants"] = [
                {
                    "name": "blue",
                    "weight": 500,
                    "weightType": "variable",
                    "stickiness": "default",
                    "payload": {"type": "string", "value": "#00f"},
                },
                {
                    "name": "green",
                    "weight": 500,
                    "weightType": "variable",
                    "stickiness": "default",
                    "payload": {"type": "json", "value": '{"a": 1}'},
                },
            ]
        admin_request(base_url, admin_token, "POST", f"{env}/strategies", strategy)
        if index % 10 != 9:
            admin_request(base_url, admin_token, "POST", f"{env}/on")
            enabled.append(name)
    return enabled


def wait_for_frontend(
    base_url: str, frontend_token: str, names: Iterable[str], timeout: float = 60.0
) -> float:
    """Seconds until ``/api/frontend`` lists every flag of ``names`` for some plan-holder.

    Asks as many users as it takes (rollouts leave some users out): a flag counts as
    shown once any of them gets it.
    """
    wanted = set(names)
    began = time.monotonic()
    while True:
        seen: set[str] = set()
        for user in range(40):
            query = f"userId=u{user}&properties%5Bplan%5D=pro"
            request = urllib.request.Request(
                f"{base_url}/api/frontend?{query}", headers={"Authorization": frontend_token}
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                seen |= {toggle["name"] for toggle in json.load(response)["toggles"]}
        if wanted <= seen:
            return time.monotonic() - began
        if time.monotonic() - began > timeout:
            raise RuntimeError(f"the Frontend API still lacks {sorted(wanted - seen)[:5]}")
        time.sleep(0.5)


def _wait_healthy(base_url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 180  # first start: Unleash runs its migrations
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"Unleash exited {process.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{base_url}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"Unleash did not answer /health: {log.read_text()[-2000:]}")


class Stop:
    """Ends Unleash and its private PostgreSQL when called; ``pids`` are their processes
    (node, then the postmaster), for benchmarks that measure the CPU the stack used.

    ``stop_server()`` and ``start_server()`` stop Unleash alone and start it again on the
    same port and database (an outage of the server, its data kept)."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        stop_db: Callable[[], None],
        log: Path,
        launch: Callable[[], subprocess.Popen[bytes]] | None = None,
        base_url: str = "",
    ) -> None:
        self.process = process
        self.stop_db = stop_db
        self.log = log
        self.pids: list[int] = [process.pid]
        self._launch = launch
        self._base_url = base_url

    def stop_server(self) -> None:
        """Stop node (SIGTERM, as an orchestrator stops it); PostgreSQL keeps running."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=20)

    def start_server(self) -> None:
        """Start Unleash again on the same port and database; returns once it is healthy."""
        assert self._launch is not None, "started without a launcher"
        self.stop_server()
        self.process = self._launch()
        self.pids[0] = self.process.pid
        _wait_healthy(self._base_url, self.process, self.log)

    def __call__(self) -> None:
        self.stop_server()
        self.stop_db()
        self.log.unlink(missing_ok=True)


def start_unleash() -> tuple[str, str, str, str, Stop]:
    """Start Unleash 8.2: ``(base_url, admin_token, frontend_token, client_token, stop)``.

    ``stop()`` ends node and the private PostgreSQL (and removes its files); call it in
    a ``finally``. ``stop.pids`` are node's and PostgreSQL's process ids. Unleash's output
    goes to a temporary log (removed by ``stop()``) whose tail is in any error.
    """
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("node is not on PATH: cannot run Unleash")
    folder = install_unleash()
    launcher = folder / "flagcore_launcher.js"
    launcher.write_text(_LAUNCHER)
    db, stop_db, postgres_pid = _postgres()
    port = _free_port()
    options = {"db": db, "server": {"port": port, "host": "127.0.0.1"}}
    env = {
        **os.environ,
        "FLAGCORE_PEER_OPTIONS": json.dumps(options),
        "INIT_ADMIN_API_TOKENS": ADMIN_TOKEN,
        "INIT_FRONTEND_API_TOKENS": FRONTEND_TOKEN,
        "INIT_BACKEND_API_TOKENS": CLIENT_TOKEN,
        "SDK_API_RATE_LIMIT_PER_MINUTE": RAISED_LIMIT,
        "TOKEN_AUTHENTICATION_RATE_LIMIT_PER_MINUTE": RAISED_LIMIT,
        "FRONTEND_METRICS_RATE_LIMIT_PER_MINUTE": RAISED_LIMIT,
        "REGISTER_FRONTEND_RATE_LIMIT_PER_MINUTE": RAISED_LIMIT,
        "CLIENT_METRICS_RATE_LIMIT_PER_MINUTE": RAISED_LIMIT,
        "REGISTER_CLIENT_RATE_LIMIT_PER_MINUTE": RAISED_LIMIT,
        "NODE_ENV": "production",
    }
    log = Path(tempfile.mkstemp(prefix="flagcore-unleash-", suffix=".log")[1])

    def launch() -> subprocess.Popen[bytes]:
        with log.open("ab") as sink:
            return subprocess.Popen(
                [node, str(launcher)], cwd=folder, env=env, stdout=sink, stderr=subprocess.STDOUT
            )

    base_url = f"http://127.0.0.1:{port}"
    stop = Stop(launch(), stop_db, log, launch, base_url)
    if postgres_pid is not None:
        stop.pids.append(postgres_pid)
    try:
        _wait_healthy(base_url, stop.process, log)
    except BaseException:
        stop()  # the error carries the log's tail
        raise
    return base_url, ADMIN_TOKEN, FRONTEND_TOKEN, CLIENT_TOKEN, stop


if __name__ == "__main__":  # a smoke run: start, seed 5 flags, show the Frontend API
    url, admin, frontend, _client, halt = start_unleash()
    try:
        print(f"Unleash {UNLEASH_VERSION} at {url}")
        names = seed_flags(url, admin, 5)
        waited = wait_for_frontend(url, frontend, names)
        print(f"frontend API shows the seeded flags after {waited:.1f} s")
    finally:
        halt()
