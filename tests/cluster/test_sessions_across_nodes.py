"""Sessions and what a person may do, across two nodes over one PostgreSQL database
(issue 28), at the API: a session ended on one node (signed out, ended by an admin, its
user disabled) is refused by the other at its very next request, and a group membership
changed on one node changes what the person may do on the other at once. Two apps
in-process over one pgserver database, each with its own store and pool."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from flagcore.entities import TokenType
from flagcore.passwords import NewPassword
from flagcore.people import RootRole
from flagcore.service import NewUser, Service
from flagcore_http import ServerConfig, create_app
from flagcore_http.session_cookie import COOKIE_NAME
from flagcore_store_postgres import PostgresStore
from tests.cluster.postgres_server import fresh_database

ADMIN = "*:*.admin-secret-for-two-nodes"
PASSWORD = "Correct-Horse-9"
Nodes = tuple[Service, TestClient[Any, Any], TestClient[Any, Any]]


@pytest.fixture
async def nodes() -> AsyncIterator[Nodes]:
    url = fresh_database()
    stores = [PostgresStore(url), PostgresStore(url)]
    config = ServerConfig(ui_secret="s" * 64)  # one secret, as every node of a cluster
    try:
        first = Service(stores[0])
        first.tokens.create_token("admin", TokenType.ADMIN, secret=ADMIN)
        apps = [create_app(first, config), create_app(Service(stores[1]), config)]
        async with (
            TestClient(TestServer(apps[0], host="127.0.0.1")) as a,
            TestClient(TestServer(apps[1], host="127.0.0.1")) as b,
        ):
            yield first, a, b
    finally:
        for store in stores:
            store.close()


async def _sign_in(node: TestClient[Any, Any], login: str) -> dict[str, str]:
    body = {"username": login, "password": PASSWORD}
    response = await node.post("/auth/simple/login", json=body)
    assert response.status == 200, await response.text()
    cookie = response.cookies[COOKIE_NAME].value
    node.session.cookie_jar.clear()  # each request below says who it is itself
    return {"Cookie": f"{COOKIE_NAME}={cookie}", "Sec-Fetch-Site": "same-origin"}


async def _status(node: TestClient[Any, Any], method: str, path: str, **kwargs: Any) -> int:
    response = await node.request(method, path, **kwargs)
    await response.read()
    return response.status


async def test_what_one_node_ends_or_changes_the_other_applies_at_the_next_request(
    nodes: Nodes,
) -> None:
    service, a, b = nodes
    ann = service.users.create_user(
        NewUser(RootRole.EDITOR, email="ann@x.io", password=NewPassword.of(PASSWORD))
    )
    admin = {"Authorization": ADMIN}
    me = "/api/admin/user"

    # Signed out on A: B refuses the cookie at once.
    cookie = await _sign_in(a, "ann@x.io")
    assert await _status(b, "GET", me, headers=cookie) == 200
    assert await _status(a, "POST", "/logout", headers=cookie) == 200
    assert await _status(b, "GET", me, headers=cookie) == 401

    # Every session ended by an admin on B: A refuses.
    cookie = await _sign_in(a, "ann@x.io")
    assert await _status(a, "GET", me, headers=cookie) == 200
    ended = f"/api/admin/user-admin/{ann.id}/sessions"
    assert await _status(b, "DELETE", ended, headers=admin) == 200
    assert await _status(a, "GET", me, headers=cookie) == 401

    # Disabled on A: B refuses; enabled again, her old session is still gone.
    cookie = await _sign_in(b, "ann@x.io")
    user = f"/api/admin/user-admin/{ann.id}"
    assert await _status(a, "PUT", user, headers=admin, json={"disabled": True}) == 200
    assert await _status(b, "GET", me, headers=cookie) == 401
    assert await _status(a, "PUT", user, headers=admin, json={"disabled": False}) == 200
    assert await _status(b, "GET", me, headers=cookie) == 401

    # A group membership changed on A changes what she may do on B at her next request.
    service.projects.create_project("beta", "Beta")
    assert await _status(a, "PUT", user, headers=admin, json={"rootRole": 3}) == 200
    cookie = {**await _sign_in(b, "ann@x.io"), "Content-Type": "application/json"}
    flags = "/api/admin/projects/beta/features"
    assert await _status(b, "POST", flags, headers=cookie, json={"name": "one"}) == 403
    group = {"name": "Owners", "users": [{"user": {"id": ann.id}}]}
    response = await a.post("/api/admin/groups", headers=admin, json=group)
    made = await response.json()
    access = {"roles": [4], "groups": [made["id"]]}
    assert (
        await _status(a, "POST", "/api/admin/projects/beta/access", headers=admin, json=access)
        == 200
    )
    assert await _status(b, "POST", flags, headers=cookie, json={"name": "one"}) == 201
    emptied = {"name": "Owners", "users": []}
    assert (
        await _status(a, "PUT", f"/api/admin/groups/{made['id']}", headers=admin, json=emptied)
        == 200
    )
    assert await _status(b, "POST", flags, headers=cookie, json={"name": "two"}) == 403
