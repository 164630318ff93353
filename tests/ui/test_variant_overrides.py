"""Variant overrides on the flag variants form: per variant, a context field and its
values, one a line; SDKs then pin those users to the variant."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import Page, expect

from flagcore import Engine
from tests.ui.conftest import Server

FEATURES = "/api/admin/projects/default/features"


def test_overrides_pin_users_to_a_variant_and_show_on_the_flag_page(
    signed_in: Page, server: Server, shot: Callable[[Page, str], None]
) -> None:
    server.api("POST", FEATURES, {"name": "theme"})
    server.api("POST", f"{FEATURES}/theme/environments/development/on")
    page = signed_in
    page.goto(server.url + "/ui/flags/theme/environments/development/variants")
    first = page.locator(".row.variant").nth(0)
    first.get_by_label("Variant name").fill("dark")
    first.get_by_label("Weight %").fill("0")
    first.get_by_label("Overrides").fill("userId: alice, bob\nplan: gold")
    page.get_by_role("button", name="Add a variant row").click()
    second = page.locator(".row.variant").nth(1)
    second.get_by_label("Variant name").fill("light")
    shot(page, "variant-overrides")
    page.get_by_role("button", name="Save variants").click()
    expect(page.get_by_text("Variants saved in development.")).to_be_visible()
    row = page.get_by_role("row", name="dark")
    expect(row).to_contain_text("userId: alice, bob")
    expect(row).to_contain_text("plan: gold")

    _etag, payload = server.features_etag()
    engine = Engine.from_client_features(payload)
    assert engine.get_variant("theme", {"userId": "alice"}).name == "dark"
    assert (
        engine.get_variant("theme", {"userId": "carol", "properties": {"plan": "gold"}}).name
        == "dark"
    )
    assert engine.get_variant("theme", {"userId": "carol"}).name == "light"  # dark weighs 0


def test_a_malformed_override_is_refused_at_its_row_and_comes_back_as_typed(
    signed_in: Page, server: Server
) -> None:
    server.api("POST", FEATURES, {"name": "theme"})
    page = signed_in
    page.goto(server.url + "/ui/flags/theme/environments/development/variants")
    first = page.locator(".row.variant").nth(0)
    first.get_by_label("Variant name").fill("dark")
    overrides = first.get_by_label("Overrides")
    overrides.fill("userId: alice\nplan gold")
    page.get_by_role("button", name="Save variants").click()
    expect(page.get_by_role("alert")).to_contain_text("an override is contextName: value")
    overrides = page.locator(".row.variant").nth(0).get_by_label("Overrides")
    expect(overrides).to_have_value("userId: alice\nplan gold")
    expect(overrides).to_have_attribute("aria-invalid", "true")
    path = f"{FEATURES}/theme/environments/development/variants"
    assert server.api("GET", path)["variants"] == []


def test_an_override_value_holding_a_comma_is_shown_quoted_and_kept_whole(
    signed_in: Page, server: Server
) -> None:
    server.api("POST", FEATURES, {"name": "theme"})
    path = f"{FEATURES}/theme/environments/development/variants"
    override = {"contextName": "team", "values": ["sales, north", 'say "hi"', "ops"]}
    server.api(
        "PUT",
        path,
        [{"name": "dark", "weight": 1000, "weightType": "variable", "overrides": [override]}],
    )
    page = signed_in
    page.goto(server.url + "/ui/flags/theme/environments/development/variants")
    first = page.locator(".row.variant").nth(0)
    overrides = first.get_by_label("Overrides")
    expect(overrides).to_have_value('team: "sales, north", "say ""hi""", ops')
    page.get_by_role("button", name="Save variants").click()  # saved unchanged
    expect(page.get_by_text("Variants saved in development.")).to_be_visible()
    assert server.api("GET", path)["variants"][0]["overrides"] == [override]

    page.goto(server.url + "/ui/flags/theme/environments/development/variants")
    page.locator(".row.variant").nth(0).get_by_label("Overrides").fill('team: "a, b", c')
    page.get_by_role("button", name="Save variants").click()
    expect(page.get_by_text("Variants saved in development.")).to_be_visible()
    stored = server.api("GET", path)["variants"][0]["overrides"]
    assert stored == [{"contextName": "team", "values": ["a, b", "c"]}]
