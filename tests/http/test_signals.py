"""Signal endpoints over HTTP on SQLite: lifecycle, every limit at its edge, concurrency."""

from __future__ import annotations

import asyncio
import io
import itertools
import math
import time

from flagcore.service import Service
from tests.http.conftest import CLIENT, Api

E = "/api/admin/signal-endpoints"


async def _endpoint_with_token(api: Api, name: str) -> tuple[int, str]:
    created = await api.json("POST", E, 201, json={"name": name, "description": "ci"})
    token = await api.json("POST", f"{E}/{created['id']}/tokens", 201, json={"name": "t"})
    return created["id"], token["token"]


async def _send(api: Api, name: str, token: str | None, **kwargs: object) -> int:
    headers = dict(kwargs.pop("headers", {}))  # type: ignore[call-overload]
    if token:
        headers["Authorization"] = f"Bearer {token}"
    response = await api.request(
        "POST", f"/api/signal-endpoint/{name}", token=None, headers=headers, **kwargs
    )
    return response.status


async def test_signal_lifecycle(api: Api) -> None:
    endpoint_id, token = await _endpoint_with_token(api, "deploys")
    listed = await api.json("GET", E)
    assert [e["name"] for e in listed["signalEndpoints"]] == ["deploys"]
    detail = await api.json("GET", f"{E}/{endpoint_id}")
    assert [t["name"] for t in detail["tokens"]] == ["t"]
    assert "token" not in detail["tokens"][0]

    response = await api.request(
        "POST",
        "/api/signal-endpoint/deploys",
        token=None,
        headers={"Authorization": f"Bearer {token}"},
        json={"type": "deploy", "data": {"v": "1.2"}},
    )
    assert response.status == 202
    signal_id = (await response.json())["id"]
    signals = await api.json("GET", f"{E}/{endpoint_id}/signals")
    assert [(s["id"], s["payload"]) for s in signals["signals"]] == [
        (signal_id, {"type": "deploy", "data": {"v": "1.2"}})
    ]
    recent = await api.json("GET", "/api/admin/signals?limit=5")
    assert recent["signals"][0]["id"] == signal_id

    await api.json("PUT", f"{E}/{endpoint_id}", json={"enabled": False})
    assert await _send(api, "deploys", token) == 403
    _other_id, other_token = await _endpoint_with_token(api, "other")
    await api.json("DELETE", f"{E}/{endpoint_id}")
    # The token went with its endpoint: refused as unknown, before the name is looked at.
    assert await _send(api, "deploys", token) == 401
    assert await _send(api, "deploys", other_token) == 404


async def test_signal_auth_and_input_errors_store_nothing(api: Api, service: Service) -> None:
    _first_id, first = await _endpoint_with_token(api, "first")
    _second_id, second = await _endpoint_with_token(api, "second")
    assert await _send(api, "first", None) == 401
    assert await _send(api, "first", "wrong") == 401
    assert await _send(api, "first", second) == 403
    assert await _send(api, "nope", first) == 404
    assert (
        await _send(
            api, "first", first, data=b"{oops", headers={"Content-Type": "application/json"}
        )
        == 400
    )
    assert (
        await _send(api, "first", first, data=b"text", headers={"Content-Type": "text/plain"})
        == 415
    )
    assert await _send(api, "first", CLIENT) == 401
    assert service.signals.list_signals() == []
    assert await _send(api, "first", first) == 202  # no body at all is a valid signal


async def test_payload_limit_at_the_edge(api: Api, service: Service) -> None:
    _id, token = await _endpoint_with_token(api, "edge")
    limit = service.limits.signal_payload_bytes
    exactly = b'"' + b"a" * (limit - 2) + b'"'
    assert len(exactly) == limit
    over = b'"' + b"a" * (limit - 1) + b'"'
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    response = await api.request(
        "POST", "/api/signal-endpoint/edge", token=None, data=over, headers=headers
    )
    assert response.status == 413
    assert (await response.json())["name"] == "ContentTooLarge"
    streamed = await api.request(
        "POST", "/api/signal-endpoint/edge", token=None, data=io.BytesIO(over), headers=headers
    )
    assert streamed.status == 413
    assert service.signals.list_signals() == []
    response = await api.request(
        "POST", "/api/signal-endpoint/edge", token=None, data=exactly, headers=headers
    )
    assert response.status == 202


async def test_endpoint_and_token_limits_at_the_edge(api: Api, service: Service) -> None:
    limit = service.limits.signal_endpoints
    for index in range(limit):
        await api.json("POST", E, 201, json={"name": f"e{index}"})
    refused = await api.json("POST", E, 400, json={"name": "one-too-many"})
    assert refused["name"] == "ExceedsLimitError"
    # One endpoint too many: the detail's JSON path is the whole body.
    assert refused["details"] == [{"message": f"at most {limit} (signal_endpoints)", "path": "$"}]
    assert len((await api.json("GET", E))["signalEndpoints"]) == limit
    endpoint_id = (await api.json("GET", E))["signalEndpoints"][0]["id"]
    for index in range(service.limits.tokens_per_signal_endpoint):
        await api.json("POST", f"{E}/{endpoint_id}/tokens", 201, json={"name": f"t{index}"})
    refused = await api.json("POST", f"{E}/{endpoint_id}/tokens", 400, json={"name": "extra"})
    assert [d["path"] for d in refused["details"]] == ["$"]
    assert "tokens_per_signal_endpoint" in refused["details"][0]["message"]


async def test_concurrent_signals_respect_the_rate_limit_and_lose_nothing(
    api: Api, service: Service
) -> None:
    _id, token = await _endpoint_with_token(api, "busy")
    statuses: list[int] = []
    retry_after: list[str] = []

    async def sender(number: int) -> None:
        for attempt in range(6):
            response = await api.request(
                "POST",
                "/api/signal-endpoint/busy",
                token=None,
                headers={"Authorization": f"Bearer {token}"},
                json={"from": number, "try": attempt},
            )
            statuses.append(response.status)
            if response.status == 429:
                retry_after.append(response.headers["Retry-After"])
            await asyncio.sleep(0.25)

    started = time.monotonic()
    await asyncio.gather(*(sender(n) for n in range(20)))
    elapsed = time.monotonic() - started
    accepted = statuses.count(202)
    assert set(statuses) <= {202, 429}
    # 1 per second: ~1.5 s of sending on a quiet machine, longer on a busy one.
    assert 1 <= accepted <= math.floor(elapsed) + 1
    assert all(value == "1" for value in retry_after)
    stored = service.signals.list_signals(limit=100)
    assert len(stored) == accepted
    times = sorted(s.created_at for s in stored)
    assert all((b - a).total_seconds() >= 1.0 for a, b in itertools.pairwise(times))


async def test_an_action_set_flips_a_flag_that_sdks_then_see(api: Api, service: Service) -> None:
    from flagcore import Engine

    base = "/api/admin/projects/default/features"
    await api.json("POST", base, 201, json={"name": "kill-checkout", "type": "kill-switch"})
    endpoint_id, token = await _endpoint_with_token(api, "alerts")
    created = await api.json(
        "POST",
        "/api/admin/projects/default/actions",
        201,
        json={
            "name": "page",
            "description": "critical pages kill checkout",
            "enabled": True,
            "actorId": 1,
            "match": {
                "source": "signal-endpoint",
                "sourceId": endpoint_id,
                "payload": {"severity": {"operator": "IN", "values": ["critical"]}},
            },
            "actions": [
                {
                    "action": "TOGGLE_FEATURE_ON",
                    "sortOrder": 1,
                    "executionParams": {
                        "project": "default",
                        "featureName": "kill-checkout",
                        "environment": "development",
                    },
                }
            ],
        },
    )
    action_set_id = created["id"]
    assert await _send(api, "alerts", token, json={"severity": "critical"}) == 202

    async def runs() -> list[dict[str, object]]:
        body = await api.json("GET", f"/api/admin/projects/default/actions/{action_set_id}/events")
        return list(body["actionSetEvents"])

    for _ in range(100):
        if await runs():
            break
        await asyncio.sleep(0.05)
    (run,) = await runs()
    assert run["state"] == "success"
    payload = await api.json("GET", "/api/client/features", token=CLIENT)
    assert Engine.from_client_features(payload).is_enabled("kill-checkout", {"userId": "any"})
    events = await api.json("GET", "/api/admin/events?feature=kill-checkout")
    assert "action-set:page" in {e["createdBy"] for e in events["events"]}
    # Validation answers 4xx naming the problem.
    bad = await api.json(
        "POST",
        "/api/admin/projects/default/actions",
        404,
        json={
            "name": "x",
            "match": {"source": "signal-endpoint", "sourceId": 999, "payload": {}},
            "actions": [
                {
                    "action": "MARK_FEATURE_STALE",
                    "sortOrder": 1,
                    "executionParams": {"featureName": "kill-checkout"},
                }
            ],
        },
    )
    assert bad["name"] == "NotFoundError"
    await api.json(
        "POST",
        "/api/admin/projects/default/actions",
        400,
        json={
            "name": "x",
            "match": {"source": "signal-endpoint", "sourceId": endpoint_id, "payload": {}},
            "actions": [
                {"action": "EXPLODE", "sortOrder": 1, "executionParams": {"featureName": "f"}}
            ],
        },
    )
