"""Release templates (issue 32): the list with each template's milestones, a new template
made of milestone rows (a name, a gradual rollout's percentage, and the minutes before
the next one starts on its own), archive and delete. Each form posts to the service call
the admin API's route makes; a refused form comes back as typed, the error at its row."""

from __future__ import annotations

from aiohttp import web

from flagcore.errors import ErrorDetail, FlagcoreError, InvalidInput, NotFound
from flagcore.model import Strategy
from flagcore.release_plans import Milestone
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


def _typed(fields: dict[str, str] | None = None) -> dict[str, str]:
    blank = {"name": "", "description": ""}
    for i in range(ROWS):
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


def _filled_rows(typed: dict[str, str]) -> list[int]:
    """The rows with anything typed in them: each is a milestone, in row order."""
    return [i for i in range(ROWS) if any(typed[f"milestones-{i}-{key}"] for key in _ROW_FIELDS)]


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
