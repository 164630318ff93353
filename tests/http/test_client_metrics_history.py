"""A flag's usage history on Unleash's client-metrics paths (issue 32): what SDKs post is
served back as a series, hourly within the kept hours and daily past them once the
retention run rolled the hours up, and a bad ``hoursBack`` is a 400 naming it."""

from __future__ import annotations

import datetime as dt

import pytest

from flagcore.entities import FlagMetrics
from flagcore.service import RetentionSettings, Service
from flagcore_http import ServerConfig
from flagcore_http.config import ConfigError
from tests.http.conftest import CLIENT, Api, bucket_time

RAW = "/api/admin/client-metrics/features/checkout/raw"
SUMMARY = "/api/admin/client-metrics/features/checkout"
DEV = "development"


def _report(app: str, toggles: dict[str, object]) -> dict[str, object]:
    return {
        "appName": app,
        "instanceId": "i-1",
        "bucket": {"start": bucket_time(), "toggles": toggles},
    }


def _hour_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(minute=0, second=0, microsecond=0)


def _iso(time: dt.datetime) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z")


async def test_what_sdks_post_is_served_back_in_unleashs_metrics_shape(
    api: Api, service: Service
) -> None:
    service.flags.create_flag("default", "checkout")
    toggles = {"checkout": {"yes": 3, "no": 1, "variants": {"blue": 3}}}
    await api.json("POST", "/api/client/metrics", 202, token=CLIENT, json=_report("shop", toggles))

    series = await api.json("GET", RAW + "?hoursBack=2")
    assert (series["version"], series["maturity"]) == (1, "stable")
    assert series["data"] == [
        {
            "featureName": "checkout",
            "appName": "shop",
            "environment": DEV,
            "timestamp": _iso(_hour_now() - dt.timedelta(hours=1)),
            "yes": 0,
            "no": 0,
            "variants": {},
        },
        {
            "featureName": "checkout",
            "appName": "shop",
            "environment": DEV,
            "timestamp": _iso(_hour_now()),
            "yes": 3,
            "no": 1,
            "variants": {"blue": 3},
        },
    ]
    assert len((await api.json("GET", RAW))["data"]) == 24  # Unleash's default: 24 hours

    summary = await api.json("GET", SUMMARY)
    assert summary == {
        "version": 1,
        "maturity": "stable",
        "featureName": "checkout",
        "lastHourUsage": [{"environment": DEV, "timestamp": _iso(_hour_now()), "yes": 3, "no": 1}],
        "seenApplications": ["shop"],
    }


async def test_past_the_kept_hours_the_series_is_daily_from_rolled_up_days(
    api: Api, service: Service
) -> None:
    service.flags.create_flag("default", "checkout")
    today = _hour_now().replace(hour=0)
    old_day = today - dt.timedelta(days=40)
    with service.store.transaction() as tx:
        tx.add_flag_metrics(
            [
                FlagMetrics("checkout", "shop", DEV, old_day + dt.timedelta(hours=2), 5, 0, {}),
                FlagMetrics("checkout", "shop", DEV, old_day + dt.timedelta(hours=9), 6, 1, {}),
            ]
        )
    assert service.retention.prune(RetentionSettings()).metrics == 2  # rolled into a day

    series = await api.json("GET", RAW + f"?hoursBack={24 * 60}")
    points = {p["timestamp"]: (p["yes"], p["no"]) for p in series["data"]}
    assert len(points) == 60  # one point a day
    assert points[_iso(old_day)] == (11, 1)
    assert sum(y + n for y, n in points.values()) == 12
    # A week back (hourly) reaches no report: no application, so no point (as Unleash).
    assert (await api.json("GET", RAW + f"?hoursBack={24 * 7}"))["data"] == []


@pytest.mark.parametrize("bad", ["0", "-1", "abc", "1.5", "", "8785", "99999999999", "２"])
async def test_a_bad_hours_back_is_a_400_naming_it(api: Api, service: Service, bad: str) -> None:
    service.flags.create_flag("default", "checkout")
    refused = await api.json("GET", RAW, 400, params={"hoursBack": bad})
    assert refused["details"][0]["path"] == "/query/hoursBack"


async def test_an_unknown_flag_is_a_404(api: Api) -> None:
    await api.json("GET", "/api/admin/client-metrics/features/nope/raw", 404)
    await api.json("GET", "/api/admin/client-metrics/features/nope", 404)


@pytest.mark.parametrize(
    ("variable", "bad"),
    [
        ("FLAGCORE_METRICS_RETENTION_HOURS", "8785"),
        ("FLAGCORE_METRICS_DAILY_RETENTION_DAYS", "3661"),
        ("FLAGCORE_METRICS_DAILY_RETENTION_DAYS", "-1"),
        ("FLAGCORE_SAFE_TO_ARCHIVE_DAYS", "0"),
    ],
)
def test_the_history_settings_are_bounded_and_name_the_setting(variable: str, bad: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        ServerConfig.from_env({variable: bad})
    settings = ServerConfig.from_env(
        {"FLAGCORE_METRICS_RETENTION_HOURS": "48", "FLAGCORE_METRICS_DAILY_RETENTION_DAYS": "0"}
    ).retention
    assert (settings.metrics_hours, settings.metrics_daily_days) == (48, 0)
