"""Signing in against hostile visitors: where ``next`` may lead, and guessing tokens
through the sign-in form (the API's tarpit, one counter per address for every way in).
No browser: the server's answers (the browser journey is in test_sign_in.py)."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer

from flagcore.entities import TokenType
from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from flagcore_http.rate_limits import RATE_LIMITS
from flagcore_http.ui.views.sign_in import MAX_NEXT_LENGTH, safe_next
from flagcore_store_sqlite import SqliteStore

ADMIN = "*:*.sign-in-guards-admin-secret"
HOME = "/ui/flags"


@pytest.mark.parametrize(
    "target",
    [
        None,
        "",
        "/\t/evil.example",
        "/\n/evil.example",
        "/\r\nSet-Cookie: x=1",
        "/ui/flags\x00",
        "/ui/flags\r\nLocation: //evil.example",
        "\\\\evil.example",
        "/\\evil.example",
        "/ui/\\evil",
        "//evil.example",
        "///evil.example",
        "https://evil.example/ui/flags",
        "http:/ui/flags",
        "javascript:alert(1)",
        "ui/flags",
        "/api/admin/projects",
        "/docs",
        "/ui/flags é",
        "/ui/" + "a" * MAX_NEXT_LENGTH,
    ],
)
def test_next_that_is_no_strict_local_ui_path_leads_to_the_flags(target: str | None) -> None:
    assert safe_next(target) == HOME


@pytest.mark.parametrize(
    "target",
    ["/", "/ui/flags?project=default&q=a%20b", "/ui/segments/3", "/ui/actions?project=x:y"],
)
def test_next_that_is_a_page_of_the_ui_is_kept(target: str) -> None:
    assert safe_next(target) == target


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    store = SqliteStore(tmp_path / "flags.db")
    service = Service(store)
    service.tokens.create_token("admin", TokenType.ADMIN, secret=ADMIN)
    yield service
    store.close()


@asynccontextmanager
async def serving(service: Service, **settings: Any) -> AsyncIterator[TestClient[Any, Any]]:
    app = create_app(service, ServerConfig(**settings))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        yield client


async def _csrf(client: TestClient[Any, Any]) -> str:
    page = await client.get("/ui/sign-in")
    match = re.search(r'name="_csrf" value="([0-9a-f]+)"', await page.text())
    assert match, await page.text()
    return match.group(1)


async def _sign_in(client: TestClient[Any, Any], token: str, next_: str = "") -> ClientResponse:
    form = {"_csrf": await _csrf(client), "token": token, "next": next_}
    response = await client.post("/ui/sign-in", data=form, allow_redirects=False)
    await response.read()
    return response


async def test_next_holding_cr_lf_or_nul_signs_in_to_the_flags_without_an_error(
    service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    async with serving(service) as client:
        for target in ("/ui/a\r\nX-Evil: 1", "/ui/flags\n", "/ui/flags\x00", "/\r/evil.example"):
            client.session.cookie_jar.clear()
            response = await _sign_in(client, ADMIN, target)
            assert (response.status, response.headers["Location"]) == (303, HOME)
            assert "X-Evil" not in response.headers
            # Signed in: the sign-in page sends on at once, to the same place.
            url = "/ui/sign-in?next=" + target.replace("\r", "%0D").replace("\n", "%0A")
            again = await client.get(url.replace("\x00", "%00"), allow_redirects=False)
            assert (again.status, again.headers["Location"]) == (303, HOME)
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_wrong_ui_sign_ins_and_wrong_api_tokens_share_one_tarpit(
    service: Service,
) -> None:
    delay = 3.0
    settings = {"auth_failures_free_per_minute": 3, "auth_failure_delay": delay}
    async with serving(service, **settings) as client:
        # The free allowance, spent through both doors from this one address.
        assert (await _sign_in(client, "*:*.guess-1")).status == 401
        api = await client.get("/api/admin/projects", headers={"Authorization": "*:*.guess-2"})
        assert api.status == 401
        assert (await _sign_in(client, "*:*.guess-3")).status == 401
        # The next guess through the sign-in form waits; the right token does not.
        guess = asyncio.ensure_future(_sign_in(client, "*:*.guess-4"))
        other = TestClient(client.server)  # a second browser from the same address
        async with other:
            signed_in = await _sign_in(other, ADMIN)
            assert (signed_in.status, signed_in.headers["Location"]) == (303, HOME)
            assert not guess.done()
            # The API's next guess waits too: one counter for every way in.
            api_guess = asyncio.ensure_future(
                other.get("/api/admin/projects", headers={"Authorization": "*:*.guess-5"})
            )
            valid = await other.get("/api/admin/projects", headers={"Authorization": ADMIN})
            assert valid.status == 200
            assert not api_guess.done()
            assert (await guess).status == 401
            assert (await api_guess).status == 401


async def test_the_form_trims_ascii_spaces_of_a_pasted_token_and_nothing_else(
    service: Service,
) -> None:
    async with serving(service) as client:
        pasted = await _sign_in(client, f"  {ADMIN}\t\r\n")
        assert (pasted.status, pasted.headers["Location"]) == (303, HOME)
    async with serving(service) as client:
        for padded in (f"{ADMIN}\u00a0", f"\u2003{ADMIN}", f"{ADMIN}\u200b"):
            assert (await _sign_in(client, padded)).status == 401, repr(padded)


async def test_wrong_passwords_through_the_api_and_the_form_spend_the_same_tarpit(
    service: Service,
) -> None:
    delay = 3.0
    settings = {"auth_failures_free_per_minute": 3, "auth_failure_delay": delay}
    async with serving(service, **settings) as client:
        login = {"username": "nobody@example.io", "password": "not-it-1"}
        assert (await client.post("/auth/simple/login", json=login)).status == 401
        form = {"_csrf": await _csrf(client), "username": "nobody", "password": "not-it-2"}
        page = await client.post("/ui/sign-in/password", data=form, allow_redirects=False)
        assert page.status == 401
        api = await client.get("/api/admin/projects", headers={"Authorization": "*:*.guess"})
        assert api.status == 401
        # The allowance is spent by passwords and a token together: the next wrong
        # password waits the delay, while a right token from the same address does not.
        failures = client.server.app[RATE_LIMITS].auth_failures
        assert failures.take("127.0.0.1") > 0.0
        started = asyncio.get_running_loop().time()
        guess = asyncio.ensure_future(client.post("/auth/simple/login", json=login))
        valid = await client.get("/api/admin/projects", headers={"Authorization": ADMIN})
        assert valid.status == 200
        assert (await guess).status == 401
        assert asyncio.get_running_loop().time() - started >= delay


async def test_an_empty_sign_in_or_another_kind_of_token_is_no_guess(service: Service) -> None:
    client_secret = "*:development.sign-in-guards-client"
    service.tokens.create_token(
        "sdk", TokenType.CLIENT, environment="development", secret=client_secret
    )
    settings = {"auth_failures_free_per_minute": 1, "auth_failure_delay": 0.01}
    async with serving(service, **settings) as client:
        for _ in range(3):
            assert (await _sign_in(client, "")).status == 401
            assert (await _sign_in(client, client_secret)).status == 401
        # The allowance of one is still untouched, then a real guess spends it.
        failures = client.server.app[RATE_LIMITS].auth_failures
        assert failures.take("127.0.0.1") == 0.0
        assert failures.take("127.0.0.1") > 0.0
