"""The remaining forms: editing a segment, and bad input in the small forms stores nothing."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.ui.conftest import Server

FLAGS = "/api/admin/projects/default/features"


def test_a_segment_is_edited_with_the_same_constraint_editor(
    signed_in: Page, server: Server
) -> None:
    segment = server.api(
        "POST",
        "/api/admin/segments",
        {
            "name": "nordics",
            "constraints": [{"contextName": "c", "operator": "IN", "values": ["NO"]}],
        },
    )
    page = signed_in
    page.goto(server.url + "/ui/segments")
    page.get_by_role("link", name="nordics").click()
    values = page.locator(".row.constraint").first.get_by_label("Values")
    expect(values).to_have_value("NO")
    page.get_by_label("Segment name").fill("nordic-countries")
    values.fill("NO\nSE\nDK")
    page.get_by_role("button", name="Save segment").click()
    expect(page.get_by_role("link", name="nordic-countries")).to_be_visible()
    stored = server.api("GET", f"/api/admin/segments/{segment['id']}")
    assert stored["name"] == "nordic-countries"
    assert stored["constraints"][0]["values"] == ["NO", "SE", "DK"]


def test_bad_input_in_the_small_forms_is_shown_and_stores_nothing(
    signed_in: Page, server: Server
) -> None:
    server.api("POST", FLAGS, {"name": "tagged"})
    endpoint = server.api("POST", "/api/admin/signal-endpoints", {"name": "hook"})
    events_before = len(server.api("GET", "/api/admin/events?limit=1000")["events"])
    page = signed_in

    page.goto(server.url + "/ui/flags/tagged")
    page.get_by_role("button", name="Add tag").click()
    expect(page.get_by_role("alert")).to_be_visible()
    expect(page.get_by_label("Tag value")).to_have_attribute("aria-invalid", "true")
    assert server.api("GET", "/api/admin/features/tagged/tags")["tags"] == []

    page.goto(server.url + "/ui/projects")
    page.get_by_label("New name for default").fill("   ")
    page.get_by_role("button", name="Rename").click()
    expect(page.get_by_role("alert")).to_contain_text("a name must not be empty")
    assert server.api("GET", "/api/admin/projects")["projects"][0]["name"] == "Default"

    page.goto(server.url + f"/ui/signals/{endpoint['id']}")
    page.get_by_role("button", name="Create token").click()
    expect(page.get_by_role("alert")).to_contain_text("a token needs a name")
    tokens = server.api("GET", f"/api/admin/signal-endpoints/{endpoint['id']}/tokens")["tokens"]
    assert tokens == []

    page.goto(server.url + "/ui/actions/new?project=default")
    page.get_by_label("Action set name").fill("no source")
    page.get_by_role("button", name="Save action set").click()
    expect(page.locator("#asource ~ .field-error").first).to_contain_text("choose one")
    assert server.api("GET", "/api/admin/projects/default/actions")["actions"] == []

    assert len(server.api("GET", "/api/admin/events?limit=1000")["events"]) == events_before
