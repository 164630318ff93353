"""A flag's lifecycle over HTTP in Unleash 7's shape (issue 32): stages from real SDK
metrics posts per environment, "mark completed" and its undoing, refusals with paths."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import attrs
from aiohttp.test_utils import TestClient, TestServer

from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from flagcore_store_sqlite import SqliteStore
from tests.clock import HandClock as _Clock
from tests.http.conftest import ADMIN, ALL_PROJECTS_CLIENT, CLIENT, Api, bucket_time

FLAG = "/api/admin/projects/default/features/checkout"


def _report(toggles: dict[str, Any]) -> dict[str, Any]:
    return {
        "appName": "shop",
        "instanceId": "i-1",
        "bucket": {"start": bucket_time(), "toggles": toggles},
    }


async def _stages(api: Api) -> list[str]:
    return [stage["stage"] for stage in await api.json("GET", FLAG + "/lifecycle")]


async def test_sdk_metrics_move_a_flag_to_pre_live_then_live(api: Api, service: Service) -> None:
    service.flags.create_flag("default", "checkout")
    (initial,) = await api.json("GET", FLAG + "/lifecycle")
    assert set(initial) == {"stage", "enteredStageAt", "secondsInStage"}
    assert initial["stage"] == "initial"

    await api.json(
        "POST", "/api/client/metrics", 202, token=CLIENT, json=_report({"checkout": {"yes": 1}})
    )
    await api.usage_written()
    assert await _stages(api) == ["initial", "pre-live"]
    await api.json(
        "POST",
        "/api/client/metrics",
        202,
        token=ALL_PROJECTS_CLIENT,
        json=_report({"checkout": {"no": 1}}),
    )
    await api.usage_written()
    assert await _stages(api) == ["initial", "pre-live", "live"]


async def test_each_stage_says_when_it_was_entered_and_how_long_the_flag_spent_there(
    tmp_path: Path,
) -> None:
    def at(hour: int, minute: int = 0) -> dt.datetime:
        return dt.datetime(2026, 3, 2, hour, minute, tzinfo=dt.UTC)

    store = SqliteStore(tmp_path / "clocked.db")
    try:
        clock = _Clock(at(9))
        service = Service(store, clock=clock)
        service.tokens.create_token("admin", "admin", secret=ADMIN)
        service.flags.create_flag("default", "checkout")
        with service.store.transaction() as tx:  # made at 9:00 sharp, as the clock said
            flag = tx.get_flag("checkout")
            assert flag is not None
            tx.save_flag(attrs.evolve(flag, created_at=at(9)))
        clock.now = at(10, 5)
        service.metrics.record_metrics("shop", "i", "development", at(10), {"checkout": {"yes": 1}})
        clock.now = at(12, 5)
        service.metrics.record_metrics("shop", "i", "production", at(12), {"checkout": {"no": 1}})
        clock.now = at(13, 30)
        async with TestClient(
            TestServer(create_app(service, ServerConfig()), host="127.0.0.1")
        ) as client:
            stages = await Api(client).json("GET", FLAG + "/lifecycle")
    finally:
        store.close()
    assert [(s["stage"], s["enteredStageAt"], s["secondsInStage"]) for s in stages] == [
        ("initial", "2026-03-02T09:00:00.000Z", 65 * 60),
        ("pre-live", "2026-03-02T10:05:00.000Z", 2 * 3600),
        ("live", "2026-03-02T12:05:00.000Z", 85 * 60),  # the stage it is in: to now
    ]


async def test_mark_completed_kept_with_its_value_then_uncomplete(
    api: Api, service: Service
) -> None:
    service.flags.create_flag("default", "checkout")
    body = {"status": "kept", "statusValue": "variant-b"}
    assert await api.json("POST", FLAG + "/lifecycle/complete", json=body) is None
    completed = (await api.json("GET", FLAG + "/lifecycle"))[-1]
    assert (completed["stage"], completed["status"], completed["statusValue"]) == (
        "completed",
        "kept",
        "variant-b",
    )
    assert completed["enteredStageAt"].endswith("Z")
    await api.json("POST", FLAG + "/lifecycle/uncomplete")
    assert await _stages(api) == ["initial"]
    types = [event["type"] for event in (await api.json("GET", "/api/admin/events"))["events"]]
    assert types[:2] == ["feature-uncompleted", "feature-completed"]


async def test_archiving_is_the_last_stage(api: Api, service: Service) -> None:
    service.flags.create_flag("default", "checkout")
    service.archive.archive_flag("default", "checkout")
    assert await _stages(api) == ["initial", "archived"]


async def test_a_bad_completion_is_a_400_naming_the_field_and_a_missing_flag_a_404(
    api: Api, service: Service
) -> None:
    service.flags.create_flag("default", "checkout")
    for body, path in (
        ({"status": "maybe"}, "$.status"),
        ({}, "$.status"),
        ({"status": "kept", "statusValue": 5}, "$.statusValue"),
    ):
        answer = await api.json("POST", FLAG + "/lifecycle/complete", 400, json=body)
        assert [d["path"] for d in answer["details"]] == [path], answer
    assert await _stages(api) == ["initial"]
    await api.json("GET", "/api/admin/projects/default/features/nope/lifecycle", 404)
    await api.json(
        "POST",
        "/api/admin/projects/default/features/nope/lifecycle/complete",
        404,
        json={"status": "kept"},
    )
