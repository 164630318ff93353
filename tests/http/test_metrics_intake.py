"""Metrics reports drop names that are no flag before reading their counts (issue #12):
a report of made-up names costs no counting and no query, while every flag that exists,
archived or created a moment ago, is still counted."""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from flagcore_http.metrics import METRICS as SERVER_METRICS
from tests.http.conftest import CLIENT, Api, bucket_time

METRICS = "/api/client/metrics"
FRONTEND_METRICS = "/api/frontend/client/metrics"
FRONTEND = "default:development.frontend-metrics-secret"


@asynccontextmanager
async def serving(service: Service, **settings: Any) -> AsyncIterator[Api]:
    app = create_app(service, ServerConfig(**settings))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        yield Api(client)


def _dropped(api: Api, reason: str) -> float:
    registry = api.client.app[SERVER_METRICS].registry
    return registry.get_sample_value("flagcore_sdk_metrics_dropped_total", {"reason": reason}) or 0


def _report(
    toggles: dict[str, Any], *, start: str | None = None, app: str = "shop"
) -> dict[str, Any]:
    return {
        "appName": app,
        "instanceId": "i-1",
        "bucket": {"start": start or bucket_time(), "toggles": toggles},
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
    await api.usage_written()
    assert [row.yes for row in service.metrics.flag_metrics("live")] == [2]
    assert [row.no for row in service.metrics.flag_metrics("retired")] == [3]
    assert service.metrics.flag_metrics("made-up-1") == []
    # A flag created after the names were read is counted by the next report.
    service.flags.create_flag("default", "fresh")
    await api.json("POST", METRICS, 202, token=CLIENT, json=_report({"fresh": {"yes": 5}}))
    await api.usage_written()
    assert [row.yes for row in service.metrics.flag_metrics("fresh")] == [5]


async def test_counts_of_names_that_are_no_flag_are_dropped_unread(
    service: Service, api: Api
) -> None:
    """A deliberate difference from Unleash (docs/migrating-from-unleash.md): Unleash
    checks and stores every name; flagcore drops unknown names before reading them."""
    service.flags.create_flag("default", "live")
    toggles = {"made-up": {"yes": "not a count"}, "live": {"yes": 1}}
    await api.json("POST", METRICS, 202, token=CLIENT, json=_report(toggles))
    await api.usage_written()
    assert [row.yes for row in service.metrics.flag_metrics("live")] == [1]
    # A bad count of a real flag is still refused, naming its path, and nothing is kept.
    toggles = {"made-up": {"yes": 1}, "live": {"yes": -1}}
    error = await api.json("POST", METRICS, 400, token=CLIENT, json=_report(toggles))
    assert error["details"][0]["path"] == "$.bucket.toggles.live.yes"
    await api.usage_written()
    assert [row.yes for row in service.metrics.flag_metrics("live")] == [1]


async def test_buckets_dated_far_from_now_are_answered_as_usual_but_never_stored(
    service: Service, api: Api
) -> None:
    """Unleash stores any date, so a bucket of 2999 outlived retention; flagcore keeps
    buckets from 48 h back to 5 min ahead and drops the rest with the SDK's usual answer
    (an SDK never retries a 2xx), counting them for the operator."""
    service.flags.create_flag("default", "live")
    service.tokens.create_token(
        "web", "frontend", projects=["default"], environment="development", secret=FRONTEND
    )
    toggles = {"live": {"yes": 1, "no": 0, "variants": {"blue": 1}}}
    far = ("2999-01-01T00:00:00Z", "9999-12-31T23:59:59Z", bucket_time(-6), bucket_time(48 * 61))
    for start in far:
        await api.json("POST", METRICS, 202, token=CLIENT, json=_report(toggles, start=start))
        await api.json(
            "POST", FRONTEND_METRICS, 200, token=FRONTEND, json=_report(toggles, start=start)
        )
    await api.usage_written()
    assert service.metrics.flag_metrics("live") == []
    assert _dropped(api, "outside_window") == 2 * len(far)
    await api.json("POST", METRICS, 202, token=CLIENT, json=_report(toggles, start=bucket_time(-4)))
    await api.usage_written()
    assert [row.yes for row in service.metrics.flag_metrics("live")] == [1]


async def test_a_frontend_token_flooding_new_app_names_adds_rows_only_up_to_its_budgets(
    service: Service,
) -> None:
    """The frontend token ships in every browser bundle: each new appName would add a
    row per flag named. Past the hour's budget per (token, address), and per token from
    every address, nothing new is stored; apps already counting go on counting."""
    for index in range(5):
        service.flags.create_flag("default", f"f{index}")
    service.tokens.create_token(
        "web", "frontend", projects=["default"], environment="development", secret=FRONTEND
    )
    toggles = {f"f{index}": {"yes": 1, "variants": {"v" * 200: 1}} for index in range(5)}
    settings = {
        "frontend_metrics_new_rows_per_hour": 12,
        "frontend_metrics_new_rows_per_hour_per_token": 30,
        "trusted_proxies": (ipaddress.ip_network("127.0.0.1"),),
    }
    async with serving(service, **settings) as api:
        await api.json("POST", FRONTEND_METRICS, 200, token=FRONTEND, json=_report(toggles))
        for index in range(20):  # one address, twenty made-up applications
            flood = _report(toggles, app=f"flood-{index}")
            await api.json("POST", FRONTEND_METRICS, 200, token=FRONTEND, json=flood)
        await api.usage_written()
        rows = [row for index in range(5) for row in service.metrics.flag_metrics(f"f{index}")]
        instances = service.instances.client_instances()
        assert len(rows) + len(instances) == 12  # shop's 6 rows, then 6 of the flood's
        for address in range(20):  # other addresses, each with its own new applications
            flood = _report(toggles, app=f"spread-{address}")
            headers = {"X-Forwarded-For": f"10.0.0.{address}"}
            await api.json(
                "POST", FRONTEND_METRICS, 200, token=FRONTEND, json=flood, headers=headers
            )
        await api.usage_written()
        rows = [row for index in range(5) for row in service.metrics.flag_metrics(f"f{index}")]
        assert len(rows) + len(service.instances.client_instances()) == 30
        assert _dropped(api, "row_budget") > 0
        # The first application goes on counting into its rows.
        await api.json("POST", FRONTEND_METRICS, 200, token=FRONTEND, json=_report(toggles))
        await api.usage_written()
        shop = [row.yes for row in service.metrics.flag_metrics("f4") if row.app_name == "shop"]
        assert shop == [2]


async def test_a_client_token_adds_rows_only_up_to_its_budget_per_address(
    service: Service,
) -> None:
    for index in range(3):
        service.flags.create_flag("default", f"f{index}")
    toggles = {f"f{index}": {"yes": 1} for index in range(3)}
    async with serving(service, metrics_new_rows_per_hour=8) as api:
        for index in range(5):
            await api.json(
                "POST", METRICS, 202, token=CLIENT, json=_report(toggles, app=f"a{index}")
            )
        await api.usage_written()
        rows = [row for index in range(3) for row in service.metrics.flag_metrics(f"f{index}")]
        assert len(rows) + len(service.instances.client_instances()) == 8


async def test_frontend_registrations_of_new_apps_stop_at_the_same_row_budget(
    service: Service,
) -> None:
    service.tokens.create_token(
        "web", "frontend", projects=["default"], environment="development", secret=FRONTEND
    )
    register = "/api/frontend/client/register"
    async with serving(service, frontend_metrics_new_rows_per_hour=3) as api:
        for index in range(10):
            body = {"appName": f"app-{index}", "strategies": ["x" * 255] * 100}
            await api.json("POST", register, 200, token=FRONTEND, json=body)
        await api.usage_written()
        assert [i.app_name for i in service.instances.client_instances()] == [
            "app-0",
            "app-1",
            "app-2",
        ]
        # A known instance is still updated.
        known = {"appName": "app-1", "sdkVersion": "unleash-js@3"}
        await api.json("POST", register, 200, token=FRONTEND, json=known)
        await api.usage_written()
        versions = {i.app_name: i.sdk_version for i in service.instances.client_instances()}
        assert versions["app-1"] == "unleash-js@3"
