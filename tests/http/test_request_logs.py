"""The request log: which requests get a line at each level (``--access-log``), the
summary that counts the rest, one JSON line per record (``--log-format json``) with its
request id, and never a secret.

A real ``flagcore serve`` writes its log to stderr; each test reads it back after a clean
stop and parses every line as JSON, as a log collector would. Tests of a line's own
properties run at ``--access-log all``, where every request has one.
"""

from __future__ import annotations

import asyncio
import http.cookiejar
import io
import json
import logging
import re
import socket
import subprocess
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest
from aiohttp import web

from flagcore_http.log_writer import BatchWriter
from flagcore_http.logs import REQUEST_FIELDS, SafeFormatter
from flagcore_http.request_log import MAX_SUMMARY_GROUPS, RequestLog
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


def _call(url: str, method: str, headers: dict[str, str], body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    sent = {**headers, "Content-Type": "application/json"} if data else headers
    request = urllib.request.Request(url, data, sent, method=method)
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
        ([], {"FLAGCORE_ACCESS_LOG": "some"}, "FLAGCORE_ACCESS_LOG='some': use off, default, all"),
        (
            ["--access-log", "all", "--no-access-log"],
            {},
            "--access-log='all' and --no-access-log contradict each other",
        ),
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


# --- levels (issue 26): what gets a line of its own, what is only counted ---


def _poll(server: Running, app: str, rid: str, etag: str | None = None) -> tuple[int, Any]:
    headers = {"Authorization": CLIENT, "UNLEASH-APPNAME": app, "X-Request-Id": rid}
    if etag is not None:
        headers["If-None-Match"] = etag
    return _get(server.url + "/api/client/features", headers)


def _groups(records: list[dict[str, Any]]) -> dict[tuple[Any, ...], int]:
    """The summary lines' counts by (method, route, status, app), summed over lines."""
    counted: dict[tuple[Any, ...], int] = {}
    for line in _summaries(records):
        key = (line["method"], line["route"], line["status"], line["app_name"])
        counted[key] = counted.get(key, 0) + line["requests"]
    return counted


METRICS_BODY = {
    "appName": "checkout-web",
    "instanceId": "i-1",
    "bucket": {
        "start": "2026-11-22T08:23:08.945994537Z",
        "stop": "2026-11-22T08:23:11.469051162Z",
        "toggles": {},
    },
}


def test_every_repeated_poll_gets_its_line_at_the_all_level(start: Any) -> None:
    """Repeated polls are answered by the fast path, which counts its own answers at the
    default level: at ``all`` each of them still has its line, with its status."""
    server = start("--log-format", "json", "--access-log", "all", **TOKENS)
    status, answered = _poll(server, "checkout-web", "poll-1")
    assert status == 200
    assert _poll(server, "checkout-web", "poll-2", answered["ETag"])[0] == 304
    assert _poll(server, "checkout-web", "poll-3")[0] == 200
    server.stop()
    records = _json_lines(server)
    lines = {r["request_id"]: r for r in _requests(records)}
    assert {rid: lines[rid]["status"] for rid in ("poll-1", "poll-2", "poll-3")} == {
        "poll-1": 200,
        "poll-2": 304,
        "poll-3": 200,
    }
    assert lines["poll-3"]["bytes"] > 0
    assert not _summaries(records)


def test_the_default_level_writes_writes_and_refusals_and_counts_the_polls(start: Any) -> None:
    server = start("--log-format", "json", **TOKENS)
    status, answered = _poll(server, "checkout-web", "poll-1")
    assert status == 200
    assert _poll(server, "checkout-web", "poll-2", answered["ETag"])[0] == 304
    assert _poll(server, "checkout-web", "poll-3", answered["ETag"])[0] == 304
    assert _poll(server, "billing", "poll-4")[0] == 200
    sdk = {"Authorization": CLIENT, "UNLEASH-APPNAME": "checkout-web", "X-Request-Id": "sdk-w"}
    url = server.url + "/api/client/metrics"
    assert _call(url, "POST", sdk, METRICS_BODY)[0] == 202
    admin = {"Authorization": ADMIN, "X-Request-Id": "admin-read"}
    assert _get(server.url + "/api/admin/projects", admin)[0] == 200
    url = server.url + "/api/admin/projects/default/features"
    admin = {"Authorization": ADMIN, "X-Request-Id": "admin-write"}
    assert _call(url, "POST", admin, {"name": "logged.flag"})[0] == 201
    assert _get(server.url + "/api/admin/projects", {"X-Request-Id": "refused"})[0] == 401
    assert _get(server.url + "/no/such/path", {"X-Request-Id": "missing"})[0] == 404
    server.stop()
    records = _json_lines(server)
    lines = {r["request_id"]: r for r in _requests(records)}
    assert set(lines) == {"admin-write", "refused", "missing"}
    assert (lines["admin-write"]["method"], lines["admin-write"]["status"]) == ("POST", 201)
    assert lines["admin-write"]["route"] == "/api/admin/projects/{project}/features"
    assert lines["refused"]["status"] == 401
    assert lines["missing"]["route"] == "/{unmatched_path}"
    # The rest, counted at the stop's summary, per method, route, status and application.
    assert _groups(records) == {
        ("GET", "/api/client/features", 200, "checkout-web"): 1,
        ("GET", "/api/client/features", 304, "checkout-web"): 2,
        ("GET", "/api/client/features", 200, "billing"): 1,
        ("POST", "/api/client/metrics", 202, "checkout-web"): 1,
        ("GET", "/api/admin/projects", 200, None): 1,
    }
    summary = _summaries(records)[0]
    assert summary["level"] == "info"
    assert summary["seconds"] >= 0
    assert "request_id" not in summary  # an aggregate; each written line keeps its own
    assert re.fullmatch(
        r'summary \d+s "GET /api/\S+" \d{3} app=("[^"]*"|-) requests=\d+', summary["message"]
    )


def test_a_sign_in_to_the_admin_ui_gets_a_line_at_the_default_level(start: Any) -> None:
    server = start("--log-format", "json", **TOKENS)
    browser = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
    )
    with browser.open(server.url + "/ui/sign-in", timeout=10) as page:
        form = page.read().decode()
    csrf = re.search(r'name="_csrf" value="([^"]+)"', form)
    assert csrf, form
    fields = urllib.parse.urlencode(
        {"token": ADMIN, "_csrf": csrf.group(1), "next": "/ui/applications"}
    )
    request = urllib.request.Request(
        server.url + "/ui/sign-in", fields.encode(), {"X-Request-Id": "sign-in-1"}
    )
    with browser.open(request, timeout=10) as signed_in:
        signed_in.read()
        assert signed_in.url.endswith("/ui/applications")  # signed in and sent on
    server.stop()
    lines = {r["request_id"]: r for r in _requests(_json_lines(server))}
    assert lines["sign-in-1"]["method"] == "POST"
    assert lines["sign-in-1"]["route"] == "/ui/sign-in"
    assert lines["sign-in-1"]["status"] == 303
    log = server.stderr_path.read_text()
    assert ADMIN not in log
    assert ADMIN.partition(".")[2] not in log


def test_a_summary_line_escapes_and_redacts_the_application_name(start: Any) -> None:
    server = start(**TOKENS)  # the text format
    for app in (CLIENT, 'quoted "name" here'):
        assert _poll(server, app, "named")[0] == 200
    server.stop()
    log = server.stderr_path.read_text()
    assert CLIENT not in log
    assert CLIENT.partition(".")[2] not in log
    summaries = [line for line in log.splitlines() if " flagcore_http.access summary " in line]
    assert any(line.endswith(' 200 app="<secret>" requests=1') for line in summaries), log
    assert any(' 200 app="quoted \\"name\\" here" requests=1' in x for x in summaries), log


@pytest.mark.parametrize("off", [["--no-access-log"], ["--access-log", "off"]])
def test_the_off_level_writes_no_request_line_nor_summary(start: Any, off: list[str]) -> None:
    server = start(*off, **TOKENS)
    assert _poll(server, "checkout-web", "p")[0] == 200
    assert _get(server.url + "/api/admin/projects", {})[0] == 401
    server.stop()
    assert "flagcore_http.access" not in server.stderr_path.read_text()


def test_every_worker_writes_its_lines_and_its_summary(start: Any) -> None:
    server = start("--workers", "2", "--log-format", "json", **TOKENS)
    polls = 12  # each on a new connection: the kernel spreads them over the workers
    for number in range(polls):
        assert _poll(server, "checkout-web", f"w-{number}")[0] == 200
    assert _get(server.url + "/api/admin/projects", {"X-Request-Id": "w-refused"})[0] == 401
    server.stop()
    records = _json_lines(server)
    assert [r["request_id"] for r in _requests(records)] == ["w-refused"]
    assert _groups(records) == {("GET", "/api/client/features", 200, "checkout-web"): polls}


# --- the level's rules and the writer, on an aiohttp server in this process ---


class _Kept(logging.Handler):
    """Keeps every record it is given, to read back what a logger was sent."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def kept() -> Any:
    logger = logging.getLogger("tests.request_log.isolated")
    logger.propagate = False  # pytest's own handlers stay as they are
    logger.setLevel(logging.INFO)
    handler = _Kept()
    logger.addHandler(handler)
    yield logger, handler.records
    logger.removeHandler(handler)


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields = getattr(record, REQUEST_FIELDS)
    assert isinstance(fields, dict)
    return fields


async def _waited(records: list[logging.LogRecord], kind: str) -> list[dict[str, Any]]:
    """The fields of the records of ``kind``, once there is one (the server's own timer)."""
    for _ in range(500):
        found = [_fields(r) for r in records if _fields(r)["kind"] == kind]
        if found:
            return found
        await asyncio.sleep(0.01)
    raise AssertionError(f"no {kind} line")


async def test_a_slow_request_gets_a_line_and_the_summary_comes_every_period(kept: Any) -> None:
    logger, records = kept

    async def quick(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(0.2)
        return web.Response(text="ok", headers={"X-Request-Id": "slow-1"})

    app = web.Application()
    app.router.add_get("/quick", quick)
    app.router.add_get("/slow", slow)
    request_log = RequestLog("default", logger, slow_seconds=0.1, summary_seconds=0.05)
    runner = web.AppRunner(app, **request_log.runner_options())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    request_log.start()
    port = runner.addresses[0][1]
    try:
        async with aiohttp.ClientSession(f"http://127.0.0.1:{port}") as session:
            for _ in range(3):
                async with session.get("/quick", headers={"UNLEASH-APPNAME": "app-1"}) as r:
                    assert r.status == 200
            async with session.get("/slow") as r:
                assert r.status == 200
        (summary,) = await _waited(records, "summary")  # written by the timer, not a stop
        (line,) = [_fields(r) for r in records if _fields(r)["kind"] == "request"]
    finally:
        await runner.cleanup()
        request_log.stop()
    assert (line["route"], line["status"], line["request_id"]) == ("/slow", 200, "slow-1")
    assert line["duration_ms"] >= 100
    assert (summary["method"], summary["route"], summary["status"]) == ("GET", "/quick", 200)
    assert (summary["app_name"], summary["requests"]) == ("app-1", 3)


def test_the_summary_keeps_a_bounded_number_of_groups(kept: Any) -> None:
    logger, records = kept
    request_log = RequestLog("default", logger)
    assert request_log.summary is not None
    # Application names are the client's to choose: past the bound they share one group.
    for number in range(MAX_SUMMARY_GROUPS + 5):
        request_log.summary.count("GET", "/api/client/features", 304, f"app-{number}")
    request_log.summary.count("GET", "/api/client/features", 304, "app-0")
    request_log.write_summary()
    lines = [_fields(r) for r in records]
    assert len(lines) == MAX_SUMMARY_GROUPS + 1
    (other,) = [line for line in lines if line.get("other_apps")]
    assert (other["app_name"], other["requests"]) == (None, 5)
    assert next(line for line in lines if line["app_name"] == "app-0")["requests"] == 2
    assert "(other apps)" in records[-1].getMessage()
    records.clear()
    request_log.write_summary()  # nothing counted since: no line
    assert records == []


def test_records_are_formatted_and_written_on_the_writer_thread_in_order() -> None:
    formatted_on: set[str] = set()

    class Noting(SafeFormatter):
        def format(self, record: logging.LogRecord) -> str:
            formatted_on.add(threading.current_thread().name)
            return super().format(record)

    stream = io.StringIO()
    writer = BatchWriter(stream, Noting("%(message)s"))
    try:
        for number in range(300):
            record = logging.LogRecord("x", logging.INFO, __file__, 1, "line %d", (number,), None)
            writer.handle(record)
        for _ in range(500):  # the writer's thread wakes every 0.1 s
            if stream.getvalue().count("\n") == 300:
                break
            threading.Event().wait(0.01)
    finally:
        writer.close()
    assert stream.getvalue().splitlines() == [f"line {n}" for n in range(300)]
    assert formatted_on == {"flagcore-log-writer"}


def test_a_log_reader_that_stops_reading_blocks_no_one_and_drops_past_the_bound() -> None:
    reading = threading.Event()
    stuck = threading.Event()

    class StalledPipe(io.StringIO):
        """A log collector that stops reading until it is let go."""

        def write(self, text: str) -> int:
            stuck.set()
            reading.wait(10)
            return super().write(text)

    stream = StalledPipe()
    writer = BatchWriter(stream, SafeFormatter("%(message)s"), max_pending=10)
    try:
        writer.handle(logging.LogRecord("x", logging.WARNING, "", 0, "first", (), None))
        assert stuck.wait(10)  # the writer's thread is blocked in write(); this one is not
        for number in range(25):
            record = logging.LogRecord("x", logging.INFO, "", 0, "line %d", (number,), None)
            writer.handle(record)
        assert writer.dropped == 15
    finally:
        reading.set()
        writer.close()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "first"
    assert lines[1:11] == [f"line {n}" for n in range(10)]
    assert lines[11:] == [
        "15 log records dropped: more than 10 were waiting to be written (is the log's "
        "reader keeping up?)"
    ]
