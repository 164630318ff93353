"""`flagcore serve --workers N`: several processes on one port, one database, one truth.

Each test starts the real server as a subprocess on a temporary SQLite file and talks to
it over fresh connections, so the kernel (SO_REUSEPORT) spreads them over the workers:
whichever worker answers, it must show every write made through any other at once.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from tests.http.serving import Running, start

# Started as the README starts it, a fresh interpreter each (not tests/forkserver.py).
FRESH_INTERPRETER = True

__all__ = ["start"]  # the fixture, imported to be used here

ADMIN = "*:*.workers-admin-secret-0123456789"
CLIENT = "default:development.workers-client-secret-0123456789"
TOKENS = {"FLAGCORE_INIT_ADMIN_API_TOKENS": ADMIN, "FLAGCORE_INIT_CLIENT_API_TOKENS": CLIENT}
FLAGS = "/api/admin/projects/default/features"


def _request(
    server: Running,
    method: str,
    path: str,
    token: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], Any]:
    """One request on a fresh connection (so any worker may answer it)."""
    url = urlparse(server.url)
    connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
    try:
        data = None if body is None else json.dumps(body).encode()
        sent = {"Authorization": token, "Content-Type": "application/json", **(headers or {})}
        connection.request(method, path, data, sent)
        response = connection.getresponse()
        text = response.read()
        return response.status, dict(response.headers), json.loads(text) if text else None
    finally:
        connection.close()


def _workers_of(parent: int) -> set[int]:
    """The pids of ``parent``'s child processes (its workers), from /proc."""
    children = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": the command may hold spaces, so split after ")".
        if int(stat.rpartition(")")[2].split()[1]) == parent:
            children.add(int(entry.name))
    return children


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rpartition(")")[2].split()[0] == "Z"  # exited, not yet reaped
    except OSError:
        return True


def _wait_gone(pids: set[int], seconds: float = 20.0) -> set[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = {pid for pid in pids if not _gone(pid)}
        if not left:
            return left
        time.sleep(0.05)
    return {pid for pid in pids if not _gone(pid)}


def _start_workers(start: Any, count: int = 2) -> Running:
    server: Running = start("--workers", str(count), "--no-access-log", **TOKENS)
    assert f"{count} workers" in server.first_line
    return server


def test_the_start_lines_are_printed_once_and_each_worker_is_a_process(start: Any) -> None:
    server = start("--workers", "2", "--no-access-log")
    assert server.first_line.startswith("flagcore listening on http://127.0.0.1:")
    token_line = server.next_line()
    assert token_line.startswith("admin API token, shown once: *:*.")
    secret = token_line.split(": ", 1)[1].strip()
    assert server.next_line().strip() == f"use it as: export ADMIN_TOKEN='{secret}'"
    workers = _workers_of(server.process.pid)
    assert len(workers) == 2
    # The token made once, in the parent, works on whichever worker answers.
    for _ in range(10):
        assert _request(server, "GET", "/api/admin/projects", secret)[0] == 200
    rest = server.stop()
    assert "admin API token" not in rest
    assert rest.count("flagcore stopped") == 1
    assert "listening" not in rest
    assert _wait_gone(workers) == set()


def test_a_write_through_one_worker_shows_on_the_very_next_read_from_any_worker(
    start: Any,
) -> None:
    server = _start_workers(start)
    spec = {"Unleash-Client-Spec": "5.1.9"}
    etags = set()
    for round_ in range(12):
        # Every worker has the current state cached (many reads on fresh connections),
        # so a worker that missed the write would answer from its stale cache.
        for _ in range(6):
            status, headers, _ = _request(server, "GET", "/api/client/features", CLIENT, None, spec)
            assert status == 200
        name = f"written-{round_}"
        assert _request(server, "POST", FLAGS, ADMIN, {"name": name})[0] == 201
        seen_etag = None
        for _ in range(8):  # the very next reads, each on a fresh connection
            status, headers, body = _request(
                server, "GET", "/api/client/features", CLIENT, None, spec
            )
            assert status == 200
            assert name in [flag["name"] for flag in body["features"]], (round_, headers)
            assert seen_etag in (None, headers["ETag"])  # every worker: the same ETag
            seen_etag = headers["ETag"]
        assert seen_etag not in etags  # a new ETag for the new state
        etags.add(seen_etag)
        # A 304 for the new ETag from whichever worker answers.
        fresh = {**spec, "If-None-Match": seen_etag}
        for _ in range(4):
            assert _request(server, "GET", "/api/client/features", CLIENT, None, fresh)[0] == 304
    server.stop()


class _Stream:
    """An open /api/client/streaming connection, read event by event."""

    def __init__(self, server: Running) -> None:
        url = urlparse(server.url)
        self.sock = socket.create_connection((url.hostname, url.port), timeout=10)
        self.sock.sendall(
            (
                "GET /api/client/streaming HTTP/1.1\r\n"
                f"Host: {url.hostname}:{url.port}\r\n"
                f"Authorization: {CLIENT}\r\n"
                "Accept: text/event-stream\r\n\r\n"
            ).encode()
        )
        self.buffer = b""
        head = self._until(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head

    def _until(self, marker: bytes) -> bytes:
        while marker not in self.buffer:
            chunk = self.sock.recv(65536)
            assert chunk, self.buffer
            self.buffer += chunk
        part, _, self.buffer = self.buffer.partition(marker)
        return part

    def events_until(self, word: bytes, seconds: float) -> bytes:
        """Everything received until ``word`` shows (chunked framing and all)."""
        deadline = time.monotonic() + seconds
        seen = self.buffer
        while word not in seen:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = self.sock.recv(65536)
            assert chunk, seen
            seen += chunk
        return seen

    def close(self) -> None:
        self.sock.close()


def test_streams_on_every_worker_get_a_write_made_through_another(start: Any) -> None:
    server = _start_workers(start)
    # Eight streams on fresh connections: both workers hold some (all on one worker
    # would be a 1 in 128 chance; the test does not depend on it, it only covers less).
    streams = [_Stream(server) for _ in range(8)]
    try:
        for stream in streams:
            stream.events_until(b"unleash-connected", 10)
        started = time.monotonic()
        assert _request(server, "POST", FLAGS, ADMIN, {"name": "streamed-change"})[0] == 201
        for stream in streams:
            received = stream.events_until(b"streamed-change", 10)
            assert b"unleash-updated" in received
        # The hub checks the shared revision every 100 ms: well within a second.
        assert time.monotonic() - started < 5
    finally:
        for stream in streams:
            stream.close()
    server.stop()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_every_worker_exits_when_the_server_is_stopped(start: Any, signum: int) -> None:
    server = _start_workers(start, 3)
    workers = _workers_of(server.process.pid)
    assert len(workers) == 3
    assert _request(server, "GET", "/health", ADMIN)[0] == 200
    server.process.send_signal(signum)
    rest, _ = server.process.communicate(timeout=30)
    assert server.process.returncode == 0, rest + server.stderr_path.read_text()
    assert rest.splitlines()[-1] == "flagcore stopped"
    assert _wait_gone(workers) == set()
    assert "Traceback" not in server.stderr_path.read_text()


def test_a_worker_that_dies_stops_the_server_with_an_error(start: Any) -> None:
    server = _start_workers(start)
    workers = _workers_of(server.process.pid)
    victim = min(workers)
    os.kill(victim, signal.SIGKILL)
    rest, _ = server.process.communicate(timeout=30)
    assert server.process.returncode == 1
    assert "flagcore stopped" in rest
    assert "exited unasked" in server.stderr_path.read_text()
    assert _wait_gone(workers) == set()


def test_workers_stop_when_the_parent_is_killed(start: Any) -> None:
    server = _start_workers(start)
    workers = _workers_of(server.process.pid)
    assert len(workers) == 2
    server.process.kill()  # SIGKILL: the parent cannot pass anything on
    server.process.communicate(timeout=20)
    assert _wait_gone(workers) == set()  # no orphan keeps serving on the port


def test_a_taken_port_stops_a_multi_worker_start_before_any_database_exists(
    tmp_path: Path,
) -> None:
    import subprocess

    from tests.http.serving import command, env

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = str(taken.getsockname()[1])
        result = subprocess.run(
            command("serve", "--workers", "2", "--port", port, "--db", str(tmp_path / "f.db")),
            capture_output=True,
            text=True,
            env=env(),
            timeout=30,
        )
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert not (tmp_path / "f.db").exists()


@pytest.mark.parametrize(
    ("value", "says"),
    [("0", "FLAGCORE_WORKERS='0'"), ("many", "FLAGCORE_WORKERS='many'"), ("999", "1 to 256")],
)
def test_a_bad_worker_count_is_named(tmp_path: Path, value: str, says: str) -> None:
    import subprocess

    from tests.http.serving import command, env

    result = subprocess.run(
        command("serve", "--db", str(tmp_path / "f.db")),
        capture_output=True,
        text=True,
        env=env(FLAGCORE_WORKERS=value),
        timeout=30,
    )
    assert result.returncode == 2
    assert says in result.stderr
    assert not (tmp_path / "f.db").exists()


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_each_event_loop_answers_polls_and_refuses_past_the_connection_limit(
    start: Any, loop: str
) -> None:
    server = start("--loop", loop, "--max-connections", "3", "--header-timeout", "30", **TOKENS)
    spec = {"Unleash-Client-Spec": "5.1.9"}
    status, headers, _ = _request(server, "GET", "/api/client/features", CLIENT, None, spec)
    assert status == 200
    fresh = {**spec, "If-None-Match": headers["ETag"]}
    assert _request(server, "GET", "/api/client/features", CLIENT, None, fresh)[0] == 304
    url = urlparse(server.url)
    held = [socket.create_connection((url.hostname, url.port), timeout=5) for _ in range(3)]
    try:
        time.sleep(0.3)
        with socket.create_connection((url.hostname, url.port), timeout=5) as extra:
            answer = b""
            while chunk := extra.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 503"), answer
    finally:
        for sock in held:
            sock.close()
    server.stop()
    assert "Traceback" not in server.stderr_path.read_text()


def test_several_workers_on_a_private_memory_database_are_refused() -> None:
    import subprocess

    from tests.http.serving import command, env

    result = subprocess.run(
        command("serve", "--workers", "2", "--port", "0", "--db", ":memory:"),
        capture_output=True,
        text=True,
        env=env(),
        timeout=30,
    )
    assert result.returncode == 1
    assert "--workers needs a database file or PostgreSQL" in result.stderr
    assert "listening" not in result.stdout


def test_workers_over_postgresql_each_serve_a_write_made_through_another(tmp_path: Path) -> None:
    """On PostgreSQL a worker learns of another's commit by NOTIFY, as another node does: a
    few milliseconds after the commit, not on the very next request (docs/performance.md)."""
    from tests.cluster.nodes import node, start_node
    from tests.cluster.postgres_server import fresh_database

    server = node(start_node(fresh_database(), tmp_path, "--workers", "2"))
    try:
        assert "2 workers" in server.start_line
        assert len(_workers_of(server.process.pid)) == 2
        for round_ in range(6):
            for _ in range(6):  # both workers have the current state cached
                assert server.features()[0] == 200
            name = f"pg-written-{round_}"
            status, _ = server.json("POST", FLAGS, {"name": name})
            assert status == 201
            written = time.monotonic()
            seen = 0
            while seen < 8:  # eight reads in a row on fresh connections, whichever worker
                status, _headers, body = server.features()
                assert status == 200
                if name in [flag["name"] for flag in json.loads(body)["features"]]:
                    seen += 1
                else:  # a worker that has not had the NOTIFY yet
                    seen = 0
                    assert time.monotonic() - written < 2.0, f"{name} not served by every worker"
                    time.sleep(0.002)
    finally:
        server.stop()
    assert server.process.returncode == 0


def test_uvloop_asked_for_but_not_installed_stops_the_start_and_auto_falls_back(
    tmp_path: Path,
) -> None:
    import subprocess

    from tests.http.serving import command, env

    blocked = tmp_path / "no-uvloop"
    blocked.mkdir()
    (blocked / "uvloop.py").write_text("raise ImportError('uvloop is not installed here')\n")
    without = env(PYTHONPATH=str(blocked))
    result = subprocess.run(
        command("serve", "--loop", "uvloop", "--port", "0", "--db", str(tmp_path / "f.db")),
        capture_output=True,
        text=True,
        env=without,
        timeout=30,
    )
    assert result.returncode == 1
    assert "--loop uvloop: uvloop is not installed" in result.stderr
    assert not (tmp_path / "f.db").exists()
    stderr = tmp_path / "auto.stderr"
    with stderr.open("w") as sink:
        server = subprocess.Popen(
            command("serve", "--port", "0", "--db", str(tmp_path / "g.db"), "--no-access-log"),
            stdout=subprocess.PIPE,
            stderr=sink,
            text=True,
            env=without,
        )
    running = Running(server, stderr)  # auto: asyncio, and it serves
    assert running.request("GET", "/health", None)[0] == 200
    server.send_signal(signal.SIGTERM)
    server.communicate(timeout=20)
    assert server.returncode == 0
