"""Signing in and out of the admin UI, the session cookie, CSRF, and ``--auth none``."""

from __future__ import annotations

import hashlib
import urllib.parse
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from tests.ui.conftest import ADMIN, Server, sign_in, start_server, stop_server


def _session_cookie(page: Page) -> dict[str, Any]:
    (cookie,) = [c for c in page.context.cookies() if c["name"] == "flagcore_session"]
    return dict(cookie)


def test_sign_in_with_the_admin_token_then_sign_out(page: Page, server: Server, shot: Any) -> None:
    page.goto(server.url + "/ui/flags?project=default")
    expect(page).to_have_url(server.url + "/ui/sign-in?next=%2Fui%2Fflags%3Fproject%3Ddefault")
    shot(page, "sign-in")

    page.get_by_label("Admin API token").fill("*:*.not-a-token-we-know")
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.locator(".field-error")).to_have_text("not an admin token this server knows")
    expect(page.get_by_label("Admin API token")).to_have_attribute("aria-invalid", "true")

    page.get_by_label("Admin API token").fill(ADMIN)
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page).to_have_url(server.url + "/ui/flags?project=default")
    cookie = _session_cookie(page)
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Strict"
    assert cookie["expires"] > 0  # an expiry, not a browser-session cookie
    assert ADMIN not in cookie["value"]  # the session holds the token's id, never the secret
    digest = hashlib.sha256(ADMIN.encode()).hexdigest()
    assert digest not in cookie["value"]  # nor a hash to guess the secret from

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in", exact=True)).to_be_visible()
    page.goto(server.url + "/ui/flags")
    expect(page.get_by_role("heading", name="Sign in", exact=True)).to_be_visible()


def test_a_client_token_cannot_sign_in(page: Page, server: Server) -> None:
    page.goto(server.url + "/ui/sign-in")
    page.get_by_label("Admin API token").fill("default:development.ui-client-secret-for-tests")
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.locator(".field-error")).to_have_text("not an admin token this server knows")


def test_revoking_the_token_ends_the_session(page: Page, server: Server) -> None:
    created = server.api("POST", "/api/admin/api-tokens", {"tokenName": "alice", "type": "admin"})
    sign_in(page, server, created["secret"])
    expect(page.get_by_text("alice")).to_be_visible()
    server.api("DELETE", "/api/admin/api-tokens/" + urllib.parse.quote(created["secret"]))
    page.reload()
    expect(page.get_by_role("heading", name="Sign in", exact=True)).to_be_visible()


def test_a_form_posted_without_its_csrf_token_is_refused_and_stores_nothing(
    signed_in: Page, server: Server
) -> None:
    # The browser's own cookies, as a forged cross-site form would carry them (SameSite
    # aside): without the page's CSRF token the server refuses the change.
    response = signed_in.request.post(
        server.url + "/ui/flags/new",
        form={"project": "default", "name": "forged", "type": "release"},
    )
    assert response.status == 403
    assert "expired or did not come from this site" in response.text()
    assert server.api_status("GET", "/api/admin/projects/default/features/forged") == 404

    wrong = signed_in.request.post(
        server.url + "/ui/flags/new",
        form={"project": "default", "name": "forged", "_csrf": "0" * 64},
    )
    assert wrong.status == 403
    assert server.api_status("GET", "/api/admin/projects/default/features/forged") == 404


def test_with_auth_none_there_is_no_sign_in(page: Page, tmp_path: Path) -> None:
    server = start_server(tmp_path, "--auth", "none")
    try:
        page.goto(server.url + "/")
        expect(page.get_by_role("heading", name="Flags", exact=True)).to_be_visible()
        expect(page.get_by_role("button", name="Sign out")).to_have_count(0)
        page.get_by_role("link", name="New flag").click()
        page.get_by_label("Name").fill("open-door")
        page.get_by_role("button", name="Create flag").click()
        expect(page.get_by_role("heading", name="open-door")).to_be_visible()
        events = server.api("GET", "/api/admin/events?feature=open-door")["events"]
        assert [e["createdBy"] for e in events] == ["anonymous"]
    finally:
        stop_server(server)


def test_after_signing_in_next_never_leaves_the_site(page: Page, server: Server) -> None:
    port = urllib.parse.urlsplit(server.url).port
    hostile = [
        "/%09/evil.example",  # the browser drops the tab: //evil.example
        "/%0a/evil.example",
        "%5C%5Cevil.example",  # backslashes read as slashes
        "/%5Cevil.example",
        "//evil.example",
        "https://evil.example/",
        f"//127.0.0.1:{port + 1 if port and port < 65535 else 1}/",  # another port, same host
        "javascript:alert(1)",
        "/api/admin/features",  # on the site, but no page of the UI
    ]
    for target in hostile:
        page.context.clear_cookies()
        page.goto(f"{server.url}/ui/sign-in?next={target}")
        page.get_by_label("Admin API token").fill(ADMIN)
        page.get_by_role("button", name="Sign in", exact=True).click()
        expect(page).to_have_url(server.url + "/ui/flags")
        # Signed in already: the sign-in page sends on at once, to the same safe place.
        page.goto(f"{server.url}/ui/sign-in?next={target}")
        expect(page).to_have_url(server.url + "/ui/flags")
    assert page.dialogs == []  # type: ignore[attr-defined]
    # A local page of the UI is where signing in leads.
    page.context.clear_cookies()
    page.goto(server.url + "/ui/segments?x=%2F%2Fa")
    page.get_by_label("Admin API token").fill(ADMIN)
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page).to_have_url(server.url + "/ui/segments?x=%2F%2Fa")
