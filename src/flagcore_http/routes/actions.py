"""Project action sets in Unleash's shape, their event log, and running them for signals.

A body is Unleash's ``CreateActionsSchema``: ``{name, description, enabled, actorId?,
match: {source: "signal-endpoint", sourceId, payload: {<path>: {operator, values, value?,
inverted?, caseInsensitive?}}}, actions: [{action, sortOrder, executionParams: {project,
featureName, environment}}]}``. flagcore's own actions (``MARK_FEATURE_STALE``) use the
same form.

Running (`schedule_action_sets`): the store worker thread only reads the listening sets
and writes each run; matching a payload against filters (user-supplied patterns over
outside data) runs on another thread, so it can never hold up the store.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from aiohttp import web

from flagcore.entities import Action, ActionKind, ActionSet, Signal
from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.model import Constraint
from flagcore.service import match_action_sets
from flagcore.wire import (
    SIGNAL_ENDPOINT_SOURCE,
    ActionCatalogueEntry,
    ActionParameterAnswer,
    ActionSetAnswer,
    ActionSetEventAnswer,
    ActionSetEventsAnswer,
    ActionSetsAnswer,
    write_answer,
)
from flagcore_http import shapes
from flagcore_http.answering import answered
from flagcore_http.bodies import int_parameter, read_body
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import documented
from flagcore_http.keys import SERVICE, WORKER
from flagcore_http.metrics import METRICS
from flagcore_http.wire import ActionSetBody

__all__ = ["routes", "schedule_action_sets"]

routes = web.RouteTableDef()
_log = logging.getLogger("flagcore_http")
_T = TypeVar("_T")
ACTIONS = "/api/admin/projects/{project}/actions"

# What can follow a created action set (OpenAPI links, for stateful tests).
_CREATED = {"project": "$request.path.project", "id": "$response.body#/id"}


def _action_set(body: ActionSetBody, project: str) -> ActionSet:
    """The body as an action set of ``project`` (id and creation time are the store's)."""
    if body.match.source != SIGNAL_ENDPOINT_SOURCE:
        raise InvalidInput(
            f'match.source must be "{SIGNAL_ENDPOINT_SOURCE}"',
            [ErrorDetail(f'only "{SIGNAL_ENDPOINT_SOURCE}"', "$.match.source")],
        )
    for index, action in enumerate(body.actions):
        named = action.execution_params.project
        if named is not None and named != project:
            raise InvalidInput(
                "an action set only changes flags of its own project",
                [ErrorDetail(f'not "{project}"', f"$.actions[{index}].executionParams.project")],
            )
    filters = tuple(
        Constraint(path, f.operator, f.values, f.value, f.inverted, f.case_insensitive)
        for path, f in body.match.payload.items()
    )
    actions = tuple(
        Action(
            a.action,
            a.execution_params.feature_name,
            a.execution_params.environment,
            a.sort_order,
        )
        for a in body.actions
    )
    return ActionSet(
        0,
        body.name,
        project,
        body.match.source_id,
        actions,
        filters,
        body.enabled,
        body.description,
        actor_id=body.actor_id,
    )


@routes.get(ACTIONS)
@documented({200: ActionSetsAnswer})
async def list_action_sets(request: web.Request) -> web.Response:
    """The project's action sets."""
    sets = await call(
        request, service(request).actions.list_action_sets, request.match_info["project"]
    )
    return answered(ActionSetsAnswer(tuple(map(ActionSetAnswer.of, sets))))


@routes.post(ACTIONS)
@documented(
    {201: ActionSetAnswer},
    body=ActionSetBody,
    errors=(409,),
    links={
        "actions.get_action_set": _CREATED,
        "actions.update_action_set": _CREATED,
        "actions.delete_action_set": _CREATED,
        "actions.enable_action_set": _CREATED,
        "actions.disable_action_set": _CREATED,
        "actions.action_set_events": _CREATED,
    },
)
async def create_action_set(request: web.Request) -> web.Response:
    """Create an action set (201)."""
    project = request.match_info["project"]
    body = await read_body(request, ActionSetBody)
    wanted = _action_set(body, project)
    created = await call(
        request,
        service(request).actions.create_action_set,
        wanted.name,
        project,
        wanted.source,
        wanted.actions,
        filters=wanted.filters,
        enabled=wanted.enabled,
        description=wanted.description,
        actor_id=wanted.actor_id,
        actor=actor(request),
    )
    return answered(ActionSetAnswer.of(created), status=201)


_ACTION_LABELS = {
    ActionKind.TOGGLE_FEATURE_ON: ("Enable flag", "Enables a feature flag in an environment"),
    ActionKind.TOGGLE_FEATURE_OFF: ("Disable flag", "Disables a feature flag in an environment"),
    ActionKind.MARK_FEATURE_STALE: ("Mark flag stale", "Marks a feature flag as stale"),
}


@routes.get(ACTIONS + "/config")
@documented({200: dict[str, ActionCatalogueEntry]})
async def action_catalogue(request: web.Request) -> web.Response:
    """The actions an action set of this project can run, and their parameters."""
    project = request.match_info["project"]
    flags, environments = await call(request, service(request).actions.action_targets, project)
    catalogue: dict[str, Any] = {}
    for kind, (label, description) in _ACTION_LABELS.items():
        parameters = [
            ActionParameterAnswer("project", "Project", "hidden"),
            ActionParameterAnswer("featureName", "Flag", "select", tuple(flags)),
        ]
        if kind.needs_environment:
            parameters.append(
                ActionParameterAnswer("environment", "Environment", "select", tuple(environments))
            )
        entry = ActionCatalogueEntry(label, description, "Feature flags", (), tuple(parameters))
        catalogue[kind.value] = write_answer(entry)
    return web.json_response(catalogue)


@routes.get(ACTIONS + "/{id}")
@documented({200: ActionSetAnswer}, path={"id": shapes.ID})
async def get_action_set(request: web.Request) -> web.Response:
    """One action set."""
    action_set = await call(
        request,
        service(request).actions.get_action_set,
        int_parameter(request, "id"),
        project=request.match_info["project"],
    )
    return answered(ActionSetAnswer.of(action_set))


@routes.put(ACTIONS + "/{id}")
@documented({200: ActionSetAnswer}, body=ActionSetBody, errors=(409,), path={"id": shapes.ID})
async def update_action_set(request: web.Request) -> web.Response:
    """Replace an action set."""
    action_set_id = int_parameter(request, "id")
    body = await read_body(request, ActionSetBody)
    replacement = _action_set(body, request.match_info["project"])
    updated = await call(
        request,
        service(request).actions.update_action_set,
        action_set_id,
        replacement,
        actor=actor(request),
    )
    return answered(ActionSetAnswer.of(updated))


@routes.delete(ACTIONS + "/{id}")
@documented({200: None}, path={"id": shapes.ID})
async def delete_action_set(request: web.Request) -> web.Response:
    """Delete an action set and its event log."""
    await call(
        request,
        service(request).actions.delete_action_set,
        int_parameter(request, "id"),
        project=request.match_info["project"],
        actor=actor(request),
    )
    return web.Response(status=200)


async def _switch(request: web.Request, enabled: bool) -> web.Response:
    await call(
        request,
        service(request).actions.set_action_set_enabled,
        int_parameter(request, "id"),
        enabled,
        project=request.match_info["project"],
        actor=actor(request),
    )
    return web.Response(status=200)


@routes.post(ACTIONS + "/{id}/on")
@documented({200: None}, path={"id": shapes.ID})
async def enable_action_set(request: web.Request) -> web.Response:
    """Enable an action set."""
    return await _switch(request, True)


@routes.post(ACTIONS + "/{id}/off")
@documented({200: None}, path={"id": shapes.ID})
async def disable_action_set(request: web.Request) -> web.Response:
    """Disable an action set."""
    return await _switch(request, False)


def _page(request: web.Request) -> tuple[int, int]:
    limit_raw, offset_raw = request.query.get("limit", "50"), request.query.get("offset", "0")
    if not limit_raw.isdigit() or not 1 <= int(limit_raw) <= 1000 or len(limit_raw) > 4:
        raise InvalidInput(
            "limit is a whole number from 1 to 1000", [ErrorDetail("1 to 1000", "/query/limit")]
        )
    if not offset_raw.isdigit() or len(offset_raw) > 9:
        raise InvalidInput(
            "offset is a whole number from 0", [ErrorDetail("0 or more", "/query/offset")]
        )
    return int(limit_raw), int(offset_raw)


@routes.get(ACTIONS + "/{id}/events")
@documented(
    {200: ActionSetEventsAnswer},
    query=shapes.ACTION_EVENTS_PAGE,
    path={"id": shapes.ID},
)
async def action_set_events(request: web.Request) -> web.Response:
    """The action set's runs, newest first (``limit``, ``offset``)."""
    limit, offset = _page(request)
    runs = await call(
        request,
        service(request).actions.list_action_executions,
        int_parameter(request, "id"),
        project=request.match_info["project"],
        limit=limit,
        offset=offset,
    )
    return answered(ActionSetEventsAnswer(tuple(map(ActionSetEventAnswer.of, runs))))


# --- running action sets for a received signal ---
_RUNNING: set[asyncio.Task[None]] = set()


def schedule_action_sets(app: web.Application, signal: Signal) -> None:
    """Run the action sets ``signal`` matches, after the sender has its answer."""
    task = asyncio.get_running_loop().create_task(_run_action_sets(app, signal))
    _RUNNING.add(task)  # held until done: the loop keeps only weak references to tasks
    task.add_done_callback(_RUNNING.discard)


async def _run_action_sets(app: web.Application, signal: Signal) -> None:
    svc = app[SERVICE]
    try:
        candidates = await _on_store(app, svc.actions.action_sets_listening, signal.endpoint_id)
        if not candidates:
            return
        # User-written filters over outside data: never on the store thread (the loop's
        # default executor); the engine's operators keep the cost linear in the input.
        loop = asyncio.get_running_loop()
        verdicts = await loop.run_in_executor(
            None,
            functools.partial(
                match_action_sets, candidates, signal.payload, source=signal.endpoint_id
            ),
        )
    except Exception:  # a background task has no caller to tell; the failure is logged
        app[METRICS].action_executions.labels("error").inc()
        _log.exception("matching the action sets of signal %s failed", signal.id)
        return
    for action_set, problem in verdicts:  # one set failing never stops the next
        try:
            execution = await _on_store(
                app,
                functools.partial(svc.actions.execute_action_set, filter_problem=problem),
                action_set,
                signal,
            )
        except Exception:
            app[METRICS].action_executions.labels("error").inc()
            _log.exception("action set %s failed on signal %s", action_set.id, signal.id)
            continue
        if execution is not None:  # observe (issue 18 §2): executions by result
            app[METRICS].action_executions.labels(str(execution.state)).inc()


async def _on_store(app: web.Application, fn: Callable[..., _T], *args: Any) -> _T:
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(app[WORKER], functools.partial(fn, *args))
