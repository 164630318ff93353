"""Release templates (issue 32): the list with each template's milestones, a new template
made of milestone rows (a name, a gradual rollout's percentage, and the minutes before
the next one starts on its own), a template changed on its own page, archive and delete.
Each form posts to the service call the admin API's route makes; a refused form comes back
as typed, the error at its row. A template whose milestones hold more than the rows say
(another strategy, constraints, a stickiness: made through the API) is shown, never
offered in the form, so saving it cannot drop what the form does not show."""

from __future__ import annotations

from aiohttp import web

from flagcore.errors import ErrorDetail, FlagcoreError, InvalidInput, NotFound
from flagcore.model import Strategy
from flagcore.release_plans import Milestone, ReleasePlanTemplate
from flagcore.service import MAX_MILESTONES
from flagcore_http.calls import call
from flagcore_http.ui.forms import optional_text
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

LIST = "/ui/release-templates"
ROWS = 5  # milestone rows the form offers; a row left blank is no milestone
_ROW_FIELDS = ("name", "rollout", "minutes")


def _typed(fields: dict[str, str] | None = None, rows: int = ROWS) -> dict[str, str]:
    blank = {"name": "", "description": ""}
    for i in range(rows):
        for key in _ROW_FIELDS:
            blank[f"milestones-{i}-{key}"] = ""
    return {**blank, **(fields or {})}


async def _list_page(
    request: web.Request,
    *,
    typed: dict[str, str] | None = None,
    error: FlagcoreError | None = None,
    status: int = 200,
) -> web.Response:
    templates = await call(request, svc(request).release_templates.list_release_plan_templates)
    return render(
        request,
        "release_templates.html",
        {
            "templates": templates,
            "values": _typed(typed),
            "rows": range(ROWS),
            "error": error.message if error else None,
            "errors": field_errors(error) if error else {},
        },
        status=status,
    )


def _filled_rows(typed: dict[str, str], rows: int = ROWS) -> list[int]:
    """The rows with anything typed in them: each is a milestone, in row order."""
    return [i for i in range(rows) if any(typed[f"milestones-{i}-{key}"] for key in _ROW_FIELDS)]


def _in_rows(template: ReleasePlanTemplate) -> dict[str, str] | None:
    """The template as the form's rows, or None when a row cannot say all of it."""
    values = {"name": template.name, "description": template.description or ""}
    for i, milestone in enumerate(template.milestones):
        if len(milestone.strategies) != 1:
            return None
        (strategy,) = milestone.strategies
        plain = (
            strategy.name == "flexibleRollout"
            and set(strategy.parameters) <= {"rollout", "stickiness"}
            and strategy.parameters.get("stickiness", "default") == "default"
            and not (strategy.constraints or strategy.segments or strategy.variants)
            and not (strategy.disabled or strategy.title)
        )
        if not plain:
            return None
        minutes = milestone.transition_minutes
        values[f"milestones-{i}-name"] = milestone.name
        values[f"milestones-{i}-rollout"] = strategy.parameters.get("rollout", "")
        values[f"milestones-{i}-minutes"] = "" if minutes is None else str(minutes)
    return values


def _edit_rows(template: ReleasePlanTemplate) -> int:
    """Its milestones and two blank rows, up to the service's limit."""
    return min(MAX_MILESTONES, max(ROWS, len(template.milestones) + 2))


def _milestones(typed: dict[str, str], rows: list[int]) -> list[Milestone]:
    milestones = []
    for index, row in enumerate(rows):
        name, rollout, minutes = (typed[f"milestones-{row}-{key}"] for key in _ROW_FIELDS)
        strategy = Strategy("flexibleRollout", {"rollout": rollout, "stickiness": "default"})
        milestones.append(Milestone("", name, index, (strategy,), _minutes(minutes, index)))
    return milestones


def _at_rows(error: FlagcoreError, rows: list[int]) -> FlagcoreError:
    """``error`` with ``$.milestones[k]`` naming the form's row of milestone ``k`` (blank
    rows are skipped, so the two can differ), and a rollout's path its field."""
    if type(error) not in (InvalidInput, NotFound):
        return error
    details = []
    for detail in error.details:
        path = detail.path or ""
        for index, row in enumerate(rows):
            head = f"$.milestones[{index}]"
            if path.startswith(head):
                rest = path[len(head) :]
                rest = rest.replace(".strategies[0].parameters.rollout", ".rollout")
                rest = rest.replace(".transitionCondition.intervalMinutes", ".minutes")
                path = f"$.milestones[{row}]" + rest
                break
        details.append(ErrorDetail(detail.message, path or None))
    return type(error)(error.message, details)


def _minutes(text: str, index: int) -> int | None:
    if not text.strip():
        return None
    if not text.strip().isdigit():
        path = f"$.milestones[{index}].transitionCondition.intervalMinutes"
        raise InvalidInput(
            "minutes before the next milestone must be a whole number",
            [ErrorDetail("a whole number of minutes", path)],
        )
    return int(text)


@routes.get(LIST)
@page()
async def list_release_templates(request: web.Request) -> web.Response:
    return await _list_page(request)


@routes.post(LIST)
@page()
async def create_release_template(request: web.Request) -> web.Response:
    fields = form(request)
    typed = {key: fields.get(key, "") for key in _typed()}
    rows = _filled_rows(typed)
    try:
        await call(
            request,
            svc(request).release_templates.create_release_plan_template,
            typed["name"],
            optional_text(fields, "description"),
            _milestones(typed, rows),
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        shown = _at_rows(error, rows)
        return await _list_page(request, typed=typed, error=shown, status=form_status(error))
    return redirect(LIST)


@routes.post(LIST + "/{id}/archive")
@page()
async def archive_release_template(request: web.Request) -> web.Response:
    await call(
        request,
        svc(request).release_templates.archive_release_plan_template,
        request.match_info["id"],
        actor=viewer(request).actor,
    )
    return redirect(LIST)


@routes.post(LIST + "/{id}/delete")
@page()
async def delete_release_template(request: web.Request) -> web.Response:
    await call(
        request,
        svc(request).release_templates.delete_release_plan_template,
        request.match_info["id"],
        actor=viewer(request).actor,
    )
    return redirect(LIST)


async def _edit_page(
    request: web.Request,
    template: ReleasePlanTemplate,
    *,
    typed: dict[str, str] | None = None,
    error: FlagcoreError | None = None,
    status: int = 200,
) -> web.Response:
    rows = _edit_rows(template)
    values = typed if typed is not None else _in_rows(template)
    return render(
        request,
        "release_template.html",
        {
            "template": template,
            "values": None if values is None else _typed(values, rows),
            "rows": range(rows),
            "error": error.message if error else None,
            "errors": field_errors(error) if error else {},
        },
        status=status,
    )


@routes.get(LIST + "/{id}")
@page()
async def edit_release_template(request: web.Request) -> web.Response:
    template = await call(
        request, svc(request).release_templates.get_release_plan_template, request.match_info["id"]
    )
    return await _edit_page(request, template)


@routes.post(LIST + "/{id}")
@page()
async def update_release_template(request: web.Request) -> web.Response:
    service = svc(request).release_templates
    template = await call(request, service.get_release_plan_template, request.match_info["id"])
    # The page offers no form for such a template: a stale or forged post (someone not
    # allowed to change templates is refused by the service first, as everywhere).
    if _in_rows(template) is None and viewer(request).may("update_release_plan_template"):
        raise InvalidInput(
            "this template's milestones hold more than the form shows: change it through "
            "the API (PUT /api/admin/release-plan-templates/<id>)",
            [ErrorDetail("not editable in the form", "$.milestones")],
        )
    rows = _edit_rows(template)
    fields = form(request)
    typed = {key: fields.get(key, "") for key in _typed(rows=rows)}
    filled = _filled_rows(typed, rows)
    try:
        await call(
            request,
            service.update_release_plan_template,
            template.id,
            typed["name"],
            optional_text(fields, "description"),
            _milestones(typed, filled),
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        shown = _at_rows(error, filled)
        return await _edit_page(
            request, template, typed=typed, error=shown, status=form_status(error)
        )
    return redirect(LIST)
