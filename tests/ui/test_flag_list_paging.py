"""The flags page pages through big projects (no browser: the server's HTML)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from flagcore.entities import FlagDefinition, TokenType
from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from flagcore_store_sqlite import SqliteStore

ADMIN = "*:*.paging-admin-secret"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    store = SqliteStore(tmp_path / "flags.db")
    service = Service(store)
    service.tokens.create_token("admin", TokenType.ADMIN, secret=ADMIN)
    with store.transaction() as tx:
        for index in range(250):
            tx.save_flag(FlagDefinition(f"flag-{index:03d}", "default"))
    yield service
    store.close()


@pytest.fixture
async def client(service: Service) -> AsyncIterator[TestClient[Any, Any]]:
    async with TestClient(TestServer(create_app(service, ServerConfig()))) as running:
        page = await running.get("/ui/sign-in")
        csrf = re.search(r'name="_csrf" value="([0-9a-f]+)"', await page.text())
        assert csrf is not None
        await running.post("/ui/sign-in", data={"_csrf": csrf.group(1), "token": ADMIN})
        yield running


def _names(html: str) -> list[str]:
    return re.findall(r'<a href="/ui/flags/(flag-\d+)">', html)


async def test_a_big_project_is_shown_a_hundred_flags_a_page(
    client: TestClient[Any, Any],
) -> None:
    first = await (await client.get("/ui/flags?project=default")).text()
    assert _names(first) == [f"flag-{i:03d}" for i in range(100)]
    assert "250 of 250 flags · page 1 of 3" in first
    assert 'rel="next"' in first
    assert 'rel="prev"' not in first
    last = await (await client.get("/ui/flags?project=default&page=3")).text()
    assert _names(last) == [f"flag-{i:03d}" for i in range(200, 250)]
    beyond = await (await client.get("/ui/flags?project=default&page=99")).text()
    assert _names(beyond) == _names(last)  # past the end: the last page
    searched = await (await client.get("/ui/flags?project=default&q=FLAG-24")).text()
    assert _names(searched) == [f"flag-24{i}" for i in range(10)]
    assert "10 of 250 flags" in searched


async def test_an_unknown_project_is_a_404_page(client: TestClient[Any, Any]) -> None:
    response = await client.get("/ui/flags?project=nope")
    assert response.status == 404
    assert "there is no project &#34;nope&#34;" in await response.text()  # escaped quotes
