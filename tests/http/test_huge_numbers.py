"""Numbers too long for Python's int() (over 4,300 digits) in versions and dates: the admin
API refuses them with a path, evaluation answers as Unleash's engine does, and a signal
carrying one still runs every action set of its endpoint (issue 24, broken #9)."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.http.conftest import Api

E = "/api/admin/signal-endpoints"
ACTIONS = "/api/admin/projects/default/actions"
STRATEGIES = "/api/admin/projects/default/features/f/environments/development/strategies"
HUGE_PATCH = "1.0." + "9" * 5000  # beyond u64: no version, in Unleash as here
HUGE_PRE_RELEASE = "1.0.0-1" + "0" * 5000  # a valid version below 1.0.1


def _action_set(name: str, endpoint_id: int, payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "match": {"source": "signal-endpoint", "sourceId": endpoint_id, "payload": payload},
        "actions": [
            {
                "action": "MARK_FEATURE_STALE",
                "sortOrder": 1,
                "executionParams": {"project": "default", "featureName": "f"},
            }
        ],
    }


async def _runs(api: Api, action_set_id: int, count: int) -> list[dict[str, Any]]:
    for _ in range(200):
        body = await api.json("GET", f"{ACTIONS}/{action_set_id}/events")
        if len(body["actionSetEvents"]) >= count:
            break
        await asyncio.sleep(0.05)
    return list(body["actionSetEvents"])


async def test_a_signal_with_a_huge_version_runs_every_action_set_of_its_endpoint(
    api: Api,
) -> None:
    await api.json("POST", "/api/admin/projects/default/features", 201, json={"name": "f"})
    endpoint = await api.json("POST", E, 201, json={"name": "deploys"})
    token = await api.json("POST", f"{E}/{endpoint['id']}/tokens", 201, json={"name": "t"})
    filters = {
        "any": {},
        "older": {"version": {"operator": "SEMVER_LT", "value": "1.0.1"}},
        "newer-build": {"build": {"operator": "SEMVER_GT", "value": "0.0.1"}},
    }
    ids = {}
    for name, payload in filters.items():
        created = await api.json(
            "POST", ACTIONS, 201, json=_action_set(name, endpoint["id"], payload)
        )
        ids[name] = created["id"]
    sent = {"version": HUGE_PRE_RELEASE, "build": HUGE_PATCH}
    response = await api.request(
        "POST", "/api/signal-endpoint/deploys", token=None,
        headers={"Authorization": f"Bearer {token['token']}"}, json=sent,
    )  # fmt: skip
    assert response.status == 202
    for name in ("any", "older"):
        (run,) = await _runs(api, ids[name], 1)
        assert run["state"] == "success"
        assert run["signal"]["payload"] == sent
    # HUGE_PATCH is no version for Unleash's engine either: that filter does not pass.
    assert await _runs(api, ids["newer-build"], 0) == []


async def test_a_huge_version_in_a_constraint_is_refused_with_its_path(api: Api) -> None:
    await api.json("POST", "/api/admin/projects/default/features", 201, json={"name": "f"})
    constraint = {"contextName": "version", "operator": "SEMVER_GT", "value": HUGE_PATCH}
    error = await api.json(
        "POST", STRATEGIES, 400, json={"name": "default", "constraints": [constraint]}
    )
    assert [d["path"] for d in error["details"]] == ["$.constraints[0].value"]
    endpoint = await api.json("POST", E, 201, json={"name": "deploys"})
    payload = {"version": {"operator": "SEMVER_GT", "value": HUGE_PATCH}}
    error = await api.json("POST", ACTIONS, 400, json=_action_set("x", endpoint["id"], payload))
    assert [d["path"] for d in error["details"]] == ["$.match.payload['version'].value"]
    assert await api.json("GET", STRATEGIES) == []
    # A valid version with a long pre-release number is kept as written.
    constraint["value"] = HUGE_PRE_RELEASE
    await api.json("POST", STRATEGIES, 200, json={"name": "default", "constraints": [constraint]})
