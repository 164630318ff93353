"""What `flagcore serve` writes to its log: one line per record, no forged lines, no secrets."""

from __future__ import annotations

import io
import logging
import re
import socket
import time
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from flagcore_http.logs import LINE_FORMAT, SafeFormatter, redacted
from tests.http.serving import start

__all__ = ["start"]  # the fixture, imported to be used here

ADMIN = "*:*.log-test-admin-secret"
CLIENT = "default:development.log-test-client-secret"
# What a line of our log starts with: its timestamp (tracebacks continue with "    | ").
_RECORD = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ \S+ ")


def _send(url: str, raw: bytes) -> bytes:
    parts = urlsplit(url)
    assert parts.hostname is not None
    assert parts.port is not None
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(raw)
        return sock.recv(65536)


def _lines_are_records(log: str) -> list[str]:
    """Every line of ``log`` is a record or a traceback continuation; the records."""
    records = []
    for line in log.splitlines():
        if line.startswith("    | ") or line.startswith("warning: "):
            continue
        assert _RECORD.match(line), f"a line that is not a log record: {line!r}"
        records.append(line)
    return records


def test_a_newline_in_a_path_cannot_forge_a_log_line(start: Any) -> None:
    server = start("--body-timeout", "0.5", FLAGCORE_INIT_ADMIN_API_TOKENS=ADMIN)
    forged = "2026-01-01 00:00:00,000 INFO flagcore_http.access FORGED"
    path = "/api/admin/projects/x%0a" + forged.replace(" ", "%20")
    # This body never finishes, so the server logs the path when it drops the connection.
    raw = (
        f"PUT {path} HTTP/1.1\r\nHost: x\r\nAuthorization: {ADMIN}\r\n"
        "Content-Type: application/json\r\nContent-Length: 10\r\n\r\n{"
    ).encode()
    assert _send(server.url, raw) == b""
    assert _send(server.url, f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    time.sleep(0.3)
    server.stop()
    log = server.stderr_path.read_text()
    records = _lines_are_records(log)
    dropped = [r for r in records if "did not arrive" in r]
    assert len(dropped) == 1, log
    assert "/api/admin/projects/x\\x0a2026-01-01 00:00:00,000 INFO" in dropped[0]
    assert not any(line.startswith("2026-01-01") for line in log.splitlines())


def test_no_secret_reaches_the_log(start: Any) -> None:
    server = start(FLAGCORE_INIT_ADMIN_API_TOKENS=ADMIN, FLAGCORE_INIT_CLIENT_API_TOKENS=CLIENT)
    deleted = "default:development.a-secret-to-delete-0001"
    # A refused delete, then a malformed Authorization header (aiohttp quotes raw headers
    # in its error), one with a space before the colon, and ordinary authenticated calls.
    assert _send(
        server.url, f"DELETE /api/admin/api-tokens/{deleted} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    ).startswith(b"HTTP/1.1 401")
    malformed = f"Authorization: {CLIENT}\x01"
    assert _send(
        server.url, f"GET /api/client/features HTTP/1.1\r\n{malformed}\r\n\r\n".encode()
    ).startswith(b"HTTP/1.0 400")
    assert _send(
        server.url,
        f"GET /health HTTP/1.1\r\nHost: x\r\nAuthorization : Bearer {ADMIN}\r\n\r\n".encode(),
    ).startswith(b"HTTP/1.0 400")
    status, created = server.request(
        "POST",
        "/api/admin/api-tokens",
        ADMIN,
        {"tokenName": "doomed", "type": "client", "environment": "development"},
    )
    assert status == 201
    doomed = created["secret"]
    quoted = urllib.request.quote(doomed, safe="")
    assert server.request("DELETE", f"/api/admin/api-tokens/{quoted}", ADMIN)[0] == 200
    assert server.request("GET", "/api/client/features", CLIENT)[0] == 200
    server.stop()
    log = server.stderr_path.read_text()
    _lines_are_records(log)
    for secret in (ADMIN, CLIENT, deleted, doomed):
        for part in (secret, secret.partition(".")[2]):
            assert part not in log
    assert '"DELETE /api/admin/api-tokens/<secret>" 401' in log
    assert '"DELETE /api/admin/api-tokens/<secret>" 200' in log
    assert "Invalid header value char" in log  # what went wrong is still told


def test_a_traceback_keeps_every_line_it_adds_indented_and_redacted() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(SafeFormatter(LINE_FORMAT))
    logger = logging.getLogger("tests.logs.isolated")  # pytest's own handlers stay as they are
    logger.propagate = False
    logger.addHandler(handler)
    try:
        try:
            raise ValueError(f"bad input\n2026-01-01 00:00:00,000 INFO forged {CLIENT}")
        except ValueError:
            logger.exception("unexpected error on GET /x\ny")
    finally:
        logger.removeHandler(handler)
    first, *rest = stream.getvalue().splitlines()
    assert _RECORD.match(first)
    assert first.endswith("ERROR tests.logs.isolated unexpected error on GET /x\\x0ay")
    assert rest
    assert all(line.startswith("    | ") for line in rest)
    assert "    | 2026-01-01 00:00:00,000 INFO forged <secret>" in rest
    assert CLIENT.partition(".")[2] not in stream.getvalue()


def test_the_formatter_escapes_unicode_line_breaks_and_control_characters() -> None:
    formatter = SafeFormatter("%(message)s")
    record = logging.LogRecord(
        "x", logging.INFO, __file__, 1, "a%sb\u2028c\x1bd\x85e", ("\r\n",), None
    )
    assert formatter.format(record) == "a\\x0d\\x0ab\\u2028c\\x1bd\\x85e"


def test_every_secret_shape_is_redacted_in_any_case_and_beside_any_text() -> None:
    # The checks that let a plain line skip a pattern must never let a secret through.
    for text, expected in (
        ("AUTHORIZATION=abc123 next", "AUTHORIZATION=<secret> next"),
        ("authorization: Bearer abc", "authorization: <secret>"),
        ("DELETE /API/ADMIN/API-TOKENS/plain-words", "DELETE /API/ADMIN/API-TOKENS/<secret>"),
        ("é default:development.secret-1 é", "é <secret> é"),
        ("é Authorization: x", "é Authorization: <secret>"),
        ("ü /api/admin/api-tokens/plain ü", "ü /api/admin/api-tokens/<secret> ü"),
        ("id " + "ab" * 16, "id <secret>"),
        ('"GET /ui/set-password?token=Ab-9_x" 200', '"GET /ui/set-password?token=<secret>" 200'),
        ("/ui/set-password?x=1&TOKEN=Ab-9_x&y=2", "/ui/set-password?x=1&TOKEN=<secret>&y=2"),
        ('127.0.0.1 "GET /api/client/features" 304 0 0.000412s 3f9a1c0b2d4e-1a', None),
    ):
        assert redacted(text) == (text if expected is None else expected)
