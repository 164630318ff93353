"""Signing in with an OpenID provider (issue 28) in Chromium, against npm's certified
``oidc-provider`` that the test starts on 127.0.0.1: the person clicks "Sign in with
Test IdP", signs in there, and lands signed in; signing out signs them out of the
provider too (RP-initiated logout); their groups follow the provider's group claim at
every sign-in, and the Users page shows the provider account each person is linked to;
the rules (allowed domains, verified email, group roles, disabled users) refuse on the
sign-in page with nothing created."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.ui.conftest import Server, start_server, stop_server
from tests.ui.oidc_provider import RunningProvider, running_provider, server_settings
from tests.ui.test_accessibility import axe_source, axe_violations  # noqa: F401 (a fixture)


@pytest.fixture
def provider() -> Iterator[RunningProvider]:
    with running_provider() as running:
        yield running


@pytest.fixture
def server(tmp_path: Path, provider: RunningProvider) -> Iterator[Server]:
    settings = server_settings(
        provider.issuer,
        FLAGCORE_OIDC_EMAIL_DOMAINS="example.io",
        FLAGCORE_OIDC_GROUP_CLAIM="groups",
        FLAGCORE_OIDC_GROUP_ROLES="flag-admins=Admin,staff=Editor",
    )
    running = start_server(tmp_path, env=settings)
    provider.accept_callbacks_of(running.url)
    try:
        yield running
    finally:
        stop_server(running)


def _sign_in_at_provider(page: Page, server: Server, login: str) -> None:
    page.goto(server.url + "/ui/sign-in")
    page.get_by_role("link", name="Sign in with Test IdP").click()
    page.locator("input[name=login]").fill(login)
    page.locator("input[name=password]").fill("any password")
    page.get_by_role("button", name="Sign-in").click()
    page.get_by_role("button", name="Continue").click()


def _people(server: Server) -> list[dict[str, Any]]:
    users = server.api("GET", "/api/admin/user-admin")["users"]
    return [u for u in users if u["username"] != "admin"]


def test_a_first_sign_in_creates_the_user_with_their_groups_role_and_a_second_finds_them(
    page: Page, server: Server, provider: RunningProvider, shot: Any
) -> None:
    staff = server.api("POST", "/api/admin/groups", {"name": "Staff", "mappingsSSO": ["staff"]})
    page.goto(server.url + "/ui/sign-in")
    shot(page, "sign-in-with-provider")
    _sign_in_at_provider(page, server, "ann")
    expect(page.get_by_role("heading", name="Flags", exact=True)).to_be_visible()
    expect(page.locator("header .who")).to_have_text("Ann Admin")
    (ann,) = _people(server)
    assert (ann["email"], ann["name"], ann["rootRole"]) == ("ann@example.io", "Ann Admin", 1)
    assert _members(server, staff["id"]) == [ann["id"]]  # her claim's "staff" maps to Staff
    first_cookie = next(c for c in page.context.cookies() if c["name"] == "flagcore_session")

    # Signing out here signs her out at the provider too: it asks, then sends her back.
    page.get_by_role("button", name="Sign out", exact=True).click()
    page.get_by_role("button", name="Yes, sign me out").click()
    expect(page.get_by_role("heading", name="Sign in", exact=True)).to_be_visible()
    assert page.url == server.url + "/ui/sign-in"
    page.goto(server.url + "/ui/flags")
    expect(page.get_by_role("heading", name="Sign in", exact=True)).to_be_visible()
    # A group mapped since: her next sign-in puts her in it (not only the first one does).
    admins = server.api(
        "POST", "/api/admin/groups", {"name": "Admins", "mappingsSSO": ["flag-admins"]}
    )
    # The provider forgot her: it asks who she is again, and flagcore finds her.
    _sign_in_at_provider(page, server, "ann")
    expect(page.locator("header .who")).to_have_text("Ann Admin")
    assert [u["id"] for u in _people(server)] == [ann["id"]]
    assert _members(server, admins["id"]) == [ann["id"]]
    second_cookie = next(c for c in page.context.cookies() if c["name"] == "flagcore_session")
    assert second_cookie["value"] != first_cookie["value"]  # a new session at each sign-in

    page.get_by_role("link", name="New flag").click()
    page.get_by_label("Name", exact=True).fill("by-ann")
    page.get_by_role("button", name="Create flag").click()
    expect(page.get_by_role("heading", name="by-ann")).to_be_visible()
    events = server.api("GET", "/api/admin/events?feature=by-ann")["events"]
    assert [e["createdBy"] for e in events] == [f"user:{ann['id']}:Ann Admin"]

    # The Users page shows the provider account she is linked to; the admin made at the
    # first start has a password and none.
    page.get_by_role("link", name="Users").click()
    rows = page.locator("tbody tr")
    ann_row = rows.filter(has_text="ann@example.io")
    expect(ann_row.locator(".provider-accounts")).to_have_text(f"{provider.issuer} · ann")
    admin_row = rows.filter(has_not_text="ann@example.io")
    expect(admin_row.locator(".provider-accounts")).to_have_text("none")


def _members(server: Server, group_id: int) -> list[int]:
    group = server.api("GET", f"/api/admin/groups/{group_id}")
    return [member["user"]["id"] for member in group["users"]]


def test_a_person_outside_the_allowed_domains_is_refused_and_nothing_is_created(
    page: Page, server: Server
) -> None:
    _sign_in_at_provider(page, server, "eve")
    expect(page.get_by_role("heading", name="Sign in", exact=True)).to_be_visible()
    expect(
        page.get_by_text("Email addresses at elsewhere.org may not sign in here.")
    ).to_be_visible()
    assert _people(server) == []
    page.goto(server.url + "/ui/flags")
    expect(page.get_by_role("heading", name="Sign in", exact=True)).to_be_visible()


def test_an_unverified_email_is_refused(page: Page, server: Server) -> None:
    _sign_in_at_provider(page, server, "una")
    expect(page.get_by_text("The provider has not verified your email address")).to_be_visible()
    assert _people(server) == []


def test_denying_consent_at_the_provider_comes_back_with_the_reason(
    page: Page, server: Server
) -> None:
    page.goto(server.url + "/ui/sign-in")
    page.get_by_role("link", name="Sign in with Test IdP").click()
    page.locator("input[name=login]").fill("bob")
    page.locator("input[name=password]").fill("any password")
    page.get_by_role("button", name="Sign-in").click()
    page.get_by_role("link", name="[ Cancel ]").click()
    expect(page.get_by_text("You did not allow the sign-in at Test IdP.")).to_be_visible()
    assert _people(server) == []


def test_a_group_maps_to_its_role_and_an_email_matches_whatever_its_case(
    page: Page, server: Server
) -> None:
    # Bob exists already (an admin made him); his provider email differs in case only.
    made = server.api(
        "POST", "/api/admin/user-admin", {"email": "bob@example.io", "name": "Bob", "rootRole": 3}
    )
    _sign_in_at_provider(page, server, "bob")
    expect(page.locator("header .who")).to_have_text("Bob")
    (bob,) = _people(server)
    assert bob["id"] == made["id"]
    assert bob["rootRole"] == 3  # an existing user's role is the admin's, not the group's


def test_a_new_user_in_a_mapped_group_gets_its_role(page: Page, server: Server) -> None:
    _sign_in_at_provider(page, server, "bob")
    expect(page.locator("header .who")).to_have_text("Bob")
    (bob,) = _people(server)
    assert (bob["email"], bob["rootRole"]) == ("Bob@Example.io", 2)  # staff=Editor


def test_a_disabled_user_is_refused(page: Page, server: Server) -> None:
    made = server.api(
        "POST", "/api/admin/user-admin", {"email": "ann@example.io", "name": "Ann", "rootRole": 2}
    )
    server.api("PUT", f"/api/admin/user-admin/{made['id']}", {"disabled": True})
    _sign_in_at_provider(page, server, "ann")
    expect(page.get_by_text("This account is disabled; ask an admin.")).to_be_visible()
    page.goto(server.url + "/ui/flags")
    expect(page.get_by_role("heading", name="Sign in", exact=True)).to_be_visible()


def test_with_password_sign_in_off_the_page_offers_only_the_provider(
    page: Page, tmp_path: Path, provider: RunningProvider
) -> None:
    running = start_server(
        tmp_path, env=server_settings(provider.issuer, FLAGCORE_PASSWORD_SIGN_IN="off")
    )
    try:
        provider.accept_callbacks_of(running.url)
        page.goto(running.url + "/ui/sign-in")
        expect(page.get_by_role("link", name="Sign in with Test IdP")).to_be_visible()
        expect(page.get_by_role("button", name="Sign in with password")).to_have_count(0)
        assert (
            page.request.post(
                running.url + "/auth/simple/login",
                data={"username": "admin", "password": "Correct-Horse-9"},
            ).status
            == 403
        )
    finally:
        stop_server(running)


def test_a_person_sent_to_sign_in_from_a_page_lands_back_on_it(page: Page, server: Server) -> None:
    # A long address (a search of 1,500 characters) rides in the flow cookie and back.
    search = "checkout-" + "x" * 1_500
    page.goto(server.url + "/ui/flags?q=" + search)
    expect(page.get_by_role("heading", name="Sign in", exact=True)).to_be_visible()
    page.get_by_role("link", name="Sign in with Test IdP").click()
    page.locator("input[name=login]").fill("bob")
    page.locator("input[name=password]").fill("any password")
    page.get_by_role("button", name="Sign-in").click()
    page.get_by_role("button", name="Continue").click()
    expect(page.locator("header .who")).to_have_text("Bob")
    assert page.url == server.url + "/ui/flags?q=" + search


def test_axe_finds_no_serious_violation_on_the_sign_in_page_with_a_provider_or_its_refusal(
    page: Page,
    server: Server,
    axe_source: str,  # noqa: F811
) -> None:
    page.goto(server.url + "/ui/sign-in")
    assert axe_violations(page, axe_source) == []
    _sign_in_at_provider(page, server, "eve")
    expect(page.get_by_text("may not sign in here")).to_be_visible()
    assert axe_violations(page, axe_source) == []
