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
