"""Revoking API tokens over the admin API: by the id the listing shows (a lost secret can
still be revoked), by the secret as Unleash does, and never the last admin token while
nothing else can administer the server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from flagcore_http.config import AuthMode
from tests.http.conftest import ADMIN, CLIENT, Api

TOKENS = "/api/admin/api-tokens"


async def _listed(api: Api, name: str) -> dict[str, Any]:
    (token,) = [t for t in (await api.json("GET", TOKENS))["tokens"] if t["tokenName"] == name]
    return token


async def test_a_lost_token_is_revoked_by_the_id_its_listing_shows(api: Api) -> None:
    body = {"tokenName": "ci", "type": "client", "environment": "development"}
    created = await api.json("POST", TOKENS, 201, json=body)
    listed = await _listed(api, "ci")
    assert listed["id"] == created["id"]
    assert "secret" not in listed
    assert listed["id"] not in created["secret"]
    await api.json("GET", "/api/client/features", token=created["secret"])

    await api.json("DELETE", f"{TOKENS}/{listed['id']}")
    await api.json("GET", "/api/client/features", 401, token=created["secret"])
    gone = await api.json("DELETE", f"{TOKENS}/{listed['id']}", 404)
    assert gone["name"] == "NotFoundError"
    assert gone["details"] == [{"path": "$.token", "message": "unknown token"}]


async def test_a_token_is_still_revoked_by_its_secret_as_in_unleash(api: Api) -> None:
    await api.json("DELETE", f"{TOKENS}/{CLIENT}")
    await api.json("GET", "/api/client/features", 401, token=CLIENT)


async def test_the_last_admin_token_is_refused_with_409_and_keeps_working(api: Api) -> None:
    admin = await _listed(api, "admin")
    for ref in (admin["id"], ADMIN):
        refused = await api.json("DELETE", f"{TOKENS}/{ref}", 409)
        assert refused["name"] == "ConflictError"
        assert '"admin" is the last admin token' in refused["message"]
        assert refused["details"] == [{"path": "$.token", "message": "the last admin token"}]
    await api.json("GET", TOKENS)  # still works

    body = {"tokenName": "ops", "type": "admin"}
    other = await api.json("POST", TOKENS, 201, json=body)
    # Another admin token exists: the one in use may go (the UI asks first).
    await api.json("DELETE", f"{TOKENS}/{admin['id']}")
    await api.json("GET", TOKENS, 401)
    left = await api.json("DELETE", f"{TOKENS}/{other['id']}", 409, token=other["secret"])
    assert '"ops" is the last admin token' in left["message"]


@pytest.fixture
async def open_api(service: Service) -> AsyncIterator[Api]:
    app = create_app(service, ServerConfig(auth=AuthMode.NONE))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        yield Api(client)


async def test_with_auth_none_the_last_admin_token_may_be_revoked(
    open_api: Api, service: Service
) -> None:
    admin = await _listed(open_api, "admin")
    await open_api.json("DELETE", f"{TOKENS}/{admin['id']}", token=None)
    assert [t.name for t in service.tokens.list_tokens()] == ["sdk", "sdk-all"]
