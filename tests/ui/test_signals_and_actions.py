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
