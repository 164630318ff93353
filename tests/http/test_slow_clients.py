"""Slow and too many clients against `flagcore serve`: real sockets, a real subprocess."""

from __future__ import annotations

import json
import select
import socket
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.http.serving import Running, command, env, start

__all__ = ["start"]  # the fixture, imported to be used here

ADMIN = "*:*.slow-clients-admin-secret"


def _address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    assert parts.hostname is not None
    assert parts.port is not None
    return parts.hostname, parts.port


def _closed(sock: socket.socket) -> bool:
    """Whether the server has closed ``sock`` (without waiting)."""
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    try:
        return sock.recv(65536) == b""
    except ConnectionError:
        return True


def _trickle_until_dropped(
    socks: list[socket.socket], payload: bytes, deadline_s: float
) -> dict[int, float]:
    """Send ``payload`` a byte per socket every 0.1 s; when each socket was dropped."""
    started = time.monotonic()
    dropped: dict[int, float] = {}
    position = 0
    while len(dropped) < len(socks) and time.monotonic() - started < deadline_s:
        for index, sock in enumerate(socks):
            if index in dropped:
                continue
            if _closed(sock):
                dropped[index] = time.monotonic() - started
                continue
            try:
                sock.send(payload[position % len(payload) : position % len(payload) + 1])
            except OSError:
                dropped[index] = time.monotonic() - started
        position += 1
        time.sleep(0.1)
    return dropped


def test_headers_sent_byte_by_byte_are_dropped_after_the_header_timeout(start: Any) -> None:
    server = start("--header-timeout", "1")
    socks = [socket.create_connection(_address(server.url), timeout=5) for _ in range(30)]
    try:
        # The request line and then header lines, forever: never a blank line.
        endless = b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"a" * 10_000
        time.sleep(0.2)
        status, body = server.request("GET", "/health", None)
        assert (status, body["health"]) == (200, "GOOD")
        dropped = _trickle_until_dropped(socks, endless, deadline_s=15)
        assert len(dropped) == len(socks), dropped
        assert min(dropped.values()) > 0.5  # not before the timeout…
        assert max(dropped.values()) < 8  # …and not much after it
        assert server.request("GET", "/health", None)[0] == 200
    finally:
        for sock in socks:
            sock.close()
    server.stop()


def test_an_idle_keep_alive_connection_closes_after_the_header_timeout(start: Any) -> None:
    server = start("--header-timeout", "1")
    with socket.create_connection(_address(server.url), timeout=5) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        started = time.monotonic()
        sock.settimeout(10)
        assert sock.recv(65536) == b""  # the server closed it
        assert 0.5 < time.monotonic() - started < 8
    server.stop()


def test_a_body_sent_byte_by_byte_is_dropped_after_the_body_timeout(start: Any) -> None:
    server = start("--body-timeout", "1", FLAGCORE_INIT_ADMIN_API_TOKENS=ADMIN)
    body = json.dumps({"id": "slowproject", "name": "slow"}).encode()
    head = (
        b"POST /api/admin/projects HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Authorization: {ADMIN}\r\nContent-Length: {len(body) + 1000}\r\n\r\n".encode()
    )
    socks = [socket.create_connection(_address(server.url), timeout=5) for _ in range(5)]
    try:
        for sock in socks:
            sock.sendall(head + body[:1])
        dropped = _trickle_until_dropped(socks, body[1:] + b" " * 1000, deadline_s=15)
        assert len(dropped) == len(socks), dropped
        assert max(dropped.values()) < 8
        assert server.request("GET", "/health", None)[0] == 200
    finally:
        for sock in socks:
            sock.close()
    status, projects = server.request("GET", "/api/admin/projects", ADMIN)
    assert status == 200
    assert "slowproject" not in json.dumps(projects)  # nothing half-received was stored
    server.stop()
    assert "its request body did not arrive within 1 s" in server.stderr_path.read_text()


def test_a_body_that_arrives_in_time_is_served(start: Any) -> None:
    server = start("--body-timeout", "1", FLAGCORE_INIT_ADMIN_API_TOKENS=ADMIN)
    with socket.create_connection(_address(server.url), timeout=5) as sock:
        body = json.dumps({"id": "quick", "name": "quick"}).encode()
        sock.sendall(
            b"POST /api/admin/projects HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: {ADMIN}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        )
        time.sleep(0.5)  # slow, but within the body timeout
        sock.sendall(body)
        assert sock.recv(65536).startswith(b"HTTP/1.1 201")
        time.sleep(1.5)  # that request's body timer must not close the kept-alive connection
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
    status, projects = server.request("GET", "/api/admin/projects", ADMIN)
    assert status == 200
    assert "quick" in json.dumps(projects)
    server.stop()


def test_connections_past_the_limit_get_503_and_the_server_recovers(start: Any) -> None:
    server = start("--max-connections", "5", "--header-timeout", "30")
    address = _address(server.url)
    held = [socket.create_connection(address, timeout=5) for _ in range(5)]
    try:
        time.sleep(0.3)
        with socket.create_connection(address, timeout=5) as extra:
            answer = b""
            while chunk := extra.recv(65536):
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 503")
        assert json.loads(body)["name"] == "ServiceUnavailable"
        held.pop().close()
        time.sleep(0.3)
        assert server.request("GET", "/health", None)[0] == 200
    finally:
        for sock in held:
            sock.close()
    server.stop()
    assert "connection limit reached (5 open)" in server.stderr_path.read_text()


def test_the_connection_limit_is_lowered_to_fit_the_open_file_limit(tmp_path: Path) -> None:
    stderr = tmp_path / "stderr.txt"
    serve = command("serve", "--port", "0", "--db", str(tmp_path / "f.db"))
    with stderr.open("w") as sink:
        process = subprocess.Popen(
            ["sh", "-c", 'ulimit -n 300 && exec "$@"', "sh", *serve],
            stdout=subprocess.PIPE,
            stderr=sink,
            text=True,
            env=env(FLAGCORE_MAX_CONNECTIONS="1000"),
        )
    server = Running(process, stderr)
    assert server.request("GET", "/health", None)[0] == 200
    server.stop()
    assert (
        "warning: the open-file limit is 300: at most 236 connections, not 1000"
        in stderr.read_text()
    )


# --- the admin UI's forms: the same body deadline, read only once it is worth reading ---


def _answer_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    return answer


def _form_head(path: str, length: int) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: x\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


def _wait_for_log(server: Running, text: str, count: int = 1) -> str:
    deadline = time.monotonic() + 15
    while (log := server.stderr_path.read_text()).count(text) < count:
        assert time.monotonic() < deadline, log
        time.sleep(0.05)
    return log


def test_a_ui_form_sent_byte_by_byte_is_dropped_after_the_body_timeout(start: Any) -> None:
    server = start("--body-timeout", "1")
    form = b"_csrf=0&token=" + b"a" * 1000
    socks = [socket.create_connection(_address(server.url), timeout=5) for _ in range(5)]
    try:
        for sock in socks:
            sock.sendall(_form_head("/ui/sign-in", len(form)) + form[:1])
        dropped = _trickle_until_dropped(socks, form[1:], deadline_s=15)
        assert len(dropped) == len(socks), dropped
        assert server.request("GET", "/health", None)[0] == 200
    finally:
        for sock in socks:
            sock.close()
    server.stop()
    log = server.stderr_path.read_text()
    assert "(POST /ui/sign-in): its request body did not arrive within 1 s" in log
    assert "Traceback" not in log


def test_a_form_posted_by_someone_not_signed_in_is_answered_unread(start: Any) -> None:
    server = start("--body-timeout", "30")
    with socket.create_connection(_address(server.url), timeout=10) as sock:
        # Headers only: the 50 kB form never comes, and is not waited for.
        sock.sendall(_form_head("/ui/flags/new", 50_000))
        head = _answer_until_closed(sock).partition(b"\r\n\r\n")[0].decode()
    assert head.startswith("HTTP/1.1 303")
    assert "Location: /ui/sign-in?next=%2F" in head
    assert "Connection: close" in head
    server.stop()


def test_a_sign_in_form_over_its_bound_is_refused_from_its_headers(start: Any) -> None:
    server = start("--body-timeout", "30")
    with socket.create_connection(_address(server.url), timeout=10) as sock:
        sock.sendall(_form_head("/ui/sign-in", 16_385))
        head, _, body = _answer_until_closed(sock).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413")
    assert b"A form is at most 16,384 bytes." in body
    server.stop()


def test_a_client_hanging_up_mid_form_or_mid_body_is_no_server_error(start: Any) -> None:
    server = start(FLAGCORE_INIT_ADMIN_API_TOKENS=ADMIN)
    api_head = (
        b"POST /api/admin/projects HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Authorization: {ADMIN}\r\nContent-Length: 100\r\n\r\n".encode()
    )
    for head, half in ((_form_head("/ui/sign-in", 100), b"token=ab"), (api_head, b'{"id"')):
        with socket.create_connection(_address(server.url), timeout=5) as sock:
            sock.sendall(head + half)
            time.sleep(0.2)  # the handler is reading the body when the client leaves
    _wait_for_log(server, "closed the connection before its request body arrived", 2)
    assert server.request("GET", "/health", None)[0] == 200
    server.stop()
    log = server.stderr_path.read_text()
    assert "Traceback" not in log
    assert '"POST /ui/sign-in" 400' in log
    assert '"POST /api/admin/projects" 400' in log
