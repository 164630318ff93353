"""Release templates and plans over HTTP (issue 32), on the paths Unleash's frontend
calls: templates in its shape with refusals at JSON paths, a plan moving a flag 10% → 50%
→ 100% of users as SDKs see it on ``/api/client/features``, and the server's runner
starting the next milestone on its own, once, across two nodes and after a restart."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from standardwebhooks.webhooks import Webhook

from flagcore.engine import Engine
from flagcore.release_plans import Milestone
from flagcore.service import Service, checked_safeguard
from flagcore_http import ServerConfig, create_app
from flagcore_store_postgres import PostgresStore
from flagcore_store_sqlite import SqliteStore
from tests.cluster.postgres_server import fresh_database
from tests.http.conftest import CLIENT, Api
from tests.http.receiver import receiving

TEMPLATES = "/api/admin/release-plan-templates"
ON_FLAG = "/api/admin/projects/default/features/checkout/environments/development"
PLANS = ON_FLAG + "/release-plans"
USERS = [str(i) for i in range(1000)]


def _rollout(percent: int) -> dict[str, Any]:
    return {
        "name": "flexibleRollout",
        "parameters": {"rollout": str(percent), "stickiness": "userId", "groupId": "checkout"},
        "sortOrder": 0,
    }


def _template(*, minutes: int | None = None) -> dict[str, Any]:
    milestones = []
    for order, percent in enumerate((10, 50, 100)):
        milestone: dict[str, Any] = {
            "name": f"{percent}%",
            "sortOrder": order,
            "strategies": [_rollout(percent)],
        }
        if minutes is not None:
            milestone["transitionCondition"] = {"intervalMinutes": minutes}
        milestones.append(milestone)
    return {"name": "Gradual", "description": "10 → 50 → 100", "milestones": milestones}


async def _on_for(api: Api) -> set[str]:
    payload = await api.json("GET", "/api/client/features", token=CLIENT)
    engine = Engine.from_client_features(payload)
    return {u for u in USERS if engine.is_enabled("checkout", {"userId": u})}


async def test_templates_are_kept_in_unleashs_shape_and_archived_ones_leave_the_list(
    api: Api,
) -> None:
    made = await api.json("POST", TEMPLATES, 201, json=_template(minutes=30))
    assert made["discriminator"] == "template"
    assert [m["name"] for m in made["milestones"]] == ["10%", "50%", "100%"]
    first = made["milestones"][0]
    assert first["transitionCondition"] == {"intervalMinutes": 30}
    assert first["releasePlanDefinitionId"] == made["id"]
    (strategy,) = first["strategies"]
    assert strategy["milestoneId"] == first["id"]
    assert strategy["parameters"]["rollout"] == "10"
    assert await api.json("GET", f"{TEMPLATES}/{made['id']}") == made
    renamed = {**_template(), "name": "Careful"}
    updated = await api.json("PUT", f"{TEMPLATES}/{made['id']}", json=renamed)
    assert updated["name"] == "Careful"
    assert updated["milestones"][0]["transitionCondition"] is None
    await api.json("POST", TEMPLATES, 409, json=renamed)
    await api.json("POST", f"{TEMPLATES}/archive/{made['id']}")
    assert await api.json("GET", TEMPLATES) == []
    await api.json("DELETE", f"{TEMPLATES}/{made['id']}")
    await api.json("GET", f"{TEMPLATES}/{made['id']}", 404)


async def test_a_bad_template_is_a_400_naming_the_field_and_nothing_is_kept(api: Api) -> None:
    bad = _template()
    bad["milestones"][1]["strategies"][0]["parameters"]["rollout"] = "150"
    refused = await api.json("POST", TEMPLATES, 400, json=bad)
    paths = [d["path"] for d in refused["details"]]
    assert paths == ["$.milestones[1].strategies[0].parameters.rollout"]
    bad = _template()
    bad["milestones"][0]["transitionCondition"] = {"intervalMinutes": "soon"}
    refused = await api.json("POST", TEMPLATES, 400, json=bad)
    assert [d["path"] for d in refused["details"]] == [
        "$.milestones[0].transitionCondition.intervalMinutes"
    ]
    assert await api.json("GET", TEMPLATES) == []


async def test_sdks_see_the_rollout_move_10_50_100_for_the_same_users(
    api: Api, service: Service
) -> None:
    service.flags.create_flag("default", "checkout")
    template = await api.json("POST", TEMPLATES, 201, json=_template())
    plan = await api.json("POST", PLANS, json={"templateId": template["id"]})
    assert plan["featureName"] == "checkout"
    assert plan["activeMilestoneId"] is None
    ten, fifty, hundred = (m["id"] for m in plan["milestones"])
    one = f"{PLANS}/{plan['id']}"
    await api.json("POST", f"{one}/milestones/{ten}/start")
    await api.json("POST", ON_FLAG + "/on")
    at_ten = await _on_for(api)
    await api.json("POST", f"{one}/milestones/{fifty}/start")
    at_fifty = await _on_for(api)
    started = await api.json("POST", f"{one}/milestones/{hundred}/start")
    assert started["activeMilestoneId"] == hundred
    at_hundred = await _on_for(api)
    assert 50 < len(at_ten) < 150
    assert 400 < len(at_fifty) < 600
    assert at_ten < at_fifty < at_hundred == set(USERS)
    (listed,) = await api.json("GET", PLANS)
    assert listed["activeMilestoneId"] == hundred
    assert listed["milestones"][2]["startedAt"] is not None
    events = await api.json("GET", "/api/admin/events?feature=checkout")
    types = [e["type"] for e in events["events"]]
    assert types.count("release-plan-milestone-started") == 3
    await api.json("POST", PLANS, 409, json={"templateId": template["id"]})
    await api.json("DELETE", one)
    assert await api.json("GET", PLANS) == []
    strategies = await api.json("GET", ON_FLAG + "/strategies")
    assert strategies == []


async def test_a_progression_is_set_refused_at_its_path_and_removed(
    api: Api, service: Service
) -> None:
    service.flags.create_flag("default", "checkout")
    template = await api.json("POST", TEMPLATES, 201, json=_template())
    plan = await api.json("POST", PLANS, json={"templateId": template["id"]})
    ten, fifty, hundred = (m["id"] for m in plan["milestones"])
    body = {"targetMilestone": hundred, "transitionCondition": {"intervalMinutes": 5}}
    refused = await api.json("PUT", f"{ON_FLAG}/progressions/{ten}", 400, json=body)
    assert [d["path"] for d in refused["details"]] == ["$.targetMilestone"]
    body = {"targetMilestone": fifty, "transitionCondition": {"intervalMinutes": 0}}
    refused = await api.json("PUT", f"{ON_FLAG}/progressions/{ten}", 400, json=body)
    assert [d["path"] for d in refused["details"]] == ["$.transitionCondition.intervalMinutes"]
    body = {"targetMilestone": fifty, "transitionCondition": {"intervalMinutes": 5}}
    changed = await api.json("PUT", f"{ON_FLAG}/progressions/{ten}", json=body)
    assert changed["milestones"][0]["transitionCondition"] == {"intervalMinutes": 5}
    await api.json("DELETE", f"{ON_FLAG}/progressions/{ten}")
    await api.json("DELETE", f"{ON_FLAG}/progressions/{ten}", 404)


async def _active_becomes(client: TestClient[Any, Any], token: str, milestone: str) -> None:
    """The plan once the runner (acting in the background) made ``milestone`` active."""
    for _ in range(300):
        response = await client.get(PLANS, headers={"Authorization": token})
        (plan,) = await response.json()
        if plan["activeMilestoneId"] == milestone:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the plan stayed at {plan['activeMilestoneId']}")


def _started_plan(service: Service) -> tuple[str, list[str], dt.datetime]:
    """A plan on checkout whose first milestone started, each moving on after 10 minutes."""
    service.flags.create_flag("default", "checkout")
    plans = service.release_plans
    steps = [
        Milestone("", f"{p}%", i, (), transition_minutes=10) for i, p in enumerate((10, 50, 100))
    ]
    template = service.release_templates.create_release_plan_template("Gradual", None, steps)
    plan = plans.add_release_plan("default", "checkout", "development", template.id)
    ids = [m.id for m in plan.milestones]
    started = plans.start_release_plan_milestone(
        "default", "checkout", "development", plan.id, ids[0]
    )
    assert started.next_move_at is not None
    return plan.id, ids, started.next_move_at


async def test_a_node_started_after_the_time_moves_the_plan_on_its_own(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "flags.db")
    try:
        _plan, ids, due = _started_plan(Service(store))
    finally:
        store.close()
    reopened = SqliteStore(tmp_path / "flags.db")
    try:
        later = Service(reopened, clock=lambda: due + dt.timedelta(minutes=3))
        secret = later.tokens.create_token("ops", "admin").secret
        config = ServerConfig(schedule_check_interval=0.05)
        async with TestClient(TestServer(create_app(later, config), host="127.0.0.1")) as client:
            await _active_becomes(client, secret, ids[1])
        events = later.events.list_events(limit=50)
        moves = [e for e in events if e.type == "release-plan-milestone-started"]
        assert len(moves) == 2
        assert moves[0].data is not None
        assert moves[0].data["automatic"] is True
        assert moves[0].data["delaySeconds"] == 180
    finally:
        reopened.close()


async def test_two_nodes_over_postgresql_move_a_plan_exactly_once() -> None:
    url = fresh_database()
    stores = [PostgresStore(url), PostgresStore(url)]
    try:
        _plan, ids, due = _started_plan(Service(stores[0]))
        # Both nodes live past the first milestone's 10 minutes, not past the second's.
        nodes = [Service(s, clock=lambda: due + dt.timedelta(minutes=1)) for s in stores]
        secret = nodes[0].tokens.create_token("ops", "admin").secret
        config = ServerConfig(schedule_check_interval=0.05)
        async with (
            TestClient(TestServer(create_app(nodes[0], config), host="127.0.0.1")) as a,
            TestClient(TestServer(create_app(nodes[1], config), host="127.0.0.1")) as b,
        ):
            await _active_becomes(a, secret, ids[1])
            await _active_becomes(b, secret, ids[1])
            await asyncio.sleep(0.5)  # both runners look again: neither moves it twice
        types = [e.type for e in nodes[1].events.list_events(limit=100)]
        assert types.count("release-plan-milestone-started") == 2
    finally:
        for store in stores:
            store.close()


def _impact(name: str, value: float) -> dict[str, Any]:
    return {
        "name": name,
        "help": f"{name} of checkout",
        "type": "counter",
        "samples": [{"labels": {"featureName": "checkout", "appName": "shop"}, "value": value}],
    }


def _report(*metrics: dict[str, Any]) -> dict[str, Any]:
    start = (dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)).isoformat()
    return {
        "appName": "shop",
        "instanceId": "i-1",
        "bucket": {"start": start, "stop": start, "toggles": {"checkout": {"yes": 1, "no": 0}}},
        "impactMetrics": list(metrics),
    }


async def test_sdk_impact_metrics_trip_a_safeguard_that_pauses_the_plan_on_its_own(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "flags.db")
    try:
        service = Service(store)
        _plan, ids, _due = _started_plan(service)
        admin = service.tokens.create_token("ops", "admin").secret
        client_token = service.tokens.create_token("shop", "client", environment="development")
        config = ServerConfig(schedule_check_interval=0.05, integration_allow_list=("127.0.0.1",))
        async with (
            receiving() as receiver,
            TestClient(TestServer(create_app(service, config), host="127.0.0.1")) as client,
        ):
            api = Api(client)
            # A team's webhook, told when a safeguard pauses a plan (issue 31).
            hook = await api.json(
                "POST",
                "/api/admin/addons",
                201,
                token=admin,
                json={
                    "provider": "webhook",
                    "enabled": True,
                    "parameters": {"url": receiver.url},
                    "events": ["release-plan-progressions-paused"],
                },
            )
            (plan,) = await api.json("GET", PLANS, token=admin)
            guard = {
                "impactMetric": {
                    "metricName": "errors",
                    "aggregationMode": "sum",
                    "windowMinutes": 5,
                    "ratioOf": "requests",
                    "labelSelectors": {},
                },
                "triggerCondition": {"operator": ">", "threshold": 0.02},
            }
            guarded = await api.json(
                "PUT", f"{PLANS}/{plan['id']}/safeguards", token=admin, json=guard
            )
            (safeguard,) = guarded["safeguards"]
            assert safeguard["action"] == {"id": plan["id"], "type": "pausePlan"}
            assert safeguard["triggerCondition"] == {"operator": ">", "threshold": 0.02}
            bad = _report({**_impact("errors", 1), "type": "summary"})
            refused = await api.json(
                "POST", "/api/client/metrics", 400, token=client_token.secret, json=bad
            )
            assert [d["path"] for d in refused["details"]] == ["$.impactMetrics[0].type"]
            report = _report(_impact("requests", 200), _impact("errors", 10))
            await api.json(
                "POST", "/api/client/metrics", 202, token=client_token.secret, json=report
            )
            (point,) = await api.json("GET", f"{ON_FLAG}/impact-metrics/errors", token=admin)
            assert (point["value"], point["count"], point["buckets"]) == (10, 1, {})
            await api.json("GET", f"{ON_FLAG}/impact-metrics/errors?minutes=0", 400, token=admin)
            for _ in range(300):
                (shown,) = await api.json("GET", PLANS, token=admin)
                if "pausedReason" in shown:
                    break
                await asyncio.sleep(0.05)
            assert "errors / requests" in shown["pausedReason"]
            assert shown["activeMilestoneId"] == ids[0]
            assert shown["milestones"][0]["pausedAt"] is not None
            triggered = [
                e
                for e in service.events.list_events(limit=50)
                if e.type == "release-plan-progressions-paused"
            ]
            assert len(triggered) == 1
            await receiver.wait_for(lambda got: len(got) == 1)
            (got,) = receiver.received
            sent = Webhook(hook["signingSecret"]).verify(got.body, got.headers)
            assert (sent["type"], sent["featureName"], sent["environment"]) == (
                "release-plan-progressions-paused",
                "checkout",
                "development",
            )
            assert sent["data"]["releasePlanId"] == plan["id"]
            assert sent["data"]["action"] == "pause"
            assert "errors / requests" in sent["data"]["reason"]
            resumed = await api.json(
                "POST", f"{ON_FLAG}/progressions/{plan['id']}/resume", token=admin
            )
            assert "pausedReason" not in resumed  # (the errors still there pause it again)
    finally:
        store.close()


async def test_two_nodes_over_postgresql_pause_a_plan_once_from_metrics_sent_to_one() -> None:
    url = fresh_database()
    stores = [PostgresStore(url), PostgresStore(url)]
    try:
        nodes = [Service(stores[0]), Service(stores[1])]
        plan_id, _ids, _due = _started_plan(nodes[0])
        guard = checked_safeguard("errors", "sum", ">", 0.02, 5, ratio_of="requests")
        nodes[0].release_plans.put_release_plan_safeguard(
            "default", "checkout", "development", plan_id, guard
        )
        admin = nodes[0].tokens.create_token("ops", "admin").secret
        sdk = nodes[0].tokens.create_token("shop", "client", environment="development").secret
        config = ServerConfig(schedule_check_interval=0.05)
        async with (
            TestClient(TestServer(create_app(nodes[0], config), host="127.0.0.1")) as a,
            TestClient(TestServer(create_app(nodes[1], config), host="127.0.0.1")) as b,
        ):
            report = _report(_impact("requests", 100), _impact("errors", 7))
            await Api(a).json("POST", "/api/client/metrics", 202, token=sdk, json=report)
            for _ in range(300):
                (shown,) = await Api(b).json("GET", PLANS, token=admin)
                if "pausedReason" in shown:
                    break
                await asyncio.sleep(0.05)
            assert "was 0.07, above 0.02" in shown["pausedReason"]
            await asyncio.sleep(0.5)  # both runners look again: neither pauses it twice
        types = [e.type for e in nodes[1].events.list_events(limit=100)]
        assert types.count("release-plan-progressions-paused") == 1
    finally:
        for store in stores:
            store.close()


@pytest.mark.parametrize(
    ("metric", "trigger", "path"),
    [
        ({"timeRange": "week"}, {}, "$.impactMetric.timeRange"),
        ({}, {}, "$.impactMetric.timeRange"),
        (
            {"timeRange": "hour", "labelSelectors": {"appName": ["shop"]}},
            {},
            "$.impactMetric.labelSelectors",
        ),
        ({"windowMinutes": 0}, {}, "$.impactMetric.windowMinutes"),
        ({"windowMinutes": 5, "aggregationMode": "median"}, {}, "$.impactMetric.aggregationMode"),
        ({"windowMinutes": 5}, {"operator": ">="}, "$.triggerCondition.operator"),
    ],
)
async def test_a_bad_safeguard_is_a_400_at_its_path_and_the_plan_keeps_none(
    api: Api, service: Service, metric: dict[str, Any], trigger: dict[str, Any], path: str
) -> None:
    service.flags.create_flag("default", "checkout")
    template = await api.json("POST", TEMPLATES, 201, json=_template())
    plan = await api.json("POST", PLANS, json={"templateId": template["id"]})
    body = {
        "impactMetric": {"metricName": "errors", "aggregationMode": "sum", **metric},
        "triggerCondition": {"operator": ">", "threshold": 1, **trigger},
    }
    refused = await api.json("PUT", f"{PLANS}/{plan['id']}/safeguards", 400, json=body)
    assert [d["path"] for d in refused["details"]] == [path]
    (kept,) = await api.json("GET", PLANS)
    assert kept["safeguards"] == []
