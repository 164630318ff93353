"""Project action sets: react to signals by switching flags; their executions."""

from __future__ import annotations

from typing import Any

import attrs
from aiohttp import web

from flagcore import codec
from flagcore.entities import Action, ActionExecution, ActionKind, ActionSet
from flagcore.model import Constraint
from flagcore_http import render
from flagcore_http.bodies import int_parameter, read_body
from flagcore_http.calls import actor, call, service

__all__ = ["routes"]

routes = web.RouteTableDef()
ACTIONS = "/api/admin/projects/{project}/actions"


@attrs.frozen
class ActionBody:
    action: ActionKind
    feature_name: str
    environment: str | None = None


@attrs.frozen
class ActionSetBody:
    name: str
    source_id: int
    actions: tuple[ActionBody, ...]
    filters: tuple[Constraint, ...] = ()
    enabled: bool = True
    description: str | None = None


codec.register_wire_type(ActionBody, {"feature_name": "featureName"})
codec.register_wire_type(ActionSetBody, {"source_id": "sourceId"})


def _actions(body: ActionSetBody) -> tuple[Action, ...]:
    return tuple(Action(a.action, a.feature_name, a.environment) for a in body.actions)


def _render(value: ActionSet) -> dict[str, Any]:
    return {
        "id": value.id,
        "name": value.name,
        "project": value.project,
        "sourceId": value.source,
        "enabled": value.enabled,
        "description": value.description,
        "filters": codec.converter.unstructure(value.filters),
        "actions": [
            {"action": a.kind.value, "featureName": a.flag, "environment": a.environment}
            for a in value.actions
        ],
        "createdAt": render.time(value.created_at),
    }


def _execution(value: ActionExecution) -> dict[str, Any]:
    return {
        "id": value.id,
        "actionSetId": value.action_set_id,
        "signalId": value.signal_id,
        "state": "success" if value.ok else "failed",
        "createdAt": render.time(value.created_at),
        "actions": [
            {
                "action": o.action.kind.value,
                "featureName": o.action.flag,
                "environment": o.action.environment,
                "state": "success" if o.ok else "failed",
                "error": o.error,
            }
            for o in value.outcomes
        ],
    }


@routes.get(ACTIONS)
async def list_action_sets(request: web.Request) -> web.Response:
    sets = await call(request, service(request).list_action_sets, request.match_info["project"])
    return web.json_response({"actions": [_render(a) for a in sets]})


@routes.post(ACTIONS)
async def create_action_set(request: web.Request) -> web.Response:
    body = await read_body(request, ActionSetBody)
    created = await call(
        request,
        service(request).create_action_set,
        body.name,
        request.match_info["project"],
        body.source_id,
        _actions(body),
        filters=body.filters,
        enabled=body.enabled,
        description=body.description,
        actor=actor(request),
    )
    return web.json_response(_render(created), status=201)


@routes.get(ACTIONS + "/{id}")
async def get_action_set(request: web.Request) -> web.Response:
    action_set = await call(
        request,
        service(request).get_action_set,
        int_parameter(request, "id"),
        project=request.match_info["project"],
    )
    return web.json_response(_render(action_set))


@routes.put(ACTIONS + "/{id}")
async def update_action_set(request: web.Request) -> web.Response:
    body = await read_body(request, ActionSetBody)
    replacement = ActionSet(
        0,  # the id and creation time are the stored action set's
        body.name,
        request.match_info["project"],
        body.source_id,
        _actions(body),
        body.filters,
        body.enabled,
        body.description,
    )
    updated = await call(
        request,
        service(request).update_action_set,
        int_parameter(request, "id"),
        replacement,
        actor=actor(request),
    )
    return web.json_response(_render(updated))


@routes.delete(ACTIONS + "/{id}")
async def delete_action_set(request: web.Request) -> web.Response:
    await call(
        request,
        service(request).delete_action_set,
        int_parameter(request, "id"),
        project=request.match_info["project"],
        actor=actor(request),
    )
    return web.Response(status=200)


@routes.get(ACTIONS + "/{id}/executions")
async def executions(request: web.Request) -> web.Response:
    runs = await call(
        request,
        service(request).list_action_executions,
        int_parameter(request, "id"),
        project=request.match_info["project"],
    )
    return web.json_response({"executions": [_execution(e) for e in runs]})
