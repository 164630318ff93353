"""A flag's lifecycle over HTTP in Unleash 7's shape (issue 32): stages from real SDK
metrics posts per environment, "mark completed" and its undoing, refusals with paths."""

from __future__ import annotations

from typing import Any

from flagcore.service import Service
from tests.http.conftest import ALL_PROJECTS_CLIENT, CLIENT, Api, bucket_time

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
    assert set(initial) == {"stage", "enteredStageAt"}
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
