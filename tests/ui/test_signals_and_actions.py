"""Signals and actions through the UI: an endpoint and its token, a signal posted by a
monitoring tool, and an action set that switches a flag off, with its execution log."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from playwright.sync_api import Page, expect

from tests.ui.conftest import Server, wait_for

FLAGS = "/api/admin/projects/default/features"


def _send_signal(server: Server, endpoint: str, secret: str, payload: Any) -> int:
    request = urllib.request.Request(
        f"{server.url}/api/signal-endpoint/{endpoint}",
        data=json.dumps(payload).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status


def _enabled_in_production(server: Server, flag: str) -> bool:
    details = server.api("GET", f"{FLAGS}/{flag}")
    return bool({e["name"]: e for e in details["environments"]}["production"]["enabled"])


def test_a_signal_runs_an_action_set_that_switches_a_flag_off(
    signed_in: Page, server: Server, shot: Any
) -> None:
    server.api("POST", FLAGS, {"name": "payments"})
    server.api("POST", f"{FLAGS}/payments/environments/production/on")
    page = signed_in
    page.goto(server.url + "/ui/signals")
    page.get_by_label("Endpoint name").fill("pager duty")
    page.get_by_role("button", name="Create endpoint").click()
    expect(page.locator("#sname ~ .field-error").first).to_contain_text("URL-friendly")
    page.get_by_label("Endpoint name").fill("pagerduty")
    page.get_by_label("Description").fill("incidents")
    page.get_by_role("button", name="Create endpoint").click()
    expect(page.get_by_role("heading", name="pagerduty")).to_be_visible()

    page.get_by_label("Token name").fill("pd-webhook")
    page.get_by_role("button", name="Create token").click()
    secret = page.get_by_label("Secret").input_value()
    assert len(secret) >= 32

    page.goto(server.url + "/ui/actions/new?project=default")
    page.get_by_label("Action set name").fill("kill payments on sev1")
    page.get_by_label("Signal endpoint it listens to").select_option(label="pagerduty")
    page.get_by_label("Context field").fill("severity")
    page.get_by_label("Operator").select_option("IN")
    page.get_by_label("Values").fill("sev1")
    page.get_by_label("Action", exact=True).select_option("TOGGLE_FEATURE_OFF")
    page.get_by_label("Flag", exact=True).select_option("payments")
    page.get_by_label("Environment", exact=True).select_option("production")
    page.get_by_role("button", name="Save action set").click()
    expect(page.get_by_role("row", name="kill payments on sev1")).to_contain_text(
        "TOGGLE_FEATURE_OFF payments in production"
    )
    shot(page, "actions")

    assert _send_signal(server, "pagerduty", secret, {"severity": "sev2"}) == 202
    wait_for(lambda: len(server.api("GET", "/api/admin/signals")["signals"]) == 1)
    assert _enabled_in_production(server, "payments")  # sev2 does not match

    page.wait_for_timeout(1100)  # one signal per second per endpoint
    assert _send_signal(server, "pagerduty", secret, {"severity": "sev1", "service": "pay"}) == 202
    wait_for(lambda: not _enabled_in_production(server, "payments"))

    page.goto(server.url + "/ui/signals")
    page.get_by_role("link", name="pagerduty").click()
    signals = page.locator("article.signal")
    expect(signals).to_have_count(2)
    expect(signals.first).to_contain_text('"severity": "sev1"')  # newest first
    expect(signals.nth(1)).to_contain_text('"severity": "sev2"')
    shot(page, "signals")

    page.goto(server.url + "/ui/actions?project=default")
    page.get_by_role("link", name="Execution log of kill payments on sev1").click()
    runs = page.locator("article.run")
    expect(runs).to_have_count(1)
    expect(runs.first).to_contain_text("success")
    expect(runs.first).to_contain_text("TOGGLE_FEATURE_OFF payments in production: success")

    events = server.api("GET", "/api/admin/events?feature=payments")["events"]
    assert events[0]["type"] == "feature-environment-disabled"
    assert events[0]["createdBy"] == "action-set:kill payments on sev1"

    # Disabling the endpoint and revoking the token from the UI stop further signals.
    page.goto(server.url + "/ui/signals")
    page.get_by_role("link", name="pagerduty").click()
    page.get_by_role("switch", name="Endpoint pagerduty enabled").click()
    expect(page.get_by_role("switch", name="Endpoint pagerduty enabled")).to_have_attribute(
        "aria-checked", "false"
    )
    page.get_by_role("button", name="Revoke signal token pd-webhook").click()
    expect(page.get_by_text("No tokens: nobody can send signals yet.")).to_be_visible()


def test_an_action_set_s_filters_and_actions_are_edited_in_the_ui(
    signed_in: Page, server: Server
) -> None:
    server.api("POST", FLAGS, {"name": "search"})
    endpoint = server.api("POST", "/api/admin/signal-endpoints", {"name": "alerts"})
    created = server.api(
        "POST",
        "/api/admin/projects/default/actions",
        {
            "name": "on alert",
            "enabled": True,
            "match": {
                "source": "signal-endpoint",
                "sourceId": endpoint["id"],
                "payload": {"level": {"operator": "IN", "values": ["critical"]}},
            },
            "actions": [
                {
                    "action": "TOGGLE_FEATURE_OFF",
                    "sortOrder": 1,
                    "executionParams": {"featureName": "search", "environment": "production"},
                }
            ],
        },
    )
    page = signed_in
    page.goto(server.url + "/ui/actions?project=default")
    page.get_by_role("link", name="on alert", exact=True).click()
    filters = page.locator(".row.constraint").first
    expect(filters.get_by_label("Values")).to_have_value("critical")
    filters.get_by_label("Values").fill("critical\nfatal")
    page.get_by_role("button", name="Add an action row").click()
    page.locator("#actions-1-kind").select_option("MARK_FEATURE_STALE")
    page.locator("#actions-1-flag").select_option("search")
    page.get_by_role("button", name="Save action set").click()
    expect(page.get_by_role("row", name="on alert")).to_contain_text("MARK_FEATURE_STALE search")

    stored = server.api("GET", f"/api/admin/projects/default/actions/{created['id']}")
    assert stored["match"]["payload"]["level"]["values"] == ["critical", "fatal"]
    assert [a["action"] for a in stored["actions"]] == ["TOGGLE_FEATURE_OFF", "MARK_FEATURE_STALE"]

    # A name left empty: the error is shown by the field and nothing changes.
    page.get_by_role("link", name="on alert", exact=True).click()
    page.get_by_label("Action set name").fill("")
    page.get_by_role("button", name="Save action set").click()
    expect(page.locator("#aname ~ .field-error").first).to_contain_text("must not be empty")
    again = server.api("GET", f"/api/admin/projects/default/actions/{created['id']}")
    assert again["name"] == "on alert"
