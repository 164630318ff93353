"""Admin behaviour that must match Unleash, through a real server on 127.0.0.1 over SQLite:
variant order, the last strategy, null fields, tags on create, unknown projects, segments."""

from __future__ import annotations

import json
import re
from typing import Any

from aiohttp import web
from yggdrasil_engine.engine import UnleashEngine

from tests.http.conftest import CLIENT, Api

F = "/api/admin/projects/default/features"
DEV_STRATEGIES = F + "/{name}/environments/development/strategies"
MILLISECONDS_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")

SENT = ["control-a", "Beta", "control_b", "alpha"]
# Node's `SENT.sort((a, b) => a.localeCompare(b))`: the order Unleash stores and serves.
UNLEASH_ORDER = ["alpha", "Beta", "control_b", "control-a"]


async def _client_features(api: Api, **kwargs: Any) -> Any:
    return await api.json("GET", "/api/client/features", token=CLIENT, **kwargs)


def _variants_of(payload: Any, order: list[str]) -> Any:
    """``payload`` with its first strategy's variants put in ``order``."""
    copy = json.loads(json.dumps(payload))
    strategy = copy["features"][0]["strategies"][0]
    by_name = {v["name"]: v for v in strategy["variants"]}
    strategy["variants"] = [by_name[name] for name in order]
    return copy


def _yggdrasil_variants(payload: Any, users: range) -> list[str]:
    engine = UnleashEngine()
    engine.take_state(json.dumps(payload))
    return [engine.check_variant("f", {"userId": str(user)}).variant.name for user in users]


async def test_strategy_variants_are_served_in_unleash_order_so_users_get_the_same_variant(
    api: Api,
) -> None:
    await api.json("POST", F, 201, json={"name": "f"})
    strategy = await api.json(
        "POST",
        DEV_STRATEGIES.format(name="f"),
        json={
            "name": "flexibleRollout",
            "parameters": {"rollout": "100", "stickiness": "userId", "groupId": "f"},
            "variants": [{"name": n, "weight": 0, "weightType": "variable"} for n in SENT],
        },
    )
    assert [v["name"] for v in strategy["variants"]] == UNLEASH_ORDER
    details = await api.json("GET", F + "/f")
    development = next(e for e in details["environments"] if e["name"] == "development")
    assert [v["name"] for v in development["strategies"][0]["variants"]] == UNLEASH_ORDER
    await api.json("POST", F + "/f/environments/development/on")
    served = await _client_features(api)
    assert [v["name"] for v in served["features"][0]["strategies"][0]["variants"]] == UNLEASH_ORDER

    # Yggdrasil, the engine inside Unleash's SDKs, gives every user what Unleash's own
    # payload would give; in the order sent, a good share of users would move.
    users = range(400)
    answers = _yggdrasil_variants(served, users)
    assert answers == _yggdrasil_variants(_variants_of(served, UNLEASH_ORDER), users)
    assert answers != _yggdrasil_variants(_variants_of(served, SENT), users)


async def test_flag_level_variants_are_served_in_unleash_order(api: Api) -> None:
    await api.json("POST", F, 201, json={"name": "f"})
    body = [{"name": n, "weight": 0, "weightType": "variable"} for n in SENT]
    stored = await api.json("PUT", F + "/f/environments/development/variants", json=body)
    assert [v["name"] for v in stored["variants"]] == UNLEASH_ORDER
    read = await api.json("GET", F + "/f/environments/development/variants")
    assert [v["name"] for v in read["variants"]] == UNLEASH_ORDER
    served = await _client_features(api)
    assert [v["name"] for v in served["features"][0]["variants"]] == UNLEASH_ORDER


async def test_deleting_the_last_strategy_disables_the_environment_with_an_event(
    api: Api,
) -> None:
    await api.json("POST", F, 201, json={"name": "f"})
    strategies = DEV_STRATEGIES.format(name="f")
    kept = await api.json("POST", strategies, json={"name": "default"})
    extra = await api.json("POST", strategies, json={"name": "default"})
    await api.json("POST", F + "/f/environments/development/on")

    await api.json("DELETE", f"{strategies}/{extra['id']}")
    assert (await _client_features(api))["features"][0]["enabled"] is True

    await api.json("DELETE", f"{strategies}/{kept['id']}")
    details = await api.json("GET", F + "/f")
    development = next(e for e in details["environments"] if e["name"] == "development")
    assert (development["enabled"], development["strategies"]) == (False, [])
    flag = (await _client_features(api))["features"][0]
    assert (flag["enabled"], flag["strategies"]) == (False, [])
    events = (await api.json("GET", "/api/admin/events?feature=f"))["events"]
    newest = events[0]
    assert (newest["type"], newest["environment"], newest["createdBy"]) == (
        "feature-environment-disabled",
        "development",
        "token:admin",
    )


async def test_a_flag_created_without_a_description_shows_null_everywhere(api: Api) -> None:
    created = await api.json("POST", F, 201, json={"name": "f"})
    assert created["description"] is None
    assert (await api.json("GET", F + "/f"))["description"] is None
    assert (await api.json("GET", F))["features"][0]["description"] is None
    await api.json("POST", F + "/f/environments/development/on")
    for headers in ({}, {"Unleash-Client-Spec": "5.1.0"}):
        served = await _client_features(api, headers=headers)
        assert served["features"][0]["description"] is None
    single = await api.json("GET", "/api/client/features/f", token=CLIENT)
    assert single["description"] is None


async def test_a_flag_created_with_an_unknown_tag_type_is_a_400_and_not_created(
    api: Api,
) -> None:
    body = {
        "name": "f",
        "tags": [{"type": "simple", "value": "web"}, {"type": "team", "value": "core"}],
    }
    refused = await api.json("POST", F, 400, json=body)
    assert refused["name"] == "BadDataError"
    assert '"team"' in refused["message"]
    assert refused["details"] == [{"message": 'unknown tag type "team"', "path": "$.tags[1].type"}]
    await api.json("GET", F + "/f", 404)
    assert (await api.json("GET", F))["features"] == []

    await api.json("POST", "/api/admin/tag-types", 201, json={"name": "team"})
    await api.json("POST", F, 201, json=body)
    tags = (await api.json("GET", "/api/admin/features/f/tags"))["tags"]
    assert sorted((t["type"], t["value"]) for t in tags) == [("simple", "web"), ("team", "core")]


async def test_a_tag_of_the_wrong_type_in_the_create_body_is_a_400_with_its_path(
    api: Api,
) -> None:
    refused = await api.json("POST", F, 400, json={"name": "f", "tags": [{"type": "simple"}]})
    assert refused["details"][0]["path"].startswith("$.tags[0]")
    refused = await api.json("POST", F, 400, json={"name": "f", "tags": "simple:web"})
    assert refused["details"][0]["path"].startswith("$.tags")
    await api.json("GET", F + "/f", 404)


# Every route under a project, with what it needs to get past body checks; the unknown
# project must be what answers.
_STRATEGY = {"name": "default"}
_ACTION_SET = {
    "name": "a",
    "match": {"source": "signal-endpoint", "sourceId": 1, "payload": {}},
    "actions": [],
}
_CR = "/api/admin/projects/{project}/change-requests"
_ON_F = "/api/admin/projects/{project}/features/{name}/environments/{environment}"
_CR_ENV = "/api/admin/projects/{project}/environments/{environment}/change-requests"
_PROJECT_ROUTES: dict[tuple[str, str], Any] = {
    ("GET", "/api/admin/projects/{project}/features"): None,
    ("POST", "/api/admin/projects/{project}/features"): {"name": "g"},
    ("GET", "/api/admin/projects/{project}/features/{name}"): None,
    ("PUT", "/api/admin/projects/{project}/features/{name}"): {"description": "x"},
    ("PATCH", "/api/admin/projects/{project}/features/{name}"): [
        {"op": "replace", "path": "/description", "value": "x"}
    ],
    ("DELETE", "/api/admin/projects/{project}/features/{name}"): None,
    ("POST", "/api/admin/projects/{project}/features/{name}/stale/{state}"): None,
    ("PUT", "/api/admin/projects/{project}/features/{name}/dependencies"): [],
    ("POST", "/api/admin/projects/{project}/features/{name}/environments/{environment}/on"): None,
    ("POST", "/api/admin/projects/{project}/features/{name}/environments/{environment}/off"): None,
    (
        "PUT",
        "/api/admin/projects/{project}/features/{name}/environments/{environment}/variants",
    ): [{"name": "a", "weight": 1000, "weightType": "variable"}],
    (
        "GET",
        "/api/admin/projects/{project}/features/{name}/environments/{environment}/variants",
    ): None,
    (
        "GET",
        "/api/admin/projects/{project}/features/{name}/environments/{environment}/strategies",
    ): None,
    (
        "POST",
        "/api/admin/projects/{project}/features/{name}/environments/{environment}/strategies",
    ): _STRATEGY,
    (
        "POST",
        "/api/admin/projects/{project}/features/{name}/environments/{environment}"
        "/strategies/set-sort-order",
    ): [{"id": "{strategy_id}", "sortOrder": 0}],
    (
        "GET",
        "/api/admin/projects/{project}/features/{name}/environments/{environment}"
        "/strategies/{strategy_id}",
    ): None,
    (
        "PUT",
        "/api/admin/projects/{project}/features/{name}/environments/{environment}"
        "/strategies/{strategy_id}",
    ): _STRATEGY,
    (
        "DELETE",
        "/api/admin/projects/{project}/features/{name}/environments/{environment}"
        "/strategies/{strategy_id}",
    ): None,
    ("PUT", "/api/projects/{id}"): {"name": "x"},
    ("PUT", "/api/admin/projects/{id}"): {"name": "x"},
    ("DELETE", "/api/admin/projects/{id}"): None,
    ("GET", "/api/admin/archive/features/{project}"): None,
    ("GET", "/api/admin/projects/{project}/actions"): None,
    ("POST", "/api/admin/projects/{project}/actions"): _ACTION_SET,
    ("GET", "/api/admin/projects/{project}/actions/config"): None,
    ("GET", "/api/admin/projects/{project}/actions/{id}"): None,
    ("PUT", "/api/admin/projects/{project}/actions/{id}"): _ACTION_SET,
    ("DELETE", "/api/admin/projects/{project}/actions/{id}"): None,
    ("POST", "/api/admin/projects/{project}/actions/{id}/on"): None,
    ("POST", "/api/admin/projects/{project}/actions/{id}/off"): None,
    ("GET", "/api/admin/projects/{project}/actions/{id}/events"): None,
    ("GET", "/api/admin/projects/{project}/access"): None,
    ("POST", "/api/admin/projects/{project}/access"): {"roles": [5], "users": []},
    ("PUT", "/api/admin/projects/{project}/users/{userId}/roles"): {"roles": []},
    ("DELETE", "/api/admin/projects/{project}/users/{userId}/roles"): None,
    ("PUT", "/api/admin/projects/{project}/groups/{groupId}/roles"): {"roles": []},
    ("DELETE", "/api/admin/projects/{project}/groups/{groupId}/roles"): None,
    # Change requests (issue 30).
    ("GET", _CR + "/config"): None,
    ("PUT", _CR_ENV + "/config"): {"changeRequestsEnabled": True, "requiredApprovals": 1},
    ("POST", _CR_ENV): {"feature": "f", "action": "updateEnabled", "payload": {"enabled": True}},
    ("GET", _CR): None,
    ("GET", _CR + "/pending"): None,
    ("GET", _CR + "/pending/{feature}"): None,
    ("GET", _CR + "/count"): None,
    ("GET", _CR + "/actionable"): None,
    ("GET", _CR + "/scheduled"): None,
    ("GET", _CR + "/available-reviewers/{environment}"): None,
    ("GET", _CR + "/{id}"): None,
    ("DELETE", _CR + "/{id}"): None,
    ("PUT", _CR + "/{id}/state"): {"state": "Approved"},
    ("PUT", _CR + "/{id}/title"): {"title": "t"},
    ("POST", _CR + "/{id}/comments"): {"text": "t"},
    ("PUT", _CR + "/{id}/approvers"): {"reviewers": []},
    ("PUT", _CR + "/{id}/changes/{changeId}"): {
        "feature": "f",
        "action": "updateEnabled",
        "payload": {"enabled": True},
    },
    ("DELETE", _CR + "/{id}/changes/{changeId}"): None,
    ("GET", "/api/admin/projects/{project}/features/{name}/lifecycle"): None,
    ("POST", "/api/admin/projects/{project}/features/{name}/lifecycle/complete"): {
        "status": "kept"
    },
    ("POST", "/api/admin/projects/{project}/features/{name}/lifecycle/uncomplete"): None,
    ("GET", "/api/admin/projects/{project}/safe-to-archive"): None,
    # The preview of a change (issue 30).
    ("POST", "/api/admin/projects/{project}/features/{name}/environments/{environment}/preview"): {
        "enabled": False
    },
    ("GET", _CR + "/{id}/preview"): None,
    # Release plans (issue 32).
    ("GET", _ON_F + "/release-plans"): None,
    ("POST", _ON_F + "/release-plans"): {"templateId": "t"},
    ("DELETE", _ON_F + "/release-plans/{plan}"): None,
    ("POST", _ON_F + "/release-plans/{plan}/milestones/{milestone}/start"): None,
    ("PUT", _ON_F + "/progressions/{milestone}"): {
        "targetMilestone": "m2",
        "transitionCondition": {"intervalMinutes": 5},
    },
    ("DELETE", _ON_F + "/progressions/{milestone}"): None,
    ("POST", _ON_F + "/progressions/{plan}/resume"): None,
    ("PUT", _ON_F + "/release-plans/{plan}/safeguards"): {
        "impactMetric": {"metricName": "errors", "aggregationMode": "sum", "timeRange": "hour"},
        "triggerCondition": {"operator": ">", "threshold": 1},
    },
    ("DELETE", _ON_F + "/release-plans/{plan}/safeguards/{safeguard}"): None,
    ("POST", _ON_F + "/impact-metrics"): {
        "impactMetrics": [{"name": "errors", "type": "counter", "samples": [{"value": 1}]}]
    },
    ("GET", _ON_F + "/impact-metrics/{metric}"): None,
}


def _project_scoped_routes(app: web.Application) -> set[tuple[str, str]]:
    found = set()
    for route in app.router.routes():
        info = route.resource.get_info() if route.resource is not None else {}
        path = str(info.get("formatter") or info.get("path") or "")
        scoped = "{project}" in path or path.startswith(
            ("/api/admin/projects/{id}", "/api/projects/")
        )
        if scoped and route.method != "HEAD":
            found.add((route.method, path))
    return found


async def test_every_project_scoped_route_answers_404_for_an_unknown_project(api: Api) -> None:
    await api.json("POST", F, 201, json={"name": "f"})
    strategy = await api.json("POST", DEV_STRATEGIES.format(name="f"), json=_STRATEGY)
    # The walk covers every project-scoped route the server has, so a new one needs a case.
    assert _project_scoped_routes(api.client.app) == set(_PROJECT_ROUTES)  # type: ignore[arg-type]

    values = {
        "project": "no-such-project",
        "id": "no-such-project",
        "name": "f",
        "environment": "development",
        "strategy_id": strategy["id"],
        "state": "on",
        "userId": "1",
        "groupId": "1",
        "changeId": "1",
        "feature": "f",
        "plan": "p",
        "milestone": "m",
        "safeguard": "s",
        "metric": "errors",
    }
    for (method, template), body in _PROJECT_ROUTES.items():
        # An action set's {id} is a number, and the project is still what is unknown.
        numbered = "/actions" in template or "/change-requests/" in template
        path = template.format(**{**values, "id": "1"} if numbered else values)
        if body is not None:
            body = json.loads(json.dumps(body).replace("{strategy_id}", strategy["id"]))
        refused = await api.json(method, path, 404, json=body)
        assert refused["name"] == "NotFoundError", f"{method} {path}"
        assert refused["message"] == 'there is no project "no-such-project"', f"{method} {path}"
        assert refused["details"], f"{method} {path}"

    # Nothing was changed on the way.
    details = await api.json("GET", F + "/f")
    assert details["description"] is None
    assert all(not e["enabled"] for e in details["environments"])
    assert (await api.json("GET", F))["features"][0]["name"] == "f"


async def test_segment_calls_naming_an_unknown_project_are_404s_and_change_nothing(
    api: Api,
) -> None:
    unknown = 'there is no project "no-such-project"'
    body = {"name": "s", "constraints": [], "project": "no-such-project"}
    refused = await api.json("POST", "/api/admin/segments", 404, json=body)
    assert refused["message"] == unknown
    assert (await api.json("GET", "/api/admin/segments"))["segments"] == []

    segment = await api.json("POST", "/api/admin/segments", 201, json={**body, "project": None})
    refused = await api.json("PUT", f"/api/admin/segments/{segment['id']}", 404, json=body)
    assert refused["message"] == unknown
    await api.json("POST", F, 201, json={"name": "f"})
    strategy = await api.json("POST", DEV_STRATEGIES.format(name="f"), json=_STRATEGY)
    link = {
        "projectId": "no-such-project",
        "strategyId": strategy["id"],
        "environmentId": "development",
        "segmentIds": [segment["id"]],
    }
    refused = await api.json("POST", "/api/admin/segments/strategies", 404, json=link)
    assert refused["message"] == unknown
    assert (await api.json("GET", f"/api/admin/segments/{segment['id']}"))["name"] == "s"
    assert (await api.json("GET", f"/api/admin/segments/strategies/{strategy['id']}")) == {
        "segments": []
    }


async def test_segments_carry_creation_and_the_list_carries_usage_counts(api: Api) -> None:
    created = await api.json(
        "POST", "/api/admin/segments", 201, json={"name": "beta", "constraints": []}
    )
    assert MILLISECONDS_UTC.match(created["createdAt"]), created["createdAt"]
    assert (created["createdBy"], created["description"]) == ("token:admin", None)
    assert "project" not in created
    read = await api.json("GET", f"/api/admin/segments/{created['id']}")
    assert read == created
    await api.json("POST", "/api/admin/segments", 201, json={"name": "unused", "constraints": []})

    await api.json("POST", "/api/admin/projects", 201, json={"id": "other", "name": "Other"})
    for project, flag in (("default", "a"), ("default", "b"), ("other", "c")):
        await api.json("POST", f"/api/admin/projects/{project}/features", 201, json={"name": flag})
        await api.json(
            "POST",
            f"/api/admin/projects/{project}/features/{flag}/environments/development/strategies",
            json={"name": "default", "segments": [created["id"]]},
        )
    await api.json("DELETE", "/api/admin/projects/other/features/c", 202)

    listed = {s["name"]: s for s in (await api.json("GET", "/api/admin/segments"))["segments"]}
    assert (listed["beta"]["usedInProjects"], listed["beta"]["usedInFeatures"]) == (1, 2)
    assert (listed["unused"]["usedInProjects"], listed["unused"]["usedInFeatures"]) == (0, 0)
    assert listed["beta"]["createdAt"] == created["createdAt"]

    await api.json(
        "PUT",
        f"/api/admin/segments/{created['id']}",
        204,
        json={"name": "beta-users", "constraints": []},
    )
    renamed = await api.json("GET", f"/api/admin/segments/{created['id']}")
    assert (renamed["name"], renamed["createdAt"], renamed["createdBy"]) == (
        "beta-users",
        created["createdAt"],
        "token:admin",
    )
