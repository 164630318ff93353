"""/docs in a real browser: the vendored Swagger UI renders the server's OpenAPI document
with no request leaving the server (no CDN) and nothing refused by its CSP."""

from __future__ import annotations

from urllib.parse import urlsplit

from playwright.sync_api import Page, Route

from .conftest import Server


def test_docs_page_renders_every_operation_offline(page: Page, server: Server) -> None:
    elsewhere: list[str] = []
    own_host = urlsplit(server.url).netloc

    def only_this_server(route: Route) -> None:
        if urlsplit(route.request.url).netloc == own_host:
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    page.route("**/*", only_this_server)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))

    page.goto(server.url + "/docs")
    page.locator(".opblock").first.wait_for()
    assert page.locator(".info .title").first.inner_text().startswith("flagcore")
    # Past about a hundred paths Swagger UI draws only the operations in view: scroll
    # through the page and gather every operation it draws on the way.
    drawn: set[str] = set()
    unchanged = 0
    while unchanged < 5:
        ids = page.eval_on_selector_all(".opblock", "blocks => blocks.map(b => b.id)")
        unchanged = 0 if set(ids) - drawn else unchanged + 1
        drawn |= set(ids)
        page.mouse.wheel(0, 600)
        page.wait_for_timeout(50)
    assert r"operations-default-segments\.get_segment" in drawn, sorted(drawn)[:5]
    assert len(drawn) > 150  # every operation, not a stub
    assert elsewhere == []
    assert problems == []
