"""The checks of a sign-in with an OpenID provider, without a browser: the state a
callback brings back must be the one its browser's flow cookie holds, the flow is good
for one callback, PKCE's verifier and the ID token's nonce must be this flow's, and a
code signs in once. Against npm's ``oidc-provider`` on 127.0.0.1 (tests/ui/node_oidc),
driven over HTTP through its development sign-in and consent forms."""

from __future__ import annotations

import asyncio
import re
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import attrs
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from flagcore_http import openid_provider
from flagcore_http.config import ServerConfig
from flagcore_http.openid_provider import OpenIdProvider, ProviderRefused
from tests.ui.conftest import Server, start_server, stop_server
from tests.ui.oidc_provider import CALLBACK, RunningProvider, running_provider, server_settings

# Registered at the provider but never listening: the dance stops at the redirect to it.
ELSEWHERE = "http://127.0.0.1:9"


@pytest.fixture
def provider() -> Iterator[RunningProvider]:
    with running_provider() as running:
        yield running


@pytest.fixture
def server(tmp_path: Path, provider: RunningProvider) -> Iterator[Server]:
    settings = server_settings(provider.issuer, FLAGCORE_ACCESS_LOG="all")
    running = start_server(tmp_path, env=settings)
    provider.accept_callbacks_of(running.url, ELSEWHERE)
    try:
        yield running
    finally:
        stop_server(running)


def _jar() -> aiohttp.CookieJar:
    return aiohttp.CookieJar(unsafe=True)  # cookies for 127.0.0.1, an address


async def _through_provider(http: aiohttp.ClientSession, url: str, login: str) -> str:
    """Sign in as ``login`` at the provider and consent; the callback URL it sends back."""
    for _ in range(12):
        async with http.get(url, allow_redirects=False) as answer:
            if answer.status in (302, 303):
                url = urllib.parse.urljoin(url, answer.headers["Location"])
                if CALLBACK in url:
                    return url
                continue
            html = await answer.text()
        action = urllib.parse.urljoin(url, re.findall(r'action="([^"]+)"', html)[0])
        prompt = re.findall(r'name="prompt" value="([a-z]+)"', html)[0]
        fields = {"prompt": prompt, "login": login, "password": "any password"}
        async with http.post(action, data=fields, allow_redirects=False) as answer:
            url = urllib.parse.urljoin(action, answer.headers["Location"])
    raise AssertionError("the provider never sent the browser back")


def _with_query(url: str, **changes: str) -> str:
    parts = urllib.parse.urlsplit(url)
    query = dict(urllib.parse.parse_qsl(parts.query)) | changes
    return parts._replace(query=urllib.parse.urlencode(query)).geturl()


@pytest.mark.parametrize("other_state", ["x" * 43, "", "é" * 43])
async def test_a_callback_with_another_state_is_refused_and_the_flow_is_spent(
    server: Server, other_state: str
) -> None:
    async with aiohttp.ClientSession(cookie_jar=_jar()) as http:
        async with http.get(server.url + "/ui/sign-in/oidc", allow_redirects=False) as started:
            assert started.status == 303
            authorization = started.headers["Location"]
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(authorization).query))
        assert query["code_challenge_method"] == "S256"
        assert len(query["state"]) >= 32
        assert len(query["nonce"]) >= 32
        callback = await _through_provider(http, authorization, "ann")

        async with http.get(_with_query(callback, state=other_state)) as refused:
            assert refused.status == 400
            assert "came back without the state it left with" in await refused.text()
        # The refusal spent the flow: even the true callback is refused now.
        async with http.get(callback) as again:
            assert again.status == 400
            assert "expired or began in another browser" in await again.text()
    users = server.api("GET", "/api/admin/user-admin")["users"]
    assert [u["username"] for u in users] == ["admin"]
    # The access log has the callback's lines without their query: no code, no state (the
    # log is written off the event loop in batches: its lines come a moment later).
    deadline = time.monotonic() + 10
    while '"GET /ui/sign-in/oidc/callback"' not in server.log.read_text():
        assert time.monotonic() < deadline, server.log.read_text()
        await asyncio.sleep(0.05)
    log = server.log.read_text()
    assert query["state"] not in log
    assert "code=" not in log


async def test_a_callback_in_a_browser_that_did_not_start_the_flow_is_refused(
    server: Server,
) -> None:
    async with aiohttp.ClientSession(cookie_jar=_jar()) as victim:
        started = await victim.get(server.url + "/ui/sign-in/oidc", allow_redirects=False)
        started.release()
        callback = await _through_provider(victim, started.headers["Location"], "ann")
    # A callback carried to another browser (login CSRF) has no flow cookie there.
    async with aiohttp.ClientSession(cookie_jar=_jar()) as other:
        refused = await other.get(callback)
        assert refused.status == 400
        assert "expired or began in another browser" in await refused.text()
        sessions = [c.value for c in other.cookie_jar if c.key == "flagcore_session"]
        assert all(v.startswith("-.") for v in sessions)  # anonymous: nobody signed in
    assert len(server.api("GET", "/api/admin/user-admin")["users"]) == 1


async def test_the_id_token_must_carry_this_flows_nonce_and_a_code_signs_in_once(
    provider: RunningProvider,
) -> None:
    provider.accept_callbacks_of(ELSEWHERE)
    config = ServerConfig.from_env(server_settings(provider.issuer))
    client = OpenIdProvider(config)
    redirect = ELSEWHERE + CALLBACK
    try:
        async with aiohttp.ClientSession(cookie_jar=_jar()) as http:
            url, pending = await client.start(redirect, "/ui/flags")
            code = dict(
                urllib.parse.parse_qsl(
                    urllib.parse.urlsplit(await _through_provider(http, url, "ann")).query
                )
            )["code"]
            with pytest.raises(ProviderRefused, match="nonce"):
                await client.finish(code, attrs.evolve(pending, nonce="another-nonce"), redirect)
            with pytest.raises(ProviderRefused, match="did not accept"):
                await client.finish(code, pending, redirect)  # the code was used

            url, pending = await client.start(redirect, "/ui/flags")
            callback = await _through_provider(http, url, "ann")
            code = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(callback).query))["code"]
            with pytest.raises(ProviderRefused, match="did not accept"):
                await client.finish(code, attrs.evolve(pending, verifier="v" * 64), redirect)

            url, pending = await client.start(redirect, "/ui/flags")
            callback = await _through_provider(http, url, "ann")
            code = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(callback).query))["code"]
            identity = await client.finish(code, pending, redirect)
        assert (identity.issuer, identity.subject) == (provider.issuer, "ann")
        assert (identity.email, identity.email_verified) == ("ann@example.io", True)
        assert identity.name == "Ann Admin"
    finally:
        await client.close()


async def test_a_provider_that_cannot_be_reached_is_a_message_on_the_sign_in_page(
    tmp_path: Path,
) -> None:
    running = start_server(tmp_path, env=server_settings(ELSEWHERE))  # nothing listens
    try:
        async with aiohttp.ClientSession(cookie_jar=_jar()) as http:
            answer = await http.get(running.url + "/ui/sign-in/oidc", allow_redirects=False)
            assert answer.status == 502
            assert "The sign-in provider cannot be reached; try again later." in (
                await answer.text()
            )
            assert not [c for c in http.cookie_jar if c.key == "flagcore_oidc"]
    finally:
        stop_server(running)


async def test_claims_the_provider_keeps_for_userinfo_are_read_from_there() -> None:
    # npm's oidc-provider by default, like Okta: with an access token issued, the ID token
    # carries no email, name or groups; the userinfo endpoint does.
    with running_provider(claims_in_userinfo_only=True) as provider:
        provider.accept_callbacks_of(ELSEWHERE)
        settings = server_settings(provider.issuer, FLAGCORE_OIDC_GROUP_CLAIM="groups")
        client = OpenIdProvider(ServerConfig.from_env(settings))
        redirect = ELSEWHERE + CALLBACK
        try:
            async with aiohttp.ClientSession(cookie_jar=_jar()) as http:
                url, pending = await client.start(redirect, "/ui/flags")
                callback = await _through_provider(http, url, "ann")
                code = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(callback).query))["code"]
                identity = await client.finish(code, pending, redirect)
        finally:
            await client.close()
    assert (identity.subject, identity.email, identity.email_verified) == (
        "ann",
        "ann@example.io",
        True,
    )
    assert identity.groups == ("flag-admins", "staff")


@pytest.mark.parametrize(
    ("end_session", "wanted"),
    [
        (None, None),  # Google's way: no sign-out there, signed out here only
        ("https://sso.example.io/logout?ui=1", "https://sso.example.io/logout?ui=1&"),
        ("{issuer}/session/end", "{issuer}/session/end?"),  # http on this machine only
    ],
)
async def test_signing_out_at_the_provider_follows_its_discovery_document(
    end_session: str | None, wanted: str | None
) -> None:
    """RP-initiated logout: the provider's ``end_session_endpoint`` with the session's ID
    token as the hint, this client and where to come back; none without the endpoint."""
    documents: list[dict[str, object]] = []

    async def discovery(request: web.Request) -> web.Response:
        return web.json_response(documents[0])

    app = web.Application()
    app.router.add_get("/.well-known/openid-configuration", discovery)
    async with TestServer(app, host="127.0.0.1") as served:
        issuer = str(served.make_url("")).rstrip("/")
        document: dict[str, object] = {
            "issuer": issuer,
            "authorization_endpoint": issuer + "/auth",
            "token_endpoint": issuer + "/token",
            "jwks_uri": issuer + "/jwks",
        }
        if end_session is not None:
            document["end_session_endpoint"] = end_session.format(issuer=issuer)
        documents.append(document)
        client = OpenIdProvider(ServerConfig.from_env(server_settings(issuer)))
        try:
            after = client.after_logout_uri("http://127.0.0.1:4242")
            url = await client.logout_url("an.id.token", after)
        finally:
            await client.close()
    if wanted is None:
        assert url is None
        return
    assert url is not None
    assert url.startswith(wanted.format(issuer=issuer))
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
    assert query["id_token_hint"] == "an.id.token"
    assert query["client_id"] == "flagcore"
    assert query["post_logout_redirect_uri"] == "http://127.0.0.1:4242/ui/sign-in"


async def test_an_http_end_session_endpoint_of_a_provider_elsewhere_is_not_used() -> None:
    """The ID token rides in its address: never over plain HTTP off this machine. (The
    discovery document is set as read: an https issuer cannot be served here.)"""
    client = OpenIdProvider(ServerConfig.from_env(server_settings("https://sso.example.io")))
    known = openid_provider._Discovered(
        "https://sso.example.io/auth",
        "https://sso.example.io/token",
        "https://sso.example.io/jwks",
        ("RS256",),
        False,
        time.monotonic(),
        end_session_endpoint="http://sso.example.io/logout",
    )
    client._discovered = known
    try:
        assert await client.logout_url("an.id.token", "https://flags.example.io/ui/sign-in") is None
        client._discovered = attrs.evolve(known, end_session_endpoint="https://sso.example.io/x")
        assert await client.logout_url("an.id.token", "https://flags.example.io/ui/sign-in")
    finally:
        await client.close()
