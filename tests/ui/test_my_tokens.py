"""Personal access tokens and service accounts in Chromium (issue 28): a person makes a
token on "My tokens", sees its secret once, uses it on the admin API as themselves, and
deletes it; an admin makes a service account and a token for it."""

from __future__ import annotations

import datetime as dt
from typing import Any

from playwright.sync_api import Page, expect

from tests.ui.conftest import Server, sign_in

PASSWORD = "Correct-Horse-9"


def _day(days: int) -> str:
    return (dt.datetime.now(dt.UTC).date() + dt.timedelta(days=days)).isoformat()


def test_a_person_makes_a_token_sees_its_secret_once_uses_it_and_deletes_it(
    page: Page, server: Server, shot: Any
) -> None:
    ann = server.api(
        "POST",
        "/api/admin/user-admin",
        {"email": "ann@example.io", "name": "Ann", "rootRole": 1, "password": PASSWORD},
    )
    page.goto(server.url + "/ui/sign-in")
    page.get_by_label("Email or username").fill("ann@example.io")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in with password").click()
    page.get_by_role("link", name="My tokens").click()
    expect(page.get_by_role("heading", name="My tokens")).to_be_visible()
    expect(page.get_by_text("You have no personal access tokens.")).to_be_visible()

    # A day gone by is refused, and the form comes back as typed.
    page.get_by_label("Description").fill("deploys")
    page.get_by_label("Expires at the end of").fill(_day(-1))
    page.get_by_role("button", name="Create token").click()
    expect(page.locator(".field-error")).to_have_text("must be in the future")
    expect(page.get_by_label("Description")).to_have_value("deploys")
    expect(page.get_by_label("Expires at the end of")).to_have_value(_day(-1))

    page.get_by_label("Expires at the end of").fill(_day(30))
    page.get_by_role("button", name="Create token").click()
    secret = page.get_by_label("Secret").input_value()
    assert secret.startswith("user:")
    shot(page, "my-tokens")
    expect(page.get_by_role("row", name="deploys")).to_be_visible()
    me = server.api("GET", "/api/admin/user", token=secret)
    assert (me["id"], me["email"]) == (ann["id"], "ann@example.io")

    page.reload()  # shown once: gone from the page after
    expect(page.get_by_label("Secret")).to_have_count(0)
    page.get_by_role("button", name="Delete token deploys").click()
    expect(page.get_by_role("status")).to_contain_text("deleted")
    expect(page.get_by_text("You have no personal access tokens.")).to_be_visible()
    assert server.api_status("GET", "/api/admin/user", token=secret) == 401
    assert not page.dialogs  # type: ignore[attr-defined]


def test_an_admin_makes_a_service_account_and_a_token_that_acts_as_it(
    page: Page, server: Server
) -> None:
    sign_in(page, server)
    page.get_by_role("link", name="Service accounts").click()
    page.get_by_label("Name", exact=True).fill("Deployer")
    page.get_by_label("Username").fill("deployer")
    page.get_by_label("Root role").select_option("Editor")
    page.get_by_role("button", name="Create service account").click()
    expect(page.get_by_role("heading", name="Deployer")).to_be_visible()
    # A username taken in another case is refused; the form comes back as typed.
    page.get_by_label("Name", exact=True).fill("Second")
    page.get_by_label("Username").fill("DEPLOYER")
    page.get_by_label("Root role").select_option("Admin")
    page.get_by_role("button", name="Create service account").click()
    expect(page.locator(".field-error")).to_have_text("taken")
    expect(page.get_by_label("Name", exact=True)).to_have_value("Second")
    expect(page.get_by_label("Username")).to_have_value("DEPLOYER")
    expect(page.get_by_label("Root role")).to_have_value("Admin")

    page.get_by_label("New token’s description").fill("ci")
    page.get_by_label("Expires at the end of").fill(_day(7))
    page.get_by_role("button", name="Create token for Deployer").click()
    secret = page.get_by_label("Secret").input_value()
    me = server.api("GET", "/api/admin/user", token=secret)
    assert (me["username"], me["rootRole"], me["accountType"]) == (
        "deployer",
        2,
        "Service Account",
    )
    # Deleting one token stops it at once; the account and its other tokens stay.
    page.get_by_label("New token’s description").fill("cd")
    page.get_by_label("Expires at the end of").fill(_day(7))
    page.get_by_role("button", name="Create token for Deployer").click()
    other = page.get_by_label("Secret").input_value()
    page.get_by_role("button", name="Delete token ci of Deployer").click()
    expect(page.get_by_role("button", name="Delete token ci of Deployer")).to_have_count(0)
    assert server.api_status("GET", "/api/admin/user", token=secret) == 401
    assert server.api("GET", "/api/admin/user", token=other)["username"] == "deployer"
    page.get_by_role("button", name="Delete service account Deployer").click()
    expect(page.get_by_text("No service accounts yet.")).to_be_visible()
    assert server.api_status("GET", "/api/admin/user", token=other) == 401
