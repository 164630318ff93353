"""The Safe to archive page (issue 32), as a person sees it in Chromium: the flags of a
project that SDK usage of the last N days and the code scans agree nothing needs, with
the evidence, and each flag's page a click away."""

from __future__ import annotations

import contextlib
import datetime as dt
import sqlite3
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from flagcore.service import Service
from flagcore_sql.mapping import time_text
from flagcore_store_sqlite import SqliteStore
from tests.ui.conftest import CLIENT, sign_in, start_server, stop_server

NOW = dt.datetime.now(dt.UTC)


def test_flags_no_sdk_needed_and_no_code_references_are_listed_with_why(
    page: Page, tmp_path: Path, shot: Any
) -> None:
    store = SqliteStore(tmp_path / "flags.db")
    try:
        service = Service(store)
        for name in ("forgotten", "in-use", "in-code", "fresh"):
            service.flags.create_flag("default", name)
    finally:
        store.close()
    old = time_text(NOW - dt.timedelta(days=45))
    with contextlib.closing(sqlite3.connect(tmp_path / "flags.db")) as db, db:
        for name in ("forgotten", "in-use", "in-code"):
            db.execute("UPDATE flags SET created_at = ? WHERE name = ?", (old, name))
    server = start_server(tmp_path)
    try:
        start = NOW.strftime("%Y-%m-%dT%H:%M:%S.000Z")
        toggles = {"in-use": {"yes": 4, "no": 2, "variants": {}}}
        report = {
            "appName": "shop",
            "instanceId": "i-1",
            "bucket": {"start": start, "toggles": toggles},
        }
        server.api("POST", "/api/client/metrics", report, token=CLIENT)
        scan = {
            "source": "shop",
            "references": [{"flag": "in-code", "file": "app.py", "line": 3, "call": None}],
        }
        server.api("POST", "/api/admin/code-references", scan)
        sign_in(page, server)
        page.goto(server.url + "/ui/flags?project=default")
        page.get_by_role("link", name="Safe to archive…").click()
        expect(page.get_by_role("heading", name="Safe to archive")).to_be_visible()
        rows = page.locator("table.cleanup tbody tr")
        # Used with two answers, referenced in code, or younger than 30 days: not listed.
        expect(rows).to_have_count(1)
        expect(rows.first.get_by_role("rowheader")).to_have_text("forgotten")
        expect(rows.first).to_contain_text("no SDK evaluation in the last 30 days")
        expect(rows.first).to_contain_text("no reference in the last scan of 1 source")
        shot(page, "safe-to-archive")
        rows.first.get_by_role("link", name="forgotten").click()
        expect(page).to_have_url(server.url + "/ui/flags/forgotten")
        page.goto(server.url + "/ui/cleanup?project=nope")
        expect(page.locator("main")).to_contain_text("nope")
    finally:
        stop_server(server)
