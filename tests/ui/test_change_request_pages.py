"""Change requests in the UI beyond the review buttons (issue 30): the schedules a project
and a flag have pending (and those that failed, with the reason), the settings per
environment, a request's title, reviewers and changes, and drafting variants and
dependencies where change requests are on. Each journey drives a real server in Chromium
and checks what it did through the admin API."""

from __future__ import annotations

import datetime as dt
from typing import Any

from playwright.sync_api import Page, expect

from tests.ui.conftest import Server, wait_for

FLAGS = "/api/admin/projects/default/features"
PRODUCTION = "/api/admin/projects/default/environments/production"
REQUESTS = "/api/admin/projects/default/change-requests"


def _turn_on(server: Server) -> None:
    server.api(
        "PUT",
        PRODUCTION + "/change-requests/config",
        {"changeRequestsEnabled": True, "requiredApprovals": 1},
    )


def _bot_token(server: Server) -> str:
    """An Editor service account's token: a person other than the admin token, so the
    admin token may approve what it drafts."""
    account = server.api(
        "POST", "/api/admin/service-account", {"name": "Bot", "username": "bot", "rootRole": 2}
    )
    expires = (dt.datetime.now(dt.UTC) + dt.timedelta(days=7)).isoformat()
    made = server.api(
        "POST",
        f"/api/admin/service-account/{account['id']}/token",
        {"description": "drafts", "expiresAt": expires},
    )
    return str(made["secret"])


def _approved(server: Server, bot: str, flag: str) -> int:
    """A request switching ``flag`` on in production, drafted by the bot and approved by
    the admin token."""
    change = {"feature": flag, "action": "updateEnabled", "payload": {"enabled": True}}
    draft = server.api("POST", PRODUCTION + "/change-requests", change, token=bot)
    one = f"{REQUESTS}/{draft['id']}"
    server.api("PUT", one + "/state", {"state": "In review"}, token=bot)
    assert server.api("PUT", one + "/state", {"state": "Approved"})["state"] == "Approved"
    return int(draft["id"])


def _schedule(server: Server, request_id: int, at: dt.datetime) -> None:
    body = {"state": "Scheduled", "scheduledAt": at.isoformat()}
    assert server.api("PUT", f"{REQUESTS}/{request_id}/state", body)["state"] == "Scheduled"


def test_pending_and_failed_schedules_are_listed_on_the_project_and_on_each_flag(
    signed_in: Page, server: Server, shot: Any
) -> None:
    page = signed_in
    for name in ("launch", "sunset", "untouched"):
        server.api("POST", FLAGS, {"name": name})
    _turn_on(server)
    bot = _bot_token(server)
    pending = _approved(server, bot, "launch")
    tomorrow = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(days=1)
    _schedule(server, pending, tomorrow)
    # The other one's flag changes after approval (the admin token skips change
    # requests): when its time comes the conflict makes the schedule fail.
    failing = _approved(server, bot, "sunset")
    server.api("POST", f"{FLAGS}/sunset/environments/production/strategies", {"name": "default"})
    _schedule(server, failing, dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1))
    wait_for(
        lambda: (
            server.api("GET", f"{REQUESTS}/{failing}").get("schedule", {}).get("status") == "failed"
        )
    )
    reason = server.api("GET", f"{REQUESTS}/{failing}")["schedule"]["reason"]

    page.goto(server.url + "/ui/change-requests?project=default")
    rows = page.locator("table.scheduled tbody tr")
    expect(rows).to_have_count(2)
    first = rows.filter(has_text=f"#{pending} ")
    expect(first.get_by_role("link", name="launch")).to_be_visible()
    expect(first).to_contain_text("production")
    expect(first).to_contain_text(tomorrow.strftime("%Y-%m-%d %H:%M:%S UTC"))
    expect(first).to_contain_text("token:")  # who scheduled it: the admin token
    expect(first).to_contain_text("pending")
    second = rows.filter(has_text=f"#{failing} ")
    expect(second.get_by_role("alert")).to_have_text(f"Schedule failed: {reason}")
    page.locator("#scheduled-h").evaluate("heading => heading.scrollIntoView()")
    shot(page, "change-request-schedules")

    page.goto(server.url + "/ui/flags/launch")
    section = page.get_by_role("region", name="Scheduled changes")
    expect(section.locator("tbody tr")).to_have_count(1)
    expect(section).to_contain_text("pending")
    section.get_by_role("link", name=f"#{pending} ").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(f"#{pending}")
    expect(page.get_by_text("scheduled for")).to_contain_text(
        tomorrow.strftime("%Y-%m-%d %H:%M:%S UTC")
    )

    page.goto(server.url + "/ui/flags/sunset")
    section = page.get_by_role("region", name="Scheduled changes")
    expect(section.get_by_role("alert")).to_contain_text("Schedule failed:")
    page.goto(server.url + "/ui/flags/untouched")
    expect(page.get_by_role("region", name="Scheduled changes")).to_have_count(0)


def test_change_requests_are_turned_on_with_their_approvals_and_a_refused_form_keeps_typing(
    signed_in: Page, server: Server
) -> None:
    page = signed_in
    page.goto(server.url + "/ui/change-requests?project=default")
    page.get_by_label("On in production").check()
    page.get_by_label("Required approvals in production").fill("0")
    page.get_by_role("button", name="Save change request settings of production").click()
    expect(page.get_by_role("alert").first).to_contain_text("requiredApprovals must be between")
    expect(page.get_by_label("On in production")).to_be_checked()
    expect(page.get_by_label("Required approvals in production")).to_have_value("0")
    expect(page.get_by_label("Required approvals in production")).to_have_attribute(
        "aria-invalid", "true"
    )
    config = {r["environment"]: r for r in server.api("GET", REQUESTS + "/config")}
    assert not config["production"]["changeRequestEnabled"]

    page.get_by_label("Required approvals in production").fill("2")
    page.get_by_role("button", name="Save change request settings of production").click()
    expect(page.get_by_role("status")).to_contain_text("settings saved for production")
    config = {r["environment"]: r for r in server.api("GET", REQUESTS + "/config")}
    assert config["production"]["changeRequestEnabled"]
    assert config["production"]["requiredApprovals"] == 2
    assert not config["development"]["changeRequestEnabled"]
    expect(page.get_by_label("On in production")).to_be_checked()
    expect(page.get_by_label("Required approvals in production")).to_have_value("2")

    page.get_by_label("Required approvals in development").fill("")
    page.get_by_role("button", name="Save change request settings of development").click()
    expect(page.get_by_text("required", exact=True)).to_be_visible()
    # a switch of production now drafts instead of switching
    server.api("POST", FLAGS, {"name": "guarded"})
    page.goto(server.url + "/ui/flags/guarded")
    page.get_by_role("switch", name="guarded in production").click()
    expect(page.get_by_role("status")).to_contain_text("Added to your draft")
    expect(page.get_by_text("approvals 0 of 2")).to_be_visible()


PASSWORD = "Correct-Horse-9"


def _editor_signed_in(page: Page, server: Server, email: str) -> int:
    made = server.api(
        "POST", "/api/admin/user-admin", {"email": email, "rootRole": 2, "password": PASSWORD}
    )
    page.context.clear_cookies()
    page.goto(server.url + "/ui/sign-in")
    page.get_by_label("Email or username").fill(email)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in with password").click()
    expect(page.get_by_role("heading", name="Flags", exact=True)).to_be_visible()
    return int(made["id"])


def test_the_author_retitles_asks_reviewers_edits_and_discards_changes_then_the_draft(
    page: Page, server: Server, shot: Any
) -> None:
    for name in ("launch", "other"):
        server.api("POST", FLAGS, {"name": name})
    _turn_on(server)
    bob = server.api(
        "POST", "/api/admin/user-admin", {"email": "bob@x.io", "name": "Bob", "rootRole": 2}
    )
    _editor_signed_in(page, server, "ann@x.io")
    page.goto(server.url + "/ui/flags/other")
    page.get_by_role("switch", name="other in production").click()
    page.goto(server.url + "/ui/flags/launch")
    page.get_by_role("switch", name="launch in production").click()
    expect(page.get_by_role("status")).to_contain_text("Added to your draft")
    request_id = int(page.url.split("?")[0].rsplit("/", 1)[1])
    one = f"{REQUESTS}/{request_id}"

    title = page.get_by_label("Title")
    title.fill("   ")
    page.get_by_role("button", name="Save title").click()
    expect(page.get_by_role("alert").first).to_contain_text("a title is required")
    expect(title).to_have_value("   ")
    title.fill("Launch day")
    page.get_by_role("button", name="Save title").click()
    expect(page.get_by_role("status")).to_contain_text("Title of change request")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Launch day")
    assert server.api("GET", one)["title"] == "Launch day"

    page.get_by_label("Bob").check()
    page.get_by_role("button", name="Save reviewers").click()
    expect(page.get_by_role("status")).to_contain_text("Reviewers of change request")
    assert server.api("GET", one)["reviewers"] == [bob["id"]]
    expect(page.locator("#reviewers-h + ul")).to_have_text("Bob")
    page.get_by_label("Bob").uncheck()
    page.get_by_role("button", name="Save reviewers").click()
    expect(page.get_by_role("status")).to_contain_text("Reviewers of change request")
    assert server.api("GET", one)["reviewers"] == []

    changes = {f["name"]: f for f in server.api("GET", one)["features"]}
    other_id, launch_id = (
        changes["other"]["changes"][0]["id"],
        changes["launch"]["changes"][0]["id"],
    )
    page.get_by_text(f"Edit change {launch_id}").click()
    payload = page.get_by_label(f"Payload of change {launch_id} (JSON)")
    payload.fill('{"enabled": "yes"}')
    page.get_by_role("button", name=f"Save change {launch_id}").click()
    expect(page.get_by_role("alert").first).to_be_visible()
    shot(page, "change-request-editing")
    expect(payload).to_have_value('{"enabled": "yes"}')
    expect(payload).to_have_attribute("aria-invalid", "true")
    stored = {f["name"]: f for f in server.api("GET", one)["features"]}
    assert stored["launch"]["changes"][0]["payload"] == {"enabled": True}
    payload.fill('{"enabled": false}')
    page.get_by_role("button", name=f"Save change {launch_id}").click()
    expect(page.get_by_role("status")).to_contain_text(f"Change {launch_id} saved")
    stored = {f["name"]: f for f in server.api("GET", one)["features"]}
    assert stored["launch"]["changes"][0]["payload"] == {"enabled": False}

    page.get_by_role("button", name=f"Discard change {other_id}").click()
    expect(page.get_by_role("status")).to_contain_text(f"Change {other_id} taken out")
    assert [f["name"] for f in server.api("GET", one)["features"]] == ["launch"]

    page.get_by_role("button", name="Discard draft").click()
    expect(page.get_by_role("status")).to_contain_text(f"#{request_id} discarded")
    expect(page.get_by_role("heading", name="Change requests", level=1)).to_be_visible()
    assert server.api_status("GET", one) == 404
    production = {e["name"]: e for e in server.api("GET", f"{FLAGS}/launch")["environments"]}[
        "production"
    ]
    assert not production["enabled"]


def test_variants_and_a_dependency_are_added_to_the_draft_where_change_requests_are_on(
    page: Page, server: Server
) -> None:
    for name in ("child", "parent"):
        server.api("POST", FLAGS, {"name": name})
    _turn_on(server)
    _editor_signed_in(page, server, "ann@x.io")
    page.goto(server.url + "/ui/flags/child/environments/production/variants")
    names = page.get_by_label("Variant name")
    names.nth(0).fill("blue")
    page.get_by_role("button", name="Add a variant row").click()
    names.nth(1).fill("blue")
    page.get_by_role("button", name="Add to draft", exact=True).click()
    # the service's refusal lands on the second row, the form as typed
    expect(page.get_by_role("alert").first).to_be_visible()
    expect(names.nth(1)).to_have_attribute("aria-invalid", "true")
    expect(names.nth(1)).to_have_value("blue")
    names.nth(1).fill("green")
    page.get_by_role("button", name="Add to draft", exact=True).click()
    expect(page.get_by_role("status")).to_contain_text("Added to your draft")
    expect(page.get_by_role("cell", name="patchVariant")).to_be_visible()
    request_id = int(page.url.split("?")[0].rsplit("/", 1)[1])
    variants = f"{FLAGS}/child/environments/production/variants"
    assert server.api("GET", variants)["variants"] == []

    page.goto(server.url + "/ui/flags/child")
    expect(page.locator("#dependency-drafting-note")).to_contain_text("production")
    page.get_by_label("Parent flag").select_option("parent")
    page.get_by_role("button", name="Add to draft", exact=True).click()
    expect(page.get_by_role("status")).to_contain_text(f"#{request_id}")
    expect(page.get_by_role("cell", name="addDependency")).to_be_visible()
    assert server.api("GET", f"{FLAGS}/child")["dependencies"] == []

    one = f"{REQUESTS}/{request_id}"
    page.get_by_role("button", name="Send to review").click()
    server.api("PUT", one + "/state", {"state": "Approved"})
    server.api("PUT", one + "/state", {"state": "Applied"})
    stored = server.api("GET", variants)["variants"]
    assert [v["name"] for v in stored] == ["blue", "green"]
    child = server.api("GET", f"{FLAGS}/child")
    assert [d["feature"] for d in child["dependencies"]] == ["parent"]

    # removing the parent is drafted too; the flag keeps it until that is applied
    page.goto(server.url + "/ui/flags/child")
    page.get_by_role("button", name="Remove dependency on parent (add to draft)").click()
    expect(page.get_by_role("status")).to_contain_text("Added to your draft")
    expect(page.get_by_role("cell", name="deleteDependency")).to_be_visible()
    assert len(server.api("GET", f"{FLAGS}/child")["dependencies"]) == 1


def test_an_approved_request_is_scheduled_from_its_page_and_a_past_time_comes_back_as_typed(
    signed_in: Page, server: Server
) -> None:
    page = signed_in
    server.api("POST", FLAGS, {"name": "launch"})
    _turn_on(server)
    request_id = _approved(server, _bot_token(server), "launch")
    page.goto(server.url + f"/ui/change-requests/default/{request_id}")
    when = page.get_by_label("Apply at (UTC)")
    when.fill("2001-01-01T09:00")
    page.get_by_role("button", name="Schedule", exact=True).click()
    expect(page.get_by_role("alert").first).to_contain_text("a time to come")
    expect(when).to_have_value("2001-01-01T09:00")
    expect(when).to_have_attribute("aria-invalid", "true")
    assert server.api("GET", f"{REQUESTS}/{request_id}")["state"] == "Approved"

    tomorrow = (dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).replace(second=0, microsecond=0)
    when.fill(tomorrow.strftime("%Y-%m-%dT%H:%M"))
    page.get_by_role("button", name="Schedule", exact=True).click()
    expect(page.get_by_role("status")).to_contain_text("now Scheduled")
    stored = server.api("GET", f"{REQUESTS}/{request_id}")
    assert stored["state"] == "Scheduled"
    at = dt.datetime.fromisoformat(stored["schedule"]["scheduledAt"].replace("Z", "+00:00"))
    assert at == tomorrow
    expect(page.get_by_label("Apply at (UTC)")).to_have_value(tomorrow.strftime("%Y-%m-%dT%H:%M"))
    expect(page.get_by_role("button", name="Move the schedule")).to_be_visible()


def test_a_segment_held_back_by_change_requests_is_edited_into_a_draft(
    page: Page, server: Server
) -> None:
    server.api("POST", FLAGS, {"name": "checkout"})
    constraint = {"contextName": "userId", "operator": "IN", "values": ["1", "2"]}
    segment = server.api(
        "POST", "/api/admin/segments", {"name": "beta-users", "constraints": [constraint]}
    )
    strategy = {"name": "default", "segments": [segment["id"]]}
    server.api("POST", f"{FLAGS}/checkout/environments/production/strategies", strategy)
    _turn_on(server)
    _editor_signed_in(page, server, "ann@x.io")
    page.goto(server.url + f"/ui/segments/{segment['id']}")
    expect(page.locator("#drafting-note")).to_contain_text(
        "default uses this segment in production"
    )
    page.get_by_label("Segment name").fill("")
    values = page.locator(".row.constraint").first.get_by_label("Values")
    values.fill("1\n2\n3")
    page.get_by_role("button", name="Add to draft", exact=True).click()
    # refused at its field, the form as typed
    expect(page.get_by_label("Segment name")).to_have_attribute("aria-invalid", "true")
    expect(values).to_have_value("1\n2\n3")
    page.get_by_label("Segment name").fill("beta-users")
    page.get_by_role("button", name="Add to draft", exact=True).click()
    expect(page.get_by_role("status")).to_contain_text("Added to your draft")
    expect(page.get_by_role("cell", name="updateSegment")).to_be_visible()
    stored = server.api("GET", f"/api/admin/segments/{segment['id']}")
    assert stored["constraints"][0]["values"] == ["1", "2"]
    request_id = int(page.url.split("?")[0].rsplit("/", 1)[1])
    # the direct save is still refused for someone who may not skip change requests
    page.goto(server.url + f"/ui/segments/{segment['id']}")
    page.get_by_role("button", name="Save segment").click()
    expect(page.get_by_role("alert").first).to_contain_text("Change requests are enabled")

    # Its deletion is drafted from the list too: refused while a strategy uses it, then
    # drafted once the draft deletes that strategy first (tried after the draft's changes).
    delete = "Delete segment beta-users (add to draft)"
    page.goto(server.url + "/ui/segments")
    page.get_by_role("button", name=delete).click()
    alert = page.get_by_role("alert").first
    expect(alert).to_contain_text("remove it from them first")
    expect(alert).to_contain_text("your draft in default / production")
    page.goto(server.url + "/ui/flags/checkout")
    page.get_by_role("button", name="Delete default in production").click()
    expect(page.get_by_role("cell", name="deleteStrategy")).to_be_visible()
    page.goto(server.url + "/ui/segments")
    page.get_by_role("button", name=delete).click()
    expect(page.get_by_role("status")).to_contain_text("Added to your draft")
    expect(page.get_by_role("cell", name="deleteSegment")).to_be_visible()
    assert page.url.split("?")[0].endswith(f"/{request_id}")
    segment_path = f"/api/admin/segments/{segment['id']}"
    assert server.api_status("GET", segment_path) == 200
    page.get_by_role("button", name="Send to review").click()
    expect(page.get_by_role("status")).to_contain_text("now In review")
    one = f"{REQUESTS}/{request_id}"
    server.api("PUT", one + "/state", {"state": "Approved"})  # the admin token, not Ann
    assert server.api("PUT", one + "/state", {"state": "Applied"})["state"] == "Applied"
    assert server.api_status("GET", segment_path) == 404
    production = {e["name"]: e for e in server.api("GET", f"{FLAGS}/checkout")["environments"]}[
        "production"
    ]
    assert production["strategies"] == []


def test_moving_and_deleting_a_strategy_and_archiving_are_drafted_where_change_requests_are_on(
    page: Page, server: Server
) -> None:
    server.api("POST", FLAGS, {"name": "checkout"})
    strategies = f"{FLAGS}/checkout/environments/production/strategies"
    first, second = (
        server.api("POST", strategies, {"name": "default", "title": title})
        for title in ("first", "second")
    )
    _turn_on(server)
    _editor_signed_in(page, server, "ann@x.io")
    page.goto(server.url + "/ui/flags/checkout")
    page.get_by_role("button", name="Move first down").click()
    expect(page.get_by_role("status")).to_contain_text("Added to your draft")
    expect(page.get_by_role("cell", name="reorderStrategy")).to_be_visible()
    request_id = int(page.url.split("?")[0].rsplit("/", 1)[1])
    page.goto(server.url + "/ui/flags/checkout")
    page.get_by_role("button", name="Delete second in production").click()
    expect(page.get_by_role("cell", name="deleteStrategy")).to_be_visible()
    page.goto(server.url + "/ui/flags/checkout")
    page.get_by_role("button", name="Archive this flag (add to draft)").click()
    expect(page.get_by_role("cell", name="archiveFeature")).to_be_visible()
    assert page.url.split("?")[0].endswith(f"/{request_id}")  # one draft for all three

    flag = server.api("GET", f"{FLAGS}/checkout")
    assert not flag["archived"]
    production = {e["name"]: e for e in flag["environments"]}["production"]
    assert [s["id"] for s in production["strategies"]] == [first["id"], second["id"]]
    changes = server.api("GET", f"{REQUESTS}/{request_id}")["features"][0]["changes"]
    assert [c["action"] for c in changes] == ["reorderStrategy", "deleteStrategy", "archiveFeature"]
    assert changes[0]["payload"] == [
        {"id": second["id"], "sortOrder": 0},
        {"id": first["id"], "sortOrder": 1},
    ]
    assert changes[1]["payload"] == {"id": second["id"]}


def test_strategies_copied_into_an_environment_under_change_requests_are_drafted(
    page: Page, server: Server
) -> None:
    server.api("POST", FLAGS, {"name": "checkout"})
    rollout = {"name": "flexibleRollout", "parameters": {"rollout": "25"}}
    server.api("POST", f"{FLAGS}/checkout/environments/development/strategies", rollout)
    _turn_on(server)
    _editor_signed_in(page, server, "ann@x.io")
    page.goto(server.url + "/ui/flags/checkout")
    page.get_by_label("Copy development's strategies to").select_option("production")
    page.get_by_role("button", name="Copy strategies").click()
    expect(page.get_by_role("status")).to_contain_text("Added to your draft")
    expect(page.get_by_role("cell", name="addStrategy")).to_be_visible()
    production = {e["name"]: e for e in server.api("GET", f"{FLAGS}/checkout")["environments"]}[
        "production"
    ]
    assert production["strategies"] == []
    request_id = int(page.url.split("?")[0].rsplit("/", 1)[1])
    [change] = server.api("GET", f"{REQUESTS}/{request_id}")["features"][0]["changes"]
    assert change["payload"]["parameters"]["rollout"] == "25"
