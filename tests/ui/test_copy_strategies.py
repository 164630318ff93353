"""Copying a flag's strategies to another environment in one click from its page."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import Page, expect

from tests.ui.conftest import Server

FEATURES = "/api/admin/projects/default/features"
DEV = FEATURES + "/f/environments/development/strategies"


def test_every_strategy_is_copied_to_the_chosen_environment_in_order(
    signed_in: Page, server: Server, shot: Callable[[Page, str], None]
) -> None:
    server.api("POST", FEATURES, {"name": "f"})
    segment = server.api("POST", "/api/admin/segments", {"name": "beta", "constraints": []})
    first = server.api(
        "POST",
        DEV,
        {
            "name": "flexibleRollout",
            "title": "a quarter",
            "parameters": {"rollout": "25", "stickiness": "userId", "groupId": "g"},
            "constraints": [{"contextName": "plan", "operator": "IN", "values": ["pro"]}],
            "segments": [segment["id"]],
        },
    )
    server.api("POST", DEV, {"name": "userWithId", "parameters": {"userIds": "1,2"}})
    page = signed_in
    page.goto(server.url + "/ui/flags/f")
    expect(page.get_by_label("Copy production's strategies to")).to_have_count(0)  # none there
    target = page.get_by_label("Copy development's strategies to")
    target.select_option("production")
    heading = page.get_by_role("heading", name="development", exact=True)
    heading.evaluate("h => h.scrollIntoView()")  # the environment's strategies and the form
    shot(page, "copy-strategies")
    page.get_by_role("button", name="Copy strategies").click()
    expect(page.get_by_text("Strategies copied to production.")).to_be_visible()
    copied = server.api("GET", FEATURES + "/f/environments/production/strategies")
    assert [s["name"] for s in copied] == ["flexibleRollout", "userWithId"]
    assert copied[0]["id"] != first["id"]
    for key in ("title", "parameters", "constraints", "segments"):
        assert copied[0][key] == first[key], key
    # The switch in production is left as it was.
    flag = server.api("GET", FEATURES + "/f")
    assert [(e["name"], e["enabled"]) for e in flag["environments"]] == [
        ("development", False),
        ("production", False),
    ]


def test_a_copy_to_an_environment_gone_since_the_page_was_drawn_comes_back_as_chosen(
    signed_in: Page, server: Server
) -> None:
    server.api("POST", "/api/admin/environments", {"name": "qa"})
    server.api("POST", FEATURES, {"name": "f"})
    server.api("POST", DEV, {"name": "default"})
    page = signed_in
    page.goto(server.url + "/ui/flags/f")
    page.get_by_label("Copy development's strategies to").select_option("qa")
    server.api("DELETE", "/api/admin/environments/qa")
    page.get_by_role("button", name="Copy strategies").click()
    expect(page.get_by_role("alert")).to_contain_text('there is no environment "qa"')
    target = page.get_by_label("Copy development's strategies to")
    expect(target).to_have_value("qa")
    expect(target.locator("option:checked")).to_have_text("qa (unknown)")
    expect(target).to_have_attribute("aria-invalid", "true")
    assert server.api("GET", FEATURES + "/f/environments/production/strategies") == []
