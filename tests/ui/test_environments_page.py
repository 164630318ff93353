"""The Environments page: list in order, create, reorder, turn off and on, change the
type, rename, delete after a confirmation; refusals come back as typed."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import Page, expect

from tests.ui.conftest import Server

FEATURES = "/api/admin/projects/default/features"


def _names(server: Server) -> list[str]:
    return [e["name"] for e in server.api("GET", "/api/admin/environments")["environments"]]


def _row_names(page: Page) -> list[str]:
    return [h.split()[0] for h in page.locator("tbody th[scope=row]").all_inner_texts()]


def test_an_environment_is_created_moved_retyped_switched_renamed_and_deleted(
    signed_in: Page, server: Server, shot: Callable[[Page, str], None]
) -> None:
    page = signed_in
    page.goto(server.url + "/ui/flags")
    page.get_by_role("link", name="Environments").click()
    assert _row_names(page) == ["development", "production"]
    page.get_by_label("Name (used in URLs").fill("qa")
    page.get_by_label("Type", exact=True).select_option("test")
    page.get_by_role("button", name="Create environment").click()
    expect(page.get_by_text("Environment “qa” created.")).to_be_visible()
    assert _row_names(page) == ["development", "production", "qa"]

    page.get_by_role("button", name="Move qa up").click()
    expect(page.locator("tbody th[scope=row]").nth(1)).to_have_text("qa")
    assert _names(server) == ["development", "qa", "production"]
    page.get_by_role("button", name="Move development down").click()
    expect(page.locator("tbody th[scope=row]").first).to_have_text("qa")
    assert _names(server) == ["qa", "development", "production"]

    page.get_by_label("Type of qa").select_option("preproduction")
    page.get_by_role("row", name="qa").get_by_role("button", name="Save type").click()
    expect(page.get_by_text("Environment “qa” saved.")).to_be_visible()
    switch = page.get_by_role("switch", name="Environment qa enabled")
    switch.click()
    expect(page.get_by_role("switch", name="Environment qa enabled")).to_have_attribute(
        "aria-checked", "false"
    )
    (qa,) = (
        e for e in server.api("GET", "/api/admin/environments")["environments"] if e["name"] == "qa"
    )
    assert (qa["type"], qa["enabled"]) == ("preproduction", False)
    shot(page, "environments")
    server.api("POST", FEATURES, {"name": "f"})
    page.goto(server.url + "/ui/flags/f")
    expect(page.get_by_role("heading", name="qa disabled environment")).to_be_visible()
    page.goto(server.url + "/ui/environments")
    page.get_by_role("switch", name="Environment qa enabled").click()
    expect(page.get_by_role("switch", name="Environment qa enabled")).to_have_attribute(
        "aria-checked", "true"
    )

    server.api("POST", f"{FEATURES}/f/environments/qa/strategies", {"name": "default"})
    server.api("POST", f"{FEATURES}/f/environments/qa/on")
    # Renamed (flagcore's own): a taken name comes back as typed, then qa is staging, and
    # the SDK token made for qa (its secret still reads "qa") gets the same flags.
    token = {"tokenName": "qa-sdk", "type": "client", "environment": "qa", "projects": ["*"]}
    secret = server.api("POST", "/api/admin/api-tokens", token)["secret"]
    served = server.api("GET", "/api/client/features", token=secret)["features"]
    assert [(f["name"], f["enabled"]) for f in served] == [("f", True)]
    page.get_by_label("Environment to rename").select_option("qa")
    page.get_by_label("New name").fill("production")
    page.get_by_role("button", name="Rename environment").click()
    expect(page.get_by_role("alert")).to_contain_text("already exists")
    expect(page.get_by_label("Environment to rename")).to_have_value("qa")
    new_name = page.get_by_label("New name")
    expect(new_name).to_have_value("production")
    expect(new_name).to_have_attribute("aria-invalid", "true")
    assert _names(server) == ["qa", "development", "production"]
    new_name.fill("staging")
    page.get_by_role("button", name="Rename environment").click()
    expect(page.get_by_text("Environment renamed to “staging”")).to_be_visible()
    assert _row_names(page) == ["staging", "development", "production"]
    assert server.api("GET", "/api/client/features", token=secret)["features"] == served
    server.api("DELETE", f"/api/admin/api-tokens/{secret}")  # else it keeps staging

    page.get_by_role("link", name="Delete environment staging").click()
    expect(page.get_by_text("1 flag switched on there, 1 strategy")).to_be_visible()
    page.get_by_label("Type the environment's name").fill("st")
    page.get_by_role("button", name="Delete environment").click()
    confirm = page.get_by_label("Type the environment's name")
    expect(confirm).to_have_value("st")
    expect(confirm).to_have_attribute("aria-invalid", "true")
    assert "staging" in _names(server)
    confirm.fill("staging")
    page.get_by_role("button", name="Delete environment").click()
    expect(page.get_by_text("Environment “staging” deleted")).to_be_visible()
    assert _names(server) == ["development", "production"]
    flag = server.api("GET", f"{FEATURES}/f")
    assert [e["name"] for e in flag["environments"]] == ["development", "production"]


def test_a_refused_environment_comes_back_as_typed(signed_in: Page, server: Server) -> None:
    page = signed_in
    page.goto(server.url + "/ui/environments")
    page.get_by_label("Name (used in URLs").fill("no spaces")
    page.get_by_label("Type", exact=True).select_option("production")
    page.get_by_role("button", name="Create environment").click()
    expect(page.get_by_role("alert")).to_contain_text("Not saved")
    name = page.get_by_label("Name (used in URLs")
    expect(name).to_have_value("no spaces")
    expect(name).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Type", exact=True)).to_have_value("production")
    assert _names(server) == ["development", "production"]


def test_deleting_an_environment_a_token_uses_is_refused_naming_the_token(
    signed_in: Page, server: Server
) -> None:
    page = signed_in
    page.goto(server.url + "/ui/environments/development/delete")
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("cannot be deleted while these name it")
    expect(alert).to_contain_text("API token")
    page.get_by_label("Type the environment's name").fill("development")
    page.get_by_role("button", name="Delete environment").click()
    expect(page.get_by_role("alert")).to_contain_text("API token")
    expect(page.get_by_label("Type the environment's name")).to_have_value("development")
    assert _names(server) == ["development", "production"]


def test_an_environment_is_cloned_with_its_flags_rules_and_a_refused_clone_comes_back(
    signed_in: Page, server: Server
) -> None:
    server.api("POST", FEATURES, {"name": "f"})
    server.api("POST", f"{FEATURES}/f/environments/production/strategies", {"name": "default"})
    server.api("POST", f"{FEATURES}/f/environments/production/on")
    page = signed_in
    page.goto(server.url + "/ui/environments")
    page.get_by_label("Environment to clone").select_option("production")
    page.get_by_label("Name of the clone").fill("development")  # taken
    page.get_by_label("Type of the clone").select_option("production")
    page.get_by_label("Grant custom roles").check()
    page.get_by_role("button", name="Clone environment").click()
    expect(page.get_by_role("alert")).to_contain_text("already exists")
    expect(page.get_by_label("Environment to clone")).to_have_value("production")
    expect(page.get_by_label("Name of the clone")).to_have_value("development")
    expect(page.get_by_label("Type of the clone")).to_have_value("production")
    expect(page.get_by_label("Grant custom roles")).to_be_checked()

    page.get_by_label("Name of the clone").fill("prod-eu")
    page.get_by_role("button", name="Clone environment").click()
    expect(page.get_by_text("Environment “prod-eu” created.")).to_be_visible()
    assert _names(server) == ["development", "production", "prod-eu"]
    flag = server.api("GET", f"{FEATURES}/f")
    (clone,) = (e for e in flag["environments"] if e["name"] == "prod-eu")
    assert clone["enabled"] is True
    assert [s["name"] for s in clone["strategies"]] == ["default"]
