"""Every field the OpenAPI document marks required is required: a body without it is a
400 whose details name its JSON path, and nothing is stored. Walked over every operation
of the document, so a route added later is held to its own contract too; the seed routes
(segments, projects, flags, signal endpoints, SDK registration) each name every field
missing."""

from __future__ import annotations

from typing import Any

import pytest

from flagcore.memory import MemoryStore
from flagcore.model import Strategy
from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from flagcore_http.openapi import document
from tests.http.conftest import ADMIN, CLIENT, Api, personal_token

FRONTEND = "default:development.frontend-secret-for-required-fields"

STRATEGY_SEGMENTS = "/api/admin/segments/strategies"


def _body_schemas() -> list[tuple[str, str, dict[str, Any], bool]]:
    """(method, path, object schema, inside an array) of every JSON body with required keys."""
    spec = document(create_app(Service(MemoryStore()), ServerConfig()))
    components = spec["components"]["schemas"]

    def resolved(schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            schema = components[schema["$ref"].rsplit("/", 1)[-1]]
        return schema

    found = []
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {})
            if "application/json" not in content:
                continue
            schema = resolved(content["application/json"]["schema"])
            in_array = schema.get("type") == "array"
            if in_array:
                schema = resolved(schema["items"])
            if schema.get("required"):
                found.append((method.upper(), path, schema, in_array))
    return found


BODIES = _body_schemas()


def _seeded(service: Service) -> dict[str, str]:
    """Path parameters that name things that exist, so only the body can be wrong."""
    service.flags.create_flag("default", "seeded")
    strategy = service.strategies.add_strategy(
        "default", "seeded", "development", Strategy("default")
    )
    segment = service.segments.create_segment("seg", [])
    endpoint = service.signals.create_signal_endpoint("hook")
    service.tokens.create_token(
        "web", "frontend", projects=["default"], environment="development", secret=FRONTEND
    )
    return {
        "project": "default",
        "name": "seeded",
        "environment": "development",
        "strategy_id": strategy.id or "",
        "id": str(segment.id),
        "endpoint": str(endpoint.id),
        "userId": "1",
        "changeId": "1",
        "template": "no-such-template",
        "plan": "no-such-plan",
        "milestone": "no-such-milestone",
        "groupId": "1",  # the body is read before the group is looked up
    }


def _token(path: str) -> str:
    if path.startswith("/api/client"):
        return CLIENT
    return FRONTEND if path.startswith("/api/frontend") else ADMIN


def _filled(path: str, values: dict[str, str]) -> str:
    if path.startswith("/api/admin/signal-endpoints/{id}"):
        path = path.replace("{id}", values["endpoint"])
    for key, value in values.items():
        path = path.replace("{" + key + "}", value)
    return path


@pytest.mark.parametrize(
    ("method", "path", "schema", "in_array"),
    BODIES,
    ids=[f"{method} {path}" for method, path, _schema, _in in BODIES],
)
async def test_a_body_without_a_documented_required_field_is_a_400_naming_its_path(
    api: Api,
    service: Service,
    method: str,
    path: str,
    schema: dict[str, Any],
    in_array: bool,
) -> None:
    values = _seeded(service)
    token = personal_token(service) if path.startswith("/api/admin/user/tokens") else _token(path)
    revision = service.store.revision()
    body: Any = [{}] if in_array else {}
    prefix = "$[0]" if in_array else "$"
    response = await api.request(method, _filled(path, values), json=body, token=token)
    refused = await response.json()
    assert response.status == 400, refused
    paths = {detail.get("path") for detail in refused["details"]}
    required = {f"{prefix}.{key}" for key in schema["required"]}
    assert paths == required, refused  # every missing field named at once
    assert service.store.revision() == revision


async def test_strategy_segments_without_project_or_environment_is_a_400(api: Api) -> None:
    """Issue 23 §4: was 201 echoing null."""
    body = {"strategyId": "x", "segmentIds": []}
    refused = await api.json("POST", STRATEGY_SEGMENTS, 400, json=body)
    assert {d["path"] for d in refused["details"]} == {"$.projectId", "$.environmentId"}
    body = {**body, "projectId": None, "environmentId": "development"}
    refused = await api.json("POST", STRATEGY_SEGMENTS, 400, json=body)
    assert [d["path"] for d in refused["details"]] == ["$.projectId"]


async def test_strategy_segments_must_name_the_strategys_own_project_and_environment(
    api: Api, service: Service
) -> None:
    values = _seeded(service)
    service.projects.create_project("other", "Other")
    segment = int(values["id"])
    good = {
        "projectId": "default",
        "strategyId": values["strategy_id"],
        "environmentId": "development",
        "segmentIds": [segment],
    }
    for wrong, path in (
        ({"projectId": "other"}, "$.projectId"),
        ({"projectId": "no-such-project"}, "$.projectId"),
        ({"environmentId": "production"}, "$.environmentId"),
        ({"strategyId": "no-such-strategy"}, "$.strategyId"),
    ):
        refused = await api.json("POST", STRATEGY_SEGMENTS, 404, json={**good, **wrong})
        assert [d["path"] for d in refused["details"]] == [path]
    assert service.segments.segments_of_strategy(values["strategy_id"]) == []
    answer = await api.json("POST", STRATEGY_SEGMENTS, 201, json=good)
    assert answer == good
    used = service.segments.segments_of_strategy(values["strategy_id"])
    assert [s.segment.id for s in used] == [segment]
