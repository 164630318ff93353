"""``FLAGCORE_PUBLIC_URL`` (issue 28): links people are sent are built on this server's
public address, never on the request's ``Host`` header, and an https address makes
cookies ``Secure`` behind a TLS proxy; without it, today's behaviour. A real server on
127.0.0.1 over a real SQLite file."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from flagcore_http.config import ConfigError
from tests.http.conftest import Api

PASSWORD = "Correct-Horse-9"
FORGED = {"Host": "evil.example"}

Serve = Callable[..., Any]


@pytest.fixture
async def serve(service: Service) -> AsyncIterator[Serve]:
    clients: list[TestClient[Any, Any]] = []

    async def started(**settings: Any) -> Api:
        app = create_app(service, ServerConfig(**settings))
        client: TestClient[Any, Any] = TestClient(TestServer(app, host="127.0.0.1"))
        await client.start_server()
        clients.append(client)
        return Api(client)

    yield started
    for client in clients:
        await client.close()


async def test_invitation_and_reset_links_are_built_on_the_public_url_whatever_host_says(
    serve: Serve,
) -> None:
    api = await serve(public_url="https://flags.example.com")
    invited = await api.json(
        "POST",
        "/api/admin/user-admin",
        status=201,
        headers=FORGED,
        json={"email": "ann@x.io", "rootRole": 3},
    )
    assert invited["inviteLink"].startswith("https://flags.example.com/ui/set-password?token=")
    reset = await api.json(
        "POST", "/api/admin/user-admin/reset-password", headers=FORGED, json={"id": "ann@x.io"}
    )
    assert reset["resetPasswordUrl"].startswith("https://flags.example.com/ui/set-password?")


async def test_without_a_public_url_links_follow_the_requests_host_as_before(
    serve: Serve,
) -> None:
    """Documented as safe only on trusted networks (docs/security.md)."""
    api = await serve()
    invited = await api.json(
        "POST",
        "/api/admin/user-admin",
        status=201,
        headers=FORGED,
        json={"email": "ann@x.io", "rootRole": 3},
    )
    assert invited["inviteLink"].startswith("http://evil.example/ui/set-password?token=")


async def _session_cookie_header(api: Api) -> str:
    body = {"email": "ann@x.io", "rootRole": 3, "password": PASSWORD}
    await api.json("POST", "/api/admin/user-admin", status=201, json=body)
    response = await api.request(
        "POST",
        "/auth/simple/login",
        token=None,
        json={"username": "ann@x.io", "password": PASSWORD},
    )
    assert response.status == 200, await response.text()
    (cookie,) = [v for v in response.headers.getall("Set-Cookie") if "flagcore_session=" in v]
    return cookie


async def test_an_https_public_url_makes_the_session_cookie_secure_over_plain_http(
    serve: Serve,
) -> None:
    behind_tls_proxy = await serve(public_url="https://flags.example.com")
    assert "Secure" in await _session_cookie_header(behind_tls_proxy)


async def test_without_a_public_url_a_plain_http_session_cookie_is_not_secure(
    serve: Serve,
) -> None:
    assert "Secure" not in await _session_cookie_header(await serve())


@pytest.mark.parametrize(
    "value",
    [
        "flags.example.com",
        "https://flags.example.com/path",
        "https://flags.example.com?next=x",
        "https://user@flags.example.com",
        "ftp://flags.example.com",
        "https://",
    ],
)
def test_a_public_url_that_is_not_an_origin_stops_the_start_naming_it(value: str) -> None:
    with pytest.raises(ConfigError, match="FLAGCORE_PUBLIC_URL"):
        ServerConfig.from_env({"FLAGCORE_PUBLIC_URL": value})


def test_a_public_url_is_read_without_its_trailing_slash() -> None:
    read = ServerConfig.from_env({"FLAGCORE_PUBLIC_URL": "https://flags.example.com:8443/"})
    assert read.public_url == "https://flags.example.com:8443"
