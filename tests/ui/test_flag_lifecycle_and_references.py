"""A flag's page (issue 32), as a person sees it in Chromium: where code references the
flag, from the scans ``flagcore scan --upload`` sent; its lifecycle, marked completed and
back; "potentially stale" once it outlived its type's lifetime."""

from __future__ import annotations

import contextlib
import datetime as dt
import re
import sqlite3
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from flagcore.entities import FlagStage
from flagcore.service import Service
from flagcore.tables import FLAG_STAGES
from flagcore_store_sqlite import SqliteStore
from tests.ui.conftest import Server, sign_in, start_server, stop_server, wait_for

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
    page.locator("#code-h").evaluate("heading => heading.scrollIntoView()")
    shot(page, "flag-code-references")

    page.goto(server.url + "/ui/flags/forgotten")
    expect(page.get_by_role("region", name="Code references")).to_contain_text(
        "No scan has found this flag in code."
    )


def test_the_flag_page_shows_the_lifecycle_and_marks_it_completed_and_back(
    page: Page, tmp_path: Path, shot: Any
) -> None:
    # A flag made twelve days ago, first seen by SDKs outside production nine days ago
    # and in production two days ago (written as the store writes them).
    now = dt.datetime.now(dt.UTC)
    store = SqliteStore(tmp_path / "flags.db")
    service = Service(store)
    service.flags.create_flag("default", "checkout")
    with store.transaction() as tx:
        tx.save_record(FLAG_STAGES, FlagStage("checkout", "pre-live", now - dt.timedelta(days=9)))
        tx.save_record(FLAG_STAGES, FlagStage("checkout", "live", now - dt.timedelta(days=2)))
    store.close()
    made = (now - dt.timedelta(days=12)).isoformat()
    with contextlib.closing(sqlite3.connect(tmp_path / "flags.db")) as db, db:
        db.execute("UPDATE flags SET created_at = ? WHERE name = 'checkout'", (made,))
    server = start_server(tmp_path)
    try:
        sign_in(page, server)
        _lifecycle_journey(page, server, shot)
    finally:
        stop_server(server)


def _lifecycle_journey(page: Page, server: Server, shot: Any) -> None:
    page.goto(server.url + "/ui/flags/checkout")
    section = page.get_by_role("region", name="Lifecycle")
    expect(section.locator("#lifecycle-current")).to_contain_text("Stage: live")
    expect(section.locator("#lifecycle-current")).to_contain_text("(2 days)")
    rows = section.get_by_role("table", name="Each stage the flag reached").locator("tbody tr")
    # The time in each stage: to the next stage's entry; the current one, "so far".
    expect(rows.locator("th")).to_have_text(["initial", "pre-live", "live"])
    expect(rows.locator("td:nth-child(3)")).to_have_text(["3 days", "7 days", "2 days so far"])

    page.get_by_label("Completed, and the flag's code").select_option("discarded")
    page.get_by_label("Variant or state kept (optional)").fill("x" * 300)
    page.get_by_role("button", name="Mark completed").click()
    # Refused (too long): the form comes back as typed, with the reason.
    expect(page.get_by_label("Variant or state kept (optional)")).to_have_value("x" * 300)
    expect(page.get_by_label("Completed, and the flag's code")).to_have_value("discarded")
    expect(section).to_contain_text("at most 255 characters")
    stages = server.api("GET", FLAGS + "/checkout/lifecycle")
    assert [s["stage"] for s in stages] == ["initial", "pre-live", "live"]

    page.get_by_label("Variant or state kept (optional)").fill("on")
    page.get_by_role("button", name="Mark completed").click()
    expect(section.locator("#lifecycle-current")).to_contain_text(
        "Stage: completed (discarded: on)"
    )
    stages = server.api("GET", FLAGS + "/checkout/lifecycle")
    assert [(s["stage"], s.get("status")) for s in stages] == [
        ("initial", None),
        ("pre-live", None),
        ("live", None),
        ("completed", "discarded"),
    ]
    assert [s["secondsInStage"] // 86_400 for s in stages[:3]] == [3, 7, 2]
    expect(rows.locator("th")).to_have_text(["initial", "pre-live", "live", "completed"])
    expect(rows.locator("td:nth-child(3)")).to_have_text(
        ["3 days", "7 days", "2 days", re.compile(r"^\d+ (second|minute)s? so far$")]
    )
    page.locator("#lifecycle-h").evaluate("heading => heading.scrollIntoView()")
    shot(page, "flag-lifecycle")

    page.get_by_role("button", name="Take the completed mark away").click()
    expect(section.locator("#lifecycle-current")).to_contain_text("Stage: live")


def test_a_flag_older_than_its_types_lifetime_shows_potentially_stale(
    page: Page, tmp_path: Path, shot: Any
) -> None:
    store = SqliteStore(tmp_path / "flags.db")
    service = Service(store)
    service.flags.create_flag("default", "forgotten")
    service.flags.create_flag("default", "fresh")
    store.close()
    # Fifty days old, written as the store writes its times.
    old = (dt.datetime.now(dt.UTC) - dt.timedelta(days=50)).isoformat()
    with contextlib.closing(sqlite3.connect(tmp_path / "flags.db")) as db, db:
        db.execute("UPDATE flags SET created_at = ? WHERE name = 'forgotten'", (old,))
    server = start_server(
        tmp_path,
        env={
            "FLAGCORE_STALE_CHECK_INTERVAL_SECONDS": "0.2",
            "FLAGCORE_STALE_REMINDER_INTERVAL_SECONDS": "0.5",  # a day by default
        },
    )
    try:
        sign_in(page, server)
        page.goto(server.url + "/ui/flags/forgotten")
        badge = page.locator("#potentially-stale")
        expect(badge).to_have_text("potentially stale")
        expect(badge).to_have_attribute(
            "title", "older than the 40 days a release flag is expected to live"
        )
        shot(page, "flag-potentially-stale")
        page.goto(server.url + "/ui/flags/fresh")
        expect(page.get_by_role("heading", name="fresh")).to_be_visible()
        expect(page.locator("#potentially-stale")).to_have_count(0)

        def announced() -> list[str]:
            events = server.api("GET", "/api/admin/events")["events"]
            kind = "feature-potentially-stale-on"
            return [e["featureName"] for e in events if e["type"] == kind]

        wait_for(announced)  # the server's check runs every 0.2 s here
        assert announced() == ["forgotten"]

        def reminded() -> list[Any]:
            events = server.api("GET", "/api/admin/events")["events"]
            return [e for e in events if e["type"] == "feature-potentially-stale-reminder"]

        wait_for(reminded)  # and reminds each project of its stale flags every 0.5 s
        assert (reminded()[0]["project"], reminded()[0]["data"]) == (
            "default",
            {"features": ["forgotten"], "count": 1},
        )
    finally:
        stop_server(server)
