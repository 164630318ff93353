"""Release plans where change requests are on (issues 30 and 32): a plan added, a
milestone started, a progression and a safeguard set, the pause lifted and the plan
removed, each through a change request on Unleash's change names and payloads, with an
author who cannot approve and an approver, over a real server and SQLite file. Directly,
each is refused with the route to use; a plan changed since a request was drafted is a
conflict that refuses the apply."""

from __future__ import annotations

from typing import Any

import attrs
from aiohttp.test_utils import TestClient

from flagcore.model import Strategy
from flagcore.release_plans import Milestone
from flagcore.service import Service
from flagcore.tables import CHANGE_REQUESTS, RELEASE_PLANS
from tests.http.test_change_requests import (  # noqa: F401 (server: a fixture)
    DRAFTS,
    PROJECT,
    _approved,
    _turn_on,
    person_headers,
    send,
    server,
)

PLANS = PROJECT + "/features/f/environments/production/release-plans"


def _template(service: Service) -> str:
    steps = [
        Milestone(
            "",
            f"{p}%",
            i,
            (Strategy("flexibleRollout", {"rollout": str(p), "stickiness": "default"}),),
            60,
        )
        for i, p in enumerate((10, 50, 100))
    ]
    return service.release_templates.create_release_plan_template("Gradual", None, steps).id


def _rollouts(service: Service) -> list[str]:
    placements = service.strategies.list_strategies("alpha", "f", "production")
    return [s.parameters.get("rollout", "") for s in placements]


async def _applied(
    client: TestClient[Any, Any], ann: dict[str, str], bob: dict[str, str], changes: Any
) -> int:
    request_id = await _approved(client, ann, bob, changes)
    one = f"{PROJECT}/change-requests/{request_id}"
    status, applied = await send(client, "PUT", one + "/state", bob, {"state": "Applied"})
    assert (status, applied["state"]) == (200, "Applied"), applied
    return request_id


async def test_a_release_plan_lives_its_whole_life_through_change_requests(
    server: tuple[Service, TestClient[Any, Any]],  # noqa: F811
) -> None:
    service, client = server
    ann, bob = person_headers(service, client, "Ann"), person_headers(service, client, "Bob")
    template = _template(service)
    await _turn_on(client, ann)

    status, refused = await send(client, "POST", PLANS, ann, {"templateId": template})
    assert status == 403
    assert DRAFTS in refused["message"]

    await _applied(
        client,
        ann,
        bob,
        {"feature": "f", "action": "addReleasePlan", "payload": {"templateId": template}},
    )
    (plan,) = service.release_plans.release_plans_of("alpha", "f", "production")
    first, second, _third = plan.milestones
    assert plan.active_milestone_id is None

    guard = {
        "impactMetric": {"metricName": "errors", "aggregationMode": "sum", "windowMinutes": 5},
        "triggerCondition": {"operator": ">", "threshold": 3},
        "action": {"type": "rollbackPlan"},
    }
    await _applied(
        client,
        ann,
        bob,
        [
            {"feature": "f", "action": "startMilestone", "payload": {"milestoneId": first.id}},
            {
                "feature": "f",
                "action": "changeMilestoneProgression",
                "payload": {
                    "sourceMilestone": first.id,
                    "targetMilestone": second.id,
                    "transitionCondition": {"intervalMinutes": 30},
                },
            },
            {
                "feature": "f",
                "action": "changeReleasePlanSafeguard",
                "payload": {"planId": plan.id, "safeguard": guard, "snapshot": {"ignored": 1}},
            },
        ],
    )
    (plan,) = service.release_plans.release_plans_of("alpha", "f", "production")
    assert plan.active_milestone_id == first.id
    assert _rollouts(service) == ["10"]
    assert plan.milestone(first.id).transition_minutes == 30  # type: ignore[union-attr]
    (safeguard,) = plan.safeguards
    assert (safeguard.metric_name, safeguard.threshold, safeguard.action.value) == (
        "errors",
        3.0,
        "rollbackPlan",
    )

    # Paused (as a tripped safeguard leaves it), then resumed through a request.
    with service.context.unit() as tx:
        tx.save_record(RELEASE_PLANS, attrs.evolve(plan, paused_reason="errors above 3"))
    await _applied(
        client,
        ann,
        bob,
        {"feature": "f", "action": "resumeMilestoneProgression", "payload": {"planId": plan.id}},
    )
    (plan,) = service.release_plans.release_plans_of("alpha", "f", "production")
    assert plan.paused_reason is None
    assert plan.next_move_at is not None

    await _applied(
        client,
        ann,
        bob,
        [
            {
                "feature": "f",
                "action": "deleteReleasePlanSafeguard",
                "payload": {"planId": plan.id, "safeguardId": safeguard.id},
            },
            {
                "feature": "f",
                "action": "deleteMilestoneProgression",
                "payload": {"sourceMilestone": first.id},
            },
            {"feature": "f", "action": "deleteReleasePlan", "payload": {"planId": plan.id}},
        ],
    )
    assert service.release_plans.release_plans_of("alpha", "f", "production") == []
    assert _rollouts(service) == []
    kinds = [e.type for e in service.events.list_events(limit=200) if e.feature_name == "f"]
    for kind in (
        "release-plan-added",
        "release-plan-milestone-started",
        "milestone-progression-changed",
        "release-plan-safeguard-changed",
        "release-plan-progressions-resumed",
        "release-plan-safeguard-deleted",
        "milestone-progression-deleted",
        "release-plan-removed",
    ):
        assert kind in kinds


async def test_a_release_plan_change_that_cannot_apply_is_refused_when_drafted_at_its_path(
    server: tuple[Service, TestClient[Any, Any]],  # noqa: F811
) -> None:
    service, client = server
    ann = person_headers(service, client, "Ann")
    template = _template(service)
    await _turn_on(client, ann)
    status, refused = await send(
        client,
        "POST",
        DRAFTS,
        ann,
        [{"feature": "f", "action": "startMilestone", "payload": {"milestoneId": "nope"}}],
    )
    assert status == 404, refused
    status, refused = await send(
        client,
        "POST",
        DRAFTS,
        ann,
        [
            {"feature": "f", "action": "addReleasePlan", "payload": {"templateId": template}},
            {
                "feature": "f",
                "action": "changeReleasePlanSafeguard",
                "payload": {
                    "planId": "p",
                    "safeguard": {
                        "impactMetric": {"metricName": "errors", "aggregationMode": "sum"},
                        "triggerCondition": {"operator": ">", "threshold": "lots"},
                    },
                },
            },
        ],
    )
    assert status == 400
    assert [d["path"] for d in refused["details"]] == [
        "$[1].payload.safeguard.triggerCondition.threshold"
    ]
    status, refused = await send(
        client,
        "POST",
        DRAFTS,
        ann,
        [{"feature": "f", "action": "addReleasePlan", "payload": {"templateId": "no-such"}}],
    )
    assert status == 404
    assert [d["path"] for d in refused["details"]] == ["$[0].payload.templateId"]
    with service.context.read() as tx:  # nothing drafted, not even an empty draft
        assert list(tx.list_records(CHANGE_REQUESTS)) == []


async def test_a_plan_changed_since_a_request_was_drafted_is_a_conflict(
    server: tuple[Service, TestClient[Any, Any]],  # noqa: F811
) -> None:
    service, client = server
    ann, bob = person_headers(service, client, "Ann"), person_headers(service, client, "Bob")
    template = _template(service)
    await _turn_on(client, ann)
    await _applied(
        client,
        ann,
        bob,
        {"feature": "f", "action": "addReleasePlan", "payload": {"templateId": template}},
    )
    (plan,) = service.release_plans.release_plans_of("alpha", "f", "production")
    first, second, _third = plan.milestones
    waiting = await _approved(
        client,
        ann,
        bob,
        {
            "feature": "f",
            "action": "changeMilestoneProgression",
            "payload": {
                "sourceMilestone": first.id,
                "targetMilestone": second.id,
                "transitionCondition": {"intervalMinutes": 5},
            },
        },
    )
    # Bob's own request, applied first, changes the same plan.
    await _applied(
        client,
        bob,
        ann,
        {"feature": "f", "action": "startMilestone", "payload": {"milestoneId": first.id}},
    )
    one = f"{PROJECT}/change-requests/{waiting}"
    status, shown = await send(client, "GET", one, bob)
    assert "release-plan-milestone-started" in shown["features"][0]["changes"][0]["conflict"]
    status, _refused = await send(client, "PUT", one + "/state", bob, {"state": "Applied"})
    assert status == 409
    (plan,) = service.release_plans.release_plans_of("alpha", "f", "production")
    assert plan.milestone(first.id).transition_minutes == 60  # type: ignore[union-attr]
