"""Every page: every control has a label, the layout fits a phone's width, and axe-core's
WCAG 2 A and AA rules find no serious or critical violation.

axe-core is pinned in ``tests/ui/node_axe/package-lock.json``; a session fixture runs
``npm ci`` there when ``node_modules`` is missing (by hand: ``cd tests/ui/node_axe && npm
ci``). Playwright evaluates its source in each page (DevTools evaluation is not subject to
the page's Content-Security-Policy, so the page is tested as served).
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.ui.conftest import CLIENT, Server, sign_in, wait_for

FLAGS = "/api/admin/projects/default/features"
AXE_DIR = Path(__file__).parent / "node_axe"
# The impacts that fail a page: "minor" and "moderate" findings are left to judgement.
FAILING_IMPACTS = ("serious", "critical")

_UNLABELLED = """
() => [...document.querySelectorAll('input, select, textarea, button')]
  .filter(el => el.type !== 'hidden')
  .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')
                && !(el.tagName === 'BUTTON' && el.textContent.trim()))
  .map(el => el.outerHTML.slice(0, 120))
"""

_AXE_RUN = """
async () => {
  const result = await axe.run(document, {
    runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']},
    resultTypes: ['violations'],
  });
  return result.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => n.target.join(' ') + ': ' + n.failureSummary.replace(/\\s+/g, ' ')),
  }));
}
"""


@pytest.fixture(scope="session")
def axe_source() -> str:
    """axe-core's browser bundle, installed from the lock file when missing."""
    bundle = AXE_DIR / "node_modules" / "axe-core" / "axe.min.js"
    if not bundle.is_file():
        npm = shutil.which("npm")
        assert npm, "the accessibility tests need npm on PATH (CI has it)"
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=AXE_DIR,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"npm ci failed (is npm reachable?): {done.stderr[-500:]}"
    return bundle.read_text(encoding="utf-8")


def axe_violations(page: Page, axe_source: str) -> list[dict[str, Any]]:
    """The serious and critical WCAG 2 A/AA violations axe-core finds on the open page."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(axe_source)
    found: list[dict[str, Any]] = page.evaluate(_AXE_RUN)
    return [v for v in found if v["impact"] in FAILING_IMPACTS]


def _send_signal(server: Server, endpoint: str, secret: str, payload: Any) -> int:
    request = urllib.request.Request(
        f"{server.url}/api/signal-endpoint/{endpoint}",
        data=json.dumps(payload).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status


def _seed(server: Server) -> list[str]:
    """Data on every page a signed-in person can reach; those pages' addresses."""
    server.api("POST", FLAGS, {"name": "labelled", "description": "checkout <b>v2</b>"})
    server.api("POST", f"{FLAGS}/labelled/environments/development/on")
    server.api("POST", f"{FLAGS}/labelled/stale/on")
    server.api(
        "POST", "/api/admin/user-admin", {"email": "a@example.io", "name": "A", "rootRole": 2}
    )
    server.api("POST", "/api/admin/features/labelled/tags", {"type": "simple", "value": "core"})
    group = server.api(
        "POST", "/api/admin/groups", {"name": "Team <b>A</b>", "mappingsSSO": ["team-a"]}
    )
    server.api(
        "POST", "/api/admin/projects/default/access", {"roles": [5], "groups": [group["id"]]}
    )
    account = server.api(
        "POST", "/api/admin/service-account", {"name": "Bot", "username": "bot", "rootRole": 3}
    )
    soon = (dt.datetime.now(dt.UTC) + dt.timedelta(days=7)).isoformat()
    server.api(
        "POST",
        f"/api/admin/service-account/{account['id']}/token",
        {"description": "ci", "expiresAt": soon},
    )
    segment = server.api(
        "POST",
        "/api/admin/segments",
        {
            "name": "beta users",
            "constraints": [{"contextName": "userId", "operator": "IN", "values": ["1", "2"]}],
        },
    )
    # The strategy's constraint names a field with legal values: its editor draws a list.
    server.api(
        "POST",
        "/api/admin/context",
        {"name": "a", "description": "a <i>field</i>", "legalValues": [{"value": "b"}]},
    )
    strategy = server.api(
        "POST",
        f"{FLAGS}/labelled/environments/development/strategies",
        {
            "name": "flexibleRollout",
            "parameters": {"rollout": "50", "stickiness": "default", "groupId": "labelled"},
            "constraints": [{"contextName": "a", "operator": "IN", "values": ["b"]}],
            "segments": [segment["id"]],
            "variants": [{"name": "blue", "weight": 1000, "weightType": "variable"}],
        },
    )
    server.api(
        "POST",
        f"{FLAGS}/labelled/environments/production/strategies",
        {"name": "default", "disabled": True, "title": "paused"},
    )
    server.api(
        "PUT",
        f"{FLAGS}/labelled/environments/production/variants",
        [
            {"name": "red", "weight": 500, "weightType": "variable", "stickiness": "default"},
            {
                "name": "green",
                "weight": 500,
                "weightType": "variable",
                "stickiness": "default",
                "payload": {"type": "json", "value": '{"a": 1}'},
            },
        ],
    )
    server.api("POST", FLAGS, {"name": "quiet-flag", "type": "experiment"})
    server.api("POST", FLAGS, {"name": "gone"})
    server.api("DELETE", f"{FLAGS}/gone")
    server.api("POST", "/api/admin/projects", {"id": "shop", "name": "Shop"})
    server.api(
        "POST",
        "/api/admin/api-tokens",
        {"tokenName": "ci", "type": "client", "environment": "development", "projects": ["*"]},
    )
    endpoint = server.api("POST", "/api/admin/signal-endpoints", {"name": "hook"})
    secret = server.api(
        "POST", f"/api/admin/signal-endpoints/{endpoint['id']}/tokens", {"name": "pager"}
    )["token"]
    action_set = server.api(
        "POST",
        "/api/admin/projects/default/actions",
        {
            "name": "off on alert",
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
                    "executionParams": {"featureName": "labelled", "environment": "development"},
                }
            ],
        },
    )
    assert _send_signal(server, "hook", secret, {"level": "critical"}) == 202
    executions = f"/api/admin/projects/default/actions/{action_set['id']}/events"
    wait_for(lambda: len(server.api("GET", executions)["actionSetEvents"]) == 1)
    now = dt.datetime.now(dt.UTC).isoformat()
    server.api(
        "POST",
        "/api/client/metrics",
        {
            "appName": "shop-frontend",
            "instanceId": "shop-1",
            "environment": "development",
            "bucket": {"start": now, "stop": now, "toggles": {"labelled": {"yes": 3, "no": 1}}},
        },
        token=CLIENT,
    )
    # An integration that is off, to a public address literal: nothing is ever sent.
    addon = server.api(
        "POST",
        "/api/admin/addons",
        {
            "provider": "webhook",
            "enabled": False,
            "parameters": {"url": "https://93.184.216.34/hook"},
            "events": ["feature-created"],
        },
    )
    role = server.api(
        "POST",
        "/api/admin/roles",
        {
            "name": "Dev toggler",
            "type": "custom",
            "permissions": [{"name": "UPDATE_FEATURE_ENVIRONMENT", "environment": "development"}],
        },
    )
    person = server.api("GET", "/api/admin/user-admin")["users"][0]["id"]
    access = {"roles": [role["id"]], "users": [person, account["id"]]}
    server.api("POST", "/api/admin/projects/default/access", access)
    change_requests = "/api/admin/projects/default/environments/production/change-requests"
    server.api(
        "PUT",
        change_requests + "/config",
        {"changeRequestsEnabled": True, "requiredApprovals": 1},
    )
    draft = server.api(
        "POST",
        change_requests,
        {"feature": "labelled", "action": "updateEnabled", "payload": {"enabled": True}},
    )
    strategies = "/ui/flags/labelled/environments/development/strategies"
    custom = {"name": "byPlan", "parameters": [{"name": "plans", "type": "list"}]}
    server.api("POST", "/api/admin/strategies", custom)
    server.api("PUT", f"{FLAGS}/quiet-flag", {"description": "changed", "type": "release"})
    # release plans (issue 32): a template, and a plan on labelled's first milestone
    milestones = [
        {"name": f"{p}%", "sortOrder": i, "strategies": [{"name": "default"}]}
        for i, p in enumerate((10, 100))
    ]
    template = server.api(
        "POST", "/api/admin/release-plan-templates", {"name": "Steps", "milestones": milestones}
    )
    plans = f"{FLAGS}/labelled/environments/development/release-plans"
    plan = server.api("POST", plans, {"templateId": template["id"]})
    server.api("POST", f"{plans}/{plan['id']}/milestones/{plan['milestones'][0]['id']}/start")
    return [
        "/ui/flags",
        "/ui/flags?project=default&q=lab",
        "/ui/flags/new",
        "/ui/flags/labelled",
        f"{strategies}/{strategy['id']}",
        f"{strategies}/new",
        "/ui/flags/labelled/environments/production/variants",
        "/ui/archive",
        "/ui/archive/gone/delete",
        "/ui/cleanup?project=default",
        "/ui/segments",
        "/ui/segments/new",
        f"/ui/segments/{segment['id']}",
        "/ui/context",
        "/ui/context/new",
        "/ui/context/a",
        "/ui/projects",
        "/ui/tokens",
        "/ui/users",
        "/ui/service-accounts",
        "/ui/events",
        "/ui/signals",
        f"/ui/signals/{endpoint['id']}",
        "/ui/actions",
        "/ui/actions/new",
        f"/ui/actions/{action_set['id']}",
        f"/ui/actions/{action_set['id']}/executions",
        "/ui/applications",
        "/ui/playground",
        "/ui/integrations",
        "/ui/integrations/new?provider=webhook",
        "/ui/integrations/new?provider=datadog",
        f"/ui/integrations/{addon['id']}",
        "/ui/no-such-page",  # the error page
        "/ui/flags/no-such-flag",
        "/ui/environments",
        "/ui/environments/development/delete",
        "/ui/flags/labelled/edit",
        "/ui/roles",
        f"/ui/roles/{role['id']}",
        "/ui/groups",
        f"/ui/groups/{group['id']}",
        "/ui/search",
        "/ui/search?project=shop&q=lab&state=active",
        "/ui/tag-types",
        "/ui/tag-types/simple",
        "/ui/strategies",
        "/ui/strategies/new",
        "/ui/strategies/byPlan",
        "/ui/strategies/flexibleRollout",
        "/ui/projects/default/access",
        "/ui/change-requests",
        f"/ui/change-requests/default/{draft['id']}",
        "/ui/flags/labelled/environments/production/strategies/new",
        "/ui/release-templates",
        f"/ui/release-templates/{template['id']}",
        "/ui/feature-types",
    ]


def test_every_control_on_every_page_has_a_label_and_pages_fit_a_phone(
    signed_in: Page, server: Server, shot: Any
) -> None:
    page = signed_in
    for path in ["/ui/sign-in", *_seed(server)]:
        page.set_viewport_size({"width": 1280, "height": 800})
        page.goto(server.url + path)
        assert page.evaluate(_UNLABELLED) == [], path
        page.set_viewport_size({"width": 375, "height": 740})
        # Wide tables scroll inside their own box; the page itself never scrolls sideways.
        assert page.evaluate("document.documentElement.scrollWidth") <= 375, path
    # The playground's answers (a POST): the result table and an opened explanation.
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(server.url + "/ui/playground")
    page.get_by_role("button", name="Evaluate").click()
    page.get_by_text("Explain labelled").click()
    assert page.evaluate(_UNLABELLED) == []
    page.set_viewport_size({"width": 375, "height": 740})
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    page.goto(server.url + "/ui/flags/labelled")
    shot(page, "flag-phone")


def test_axe_finds_no_serious_or_critical_violation_on_any_page(
    page: Page, server: Server, axe_source: str
) -> None:
    found: dict[str, Any] = {}

    def check(label: str) -> None:
        violations = axe_violations(page, axe_source)
        if violations:
            found[label] = violations

    # Signed out: the sign-in page, and the same page refusing a wrong token.
    page.goto(server.url + "/ui/sign-in")
    check("/ui/sign-in")
    page.get_by_label("Admin API token").fill("*:*.not-a-token-we-know")
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.locator(".field-error").wait_for()
    check("/ui/sign-in refused")
    sign_in(page, server)
    for path in _seed(server):
        page.goto(server.url + path)
        assert "/ui/sign-in" not in page.url, path  # the page itself, signed in
        check(path)
    # Pages that only a POST shows: the playground's answers, a refused form.
    page.goto(server.url + "/ui/playground")
    page.get_by_role("button", name="Evaluate").click()
    page.get_by_text("Explain labelled").click()
    check("/ui/playground answered")
    page.goto(server.url + "/ui/flags/new")
    page.get_by_label("Name").fill("not a valid name!")
    page.get_by_role("button", name="Create flag").click()
    page.locator(".field-error").first.wait_for()
    check("/ui/flags/new refused")
    page.goto(server.url + "/ui/events?flag=quiet-flag")
    page.locator("table.events details summary").first.click()
    check("/ui/events with a diff open")
    # A person's own pages: where a reset link leads (empty, then refusing a password),
    # and their tokens, empty, refusing a day gone by, and with a new one's secret shown.
    server.api("POST", "/api/admin/user-admin", {"email": "axe@x.io", "rootRole": 2})
    reset = {"id": "axe@x.io"}
    link = server.api("POST", "/api/admin/user-admin/reset-password", reset)["resetPasswordUrl"]
    page.goto(link)
    check("/ui/set-password")
    page.get_by_label("New password").fill("short")
    page.get_by_role("button", name="Set password and sign in").click()
    page.locator(".field-error").first.wait_for()
    check("/ui/set-password refused")
    page.get_by_label("New password").fill("Correct-Horse-9")
    page.get_by_role("button", name="Set password and sign in").click()
    page.get_by_role("heading", name="Flags", exact=True).wait_for()
    page.goto(server.url + "/ui/my-tokens")
    check("/ui/my-tokens")
    page.get_by_label("Description").fill("deploys")
    page.get_by_label("Expires at the end of").fill("2000-01-01")
    page.get_by_role("button", name="Create token").click()
    page.locator(".field-error").first.wait_for()
    check("/ui/my-tokens refused")
    day = (dt.datetime.now(dt.UTC).date() + dt.timedelta(days=30)).isoformat()
    page.get_by_label("Expires at the end of").fill(day)
    page.get_by_role("button", name="Create token").click()
    page.get_by_label("Secret").wait_for()
    check("/ui/my-tokens with a new token")
    assert found == {}, json.dumps(found, indent=1)


def test_the_first_tab_stop_skips_to_the_main_content(signed_in: Page, server: Server) -> None:
    page = signed_in
    page.goto(server.url + "/ui/flags")
    skip = page.get_by_role("link", name="Skip to main content")
    page.keyboard.press("Tab")
    expect(skip).to_be_focused()
    expect(skip).to_be_in_viewport()  # shown once focused (off screen until then)
    page.keyboard.press("Enter")
    expect(page.locator("main")).to_be_focused()
    # The next Tab lands inside the page's content, past the menu.
    page.keyboard.press("Tab")
    assert page.evaluate("document.querySelector('main').contains(document.activeElement)")


def test_action_sets_are_in_the_main_navigation_which_marks_the_current_page(
    signed_in: Page, server: Server
) -> None:
    page = signed_in
    menu = page.get_by_role("navigation", name="Main")
    menu.get_by_role("link", name="Action sets").click()
    expect(page.get_by_role("heading", name="Action sets of default")).to_be_visible()
    expect(menu.get_by_role("link", name="Action sets")).to_have_attribute("aria-current", "page")
    expect(menu.locator('[aria-current="page"]')).to_have_count(1)
    page.goto(server.url + "/ui/actions/new")  # a page under it marks it too
    expect(menu.get_by_role("link", name="Action sets")).to_have_attribute("aria-current", "page")


def test_pages_load_every_resource_they_name_the_site_icon_included(
    page: Page, server: Server
) -> None:
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    sign_in(page, server)
    page.goto(server.url + "/ui/flags")
    icon = page.request.get(server.url + "/favicon.ico")
    assert icon.status == 200
    assert icon.headers["content-type"] == "image/vnd.microsoft.icon"
    assert icon.body()[:4] == b"\x00\x00\x01\x00"  # an ICO file
    assert page.locator('link[rel="icon"]').get_attribute("href") == "/favicon.ico"
    assert failed == []
