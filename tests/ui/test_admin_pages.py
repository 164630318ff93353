"""Projects, API tokens, the event log and applications, through the UI only."""

from __future__ import annotations

import datetime as dt
import re
import urllib.error
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from UnleashClient import UnleashClient

from tests.ui.conftest import CLIENT, Server, wait_for


def test_projects_are_created_renamed_and_deleted_only_when_empty(
    signed_in: Page, server: Server, shot: Any
) -> None:
    page = signed_in
    page.goto(server.url + "/ui/projects")
    page.get_by_label("Project id").fill("bad id")
    page.get_by_label("Project name").fill("Mobile")
    page.get_by_role("button", name="Create project").click()
    expect(page.locator("#id ~ .field-error").first).to_contain_text("URL-friendly")
    assert [p["id"] for p in server.api("GET", "/api/admin/projects")["projects"]] == ["default"]

    page.get_by_label("Project id").fill("mobile")
    page.get_by_role("button", name="Create project").click()
    expect(page.get_by_role("row", name="Mobile")).to_be_visible()
    page.get_by_label("New name for mobile").fill("Mobile apps")
    page.get_by_role("button", name="Rename").nth(1).click()
    expect(page.get_by_role("link", name="Mobile apps")).to_be_visible()
    projects = {p["id"]: p for p in server.api("GET", "/api/admin/projects")["projects"]}
    assert projects["mobile"]["name"] == "Mobile apps"
    shot(page, "projects")

    server.api("POST", "/api/admin/projects/mobile/features", {"name": "ios-only"})
    page.get_by_role("button", name="Delete project mobile").click()
    expect(page.get_by_role("alert")).to_contain_text("still has 1 active flag")
    expect(page.get_by_role("alert")).to_contain_text("active flag: ios-only")
    server.api("DELETE", "/api/admin/projects/mobile/features/ios-only")
    page.get_by_role("button", name="Delete project mobile").click()
    expect(page.get_by_role("link", name="Mobile apps")).to_have_count(0)
    assert "mobile" not in {p["id"] for p in server.api("GET", "/api/admin/projects")["projects"]}


def test_an_api_token_is_shown_once_works_and_stops_working_when_revoked(
    signed_in: Page, server: Server, shot: Any
) -> None:
    page = signed_in
    page.goto(server.url + "/ui/tokens")
    page.get_by_role("button", name="Create token").click()
    expect(page.locator("#tokenName ~ .field-error").first).to_contain_text("must not be empty")

    page.get_by_label("Token name").fill("checkout-service")
    page.get_by_label("Token type").select_option("client")
    page.get_by_label("Projects (client and frontend tokens)").select_option("default")
    page.get_by_label("Environment (client and frontend tokens)").select_option("production")
    page.get_by_role("button", name="Create token").click()
    secret = page.get_by_label("Secret").input_value()
    assert secret.startswith("default:production.")
    assert server.api("GET", "/api/client/features", token=secret)["features"] == []

    page.goto(server.url + "/ui/tokens")  # shown once: not on the list afterwards
    assert secret not in page.content()
    page.get_by_role("button", name="Revoke token checkout-service").click()
    expect(page.get_by_role("row", name="checkout-service")).to_have_count(0)
    with pytest.raises(urllib.error.HTTPError) as refused:
        server.api("GET", "/api/client/features", token=secret)
    assert refused.value.code == 401


def test_the_event_log_shows_who_changed_what_filtered_by_flag_and_project(
    signed_in: Page, server: Server, shot: Any
) -> None:
    server.api("POST", "/api/admin/projects", {"id": "web", "name": "Web"})
    server.api("POST", "/api/admin/projects/web/features", {"name": "web-flag"})
    server.api("POST", "/api/admin/projects/default/features", {"name": "other-flag"})
    page = signed_in
    page.goto(server.url + "/ui/flags/other-flag")
    page.get_by_role("button", name="Mark as stale").click()
    page.goto(server.url + "/ui/events")
    expect(page.get_by_role("row", name="feature-stale-on")).to_contain_text("token:init-admin-1")
    page.get_by_label("Project id").fill("web")
    page.get_by_role("button", name="Filter").click()
    rows = page.locator("table.events tbody tr")
    expect(rows).to_have_count(2)  # project-created, feature-created
    expect(rows.first).to_contain_text("web-flag")
    page.get_by_label("Project id").fill("")
    page.get_by_label("Flag name").fill("other-flag")
    page.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(2)  # feature-created, feature-stale-on
    shot(page, "events")


def test_applications_list_the_sdks_and_the_flag_page_their_counts(
    signed_in: Page, server: Server, tmp_path: Path, shot: Any
) -> None:
    server.api("POST", "/api/admin/projects/default/features", {"name": "counted"})
    server.api("POST", "/api/admin/projects/default/features/counted/environments/development/on")
    client = UnleashClient(
        url=server.url + "/api",
        app_name="shop-frontend",
        instance_id="shop-1",
        refresh_interval=1,
        metrics_interval=1,
        custom_headers={"Authorization": CLIENT},
        cache_directory=str(tmp_path / "sdk-cache"),
    )
    client.initialize_client()
    try:
        for _ in range(3):
            assert client.is_enabled("counted", {"userId": "1"})
        page = signed_in

        # The last hour's counts (the usage history's "last seen" names the app too).
        last_hour = page.get_by_role("region", name="Evaluations in the last hour")

        def counts_shown() -> bool:
            page.goto(server.url + "/ui/flags/counted")
            return last_hour.get_by_role("row", name="shop-frontend").count() > 0

        wait_for(counts_shown, timeout=20)
    finally:
        client.destroy()
    expect(last_hour.get_by_role("row", name="shop-frontend")).to_contain_text("3")
    page.goto(server.url + "/ui/applications")
    row = page.get_by_role("row", name="shop-frontend")
    expect(row).to_contain_text("shop-1")
    expect(row).to_contain_text("unleash-python-sdk")
    counted = page.get_by_role("table", name="shop-frontend").get_by_role("row", name="counted")
    expect(counted).to_have_text(re.compile(r"counted\s*3\s*0"))
    shot(page, "applications")


def test_applications_show_each_apps_last_hour_counts_per_flag_escaped(
    signed_in: Page, server: Server
) -> None:
    page = signed_in
    page.goto(server.url + "/ui/applications")
    expect(page.get_by_text("No SDK reported metrics in the last hour.")).to_be_visible()
    for name in ("checkout", "banner"):
        server.api("POST", "/api/admin/projects/default/features", {"name": name})
    now = dt.datetime.now(dt.UTC).isoformat()

    def report(app: str, toggles: dict[str, Any]) -> None:
        bucket = {"start": now, "stop": now, "toggles": toggles}
        body = {"appName": app, "instanceId": "i-1", "environment": "development"}
        server.api("POST", "/api/client/metrics", {**body, "bucket": bucket}, token=CLIENT)

    report("billing", {"checkout": {"yes": 5, "no": 2}, "banner": {"yes": 0, "no": 9}})
    report("billing", {"checkout": {"yes": 1, "no": 1}, "made-up": {"yes": 4}})
    report("<b>evil</b>", {"checkout": {"yes": 7}})
    page.goto(server.url + "/ui/applications")
    billing = page.get_by_role("table", name="billing")
    expect(billing.get_by_role("row")).to_have_count(3)  # header, banner, checkout
    expect(billing.get_by_role("row", name="banner")).to_have_text(re.compile(r"banner\s*0\s*9"))
    expect(billing.get_by_role("row", name="checkout")).to_have_text(
        re.compile(r"checkout\s*6\s*3")
    )
    evil = page.get_by_role("table", name="<b>evil</b>")
    expect(evil.get_by_role("row", name="checkout")).to_have_text(re.compile(r"checkout\s*7\s*0"))
    expect(page.locator("b", has_text="evil")).to_have_count(0)
    expect(page.get_by_text("No SDK reported metrics in the last hour.")).to_have_count(0)
