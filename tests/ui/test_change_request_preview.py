"""The preview on a change request's page (issue 30), in Chromium: before anyone approves
it, the page shows per flag who the request would flip on the environment's sample (the
API's counts, the rollout statement, a few examples, escaped), and nothing is applied."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Callable

from playwright.sync_api import Page, expect

from tests.ui.conftest import ADMIN, Server

FLAG = "/api/admin/projects/default/features/launch"
STRATEGIES = FLAG + "/environments/production/strategies"
DRAFTS = "/api/admin/projects/default/environments/production/change-requests"


def _upload_sample(server: Server, users: int) -> None:
    lines = "\n".join(
        json.dumps({"userId": f"user-{i}", "properties": {"team": "<b>ops</b>"}})
        for i in range(users)
    )
    request = urllib.request.Request(
        server.url + "/api/admin/environments/production/context-sample",
        data=lines.encode(),
        method="POST",
        headers={"Authorization": ADMIN, "Content-Type": "application/x-ndjson"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert json.loads(response.read())["stored"] == users


def test_a_change_request_page_shows_who_its_rollout_would_flip_before_approval(
    signed_in: Page, server: Server, shot: Callable[[Page, str], None]
) -> None:
    page = signed_in
    server.api("POST", "/api/admin/projects/default/features", {"name": "launch"})
    rollout = {"rollout": "10", "stickiness": "userId", "groupId": "launch"}
    stored = server.api("POST", STRATEGIES, {"name": "flexibleRollout", "parameters": rollout})
    server.api("POST", FLAG + "/environments/production/on")
    _upload_sample(server, 1000)
    server.api("PUT", DRAFTS + "/config", {"changeRequestsEnabled": True, "requiredApprovals": 1})
    widened = {**stored, "parameters": {**rollout, "rollout": "50"}}
    draft = server.api(
        "POST", DRAFTS, {"feature": "launch", "action": "updateStrategy", "payload": widened}
    )
    revision_before = server.features_etag()[0]

    page.goto(f"{server.url}/ui/change-requests/default/{draft['id']}")
    preview = page.locator('.flag-preview[data-flag="launch"]')
    expect(preview).to_be_visible()
    one = f"/api/admin/projects/default/change-requests/{draft['id']}"
    expected = server.api("GET", one + "/preview")
    counts = expected["features"][0]["preview"]
    assert counts["contexts"] == 1000
    on = preview.locator('[data-count="off-to-on"]').inner_text()
    off = preview.locator('[data-count="on-to-off"]').inner_text()
    assert (int(on), int(off)) == (counts["offToOn"]["count"], 0)
    assert 300 < int(on) < 500
    assert (
        preview.locator(".rollout-statement").inner_text()
        == "+40% of users by userId: 10% → 50%, turned on"
    )
    examples = preview.locator(".examples li")
    expect(examples).to_have_count(len(counts["offToOn"]["examples"]))
    assert re.search(r'"userId": ?"user-\d+"', examples.first.inner_text())
    assert preview.locator("b").count() == 0  # a context's text is shown, never markup
    page.locator("#preview").scroll_into_view_if_needed()
    shot(page, "change-request-preview")

    # Nothing was applied: the strategy and the SDKs' payload are as they were.
    assert server.api("GET", STRATEGIES)[0]["parameters"]["rollout"] == "10"
    assert server.features_etag()[0] == revision_before
    assert page.dialogs == []  # type: ignore[attr-defined]
