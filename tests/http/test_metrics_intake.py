"""Metrics reports drop names that are no flag before reading their counts (issue #12):
a report of made-up names costs no counting and no query, while every flag that exists,
archived or created a moment ago, is still counted."""

from __future__ import annotations

from typing import Any

from flagcore.service import Service
from tests.http.conftest import CLIENT, Api, bucket_time

METRICS = "/api/client/metrics"


def _report(toggles: dict[str, Any]) -> dict[str, Any]:
    return {
        "appName": "shop",
        "instanceId": "i-1",
        "bucket": {"start": bucket_time(), "toggles": toggles},
    }


async def test_existing_archived_and_just_created_flags_are_counted_made_up_names_not(
    service: Service, api: Api
) -> None:
    service.flags.create_flag("default", "live")
    service.flags.create_flag("default", "retired")
    service.archive.archive_flag("default", "retired")
    made_up = {f"made-up-{i}": {"yes": 1, "no": 1} for i in range(3000)}
    toggles = {"live": {"yes": 2}, "retired": {"no": 3}, **made_up}
    await api.json("POST", METRICS, 202, token=CLIENT, json=_report(toggles))
    assert [row.yes for row in service.metrics.flag_metrics("live")] == [2]
    assert [row.no for row in service.metrics.flag_metrics("retired")] == [3]
    assert service.metrics.flag_metrics("made-up-1") == []
    # A flag created after the names were read is counted by the next report.
    service.flags.create_flag("default", "fresh")
    await api.json("POST", METRICS, 202, token=CLIENT, json=_report({"fresh": {"yes": 5}}))
    assert [row.yes for row in service.metrics.flag_metrics("fresh")] == [5]


async def test_counts_of_names_that_are_no_flag_are_dropped_unread(
    service: Service, api: Api
) -> None:
    """A deliberate difference from Unleash (docs/migrating-from-unleash.md): Unleash
    checks and stores every name; flagcore drops unknown names before reading them."""
    service.flags.create_flag("default", "live")
    toggles = {"made-up": {"yes": "not a count"}, "live": {"yes": 1}}
    await api.json("POST", METRICS, 202, token=CLIENT, json=_report(toggles))
    assert [row.yes for row in service.metrics.flag_metrics("live")] == [1]
    # A bad count of a real flag is still refused, naming its path, and nothing is kept.
    toggles = {"made-up": {"yes": 1}, "live": {"yes": -1}}
    error = await api.json("POST", METRICS, 400, token=CLIENT, json=_report(toggles))
    assert error["details"][0]["path"] == "$.bucket.toggles.live.yes"
    assert [row.yes for row in service.metrics.flag_metrics("live")] == [1]
