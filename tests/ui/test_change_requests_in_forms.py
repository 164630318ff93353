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
    url = page.url.split("?")[0]
    assert all(e["strategies"] == [] for e in server.api("GET", f"{FLAGS}/launch")["environments"])
    page.get_by_role("button", name="Send to review").click()
    expect(page.get_by_role("status")).to_contain_text("now In review")
    page.get_by_role("button", name="Approve").click()
    expect(page.get_by_text("You cannot approve your own change request")).to_be_visible()

    # Two more of Ann's: the switch drafted and sent to review (Bob will reject it), and
    # one she cancels herself.
    others = []
    for to_review in (True, False):
        page.goto(server.url + "/ui/flags/launch")
        page.get_by_role("switch", name="launch in production").click()
        expect(page.get_by_role("status")).to_contain_text("Added to your draft")
        others.append(page.url.split("?")[0])
        if to_review:
            page.get_by_role("button", name="Send to review").click()
            expect(page.get_by_role("status")).to_contain_text("now In review")
    rejected, cancelled = others
    page.get_by_role("button", name="Cancel request").click()
    expect(page.get_by_role("status")).to_contain_text("now Cancelled")
    expect(page.get_by_role("button", name="Send to review")).to_have_count(0)
    # The flag's page lists its open requests (Unleash's pending/<flag>): not the
    # cancelled one.
    page.goto(server.url + "/ui/flags/launch")
    listed = page.get_by_role("region", name="Open change requests").get_by_role("listitem")
    expect(listed).to_have_count(2)
    expect(listed.first).to_contain_text("In review in production")

    _editor_signed_in(page, server, "bob@x.io")
    page.goto(server.url + "/ui/change-requests?project=default")
    expect(page.get_by_role("link", name=re.compile(r"^#\d+ Change request #\d+$"))).to_have_count(
        3
    )
    page.goto(rejected)
    page.get_by_label("Comment").fill("Not before the launch review")
    page.get_by_role("button", name="Add comment").click()
    page.get_by_role("button", name="Reject").click()
    expect(page.get_by_role("status")).to_contain_text("now Rejected")
    expect(page.get_by_role("heading", name="Rejections")).to_be_visible()
    expect(page.get_by_text("Not before the launch review")).to_be_visible()
    expect(page.get_by_role("button", name="Approve")).to_have_count(0)
    page.goto(url)
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
    assert not production["enabled"]  # neither the rejected nor the cancelled switch
    assert url.startswith(server.url + "/ui/change-requests/default/")
    # Every transition is an event naming the person who made it.
    requests = "/api/admin/projects/default/change-requests/"
    ids = {int(u.rsplit("/", 1)[1]): u for u in (url, rejected, cancelled)}
    states = {i: server.api("GET", requests + str(i))["state"] for i in ids}
    assert sorted(states.values()) == ["Applied", "Cancelled", "Rejected"]
    events = server.api("GET", "/api/admin/events")["events"]
    done = {
        (e["type"], e["data"]["changeRequestId"]): e["createdBy"]
        for e in events
        if e["type"].startswith("change-request-") and "changeRequestId" in (e["data"] or {})
    }
    applied, rejected_id, cancelled_id = (
        int(u.rsplit("/", 1)[1]) for u in (url, rejected, cancelled)
    )
    assert done[("change-request-approved", applied)].endswith("bob@x.io")
    assert done[("change-request-applied", applied)].endswith("bob@x.io")
    assert done[("change-request-comment-added", rejected_id)].endswith("bob@x.io")
    assert done[("change-request-rejected", rejected_id)].endswith("bob@x.io")
    assert done[("change-request-cancelled", cancelled_id)].endswith("ann@x.io")
    assert done[("change-request-sent-to-review", rejected_id)].endswith("ann@x.io")
