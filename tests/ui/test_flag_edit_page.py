"""Editing a flag after it was made: description, type, impression data."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import Page, expect

from tests.ui.conftest import Server

FLAG = "/api/admin/projects/default/features/checkout"


def test_a_flags_description_type_and_impression_data_are_edited(
    signed_in: Page, server: Server, shot: Callable[[Page, str], None]
) -> None:
    server.api("POST", "/api/admin/projects/default/features", {"name": "checkout"})
    page = signed_in
    page.goto(server.url + "/ui/flags/checkout")
    page.get_by_role("link", name="Edit flag").click()
    expect(page.get_by_label("Type")).to_have_value("release")
    page.get_by_label("Type").select_option("experiment")
    page.get_by_label("Description").fill("new checkout\nsecond line")
    page.get_by_label("Impression data").check()
    shot(page, "flag-edit")
    page.get_by_role("button", name="Save flag").click()
    expect(page.get_by_text("Flag “checkout” saved.")).to_be_visible()
    stored = server.api("GET", FLAG)
    assert (stored["type"], stored["description"], stored["impressionData"]) == (
        "experiment",
        "new checkout\nsecond line",
        True,
    )
    events = server.api("GET", "/api/admin/events")["events"]
    assert events[0]["featureName"] == "checkout"

    # Cleared: a blank description is stored as null, the box unticked is off.
    page.get_by_role("link", name="Edit flag").click()
    expect(page.get_by_label("Description")).to_have_value("new checkout\nsecond line")
    page.get_by_label("Description").fill("")
    page.get_by_label("Impression data").uncheck()
    page.get_by_role("button", name="Save flag").click()
    expect(page.get_by_text("Flag “checkout” saved.")).to_be_visible()
    stored = server.api("GET", FLAG)
    assert (stored["description"], stored["impressionData"]) == (None, False)


def test_a_refused_flag_edit_comes_back_as_typed_and_changes_nothing(
    signed_in: Page, server: Server
) -> None:
    server.api(
        "POST", "/api/admin/projects/default/features", {"name": "checkout", "description": "old"}
    )
    page = signed_in
    page.goto(server.url + "/ui/flags/checkout/edit")
    page.get_by_label("Type").select_option("kill-switch")
    too_long = "x" * 10_001
    page.get_by_label("Description").fill(too_long)
    page.get_by_label("Impression data").check()
    page.get_by_role("button", name="Save flag").click()
    expect(page.get_by_role("alert")).to_contain_text("Not saved")
    description = page.get_by_label("Description")
    expect(description).to_have_value(too_long)
    expect(description).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Type")).to_have_value("kill-switch")
    expect(page.get_by_label("Impression data")).to_be_checked()
    stored = server.api("GET", FLAG)
    assert (stored["type"], stored["description"], stored["impressionData"]) == (
        "release",
        "old",
        False,
    )
