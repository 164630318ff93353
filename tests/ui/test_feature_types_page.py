"""The Flag types page (issue 32), in Chromium: each type with its expected lifetime, an
admin changing one (a refused value comes back as typed at its row, nothing saved), the
API answering the new lifetime, and a Viewer seeing the lifetimes without a form."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from tests.ui.conftest import Server
from tests.ui.test_roles_in_forms import _password_sign_in, _person


def _lifetimes(server: Server) -> dict[str, int | None]:
    answer = server.api("GET", "/api/admin/feature-types")
    return {t["id"]: t["lifetimeDays"] for t in answer["types"]}


def test_an_admin_changes_a_types_lifetime_and_a_refused_value_comes_back_as_typed(
    signed_in: Page, server: Server, shot: Any
) -> None:
    page = signed_in
    page.get_by_role("link", name="Flag types").click()
    expect(page.get_by_role("heading", name="Flag types")).to_be_visible()
    release = page.get_by_label("Expected lifetime of Release flags in days")
    expect(release).to_have_value("40")
    expect(page.get_by_label("Expected lifetime of Kill switch flags in days")).to_have_value("")

    release.fill("six weeks")
    page.get_by_role("button", name="Save lifetime of Release flags").click()
    expect(page.get_by_role("alert")).to_contain_text("whole number of days")
    expect(release).to_have_value("six weeks")
    expect(release).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Expected lifetime of Experiment flags in days")).to_have_value("40")
    assert _lifetimes(server)["release"] == 40

    release.fill("21")
    page.get_by_role("button", name="Save lifetime of Release flags").click()
    expect(page.get_by_role("status")).to_contain_text("Lifetime of flag type “Release” saved.")
    expect(release).to_have_value("21")
    shot(page, "feature-types")
    operational = page.get_by_label("Expected lifetime of Operational flags in days")
    operational.fill("0")
    page.get_by_role("button", name="Save lifetime of Operational flags").click()
    expect(operational).to_have_value("")
    assert _lifetimes(server) == {
        "release": 21,
        "experiment": 40,
        "operational": None,
        "kill-switch": None,
        "permission": None,
    }


def test_a_viewer_sees_the_lifetimes_and_no_form(page: Page, server: Server) -> None:
    _person(server, "vi@x.io", 3)
    _password_sign_in(page, server, "vi@x.io")
    page.goto(server.url + "/ui/feature-types")
    row = page.get_by_role("row", name="Release")
    expect(row).to_contain_text("40 days")
    expect(page.get_by_role("row", name="Kill switch")).to_contain_text("never stale")
    expect(page.locator("main form")).to_have_count(0)
