"""Flags through the UI only, checked through the admin API and the official SDK."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect
from UnleashClient import UnleashClient

from tests.ui.conftest import CLIENT, Server, wait_for

FLAGS = "/api/admin/projects/default/features"


def _event_types(server: Server, flag: str) -> list[str]:
    events = server.api("GET", f"/api/admin/events?feature={flag}")["events"]
    return [e["type"] for e in reversed(events)]


def test_create_a_flag_add_a_constrained_rollout_enable_it_and_the_sdk_evaluates_it(
    signed_in: Page, server: Server, tmp_path: Path, shot: Any
) -> None:
    page = signed_in
    etag_before, _ = server.features_etag()
    page.get_by_role("link", name="New flag").click()
    page.get_by_label("Name").fill("new-checkout")
    page.get_by_label("Type", exact=True).select_option("experiment")
    page.get_by_label("Description").fill("The one-page checkout")
    page.get_by_label("Tags").fill("simple:payments, beta")
    shot(page, "flag-new")
    page.get_by_role("button", name="Create flag").click()
    expect(page.get_by_role("heading", name="new-checkout")).to_be_visible()

    page.get_by_role("link", name="Add a strategy in development").click()
    page.get_by_label("Parameter rollout (0–100)").fill("100")
    page.get_by_label("Parameter stickiness").fill("userId")
    page.get_by_label("Context field").fill("country")
    page.get_by_label("Operator").select_option("IN")
    page.get_by_label("Values").fill("NO\nDK")
    page.get_by_label("Case-insensitive").check()
    shot(page, "strategy")
    page.get_by_role("button", name="Save strategy").click()
    expect(page.get_by_text("country IN (any case) NO, DK")).to_be_visible()
    page.get_by_role("switch", name="new-checkout in development").click()
    expect(page.get_by_role("switch", name="new-checkout in development")).to_have_attribute(
        "aria-checked", "true"
    )
    shot(page, "flag")

    flag = server.api("GET", f"{FLAGS}/new-checkout")
    assert (flag["type"], flag["description"]) == ("experiment", "The one-page checkout")
    development = {e["name"]: e for e in flag["environments"]}["development"]
    assert development["enabled"] is True
    (strategy,) = development["strategies"]
    assert strategy["name"] == "flexibleRollout"
    assert strategy["parameters"]["rollout"] == "100"
    assert strategy["constraints"] == [
        {
            "contextName": "country",
            "operator": "IN",
            "values": ["NO", "DK"],
            "value": None,
            "inverted": False,
            "caseInsensitive": True,
        }
    ]
    tags = server.api("GET", "/api/admin/features/new-checkout/tags")["tags"]
    assert sorted((t["type"], t["value"]) for t in tags) == [
        ("simple", "beta"),
        ("simple", "payments"),
    ]
    # The same events as the API writes, by the signed-in token; and SDKs see a new ETag.
    assert _event_types(server, "new-checkout")[0] == "feature-created"
    assert "feature-strategy-add" in _event_types(server, "new-checkout")
    assert _event_types(server, "new-checkout")[-1] == "feature-environment-enabled"
    events = server.api("GET", "/api/admin/events?feature=new-checkout")["events"]
    assert {e["createdBy"] for e in events} == {"token:init-admin-1"}
    etag_after, payload = server.features_etag()
    assert etag_after != etag_before
    assert [f["name"] for f in payload["features"]] == ["new-checkout"]

    client = UnleashClient(
        url=server.url + "/api",
        app_name="ui-journey",
        instance_id="ui-1",
        refresh_interval=1,
        disable_metrics=True,
        disable_registration=True,
        custom_headers={"Authorization": CLIENT},
        cache_directory=str(tmp_path / "sdk-cache"),
    )
    client.initialize_client()
    try:
        assert client.is_enabled("new-checkout", {"userId": "1", "properties": {"country": "DK"}})
        assert not client.is_enabled(
            "new-checkout", {"userId": "1", "properties": {"country": "SE"}}
        )
        # Off again from the UI: the SDK follows.
        page.get_by_role("switch", name="new-checkout in development").click()
        expect(page.get_by_role("switch", name="new-checkout in development")).to_have_attribute(
            "aria-checked", "false"
        )
        wait_for(
            lambda: (
                not client.is_enabled(
                    "new-checkout", {"userId": "1", "properties": {"country": "NO"}}
                )
            )
        )
    finally:
        client.destroy()


def test_the_flags_list_searches_filters_and_switches_each_environment_in_one_click(
    signed_in: Page, server: Server, shot: Any
) -> None:
    server.api("POST", FLAGS, {"name": "search-box", "type": "release"})
    server.api(
        "POST",
        FLAGS,
        {
            "name": "kill-payments",
            "type": "kill-switch",
            "tags": [{"type": "simple", "value": "ops"}],
        },
    )
    server.api("POST", FLAGS, {"name": "old-banner"})
    server.api("POST", f"{FLAGS}/old-banner/stale/on")
    page = signed_in
    page.goto(server.url + "/ui/flags")
    rows = page.locator("table.flags tbody tr")
    expect(rows).to_have_count(3)
    expect(page.get_by_role("row", name="old-banner")).to_contain_text("stale")
    shot(page, "flags")

    page.get_by_label("Search by name").fill("PAY")
    page.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("kill-payments")
    page.get_by_label("Search by name").fill("")
    page.get_by_label("Type", exact=True).select_option("release")
    page.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(2)
    page.get_by_label("Type", exact=True).select_option("")
    page.get_by_label("Tag", exact=True).select_option("simple:ops")
    page.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(1)

    switch = page.get_by_role("switch", name="kill-payments in production")
    expect(switch).to_have_attribute("aria-checked", "false")
    switch.click()
    expect(page.get_by_role("switch", name="kill-payments in production")).to_have_attribute(
        "aria-checked", "true"
    )
    expect(page.get_by_label("Tag", exact=True)).to_have_value("simple:ops")  # the filters are kept
    production = {e["name"]: e for e in server.api("GET", f"{FLAGS}/kill-payments")["environments"]}
    assert production["production"]["enabled"] is True
    assert production["development"]["enabled"] is False


def test_bad_input_in_the_new_flag_form_is_shown_by_the_field_and_stores_nothing(
    signed_in: Page, server: Server
) -> None:
    page = signed_in
    events_before = server.api("GET", "/api/admin/events")["events"]
    page.goto(server.url + "/ui/flags/new")
    page.get_by_label("Name").fill("has spaces")
    page.get_by_role("button", name="Create flag").click()
    expect(page.get_by_role("alert")).to_contain_text("Not saved")
    expect(page.locator("#name ~ .field-error").first).to_contain_text("URL-friendly")
    expect(page.get_by_label("Name")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Name")).to_have_value("has spaces")  # what was typed stays

    page.get_by_label("Name").fill("fine-name")
    page.get_by_label("Tags").fill("nosuchtype:x")
    page.get_by_role("button", name="Create flag").click()
    expect(page.locator("#tags ~ .field-error").first).to_be_visible()
    assert server.api("GET", FLAGS)["features"] == []
    assert server.api("GET", "/api/admin/events")["events"] == events_before


def test_a_broken_constraint_is_shown_by_its_row_and_no_strategy_is_stored(
    signed_in: Page, server: Server
) -> None:
    server.api("POST", FLAGS, {"name": "guarded"})
    page = signed_in
    page.goto(server.url + "/ui/flags/guarded/environments/development/strategies/new")
    page.get_by_label("Parameter rollout (0–100)").fill("100")
    page.get_by_label("Context field").fill("appVersion")
    page.get_by_label("Operator").select_option("SEMVER_GT")
    page.get_by_label("Values").fill("not-a-version")
    page.get_by_role("button", name="Save strategy").click()
    expect(page.get_by_role("alert")).to_contain_text("Not saved")
    row = page.locator(".row.constraint").first
    expect(row.locator(".field-error")).to_be_visible()
    expect(row.get_by_label("Values")).to_have_value("not-a-version")
    details = server.api("GET", f"{FLAGS}/guarded")
    assert all(e["strategies"] == [] for e in details["environments"])


def test_flag_variants_with_weights_and_payloads(signed_in: Page, server: Server) -> None:
    server.api("POST", FLAGS, {"name": "banner"})
    page = signed_in
    page.goto(server.url + "/ui/flags/banner")
    page.get_by_role("link", name="Edit variants in production").click()
    page.get_by_label("Variant name").fill("blue")
    page.get_by_label("Weight %").fill("30")
    page.get_by_label("Payload type").select_option("json")
    page.get_by_label("Payload", exact=True).fill('{"color": "#00f"}')
    page.get_by_role("button", name="Add a variant row").click()
    second = page.locator(".row.variant").nth(1)
    second.get_by_label("Variant name").fill("green")
    second.get_by_label("Payload", exact=True).fill("not json")
    second.get_by_label("Payload type").select_option("json")
    page.get_by_role("button", name="Save variants").click()
    expect(second.locator(".field-error")).to_contain_text("not valid JSON")
    assert server.api("GET", f"{FLAGS}/banner/environments/production/variants")["variants"] == []

    page.locator(".row.variant").nth(1).get_by_label("Payload type").select_option("string")
    page.get_by_role("button", name="Save variants").click()
    expect(page.get_by_role("heading", name="banner")).to_be_visible()
    variants = server.api("GET", f"{FLAGS}/banner/environments/production/variants")["variants"]
    assert [(v["name"], v["weight"], v["weightType"]) for v in variants] == [
        ("blue", 300, "fix"),
        ("green", 700, "variable"),
    ]
    assert variants[0]["payload"] == {"type": "json", "value": '{"color": "#00f"}'}
