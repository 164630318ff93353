"""A project's action sets: match filters on a signal endpoint, actions, and their runs."""

from __future__ import annotations

import urllib.parse
from typing import Any

from aiohttp import web
from multidict import MultiDict

from flagcore import CONSTRAINT_OPERATORS, MAX_NAME_LENGTH
from flagcore.entities import Action, ActionKind, ActionSet
from flagcore.errors import ErrorDetail, FlagcoreError, InvalidInput, NotFound
from flagcore_http.calls import call
from flagcore_http.ui.flash import with_flash
from flagcore_http.ui.forms import (
    Row,
    checked,
    constraint_rows,
    constraints_from,
    optional_text,
    rows_of_constraints,
)
from flagcore_http.ui.pages import (
    field_errors,
    form,
    form_status,
    page,
    redirect,
    render,
    svc,
    viewer,
)

__all__ = ["routes"]

routes = web.RouteTableDef()

ACTION_KINDS = tuple(kind.value for kind in ActionKind)
BLANK_ACTION: Row = {"kind": ActionKind.TOGGLE_FEATURE_OFF.value, "flag": "", "environment": ""}
_MAX_ACTIONS = 50


def _number(request: web.Request) -> int:
    raw = request.match_info["id"]
    if not raw.isdigit() or len(raw) > 12:
        raise NotFound("There is no such action set.")
    return int(raw)


def _action_rows(fields: MultiDict[str]) -> list[Row]:
    """The action rows as typed; a row left as the form drew it empty is skipped."""
    rows = []
    for index in range(_MAX_ACTIONS):
        if not any(f"actions-{index}-{c}" in fields for c in BLANK_ACTION):
            break
        row = {c: fields.get(f"actions-{index}-{c}", "") for c in BLANK_ACTION}
        if row != BLANK_ACTION:
            rows.append(row)
    return rows


def _actions_from(rows: list[Row]) -> list[Action]:
    actions = []
    for index, row in enumerate(rows):
        if row["kind"] not in ACTION_KINDS:
            raise InvalidInput(
                "unknown action", [ErrorDetail("unknown action", f"$.actions[{index}].action")]
            )
        actions.append(
            Action(
                ActionKind(row["kind"]),
                row["flag"].strip(),
                row["environment"] or None,
                sort_order=index + 1,
            )
        )
    return actions


@routes.get("/ui/actions")
@page()
async def list_action_sets(request: web.Request) -> web.Response:
    project = (request.query.get("project") or "default")[:MAX_NAME_LENGTH]
    service = svc(request)
    await call(request, service.projects.get_project, project)
    return render(
        request,
        "actions.html",
        {
            "project": project,
            "projects": await call(request, service.projects.list_projects),
            "action_sets": await call(request, service.actions.list_action_sets, project),
            "endpoints": {
                e.id: e for e in await call(request, service.signals.list_signal_endpoints)
            },
        },
    )


async def _editor(
    request: web.Request,
    project: str,
    values: dict[str, Any],
    filters: list[Row],
    actions: list[Row],
    *,
    action_set: int | None,
    more: str = "",
    error: FlagcoreError | None = None,
) -> web.Response:
    service = svc(request)
    flags, environments = await call(request, service.actions.action_targets, project)
    return render(
        request,
        "action_set.html",
        {
            "project": project,
            "values": values,
            "filters": filters,
            "actions": actions,
            "action_set_id": action_set,
            "endpoints": await call(request, service.signals.list_signal_endpoints),
            "flags": flags,
            "environments": environments,
            "kinds": ACTION_KINDS,
            "blank_action": BLANK_ACTION,
            "extra_filters": 2 if more == "constraint" else 1,
            "extra_actions": 2 if more == "action" else 1,
            "operators": tuple(CONSTRAINT_OPERATORS),
            "error": error.message if error else None,
            "errors": field_errors(error) if error else {},
            "details": error.details if error else (),
        },
        status=form_status(error),
    )


@routes.get("/ui/actions/new")
@page()
async def new_action_set(request: web.Request) -> web.Response:
    project = (request.query.get("project") or "default")[:MAX_NAME_LENGTH]
    return await _editor(request, project, {"enabled": True}, [], [], action_set=None)


@routes.get("/ui/actions/{id}")
@page()
async def edit_action_set(request: web.Request) -> web.Response:
    found = await call(request, svc(request).actions.get_action_set, _number(request))
    values = {
        "name": found.name,
        "description": found.description or "",
        "source": str(found.source),
        "enabled": found.enabled,
    }
    actions = [
        {"kind": a.kind.value, "flag": a.flag, "environment": a.environment or ""}
        for a in found.actions
    ]
    return await _editor(
        request,
        found.project,
        values,
        rows_of_constraints(found.filters),
        actions,
        action_set=found.id,
    )


async def _save(request: web.Request, action_set: int | None) -> web.Response:
    fields = form(request)
    project = fields.get("project", "")
    values: dict[str, Any] = {k: fields.get(k, "") for k in ("name", "description", "source")}
    values["enabled"] = checked(fields, "enabled")
    filters, actions = constraint_rows(fields, "filters"), _action_rows(fields)
    if fields.get("_more"):  # another empty row, nothing saved yet
        return await _editor(
            request,
            project,
            values,
            filters,
            actions,
            action_set=action_set,
            more=fields.get("_more", ""),
        )
    try:
        source = values["source"]
        if not source.isdigit() or len(source) > 12:
            raise InvalidInput(
                "choose a signal endpoint", [ErrorDetail("choose one", "$.match.sourceId")]
            )
        candidate = ActionSet(
            0,
            values["name"],
            project,
            int(source),
            tuple(_actions_from(actions)),
            tuple(constraints_from(filters, "filters")),
            values["enabled"],
            optional_text(fields, "description"),
        )
        if action_set is None:
            saved = await call(
                request,
                svc(request).actions.create_action_set,
                candidate.name,
                project,
                candidate.source,
                candidate.actions,
                filters=candidate.filters,
                enabled=candidate.enabled,
                description=candidate.description,
                actor=viewer(request).actor,
            )
        else:
            saved = await call(
                request,
                svc(request).actions.update_action_set,
                action_set,
                candidate,
                actor=viewer(request).actor,
            )
    except FlagcoreError as error:
        return await _editor(
            request, project, values, filters, actions, action_set=action_set, error=error
        )
    url = "/ui/actions?" + urllib.parse.urlencode({"project": saved.project})
    return redirect(with_flash(request, url, "action-set-saved", saved.name))


@routes.post("/ui/actions/new")
@page()
async def create_action_set(request: web.Request) -> web.Response:
    return await _save(request, None)


@routes.post("/ui/actions/{id}")
@page()
async def update_action_set(request: web.Request) -> web.Response:
    return await _save(request, _number(request))


@routes.post("/ui/actions/{id}/delete")
@page()
async def delete_action_set(request: web.Request) -> web.Response:
    """Delete an action set with its execution log (the API's DELETE)."""
    found = await call(request, svc(request).actions.get_action_set, _number(request))
    await call(
        request, svc(request).actions.delete_action_set, found.id, actor=viewer(request).actor
    )
    url = "/ui/actions?" + urllib.parse.urlencode({"project": found.project})
    return redirect(with_flash(request, url, "action-set-deleted", found.name))


@routes.get("/ui/actions/{id}/executions")
@page()
async def executions(request: web.Request) -> web.Response:
    service = svc(request)
    action_set = await call(request, service.actions.get_action_set, _number(request))
    runs = await call(request, service.actions.list_action_executions, action_set.id, limit=50)
    return render(request, "executions.html", {"action_set": action_set, "runs": runs})
