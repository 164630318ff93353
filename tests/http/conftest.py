"""A real aiohttp server on 127.0.0.1 over a real SQLite file, with tokens ready."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer

from flagcore.entities import TokenType
from flagcore.people import RootRole
from flagcore.service import NewUser, Service
from flagcore_http import ServerConfig, create_app
from flagcore_http.usage_buffer import flush_usage
from flagcore_store_sqlite import SqliteStore

ADMIN = "*:*.admin-secret-for-tests"
CLIENT = "default:development.client-secret-for-tests"
ALL_PROJECTS_CLIENT = "*:production.all-projects-client-secret"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    store = SqliteStore(tmp_path / "flags.db")
    service = Service(store)
    service.tokens.create_token("admin", TokenType.ADMIN, secret=ADMIN)
    service.tokens.create_token(
        "sdk", "client", projects=["default"], environment="development", secret=CLIENT
    )
    service.tokens.create_token(
        "sdk-all", "client", environment="production", secret=ALL_PROJECTS_CLIENT
    )
    yield service
    store.close()


def bucket_time(minutes_ago: float = 1.0) -> str:
    """An RFC 3339 time near now, for metrics buckets: only those starting from 48 hours
    back to 5 minutes ahead are counted."""
    at = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=minutes_ago)
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


class Api:
    """A test client that sends the admin token unless told otherwise."""

    def __init__(self, client: TestClient[Any, Any]) -> None:
        self.client = client

    async def request(
        self, method: str, path: str, *, token: str | None = ADMIN, **kwargs: Any
    ) -> ClientResponse:
        headers = dict(kwargs.pop("headers", {}))
        if token is not None:
            headers.setdefault("Authorization", token)
        return await self.client.request(method, path, headers=headers, **kwargs)

    async def usage_written(self) -> None:
        """What SDKs posted, written through to the store (the server writes usage
        behind its answers, and flushes it so before its own readers read)."""
        await flush_usage(self.client.server.app)

    async def json(self, method: str, path: str, status: int = 200, **kwargs: Any) -> Any:
        response = await self.request(method, path, **kwargs)
        body = await response.text()
        assert response.status == status, f"{method} {path}: {response.status} {body}"
        return await response.json() if body else None


@pytest.fixture
async def api(service: Service) -> AsyncIterator[Api]:
    app = create_app(service, ServerConfig())
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        yield Api(client)


def personal_token(service: Service) -> str:
    """The secret of a token that acts as a person: the routes of a person's own tokens
    (``/api/admin/user/tokens``) need one, as an admin API token is nobody."""
    owner = service.users.create_user(NewUser(RootRole.VIEWER, email="pat-owner@example.io"))
    expires = service.clock() + dt.timedelta(days=1)
    return service.personal_tokens.create_personal_token(owner.id, "a person's", expires).secret
