"""Release plans on the flag page (issue 32), in Chromium: a plan made from a template in
one environment, its milestones started one after the other (the active one marked, the
next one's button "Start next"), a progression changed and removed, a safeguard typed
(refused as typed, then saved), its pause and reason shown after SDK impact metrics
tripped it, the safeguard removed and the pause lifted, the plan removed."""

from __future__ import annotations

import datetime as dt
import json
import urllib.request
from typing import Any

from playwright.sync_api import Page, expect

from tests.ui.conftest import CLIENT, Server, wait_for
from tests.ui.test_roles_in_forms import _password_sign_in, _person

FLAGS = "/api/admin/projects/default/features"
PLANS = FLAGS + "/checkout/environments/development/release-plans"


def _template() -> dict[str, Any]:
    return {
        "name": "Gradual",
        "description": "10 → 50 → 100",
        "milestones": [
            {
                "name": f"{p}%",
                "sortOrder": i,
                "strategies": [{"name": "flexibleRollout", "parameters": {"rollout": str(p)}}],
                "transitionCondition": {"intervalMinutes": 60},
            }
            for i, p in enumerate((10, 50, 100))
        ],
    }


def _sdk_report(server: Server, errors: int, requests: int) -> None:
    start = (dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)).isoformat()
    samples = {"labels": {"featureName": "checkout"}}
    body = {
        "appName": "shop",
        "instanceId": "i-1",
        "bucket": {"start": start, "stop": start, "toggles": {}},
        "impactMetrics": [
            {"name": n, "help": n, "type": "counter", "samples": [{**samples, "value": v}]}
            for n, v in (("errors", errors), ("requests", requests))
        ],
    }
    request = urllib.request.Request(
        server.url + "/api/client/metrics",
        data=json.dumps(body).encode(),
        headers={"Authorization": CLIENT, "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 202


def test_a_release_plan_is_added_moved_on_paused_by_a_safeguard_and_removed(
    signed_in: Page, server: Server, shot: Any
) -> None:
    server.api("POST", FLAGS, {"name": "checkout"})
    server.api("POST", "/api/admin/release-plan-templates", _template())
    page = signed_in
    page.goto(server.url + "/ui/flags/checkout")
    plan_box = page.get_by_role("group", name="Release plan in development")
    plan_box.get_by_label("Release template").select_option(label="Gradual (3 milestones)")
    plan_box.get_by_role("button", name="Add release plan in development").click()
    expect(plan_box).to_contain_text("No milestone started yet.")

    plan_box.get_by_role("button", name="Start next: 10% in development").click()
    expect(plan_box.locator(".active-milestone")).to_have_text("10%")
    expect(plan_box.locator("[aria-current=step]")).to_contain_text("10%")
    expect(plan_box).to_contain_text("50% starts on its own at")
    plan_box.get_by_role("button", name="Start next: 50% in development").click()
    expect(plan_box.locator(".active-milestone")).to_have_text("50%")
    strategies = server.api("GET", FLAGS + "/checkout/environments/development/strategies")
    assert [s["parameters"]["rollout"] for s in strategies] == ["50"]

    # The first milestone's progression: a refused value comes back as typed, then a
    # saved one, then none.
    minutes = plan_box.get_by_label("Minutes after 10% before 50% starts in development")
    expect(minutes).to_have_value("60")
    minutes.fill("soon")
    plan_box.get_by_role("button", name="Save progression after 10% in development").click()
    expect(page.locator("[role=alert]").first).to_be_visible()
    expect(minutes).to_have_value("soon")
    expect(minutes).to_have_attribute("aria-invalid", "true")
    minutes.fill("90")
    plan_box.get_by_role("button", name="Save progression after 10% in development").click()
    expect(minutes).to_have_value("90")
    first = server.api("GET", PLANS)[0]["milestones"][0]
    assert first["transitionCondition"] == {"intervalMinutes": 90}
    plan_box.get_by_role("button", name="Remove progression after 10% in development").click()
    expect(minutes).to_have_value("")
    assert server.api("GET", PLANS)[0]["milestones"][0].get("transitionCondition") is None

    # The safeguard, typed in the plan's form: refused first as typed, then saved.
    plan_box.get_by_text("Add a safeguard in development").click()
    plan_box.get_by_label("Metric").fill("errors")
    plan_box.get_by_label("Divided by (optional)").fill("requests")
    plan_box.get_by_label("Aggregation").select_option("sum")
    plan_box.get_by_label("Pause when it is").select_option(label="above")
    plan_box.get_by_label("Threshold").fill("two percent")
    plan_box.get_by_label("Over the last (minutes)").fill("5")
    plan_box.get_by_role("button", name="Save safeguard in development").click()
    expect(page.locator("[role=alert]").first).to_contain_text("threshold must be a finite number")
    expect(plan_box.get_by_label("Threshold")).to_have_value("two percent")
    expect(plan_box.get_by_label("Threshold")).to_have_attribute("aria-invalid", "true")
    expect(plan_box.get_by_label("Divided by (optional)")).to_have_value("requests")
    assert server.api("GET", PLANS)[0]["safeguards"] == []
    plan_box.get_by_label("Threshold").fill("0.02")
    plan_box.get_by_role("button", name="Save safeguard in development").click()
    expect(plan_box).to_contain_text("Safeguard: pauses when errors / requests (sum, last 5 min)")
    (saved,) = server.api("GET", PLANS)[0]["safeguards"]
    assert saved["impactMetric"]["metricName"] == "errors"
    assert saved["triggerCondition"] == {"operator": ">", "threshold": 0.02}
    _sdk_report(server, errors=9, requests=100)
    wait_for(lambda: "pausedReason" in server.api("GET", PLANS)[0])
    page.reload()
    expect(plan_box.get_by_role("status")).to_contain_text(
        "Paused by a safeguard: errors / requests (sum) over the last 5 minutes was 0.09"
    )
    expect(plan_box).to_contain_text("Safeguard: pauses when errors / requests")
    page.get_by_role("heading", name="Release plan in development").scroll_into_view_if_needed()
    page.evaluate("window.scrollBy(0, -60)")
    shot(page, "flag-release-plan-paused")

    plan_box.get_by_role("button", name="Remove safeguard in development").click()
    expect(plan_box).not_to_contain_text("Safeguard: pauses")
    assert server.api("GET", PLANS)[0]["safeguards"] == []
    plan_box.get_by_role("button", name="Resume progression").click()
    expect(plan_box.get_by_role("status")).to_have_count(0)
    expect(plan_box).to_contain_text("100% starts on its own at")

    plan_box.get_by_role("button", name="Remove release plan in development").click()
    expect(plan_box.get_by_role("button", name="Add release plan in development")).to_be_visible()
    assert server.api("GET", PLANS) == []
    assert page.dialogs == []  # type: ignore[attr-defined]


def test_a_viewer_sees_the_plan_and_no_button_to_move_it(page: Page, server: Server) -> None:
    server.api("POST", FLAGS, {"name": "checkout"})
    template = server.api("POST", "/api/admin/release-plan-templates", _template())
    plan = server.api("POST", PLANS, {"templateId": template["id"]})
    first = plan["milestones"][0]["id"]
    server.api("POST", f"{PLANS}/{plan['id']}/milestones/{first}/start")
    _person(server, "vi@x.io", 3)
    _password_sign_in(page, server, "vi@x.io")
    page.goto(server.url + "/ui/flags/checkout")
    plan_box = page.get_by_role("group", name="Release plan in development")
    expect(plan_box.locator(".active-milestone")).to_have_text("10%")
    expect(plan_box.locator("form")).to_have_count(0)
    other = page.get_by_role("group", name="Release plan in production")
    expect(other).to_contain_text("None.")
    expect(other.locator("form")).to_have_count(0)


def test_a_release_template_is_made_from_milestone_rows_refused_as_typed_and_archived(
    signed_in: Page, server: Server, shot: Any
) -> None:
    page = signed_in
    page.get_by_role("link", name="Release templates").click()
    expect(page.get_by_role("heading", name="Release templates", exact=True)).to_be_visible()
    page.get_by_label("Name", exact=True).fill("Careful")
    page.get_by_label("Milestone 1 name").fill("canary")
    page.get_by_label("Milestone 1 rollout (0–100)").fill("5")
    page.get_by_label("Milestone 1: minutes before the next starts (optional)").fill("30")
    # Row 2 left blank: row 3 is the second milestone, and its error shows at row 3.
    page.get_by_label("Milestone 3 name").fill("everyone")
    page.get_by_label("Milestone 3 rollout (0–100)").fill("150")
    page.get_by_role("button", name="Create release template").click()
    expect(page.locator("[role=alert]").first).to_be_visible()
    expect(page.get_by_label("Milestone 3 rollout (0–100)")).to_have_attribute(
        "aria-invalid", "true"
    )
    expect(page.get_by_label("Milestone 3 rollout (0–100)")).to_have_value("150")
    expect(
        page.get_by_label("Milestone 1: minutes before the next starts (optional)")
    ).to_have_value("30")
    assert server.api("GET", "/api/admin/release-plan-templates") == []

    page.get_by_label("Milestone 3 rollout (0–100)").fill("100")
    page.get_by_role("button", name="Create release template").click()
    row = page.get_by_role("row", name="Careful")
    expect(row).to_contain_text("canary (30 min) → everyone")
    shot(page, "release-templates")
    (made,) = server.api("GET", "/api/admin/release-plan-templates")
    assert [m["name"] for m in made["milestones"]] == ["canary", "everyone"]
    assert made["milestones"][0]["transitionCondition"] == {"intervalMinutes": 30}
    assert made["milestones"][1]["strategies"][0]["parameters"]["rollout"] == "100"

    server.api("POST", "/api/admin/release-plan-templates", {**_template(), "name": "Other"})
    page.reload()
    page.get_by_role("button", name="Archive release template Careful").click()
    expect(page.get_by_role("row", name="Careful")).to_have_count(0)
    page.get_by_role("button", name="Delete release template Other").click()
    expect(page.get_by_role("row", name="Other")).to_have_count(0)
    assert server.api("GET", "/api/admin/release-plan-templates") == []
    archived = server.api("GET", f"/api/admin/release-plan-templates/{made['id']}")
    assert archived["archivedAt"] is not None
    assert page.dialogs == []  # type: ignore[attr-defined]


def test_a_release_template_is_changed_on_its_page_and_one_the_rows_cannot_show_is_not(
    signed_in: Page, server: Server
) -> None:
    made = server.api("POST", "/api/admin/release-plan-templates", _template())
    odd = _template()
    odd["name"] = "Targeted"
    odd["milestones"][0]["strategies"][0]["constraints"] = [
        {"contextName": "region", "operator": "IN", "values": ["eu"]}
    ]
    targeted = server.api("POST", "/api/admin/release-plan-templates", odd)
    page = signed_in
    page.goto(server.url + "/ui/release-templates")
    page.get_by_role("link", name="Gradual").click()
    expect(page.get_by_role("heading", name="Release template Gradual")).to_be_visible()
    expect(page.get_by_label("Milestone 2 rollout (0–100)")).to_have_value("50")
    expect(
        page.get_by_label("Milestone 3: minutes before the next starts (optional)")
    ).to_have_value("60")
    page.get_by_label("Milestone 2 rollout (0–100)").fill("250")
    page.get_by_label("Milestone 4 name").fill("everyone")
    page.get_by_label("Milestone 4 rollout (0–100)").fill("100")
    page.get_by_role("button", name="Save release template").click()
    expect(page.locator("[role=alert]").first).to_be_visible()
    expect(page.get_by_label("Milestone 2 rollout (0–100)")).to_have_value("250")
    expect(page.get_by_label("Milestone 2 rollout (0–100)")).to_have_attribute(
        "aria-invalid", "true"
    )
    expect(page.get_by_label("Milestone 4 name")).to_have_value("everyone")
    unchanged = server.api("GET", f"/api/admin/release-plan-templates/{made['id']}")
    assert [m["name"] for m in unchanged["milestones"]] == ["10%", "50%", "100%"]

    page.get_by_label("Milestone 2 rollout (0–100)").fill("60")
    page.get_by_label("Milestone 4 name").fill("")
    page.get_by_label("Milestone 4 rollout (0–100)").fill("")
    page.get_by_label("Milestone 3 name").fill("all")
    page.get_by_role("button", name="Save release template").click()
    expect(page.get_by_role("heading", name="Release templates", exact=True)).to_be_visible()
    saved = server.api("GET", f"/api/admin/release-plan-templates/{made['id']}")
    assert [m["name"] for m in saved["milestones"]] == ["10%", "50%", "all"]
    rollouts = [m["strategies"][0]["parameters"]["rollout"] for m in saved["milestones"]]
    assert rollouts == ["10", "60", "100"]
    assert [m["transitionCondition"] for m in saved["milestones"]] == [{"intervalMinutes": 60}] * 3

    page.get_by_role("link", name="Targeted").click()
    expect(page.get_by_role("note")).to_contain_text("change it through the API")
    expect(page.locator("main form")).to_have_count(0)
    kept = server.api("GET", f"/api/admin/release-plan-templates/{targeted['id']}")
    assert kept["milestones"][0]["strategies"][0]["constraints"]


def test_where_change_requests_are_on_the_plan_forms_add_to_the_draft(
    signed_in: Page, server: Server
) -> None:
    route = "/api/admin/projects/default/environments/production/change-requests"
    server.api("POST", FLAGS, {"name": "checkout"})
    template = server.api("POST", "/api/admin/release-plan-templates", _template())
    server.api("PUT", route + "/config", {"changeRequestsEnabled": True, "requiredApprovals": 1})
    page = signed_in
    page.goto(server.url + "/ui/flags/checkout")
    plan_box = page.get_by_role("group", name="Release plan in production")
    expect(plan_box).to_contain_text("each change below goes to your draft")
    plan_box.get_by_role("button", name="Add release plan in production").click()
    expect(page.get_by_role("status")).to_contain_text("Added to your draft")
    expect(page.get_by_text("addReleasePlan")).to_be_visible()
    production = FLAGS + "/checkout/environments/production/release-plans"
    assert server.api("GET", production) == []  # nothing until approved and applied
    expect(page.locator("main")).to_contain_text(template["id"])  # the payload shown
