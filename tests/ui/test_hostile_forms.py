"""Every UI route against hostile input: never a 500, never a change without the CSRF
token, never a page to someone who has not signed in. (No browser: the server's answers.)"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from aiohttp.test_utils import TestClient, TestServer

from flagcore.entities import TokenType
from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from flagcore_http.ui.paths import FAVICON_PATH, is_ui_path
from flagcore_store_sqlite import SqliteStore

ADMIN = "*:*.hostile-forms-admin-secret"


def _ui_routes() -> list[tuple[str, str]]:
    app = create_app(Service.__new__(Service), ServerConfig())  # routes only; never served
    found = set()
    for route in app.router.routes():
        info = route.resource.get_info() if route.resource is not None else {}
        path = info.get("path") or info.get("formatter")
        if path == FAVICON_PATH:
            continue  # a public file, no page
        if path and route.method not in ("HEAD", "*") and is_ui_path(path):
            found.add((route.method, path))
    return sorted(found)


UI_ROUTES = _ui_routes()
# The forms someone not signed in may post; every other POST is sent to sign in unread.
_SIGNED_OUT_FORMS = ("/ui/sign-in", "/ui/sign-out", "/ui/sign-in/password", "/ui/set-password")


# Public, and nothing to show here: a set-password page without its link, and the OpenID
# sign-in's start and callback with no provider configured.
def _public_404(method: str, path: str) -> bool:
    return method == "GET" and (path == "/ui/set-password" or path.startswith("/ui/sign-in/oidc"))


_ODD = ["x", "%20", "..", "-1", "99999999999999999999999", "ünïcödé", "a%2Fb", "<script>"]


def _concrete(path: str, value: str = "x") -> str:
    return re.sub(r"\{[^}]+\}", value, path)


def _seeded(path: Path) -> tuple[SqliteStore, Service]:
    store = SqliteStore(path)
    service = Service(store)
    service.tokens.create_token("admin", TokenType.ADMIN, secret=ADMIN)
    service.flags.create_flag("default", "x")
    return store, service


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    store, service = _seeded(tmp_path / "flags.db")
    yield service
    store.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def signed_out(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[tuple[Service, TestClient[Any, Any]]]:
    """One server for the module's signed-out walk: nothing it sends may change anything
    (each case checks that), so a server each would only cost time."""
    store, service = _seeded(tmp_path_factory.mktemp("signed-out") / "flags.db")
    app = create_app(service, ServerConfig())
    async with TestClient(TestServer(app, host="127.0.0.1")) as running:
        yield service, running
    store.close()


@pytest.fixture
async def client(service: Service) -> AsyncIterator[TestClient[Any, Any]]:
    app = create_app(service, ServerConfig())
    async with TestClient(TestServer(app, host="127.0.0.1")) as running:
        yield running


async def _csrf(client: TestClient[Any, Any], path: str = "/ui/sign-in") -> str:
    page = await client.get(path)
    match = re.search(r'name="_csrf" value="([0-9a-f]+)"', await page.text())
    assert match, await page.text()
    return match.group(1)


async def _sign_in(client: TestClient[Any, Any]) -> str:
    csrf = await _csrf(client)
    response = await client.post(
        "/ui/sign-in", data={"_csrf": csrf, "token": ADMIN}, allow_redirects=False
    )
    assert response.status == 303, await response.text()
    return await _csrf(client, "/ui/flags")


def test_the_walk_finds_the_ui_routes() -> None:
    assert ("GET", "/ui/flags") in UI_ROUTES
    assert ("POST", "/ui/flags/new") in UI_ROUTES
    assert len(UI_ROUTES) >= 15


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize(("method", "path"), UI_ROUTES, ids=lambda v: str(v))
async def test_no_page_without_signing_in_and_no_post_without_the_csrf_token(
    signed_out: tuple[Service, TestClient[Any, Any]], method: str, path: str
) -> None:
    service, client = signed_out
    revision = service.store.revision()
    events = len(service.events.list_events(limit=1000))
    response = await client.request(method, _concrete(path), allow_redirects=False)
    if path == "/ui/sign-in" and method == "GET":
        assert response.status == 200
    elif _public_404(method, path):
        assert response.status == 404
    elif path in _SIGNED_OUT_FORMS:  # read, and refused for the missing CSRF token
        assert response.status == 403, await response.text()
    else:  # sent to sign in, a POST's form unread
        assert response.status == 303
        assert response.headers["Location"].startswith("/ui/sign-in?next=")
    assert len(service.events.list_events(limit=1000)) == events
    assert service.store.revision() == revision  # nothing written


@pytest.mark.parametrize(("method", "path"), UI_ROUTES, ids=lambda v: str(v))
async def test_hostile_input_on_every_ui_route_is_never_a_500(
    client: TestClient[Any, Any], service: Service, method: str, path: str
) -> None:
    csrf = await _sign_in(client)
    bodies: list[dict[str, Any]] = [
        {"data": {"_csrf": csrf}},
        {"data": {"_csrf": csrf, "name": "<script>alert(1)</script>", "enabled": "maybe"}},
        {"data": {"_csrf": csrf, "constraints-0-context": "a", "constraints-0-operator": "NOPE"}},
        {"data": {"_csrf": csrf, "variants-0-name": "v", "variants-0-weight": "1e400"}},
        {"data": {"_csrf": csrf, "name": "a" * 200_000}},
        {"data": b'{"_csrf": "x"}', "headers": {"Content-Type": "application/json"}},
        {
            "data": b"\xff\xfe=\xff",
            "headers": {"Content-Type": "application/x-www-form-urlencoded"},
        },
    ]
    for value in _ODD:
        response = await client.request(
            method, _concrete(path, value), data={"_csrf": csrf} if method == "POST" else None
        )
        assert response.status < 500, (value, await response.text())
        if method == "GET":  # pages, even for odd addresses (a POST there is the API's 405)
            assert response.content_type == "text/html"
    if method != "POST":
        return
    for body in bodies:
        response = await client.request(method, _concrete(path), **body)
        text = await response.text()
        assert response.status < 500, (body, text)
        assert "<script>alert(1)</script>" not in text


async def test_a_token_form_with_a_blank_project_is_refused_not_widened_to_every_project(
    client: TestClient[Any, Any], service: Service
) -> None:
    """The form sends ``*`` for all projects; a blank one (a hand-made post) is no choice."""
    csrf = await _sign_in(client)
    fields = {"_csrf": csrf, "tokenName": "blank-project", "type": "client"}
    answer = await client.post(
        "/ui/tokens", data={**fields, "projects": "", "environment": "development"}
    )
    assert answer.status == 400  # refused, as every refused token form
    assert 'value="blank-project"' in await answer.text()  # the form comes back as typed
    assert "blank-project" not in {t.name for t in service.tokens.list_tokens()}
