"""Whatever a user typed renders as text: script in names, descriptions, payloads, signals."""

from __future__ import annotations

import json
import urllib.request

from playwright.sync_api import Page, expect

from tests.ui.conftest import Server

SCRIPT = "<script>alert('xss')</script>"
IMAGE = '<img src=x onerror="alert(1)">'
FLAGS = "/api/admin/projects/default/features"


def test_script_typed_anywhere_is_shown_as_text_and_never_runs(
    signed_in: Page, server: Server
) -> None:
    page = signed_in
    # Typed into the UI's own forms.
    page.goto(server.url + "/ui/flags/new")
    page.get_by_label("Name").fill("escaped")
    page.get_by_label("Description").fill(SCRIPT + IMAGE)
    page.get_by_role("button", name="Create flag").click()
    expect(page.get_by_text(SCRIPT + IMAGE)).to_be_visible()
    page.get_by_role("link", name="Edit variants in development").click()
    page.get_by_label("Variant name").fill("v1")
    page.get_by_label("Payload", exact=True).fill(SCRIPT)
    page.get_by_role("button", name="Save variants").click()
    expect(page.locator("pre.payload")).to_have_text(SCRIPT)
    page.goto(server.url + "/ui/segments/new")
    page.get_by_label("Segment name").fill(IMAGE)
    page.get_by_label("Context field").fill("userId")
    page.get_by_label("Values").fill(SCRIPT)
    page.get_by_role("button", name="Save segment").click()
    expect(page.get_by_role("link", name=IMAGE)).to_be_visible()
    page.goto(server.url + "/ui/projects")
    page.get_by_label("Project id").fill("p1")
    page.get_by_label("Project name").fill(SCRIPT)
    page.get_by_role("button", name="Create project").click()
    expect(page.get_by_role("link", name=SCRIPT)).to_be_visible()

    # Sent through the API and by a signal sender, then looked at in the UI.
    server.api(
        "POST",
        f"{FLAGS}/escaped/environments/development/strategies",
        {
            "name": "default",
            "title": SCRIPT,
            "constraints": [{"contextName": "x", "operator": "IN", "values": [IMAGE]}],
        },
    )
    endpoint = server.api("POST", "/api/admin/signal-endpoints", {"name": "hook"})
    token = server.api(
        "POST", f"/api/admin/signal-endpoints/{endpoint['id']}/tokens", {"name": SCRIPT}
    )
    request = urllib.request.Request(
        f"{server.url}/api/signal-endpoint/hook",
        data=json.dumps({"text": SCRIPT, IMAGE: 1}).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token['token']}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 202
    page.goto(server.url + "/ui/flags/escaped")
    expect(page.get_by_role("heading", name=SCRIPT)).to_be_visible()
    expect(page.get_by_text(f"x IN {IMAGE}")).to_be_visible()
    page.goto(server.url + f"/ui/signals/{endpoint['id']}")
    expect(page.locator("article.signal pre")).to_contain_text(SCRIPT)
    expect(page.locator("article.signal pre")).to_contain_text(json.dumps(IMAGE)[1:-1])
    expect(page.get_by_text(SCRIPT, exact=False).first).to_be_visible()
    for path in ("/ui/flags", "/ui/segments", "/ui/events", "/ui/archive"):
        page.goto(server.url + path)
    assert page.dialogs == []  # type: ignore[attr-defined]
    assert page.evaluate("document.querySelectorAll('main script, main img').length") == 0


def test_a_hostile_context_value_is_shown_as_text_and_never_runs(
    signed_in: Page, server: Server
) -> None:
    server.api("POST", FLAGS, {"name": "guarded"})
    dev = FLAGS + "/guarded/environments/development"
    server.api(
        "POST",
        dev + "/strategies",
        {
            "name": "default",
            "constraints": [{"contextName": "note", "operator": "IN", "values": [SCRIPT]}],
        },
    )
    server.api("POST", dev + "/on")
    page = signed_in
    page.goto(server.url + "/ui/playground")
    page.get_by_label("userId").fill(SCRIPT)
    page.get_by_label("Property name").fill("note")
    page.get_by_label("Property value").fill(SCRIPT)
    page.get_by_role("button", name="Evaluate").click()
    guarded = page.locator("table.playground tbody tr").filter(has_text="guarded")
    expect(guarded.locator("td").nth(1)).to_have_text("yes")
    guarded.get_by_text("Explain guarded").click()
    expect(guarded.locator(".tree")).to_contain_text(
        f'"note" IN ["{SCRIPT}"]: the context has "{SCRIPT}" → yes'
    )
    expect(page.locator("p.count code")).to_contain_text(SCRIPT)
    expect(page.get_by_label("Property value").first).to_have_value(SCRIPT)
    assert page.dialogs == []  # type: ignore[attr-defined]
    assert page.evaluate("document.querySelectorAll('main script, main img').length") == 0
