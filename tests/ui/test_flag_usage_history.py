"""A flag's usage history on its page (issue 32), as a person sees it in Chromium: a bar
chart per environment of yes/no and of variants, over 48 hours by the hour or 30 days and
a year by the day (day buckets the retention rolled up included), and when each
application last reported the flag; every name escaped."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from flagcore.entities import FlagMetrics
from flagcore.service import Service
from flagcore_store_sqlite import SqliteStore
from tests.ui.conftest import sign_in, start_server, stop_server

DEV, PROD = "development", "production"
HOSTILE = '<img src=x onerror="alert(1)">'


def _seed(db: Path) -> tuple[dt.datetime, dt.datetime]:
    """Two hours ago and ten days ago (a day bucket, as the roll-up leaves it)."""
    now = dt.datetime.now(dt.UTC).replace(minute=0, second=0, microsecond=0)
    recent = now - dt.timedelta(hours=2)
    old_day = now.replace(hour=0) - dt.timedelta(days=10)
    store = SqliteStore(db)
    try:
        Service(store).flags.create_flag("default", "checkout")
        with store.transaction() as tx:
            tx.add_flag_metrics(
                [
                    FlagMetrics("checkout", "shop", DEV, recent, 5, 2, {"blue": 4, HOSTILE: 3}),
                    FlagMetrics("checkout", HOSTILE, PROD, recent, 0, 9, {}),
                ]
            )
            tx.add_daily_flag_metrics(
                [FlagMetrics("checkout", "batch", DEV, old_day, 40, 0, {"blue": 40})]
            )
    finally:
        store.close()
    return recent, old_day


def _chart(page: Page, environment: str, kind: str) -> Any:
    return page.locator(f'figure.usage-chart[data-environment="{environment}"][data-kind="{kind}"]')


def test_the_flag_page_charts_usage_history_per_environment_and_when_each_app_was_last_seen(
    page: Page, tmp_path: Path, shot: Any
) -> None:
    recent, old_day = _seed(tmp_path / "flags.db")
    server = start_server(tmp_path)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    try:
        sign_in(page, server)
        page.goto(server.url + "/ui/flags/checkout")
        section = page.get_by_role("region", name="Usage history")
        expect(section.locator('strong[aria-current="true"]')).to_have_text("48 hours")

        dev = _chart(page, DEV, "yes/no")
        expect(dev.locator('[data-series="yes"]')).to_have_attribute("data-total", "5")
        expect(dev.locator('[data-series="no"]')).to_have_attribute("data-total", "2")
        expect(dev.locator("svg g.bar")).to_have_count(48)  # a bar an hour
        hour = recent.strftime("%Y-%m-%d %H:00 UTC")
        expect(dev.locator("rect.yes title")).to_have_text([f"{hour}: 5 yes"])
        expect(dev.locator("rect.no title")).to_have_text([f"{hour}: 2 no"])
        prod = _chart(page, PROD, "yes/no")
        expect(prod.locator('[data-series="no"]')).to_have_attribute("data-total", "9")

        variants = _chart(page, DEV, "variants")
        expect(variants.locator('[data-series="blue"]')).to_have_attribute("data-total", "4")
        expect(variants.locator(".legend")).to_contain_text(HOSTILE)  # shown as text
        expect(variants.locator("rect title").filter(has_text=HOSTILE)).to_have_text(
            [f"{hour}: 3 {HOSTILE}"]
        )
        expect(_chart(page, PROD, "variants")).to_have_count(0)  # none reported there

        last_seen = section.locator("#last-seen tbody tr")
        expect(last_seen).to_have_count(3)
        expect(last_seen.nth(0)).to_contain_text(HOSTILE)  # "<" sorts first
        expect(last_seen.nth(1)).to_contain_text("batch")
        expect(last_seen.nth(1)).to_contain_text(old_day.strftime("%Y-%m-%d (that day)"))
        expect(last_seen.nth(2)).to_contain_text("shop")
        expect(last_seen.nth(2)).to_contain_text(hour)
        page.locator("#usage-h").evaluate("heading => heading.scrollIntoView()")
        shot(page, "flag-usage-history")

        section.get_by_role("link", name="30 days").click()
        expect(section.locator('strong[aria-current="true"]')).to_have_text("30 days")
        dev = _chart(page, DEV, "yes/no")
        expect(dev.locator("svg g.bar")).to_have_count(30)  # a bar a day
        expect(dev.locator('[data-series="yes"]')).to_have_attribute("data-total", "45")
        expect(dev.locator("rect.yes title")).to_have_text(
            [f"{old_day:%Y-%m-%d}: 40 yes", f"{recent:%Y-%m-%d}: 5 yes"]
        )
        blue = _chart(page, DEV, "variants").locator('[data-series="blue"]')
        expect(blue).to_have_attribute("data-total", "44")
        assert page.locator("img").count() == 0  # the hostile name made no element
        assert dialogs == []
    finally:
        stop_server(server)
