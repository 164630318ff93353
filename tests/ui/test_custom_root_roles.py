"""Custom root roles given on the Users and Service accounts pages (issue 28), in
Chromium: a choice that is refused comes back as chosen, with the reason by its row."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from tests.ui.conftest import Server


def _root_custom(server: Server, name: str, permission: str) -> int:
    body = {"name": name, "type": "root-custom", "permissions": [{"name": permission}]}
    role_id: int = server.api("POST", "/api/admin/roles", body)["id"]
    return role_id


def test_an_admin_gives_a_user_a_custom_root_role_on_the_users_page(
    signed_in: Page, server: Server, shot: Any
) -> None:
    page = signed_in
    segments = _root_custom(server, "Segment maker", "CREATE_SEGMENT")
    ann = server.api(
        "POST", "/api/admin/user-admin", {"email": "ann@x.io", "name": "Ann", "rootRole": 3}
    )
    page.goto(server.url + "/ui/users")
    page.get_by_label("Role of Ann", exact=True).select_option(label="Segment maker")
    page.get_by_role("button", name="Change role of Ann").click()
    expect(page.get_by_role("status")).to_have_text("Root role of “Ann” changed.")
    expect(page.get_by_label("Role of Ann", exact=True)).to_have_value(str(segments))
    assert server.api("GET", f"/api/admin/user-admin/{ann['id']}")["rootRole"] == segments
    shot(page, "users")

    # A role deleted while the page was open: refused, the choice kept, nothing changed.
    doomed = _root_custom(server, "Short-lived", "CREATE_PROJECT")
    page.reload()
    page.get_by_label("Role of Ann", exact=True).select_option(label="Short-lived")
    server.api("DELETE", f"/api/admin/roles/{doomed}")
    page.get_by_role("button", name="Change role of Ann").click()
    expect(page.get_by_role("alert")).to_contain_text(f"There is no root role with id {doomed}.")
    expect(page.get_by_label("Role of Ann", exact=True)).to_have_value(str(doomed))
    assert server.api("GET", f"/api/admin/user-admin/{ann['id']}")["rootRole"] == segments


def test_a_service_account_is_made_with_a_custom_root_role(signed_in: Page, server: Server) -> None:
    page = signed_in
    segments = _root_custom(server, "Segment maker", "CREATE_SEGMENT")
    page.goto(server.url + "/ui/service-accounts")
    page.get_by_label("Name", exact=True).fill("Bot")
    page.get_by_label("Username").fill("bot")
    page.get_by_label("Root role").select_option(label="Segment maker")
    page.get_by_role("button", name="Create service account").click()
    expect(page.get_by_role("heading", name="Bot (bot, Segment maker)")).to_be_visible()
    (account,) = server.api("GET", "/api/admin/service-account")["serviceAccounts"]
    assert account["rootRole"] == segments
