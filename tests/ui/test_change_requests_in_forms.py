"""Change requests in the UI (issue 30): where they are on, a person's direct save of a
strategy is refused with the message that names the change-request route (the form back
as typed, nothing written); "Add to draft" and the switch draft the change instead, which
another person approves and applies."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import Page, expect

from tests.ui.conftest import Server

PASSWORD = "Correct-Horse-9"
FLAGS = "/api/admin/projects/default/features"
ROUTE = "/api/admin/projects/default/environments/production/change-requests"


def _editor_signed_in(page: Page, server: Server, email: str = "ed@x.io") -> None:
    body = {"email": email, "rootRole": 2, "password": PASSWORD}
    server.api("POST", "/api/admin/user-admin", body)
    page.context.clear_cookies()
    page.goto(server.url + "/ui/sign-in")
    page.get_by_label("Email or username").fill(email)
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

    # The switch drafts the change instead: nothing changes until it is approved.
    page.goto(server.url + "/ui/flags/guarded")
    page.get_by_role("switch", name="guarded in production").click()
    expect(page.get_by_role("status")).to_contain_text("Added to your draft")
    expect(page.get_by_text("updateEnabled")).to_be_visible()
    details = server.api("GET", f"{FLAGS}/guarded")
    assert not {e["name"]: e for e in details["environments"]}["production"]["enabled"]


def test_a_strategy_is_drafted_sent_to_review_approved_by_another_person_and_applied(
    page: Page, server: Server, shot: Any
) -> None:
    server.api("POST", FLAGS, {"name": "launch"})
    server.api("PUT", ROUTE + "/config", {"changeRequestsEnabled": True, "requiredApprovals": 1})
    _editor_signed_in(page, server, "ann@x.io")
    page.goto(server.url + "/ui/flags/launch/environments/production/strategies/new")
    page.get_by_label("Parameter rollout (0–100)").fill("40")
    shot(page, "change-request-add-to-draft")
    page.get_by_role("button", name="Add to draft").click()
    expect(page.get_by_role("status")).to_contain_text("Added to your draft")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Change request #")
    expect(page.get_by_text("addStrategy")).to_be_visible()
    assert all(e["strategies"] == [] for e in server.api("GET", f"{FLAGS}/launch")["environments"])
    page.get_by_role("button", name="Send to review").click()
    expect(page.get_by_role("status")).to_contain_text("now In review")
    page.get_by_role("button", name="Approve").click()
    expect(page.get_by_text("You cannot approve your own change request")).to_be_visible()
    url = page.url

    _editor_signed_in(page, server, "bob@x.io")
    page.goto(server.url + "/ui/change-requests?project=default")
    page.get_by_role("link", name=re.compile(r"^#\d+ Change request #\d+$")).click()
    page.get_by_label("Comment").fill("Looks right to me")
    page.get_by_role("button", name="Add comment").click()
    page.get_by_role("button", name="Approve").click()
    expect(page.get_by_role("status")).to_contain_text("now Approved")
    shot(page, "change-request-approved")
    page.get_by_role("button", name="Apply changes").click()
    expect(page.get_by_role("status")).to_contain_text("now Applied")
    expect(page.get_by_text("Looks right to me")).to_be_visible()
    production = {e["name"]: e for e in server.api("GET", f"{FLAGS}/launch")["environments"]}[
        "production"
    ]
    assert [s["parameters"]["rollout"] for s in production["strategies"]] == ["40"]
    assert url.startswith(server.url + "/ui/change-requests/default/")
