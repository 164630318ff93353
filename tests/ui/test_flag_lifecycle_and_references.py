"""A flag's page (issue 32), as a person sees it in Chromium: where code references the
flag, from the scans ``flagcore scan --upload`` sent; its lifecycle, marked completed and back."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from tests.ui.conftest import Server

FLAGS = "/api/admin/projects/default/features"


def _scan(source: str, *references: tuple[str, str, int, str | None]) -> dict[str, Any]:
    return {
        "source": source,
        "references": [
            {"flag": flag, "file": file, "line": line, "call": call}
            for flag, file, line, call in references
        ],
    }


def test_the_flag_page_says_where_code_references_the_flag(
    signed_in: Page, server: Server, shot: Any
) -> None:
    server.api("POST", FLAGS, {"name": "new-checkout"})
    server.api("POST", FLAGS, {"name": "forgotten"})
    server.api(
        "POST",
        "/api/admin/code-references",
        _scan(
            "web-shop",
            ("new-checkout", "src/App.tsx", 4, "useFlag"),
            ("new-checkout", "src/flags.ts", 2, None),
            ("other", "src/App.tsx", 9, "isEnabled"),
        ),
    )
    server.api(
        "POST",
        "/api/admin/code-references",
        _scan("payments", ("new-checkout", "checkout.py", 12, "is_enabled")),
    )
    page = signed_in
    page.goto(server.url + "/ui/flags/new-checkout")
    section = page.get_by_role("region", name="Code references")
    expect(section.locator("#code-count")).to_have_text("Referenced in 3 places across 2 sources.")
    rows = section.locator("tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_contain_text("payments")
    expect(rows.nth(0)).to_contain_text("checkout.py")
    expect(rows.nth(0)).to_contain_text("is_enabled")
    expect(section).to_contain_text("src/flags.ts")
    expect(section).to_contain_text("a string literal")
    shot(page, "flag-code-references")

    page.goto(server.url + "/ui/flags/forgotten")
    expect(page.get_by_role("region", name="Code references")).to_contain_text(
        "No scan has found this flag in code."
    )


def test_the_flag_page_shows_the_lifecycle_and_marks_it_completed_and_back(
    signed_in: Page, server: Server, shot: Any
) -> None:
    server.api("POST", FLAGS, {"name": "checkout"})
    page = signed_in
    page.goto(server.url + "/ui/flags/checkout")
    section = page.get_by_role("region", name="Lifecycle")
    expect(section.locator("#lifecycle-current")).to_contain_text("Stage: initial")

    page.get_by_label("Completed, and the flag's code").select_option("discarded")
    page.get_by_label("Variant or state kept (optional)").fill("x" * 300)
    page.get_by_role("button", name="Mark completed").click()
    # Refused (too long): the form comes back as typed, with the reason.
    expect(page.get_by_label("Variant or state kept (optional)")).to_have_value("x" * 300)
    expect(page.get_by_label("Completed, and the flag's code")).to_have_value("discarded")
    expect(section).to_contain_text("at most 255 characters")
    stages = server.api("GET", FLAGS + "/checkout/lifecycle")
    assert [s["stage"] for s in stages] == ["initial"]

    page.get_by_label("Variant or state kept (optional)").fill("on")
    page.get_by_role("button", name="Mark completed").click()
    expect(section.locator("#lifecycle-current")).to_contain_text(
        "Stage: completed (discarded: on)"
    )
    stages = server.api("GET", FLAGS + "/checkout/lifecycle")
    assert [(s["stage"], s.get("status")) for s in stages] == [
        ("initial", None),
        ("completed", "discarded"),
    ]
    shot(page, "flag-lifecycle")

    page.get_by_role("button", name="Take the completed mark away").click()
    expect(section.locator("#lifecycle-current")).to_contain_text("Stage: initial")
