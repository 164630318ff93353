"""Every page: every control has a label, and the layout fits a phone's width."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page

from tests.ui.conftest import Server

FLAGS = "/api/admin/projects/default/features"

_UNLABELLED = """
() => [...document.querySelectorAll('input, select, textarea, button')]
  .filter(el => el.type !== 'hidden')
  .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')
                && !(el.tagName === 'BUTTON' && el.textContent.trim()))
  .map(el => el.outerHTML.slice(0, 120))
"""


def _pages(server: Server) -> list[str]:
    server.api("POST", FLAGS, {"name": "labelled"})
    strategy = server.api(
        "POST",
        f"{FLAGS}/labelled/environments/development/strategies",
        {
            "name": "default",
            "constraints": [{"contextName": "a", "operator": "IN", "values": ["b"]}],
        },
    )
    segment = server.api("POST", "/api/admin/segments", {"name": "seg", "constraints": []})
    endpoint = server.api("POST", "/api/admin/signal-endpoints", {"name": "hook"})
    server.api("POST", "/api/admin/projects/default/features", {"name": "gone"})
    server.api("DELETE", f"{FLAGS}/gone")
    return [
        "/ui/sign-in",
        "/ui/flags",
        "/ui/flags/new",
        "/ui/flags/labelled",
        f"/ui/flags/labelled/environments/development/strategies/{strategy['id']}",
        "/ui/flags/labelled/environments/development/strategies/new",
        "/ui/flags/labelled/environments/production/variants",
        "/ui/archive",
        "/ui/archive/gone/delete",
        "/ui/segments",
        f"/ui/segments/{segment['id']}",
        "/ui/projects",
        "/ui/tokens",
        "/ui/events",
        "/ui/signals",
        f"/ui/signals/{endpoint['id']}",
        "/ui/actions",
        "/ui/actions/new",
        "/ui/applications",
        "/ui/playground",
    ]


def test_every_control_on_every_page_has_a_label_and_pages_fit_a_phone(
    signed_in: Page, server: Server, shot: Any
) -> None:
    page = signed_in
    for path in _pages(server):
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
