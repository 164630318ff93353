"""The request log: which requests get a line at each level (``--access-log``), the
summary that counts the rest, one JSON line per record (``--log-format json``) with its
request id, and never a secret.

A real ``flagcore serve`` writes its log to stderr; each test reads it back after a clean
stop and parses every line as JSON, as a log collector would. Tests of a line's own
properties run at ``--access-log all``, where every request has one.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.http.serving import Running, command, env, start

__all__ = ["start"]  # the fixture, imported to be used here

ADMIN = "*:*.request-log-test-admin-secret"
CLIENT = "default:development.request-log-test-client-secret"
TOKENS = {"FLAGCORE_INIT_ADMIN_API_TOKENS": ADMIN, "FLAGCORE_INIT_CLIENT_API_TOKENS": CLIENT}


def _get(url: str, headers: dict[str, str]) -> tuple[int, Any]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()
            return response.status, response.headers
    except urllib.error.HTTPError as error:
        error.read()
        return error.code, error.headers


def _send(url: str, raw: bytes) -> bytes:
    parts = urlsplit(url)
    assert parts.hostname is not None
    assert parts.port is not None
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(raw)
        return sock.recv(65536)


def _json_lines(server: Running) -> list[dict[str, Any]]:
    """Every line of the server's log, each parsed as one JSON object."""
    lines = server.stderr_path.read_text().splitlines()
    assert lines
    return [json.loads(line) for line in lines]


def _requests(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in _access(records) if r["kind"] == "request"]


def _summaries(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in _access(records) if r["kind"] == "summary"]


def _access(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["logger"] == "flagcore_http.access"]


def test_each_request_is_one_json_line_with_its_fields(start: Any) -> None:
    server = start("--log-format", "json", "--access-log", "all", **TOKENS)
    headers = {"Authorization": CLIENT, "UNLEASH-APPNAME": "checkout-web", "X-Request-Id": "r-1"}
    status, answered = _get(server.url + "/api/client/features", headers)
    assert status == 200
    assert answered["X-Request-Id"] == "r-1"
    server.stop()
    (line,) = [r for r in _requests(_json_lines(server)) if r["request_id"] == "r-1"]
    assert line["method"] == "GET"
    assert line["route"] == "/api/client/features"
    assert line["status"] == 200
    assert line["bytes"] > 0
    assert 0 <= line["duration_ms"] < 10_000
    assert line["app_name"] == "checkout-web"
    assert line["level"] == "info"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", line["time"])


def test_a_request_without_an_id_gets_a_new_one_in_its_answer_and_its_line(start: Any) -> None:
    server = start("--log-format", "json", "--access-log", "all", **TOKENS)
    ids = {_get(server.url + "/health", {})[1]["X-Request-Id"] for _ in range(3)}
    assert len(ids) == 3  # each request its own
    # A 404 (no route), a 405 and a 401 carry one too.
    status, answered = _get(server.url + "/no/such/path", {})
    assert (status, bool(answered["X-Request-Id"])) == (404, True)
    request = urllib.request.Request(server.url + "/health", method="DELETE")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert (refused.value.code, bool(refused.value.headers["X-Request-Id"])) == (405, True)
    refused.value.close()
    status, answered = _get(server.url + "/api/admin/projects", {})
    assert (status, bool(answered["X-Request-Id"])) == (401, True)
    server.stop()
    logged = {r["request_id"] for r in _requests(_json_lines(server)) if r["route"] == "/health"}
    assert logged == ids


def test_a_hostile_request_id_is_replaced_not_echoed(start: Any) -> None:
    server = start("--log-format", "json", "--access-log", "all", **TOKENS)
    hostile = [
        "x" * 129,  # longer than 128
        "<script>alert(1)</script>",
        "id with spaces",
        "id;rm -rf /",
        CLIENT,  # a secret's shape (":" is not allowed)
    ]
    for value in hostile:
        status, answered = _get(server.url + "/health", {"X-Request-Id": value})
        assert status == 200
        assert answered["X-Request-Id"] != value
        assert re.fullmatch(r"[0-9a-f]{12}-[0-9a-f]+", answered["X-Request-Id"])
    longest = "a-Z_0.9" + "x" * 121
    assert _get(server.url + "/health", {"X-Request-Id": longest})[1]["X-Request-Id"] == longest
    raw = _send(server.url, b"GET /health HTTP/1.1\r\nHost: x\r\nX-Request-Id: a\x01b\r\n\r\n")
    assert raw.startswith((b"HTTP/1.1 200", b"HTTP/1.0 400", b"HTTP/1.1 400")), raw
    assert b"a\x01b" not in raw
    server.stop()
    log = server.stderr_path.read_text()
    for value in hostile:
        assert value not in log


def test_no_secret_reaches_a_json_line(start: Any) -> None:
    server = start("--log-format", "json", "--access-log", "all", **TOKENS)
    doomed = "default:development.a-token-secret-to-delete-01"
    query_secret = "0123456789abcdef0123456789abcdef"
    # A token in Authorization, in a path, in a query string; and malformed headers.
    assert _get(server.url + "/api/client/features", {"Authorization": CLIENT})[0] == 200
    assert _get(server.url + "/api/admin/projects", {"Authorization": f"Bearer {ADMIN}"})[0] == 200
    request = urllib.request.Request(
        server.url + f"/api/admin/api-tokens/{doomed}",
        headers={"Authorization": ADMIN},
        method="DELETE",
    )
    try:
        urllib.request.urlopen(request, timeout=10).read()
    except urllib.error.HTTPError as error:
        error.read()
    url = f"/api/client/features?apiKey={query_secret}&token={CLIENT}"
    assert _get(server.url + url, {"Authorization": CLIENT})[0] == 200
    assert _send(
        server.url,
        f"GET /api/client/features HTTP/1.1\r\nAuthorization: {CLIENT}\x01\r\n\r\n".encode(),
    ).startswith(b"HTTP/1.0 400")
    assert _send(
        server.url,
        f"GET /health HTTP/1.1\r\nHost: x\r\nAuthorization : Bearer {ADMIN}\r\n\r\n".encode(),
    )
    server.stop()
    log = server.stderr_path.read_text()
    records = _json_lines(server)  # every line is JSON, the refused requests' lines too
    for secret in (ADMIN, CLIENT, doomed, query_secret, "request-log-test", "a-token-secret"):
        assert secret not in log
    routes = {r["route"] for r in _requests(records)}
    assert "/api/admin/api-tokens/{token}" in routes


def test_a_json_line_holds_no_query_string_nor_raw_path_in_its_message_either(
    start: Any,
) -> None:
    # Plain words, nothing shaped like a secret: only leaving them out keeps them out.
    server = start("--log-format", "json", "--access-log", "all", **TOKENS)
    query = "/api/client/features?x=plain-query-word&environment=development"
    assert _get(server.url + query, {"Authorization": CLIENT, "X-Request-Id": "q-1"})[0] == 200
    assert _get(server.url + "/no-such-plain-path", {"X-Request-Id": "q-2"})[0] == 404
    server.stop()
    log = server.stderr_path.read_text()
    assert "plain-query-word" not in log
    assert "no-such-plain-path" not in log
    lines = {r["request_id"]: r for r in _requests(_json_lines(server))}
    assert lines["q-1"]["message"].startswith('127.0.0.1 "GET /api/client/features" 200 ')
    assert lines["q-1"]["message"].endswith(" q-1")
    assert '"GET /{unmatched_path}" 404 ' in lines["q-2"]["message"]


def test_the_log_level_leaves_requests_out_above_info(start: Any) -> None:
    server = start(FLAGCORE_LOG_FORMAT="json", FLAGCORE_LOG_LEVEL="warning", **TOKENS)
    assert _get(server.url + "/health", {})[0] == 200
    server.stop()
    log = server.stderr_path.read_text()
    assert all(json.loads(line)["level"] != "info" for line in log.splitlines())


def test_the_text_format_stays_the_default_and_names_the_request_id(start: Any) -> None:
    server = start("--access-log", "all", **TOKENS)
    assert _get(server.url + "/health", {"X-Request-Id": "text-7"})[0] == 200
    server.stop()
    (line,) = [x for x in server.stderr_path.read_text().splitlines() if "text-7" in x]
    assert '"GET /health" 200' in line
    assert line.endswith(" text-7")


def test_a_bad_log_setting_stops_the_start_naming_it() -> None:
    for args, variables, named in (
        (["--log-format", "xml"], {}, "--log-format='xml': use text, json"),
        ([], {"FLAGCORE_LOG_LEVEL": "loud"}, "FLAGCORE_LOG_LEVEL='loud': use debug, info"),
    ):
        done = subprocess.run(
            command("serve", "--db", ":memory:", *args),
            capture_output=True,
            text=True,
            env=env(**variables),
            timeout=30,
        )
        assert done.returncode == 2
        assert named in done.stderr
