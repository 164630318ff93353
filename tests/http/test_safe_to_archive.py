"""Safe-to-archive suggestions (issue 32): a flag at least N days old is suggested only
when its usage history of the last N days (none, or one answer everywhere) and the code
scans agree; N is ``FLAGCORE_SAFE_TO_ARCHIVE_DAYS`` (30)."""

from __future__ import annotations

import contextlib
import datetime as dt
import sqlite3
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from flagcore.entities import FlagMetrics
from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from flagcore_sql.mapping import time_text
from tests.http.conftest import ALL_PROJECTS_CLIENT, CLIENT, Api, bucket_time

SUGGESTIONS = "/api/admin/projects/default/safe-to-archive"
DEV, PROD = "development", "production"
NOW = dt.datetime.now(dt.UTC)


def _report(toggles: dict[str, Any]) -> dict[str, Any]:
    bucket = {"start": bucket_time(), "toggles": toggles}
    return {"appName": "shop", "instanceId": "i-1", "bucket": bucket}


async def _suggested(api: Api) -> dict[str, list[str]]:
    answer = await api.json("GET", SUGGESTIONS)
    return {s["feature"]: s["reasons"] for s in answer["suggestions"]}


def _flags(service: Service, db: Path, *names: str, days_old: int = 40) -> None:
    """Flags made ``days_old`` days ago (a flag's creation time is never rewritten by the
    service, so the file is changed as an old store would hold it)."""
    for name in names:
        service.flags.create_flag("default", name)
    made = time_text(NOW - dt.timedelta(days=days_old))
    with contextlib.closing(sqlite3.connect(db)) as connection, connection:
        for name in names:
            connection.execute("UPDATE flags SET created_at = ? WHERE name = ?", (made, name))


def _day(days_ago: int) -> dt.datetime:
    return NOW.replace(hour=0, minute=0, second=0, microsecond=0) - dt.timedelta(days=days_ago)


def _history(service: Service, *rows: FlagMetrics) -> None:
    """Day buckets as the retention's roll-up leaves them."""
    with service.store.transaction() as tx:
        tx.add_daily_flag_metrics(rows)


async def test_sdk_reports_of_the_last_30_days_and_code_scans_must_agree(
    api: Api, service: Service, tmp_path: Path
) -> None:
    db = tmp_path / "flags.db"
    _flags(service, db, "unused", "always-on", "mixed", "in-code", "mixed-long-ago", "mixed-lately")
    _flags(service, db, "young", days_old=3)
    _history(
        service,
        FlagMetrics("always-on", "shop", PROD, _day(10), 100, 0, {}),
        FlagMetrics("mixed-long-ago", "shop", DEV, _day(45), 0, 50, {}),  # before the window
        FlagMetrics("mixed-lately", "shop", PROD, _day(20), 0, 1, {}),  # within it
    )
    dev = _report(
        {
            "always-on": {"yes": 5},
            "mixed": {"yes": 1},
            "in-code": {"yes": 2},
            "mixed-long-ago": {"yes": 7},
            "mixed-lately": {"yes": 7},
        }
    )
    prod = _report({"always-on": {"yes": 3}, "mixed": {"no": 1}})
    await api.json("POST", "/api/client/metrics", 202, token=CLIENT, json=dev)
    await api.json("POST", "/api/client/metrics", 202, token=ALL_PROJECTS_CLIENT, json=prod)

    suggested = await _suggested(api)
    assert sorted(suggested) == ["always-on", "in-code", "mixed-long-ago", "unused"]
    assert suggested["unused"] == [
        "no SDK evaluation in the last 30 days",
        "no code scan was sent: the code was not weighed",
    ]
    assert suggested["always-on"][0] == (
        "always on in the 108 evaluations of the last 30 days, everywhere"
    )
    assert suggested["mixed-long-ago"][0] == (
        "always on in the 7 evaluations of the last 30 days, everywhere"
    )

    scan = {
        "source": "shop",
        "references": [{"flag": "in-code", "file": "app.py", "line": 3, "call": "is_enabled"}],
    }
    await api.json("POST", "/api/admin/code-references", json=scan)
    suggested = await _suggested(api)
    assert sorted(suggested) == ["always-on", "mixed-long-ago", "unused"]  # in-code is used
    assert suggested["unused"][1] == "no reference in the last scan of 1 source"


async def test_the_days_weighed_are_a_setting(service: Service, tmp_path: Path) -> None:
    _flags(service, tmp_path / "flags.db", "mixed-long-ago", "unused")
    _flags(service, tmp_path / "flags.db", "older", days_old=80)
    _history(
        service,
        FlagMetrics("mixed-long-ago", "shop", DEV, _day(45), 0, 50, {}),
        FlagMetrics("mixed-long-ago", "shop", DEV, _day(1), 9, 0, {}),
    )
    app = create_app(service, ServerConfig(safe_to_archive_days=60))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        suggested = await _suggested(Api(client))
    # Over 60 days the old "no"s count, and flags 40 days old are too young.
    assert suggested == {
        "older": [
            "no SDK evaluation in the last 60 days",
            "no code scan was sent: the code was not weighed",
        ]
    }
    assert ServerConfig.from_env({"FLAGCORE_SAFE_TO_ARCHIVE_DAYS": "7"}).safe_to_archive_days == 7


async def test_an_unknown_project_is_a_404(api: Api) -> None:
    answer = await api.json("GET", "/api/admin/projects/nope/safe-to-archive", 404)
    assert answer["message"] == 'there is no project "nope"'
