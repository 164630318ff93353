"""The edge of every request: what the server does with the bytes of the request line and
headers before a handler runs (secrets in odd encodings, compressed bodies, CORS caching),
over raw sockets where an HTTP client would clean the request up first."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from flagcore_http.rate_limits import RATE_LIMITS
from tests.http.conftest import ADMIN, CLIENT, Api
from tests.http.serving import start

__all__ = ["start"]  # the fixture, imported to be used here

# Every path that checks an API token, one per kind of route.
TOKEN_PATHS = (
    ("GET", "/api/client/features"),
    ("GET", "/api/client/delta"),
    ("GET", "/api/client/streaming"),
    ("GET", "/api/admin/projects"),
    ("GET", "/api/frontend"),
    ("POST", "/ofrep/v1/evaluate/flags"),
)


@asynccontextmanager
async def serving(service: Service, **settings: Any) -> AsyncIterator[Api]:
    app = create_app(service, ServerConfig(**settings))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        yield Api(client)


class RawResponse:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def json(self) -> Any:
        return json.loads(self.body)


async def raw_request(api: Api, head: bytes, body: bytes = b"") -> RawResponse:
    """Send ``head`` (request line and headers, without the blank line) and ``body``."""
    server = api.client.server
    assert server.port is not None
    reader, writer = await asyncio.open_connection(server.host, server.port)
    writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        writer.write(head + b"\r\n\r\n" + body)
        await writer.drain()
        status_line = await asyncio.wait_for(reader.readline(), 30)
        status = int(status_line.split()[1])
        headers: dict[str, str] = {}
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            key = name.strip().lower()
            headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
        return RawResponse(
            status, headers, await reader.readexactly(int(headers["content-length"]))
        )
    finally:
        writer.close()
        with suppress(ConnectionError):
            await writer.wait_closed()


def head(method: str, path: str, *lines: bytes) -> bytes:
    return b"\r\n".join([f"{method} {path} HTTP/1.1".encode(), b"Host: 127.0.0.1", *lines])


# --- secrets as sent ---


@pytest.mark.parametrize(("method", "path"), TOKEN_PATHS)
async def test_an_authorization_header_that_is_not_utf8_is_a_counted_401(
    service: Service, method: str, path: str
) -> None:
    async with serving(service) as api:
        failures = api.client.server.app[RATE_LIMITS].auth_failures
        assert len(failures) == 0
        request = head(method, path, b"Authorization: \xff\xfe\xc3(", b"Content-Length: 0")
        response = await raw_request(api, request)
        assert response.status == 401
        assert response.json()["name"] == "AuthenticationRequired"
        assert len(failures) == 1  # counted by the tarpit, as any refused secret


async def test_a_secret_padded_with_a_non_breaking_space_is_refused(api: Api) -> None:
    padded = CLIENT.encode() + "\u00a0".encode()
    response = await raw_request(
        api, head("GET", "/api/client/features", b"Authorization: " + padded)
    )
    assert response.status == 401
    bearer = b"Authorization: Bearer \xc2\xa0" + CLIENT.encode()
    assert (await raw_request(api, head("GET", "/api/client/features", bearer))).status == 401


async def test_a_secret_with_http_spaces_and_tabs_around_it_is_accepted(api: Api) -> None:
    spaced = b"Authorization: \t Bearer \t" + CLIENT.encode() + b" \t"
    response = await raw_request(api, head("GET", "/api/client/features", spaced))
    assert response.status == 200


# --- compressed bodies ---


@pytest.mark.parametrize("encoding", [b"gzip", b"deflate", b"br", b"GZIP", b"gzip, identity"])
async def test_a_compressed_body_is_415_before_it_is_read(api: Api, encoding: bytes) -> None:
    body = gzip.compress(b'{"tokenName": "x", "type": "client", "environment": "development"}')
    request = head(
        "POST",
        "/api/admin/api-tokens",
        b"Authorization: " + ADMIN.encode(),
        b"Content-Type: application/json",
        b"Content-Encoding: " + encoding,
        f"Content-Length: {len(body)}".encode(),
    )
    response = await raw_request(api, request, body)
    assert response.status == 415
    assert response.json()["details"] == [
        {"path": "/headers/Content-Encoding", "message": "only identity is accepted"}
    ]
    assert response.headers["connection"] == "close"
    listing = await api.json("GET", "/api/admin/api-tokens")
    assert "x" not in {token["tokenName"] for token in listing["tokens"]}


async def test_identity_is_the_one_content_encoding_accepted(api: Api) -> None:
    body = b'{"tokenName": "plain", "type": "client", "environment": "development"}'
    request = head(
        "POST",
        "/api/admin/api-tokens",
        b"Authorization: " + ADMIN.encode(),
        b"Content-Type: application/json",
        b"Content-Encoding: identity",
        f"Content-Length: {len(body)}".encode(),
    )
    assert (await raw_request(api, request, body)).status == 201


async def test_bodies_reach_handlers_as_sent_never_inflated(service: Service) -> None:
    """aiohttp inflates a gzip body while it parses it, before any handler or token check
    runs: 995 kB inflating to 1 GB cost half a second of CPU on any path, a 404 too. The
    parser must pass bodies on as sent; a route of this test shows what arrives."""

    async def body_length(request: web.Request) -> web.Response:
        return web.json_response({"length": len(await request.read())})

    app = create_app(service, ServerConfig())
    app.router.add_post("/test-only/body-length", body_length)
    body = gzip.compress(b"\0" * 100_000)
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        request = head(
            "POST",
            "/test-only/body-length",
            b"Content-Encoding: gzip",
            f"Content-Length: {len(body)}".encode(),
        )
        response = await raw_request(Api(client), request, body)
        assert response.json() == {"length": len(body)}


# --- CORS caching ---


@pytest.mark.parametrize(
    "origin", [b"Origin: https://app.example.com", b"Origin: https://evil.example", None]
)
async def test_with_an_origin_allow_list_every_frontend_answer_varies_by_origin(
    service: Service, origin: bytes | None
) -> None:
    async with serving(service, frontend_origins=("https://app.example.com",)) as api:
        lines = [b"Authorization: not-a-token"] + ([origin] if origin else [])
        response = await raw_request(api, head("GET", "/api/frontend", *lines))
        assert response.status == 401
        assert "Origin" in response.headers["vary"].split(", ")
        allowed = response.headers.get("access-control-allow-origin")
        assert allowed == ("https://app.example.com" if origin and b"app." in origin else None)


async def test_with_any_origin_allowed_answers_do_not_vary_by_origin(api: Api) -> None:
    lines = [b"Origin: https://app.example.com", b"Authorization: not-a-token"]
    response = await raw_request(api, head("GET", "/api/frontend", *lines))
    assert response.headers["access-control-allow-origin"] == "*"
    assert "vary" not in response.headers


# --- what the server says of itself (a real `flagcore serve`: its protocol and runner) ---

EDGE_ADMIN = "*:*.edge-admin-secret-0123456789"


def _raw_exchange(url: str, request: bytes) -> tuple[int, dict[str, str], bytes]:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head_bytes, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head_bytes.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, body


@pytest.mark.parametrize("path", ["/health", "/no/such/path", "/ui/sign-in", "/docs"])
def test_answers_name_no_versions_and_pages_cannot_be_framed(start: Any, path: str) -> None:
    server = start(FLAGCORE_INIT_ADMIN_API_TOKENS=EDGE_ADMIN)
    request = f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
    status, headers, _ = _raw_exchange(server.url, request)
    assert status in (200, 404)
    assert headers["server"] == "flagcore"
    if path in ("/ui/sign-in", "/docs"):
        assert headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
    server.stop()


def test_a_malformed_request_is_a_json_400_that_quotes_nothing_of_it(start: Any) -> None:
    server = start(FLAGCORE_INIT_ADMIN_API_TOKENS=EDGE_ADMIN)
    secret = "*:*.a-secret-with-a-control-char"
    request = (
        b"GET /api/admin/projects HTTP/1.1\r\nHost: x\r\n"
        b"Authorization: " + secret.encode() + b"\x01\r\n\r\n"
    )
    status, headers, body = _raw_exchange(server.url, request)
    assert status == 400
    assert headers["server"] == "flagcore"
    answer = json.loads(body)
    assert answer["name"] == "BadDataError"
    assert b"a-secret" not in body
    server.stop()
    log = server.stderr_path.read_text()
    assert "a-secret" not in log
    (line,) = [line for line in log.splitlines() if "malformed" in line]
    assert " INFO " in line
    assert " ERROR " not in log
