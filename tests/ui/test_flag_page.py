"""A flag's page: strategy order and deletion, segments in strategies, archive and revive."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from tests.ui.conftest import Server

FLAGS = "/api/admin/projects/default/features"
DEV = FLAGS + "/{name}/environments/development"


def _strategies(server: Server, name: str, environment: str = "development") -> list[Any]:
    flag = server.api("GET", f"{FLAGS}/{name}")
    return {e["name"]: e for e in flag["environments"]}[environment]["strategies"]


def test_reordering_and_deleting_the_last_strategy_turns_the_environment_off_and_says_so(
    signed_in: Page, server: Server
) -> None:
    server.api("POST", FLAGS, {"name": "ordered"})
    for title in ("first", "second"):
        server.api(
            "POST",
            DEV.format(name="ordered") + "/strategies",
            {"name": "default", "title": title},
        )
    server.api("POST", DEV.format(name="ordered") + "/on")
    page = signed_in
    page.goto(server.url + "/ui/flags/ordered")
    page.get_by_role("button", name="Move second up").click()
    expect(page.locator(".strategies").first.locator("h3").first).to_contain_text("second")
    assert [s["title"] for s in _strategies(server, "ordered")] == ["second", "first"]

    page.get_by_role("button", name="Delete second in development").click()
    expect(page.get_by_role("status")).to_have_count(0)
    page.get_by_role("button", name="Delete first in development").click()
    expect(page.get_by_role("status")).to_contain_text(
        "That was the last active strategy in development: the flag is now off there."
    )
    expect(page.get_by_role("switch", name="ordered in development")).to_have_attribute(
        "aria-checked", "false"
    )
    flag = server.api("GET", f"{FLAGS}/ordered")
    development = {e["name"]: e for e in flag["environments"]}["development"]
    assert (development["enabled"], development["strategies"]) == (False, [])


def test_a_segment_made_in_the_ui_is_used_by_a_strategy_and_cannot_be_deleted_while_used(
    signed_in: Page, server: Server, shot: Any
) -> None:
    server.api("POST", FLAGS, {"name": "beta-feature"})
    page = signed_in
    page.goto(server.url + "/ui/segments")
    page.get_by_role("link", name="New segment").click()
    page.get_by_label("Segment name").fill("")
    page.get_by_role("button", name="Save segment").click()
    expect(page.locator("#name ~ .field-error").first).to_contain_text("must not be empty")
    assert server.api("GET", "/api/admin/segments")["segments"] == []

    page.get_by_label("Segment name").fill("beta-testers")
    page.get_by_label("Context field").fill("email")
    page.get_by_label("Operator").select_option("STR_ENDS_WITH")
    page.get_by_label("Values").fill("@example.com")
    page.get_by_label("Inverted (NOT)").check()
    page.get_by_role("button", name="Add a constraint row").click()
    second = page.locator(".row.constraint").nth(1)
    second.get_by_label("Context field").fill("appVersion")
    second.get_by_label("Operator").select_option("SEMVER_GTE")
    second.get_by_label("Values").fill("2.0.0")
    page.get_by_role("button", name="Save segment").click()
    expect(page.get_by_role("link", name="beta-testers")).to_be_visible()
    (segment,) = server.api("GET", "/api/admin/segments")["segments"]
    assert [(c["contextName"], c["operator"], c["inverted"]) for c in segment["constraints"]] == [
        ("email", "STR_ENDS_WITH", True),
        ("appVersion", "SEMVER_GTE", False),
    ]
    assert segment["constraints"][1]["value"] == "2.0.0"

    page.goto(server.url + "/ui/flags/beta-feature/environments/production/strategies/new")
    page.get_by_label("Parameter rollout (0–100)").fill("100")
    page.get_by_label("beta-testers").check()
    page.get_by_role("button", name="Save strategy").click()
    expect(page.locator(".strategy").first).to_contain_text("beta-testers")
    assert _strategies(server, "beta-feature", "production")[0]["segments"] == [segment["id"]]

    page.goto(server.url + "/ui/segments")
    expect(page.get_by_role("row", name="beta-testers")).to_contain_text("1")
    shot(page, "segments")
    page.get_by_role("button", name="Delete segment beta-testers").click()
    expect(page.get_by_role("alert")).to_contain_text("is used by 1 strategy")
    expect(page.get_by_role("alert")).to_contain_text("used by beta-feature in production")
    assert len(server.api("GET", "/api/admin/segments")["segments"]) == 1


def test_archive_revive_and_delete_for_good_after_confirming(
    signed_in: Page, server: Server, shot: Any
) -> None:
    server.api("POST", FLAGS, {"name": "retired"})
    server.api("POST", DEV.format(name="retired") + "/on")
    page = signed_in
    page.goto(server.url + "/ui/flags/retired")
    page.get_by_role("button", name="Mark as stale").click()
    expect(page.locator("h1 .badge")).to_have_text("stale")
    assert server.api("GET", f"{FLAGS}/retired")["stale"] is True

    page.get_by_role("button", name="Archive this flag").click()
    expect(page.get_by_role("heading", name="Archive")).to_be_visible()
    expect(page.get_by_role("row", name="retired")).to_be_visible()
    assert server.api_status("GET", f"{FLAGS}/retired") == 404
    shot(page, "archive")

    page.get_by_role("button", name="Revive retired").click()
    expect(page.get_by_role("heading", name="retired")).to_be_visible()
    # Revived as Unleash does: its strategies kept, off in every environment.
    flag = server.api("GET", f"{FLAGS}/retired")
    assert all(not e["enabled"] for e in flag["environments"])

    page.get_by_role("button", name="Archive this flag").click()
    page.get_by_role("link", name="Delete for good: retired").click()
    page.get_by_label("Type the flag's name to confirm").fill("wrong")
    page.get_by_role("button", name="Delete for good").click()
    expect(page.locator(".field-error")).to_have_text("Type the flag's name to confirm.")
    assert [f["name"] for f in server.api("GET", "/api/admin/archive/features")["features"]] == [
        "retired"
    ]
    page.get_by_label("Type the flag's name to confirm").fill("retired")
    page.get_by_role("button", name="Delete for good").click()
    expect(page.get_by_text("No archived flags.")).to_be_visible()
    assert server.api("GET", "/api/admin/archive/features")["features"] == []


def test_editing_a_strategy_changes_its_constraints_and_variants_in_place(
    signed_in: Page, server: Server
) -> None:
    server.api("POST", FLAGS, {"name": "edited"})
    created = server.api(
        "POST",
        DEV.format(name="edited") + "/strategies",
        {
            "name": "flexibleRollout",
            "parameters": {"rollout": "10"},
            "constraints": [{"contextName": "plan", "operator": "IN", "values": ["pro"]}],
        },
    )
    page = signed_in
    page.goto(server.url + "/ui/flags/edited")
    page.get_by_role("link", name="Edit", exact=True).first.click()
    expect(page.get_by_label("Parameter rollout (0–100)")).to_have_value("10")
    page.get_by_label("Parameter rollout (0–100)").fill("50")
    first = page.locator(".row.constraint").nth(0)
    expect(first.get_by_label("Values")).to_have_value("pro")
    first.get_by_label("Values").fill("pro\nenterprise")
    first.get_by_label("Inverted (NOT)").check()
    second = page.locator(".row.constraint").nth(1)
    second.get_by_label("Context field").fill("seats")
    second.get_by_label("Operator").select_option("NUM_GT")
    second.get_by_label("Values").fill("10")
    page.get_by_label("Variant name").fill("wide")
    page.get_by_label("Payload", exact=True).fill("layout-b")
    page.get_by_role("button", name="Save strategy").click()
    expect(page.get_by_text("seats NUM_GT 10")).to_be_visible()

    (strategy,) = _strategies(server, "edited")
    assert strategy["id"] == created["id"]
    assert strategy["parameters"]["rollout"] == "50"
    assert [
        (c["contextName"], c["operator"], c["values"], c["value"], c["inverted"])
        for c in strategy["constraints"]
    ] == [("plan", "IN", ["pro", "enterprise"], None, True), ("seats", "NUM_GT", [], "10", False)]
    assert [(v["name"], v["weight"], v["payload"]) for v in strategy["variants"]] == [
        ("wide", 1000, {"type": "string", "value": "layout-b"})
    ]
    events = server.api("GET", "/api/admin/events?feature=edited")["events"]
    assert events[0]["type"] == "feature-strategy-update"
