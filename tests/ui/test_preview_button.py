"""The strategy editor's Preview (issue 30), in Chromium: a rollout typed and previewed
shows who it would flip on the environment's sample, the form stays as typed, and
nothing is saved."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable

from playwright.sync_api import Page

from tests.ui.conftest import ADMIN, Server

FLAG = "/api/admin/projects/default/features/checkout"
STRATEGIES = FLAG + "/environments/development/strategies"


def _upload_sample(server: Server, users: int) -> None:
    lines = "\n".join(json.dumps({"userId": f"user-{i}"}) for i in range(users))
    request = urllib.request.Request(
        server.url + "/api/admin/environments/development/context-sample",
        data=lines.encode(),
        method="POST",
        headers={"Authorization": ADMIN, "Content-Type": "application/x-ndjson"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert json.loads(response.read())["stored"] == users


def test_previewing_a_typed_rollout_shows_its_counts_and_saves_nothing(
    signed_in: Page, server: Server, shot: Callable[[Page, str], None]
) -> None:
    page = signed_in
    server.api("POST", "/api/admin/projects/default/features", {"name": "checkout"})
    rollout = {"rollout": "10", "stickiness": "userId", "groupId": "checkout"}
    stored = server.api("POST", STRATEGIES, {"name": "flexibleRollout", "parameters": rollout})
    server.api("POST", FLAG + "/environments/development/on")
    _upload_sample(server, 1000)
    revision_before = server.features_etag()[0]

    page.goto(f"{server.url}/ui/flags/checkout/environments/development/strategies/{stored['id']}")
    page.get_by_label("Parameter rollout (0–100)").fill("50")
    page.get_by_role("button", name="Preview").click()

    preview = page.locator("#preview")
    preview.wait_for()
    expected = server.api(
        "POST",
        FLAG + "/environments/development/preview",
        {"strategies": [{**stored, "parameters": {**rollout, "rollout": "50"}}]},
    )
    assert expected["contexts"] == 1000
    on = preview.locator('[data-count="off-to-on"]').inner_text()
    off = preview.locator('[data-count="on-to-off"]').inner_text()
    assert (int(on), int(off)) == (expected["offToOn"]["count"], 0)
    assert 300 < int(on) < 500
    assert "1000 contexts sampled here (0 from the Frontend API and OFREP, 1000 uploaded)" in (
        preview.inner_text()
    )
    assert (
        preview.locator(".rollout-statement").inner_text()
        == "+40% of users by userId: 10% → 50%, turned on"
    )
    shot(page, "strategy-preview")

    # The form is redrawn as typed; the stored strategy and the SDKs' payload are as before.
    assert page.get_by_label("Parameter rollout (0–100)").input_value() == "50"
    assert server.api("GET", STRATEGIES)[0]["parameters"]["rollout"] == "10"
    assert server.features_etag()[0] == revision_before
    assert page.dialogs == []  # type: ignore[attr-defined]
