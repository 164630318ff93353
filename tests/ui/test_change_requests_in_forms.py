"""Change requests in the UI (issue 30): where they are on, a person's save of a direct
change is refused with the message that names the change-request route, the form coming
back as typed and nothing written."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.ui.conftest import Server

PASSWORD = "Correct-Horse-9"
FLAGS = "/api/admin/projects/default/features"
ROUTE = "/api/admin/projects/default/environments/production/change-requests"


def _editor_signed_in(page: Page, server: Server) -> None:
    body = {"email": "ed@x.io", "rootRole": 2, "password": PASSWORD}
    server.api("POST", "/api/admin/user-admin", body)
    page.goto(server.url + "/ui/sign-in")
    page.get_by_label("Email or username").fill("ed@x.io")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in with password").click()
    expect(page.get_by_role("heading", name="Flags", exact=True)).to_be_visible()


def test_a_strategy_saved_where_change_requests_are_on_is_refused_with_the_route_to_use(
    page: Page, server: Server
) -> None:
    server.api("POST", FLAGS, {"name": "guarded"})
    server.api("PUT", ROUTE + "/config", {"changeRequestsEnabled": True, "requiredApprovals": 1})
    _editor_signed_in(page, server)
    events = len(server.api("GET", "/api/admin/events")["events"])
    page.goto(server.url + "/ui/flags/guarded/environments/production/strategies/new")
    page.get_by_label("Parameter rollout (0–100)").fill("35")
    page.get_by_role("button", name="Save strategy").click()
    alert = page.locator("[role=alert]").first
    expect(alert).to_contain_text("Change requests are enabled")
    expect(alert).to_contain_text(ROUTE)
    expect(page.get_by_label("Parameter rollout (0–100)")).to_have_value("35")
    details = server.api("GET", f"{FLAGS}/guarded")
    assert all(e["strategies"] == [] for e in details["environments"])
    assert len(server.api("GET", "/api/admin/events")["events"]) == events

    page.goto(server.url + "/ui/flags/guarded")
    page.get_by_role("switch", name="guarded in production").click()
    expect(page.get_by_text("Change requests are enabled").first).to_be_visible()
    details = server.api("GET", f"{FLAGS}/guarded")
    assert not {e["name"]: e for e in details["environments"]}["production"]["enabled"]
