"""Forms that add to a draft where change requests are on (issue 30): the change made
from what a form posted, added to the person's draft through the API's service method,
and the browser sent to the draft; a refusal's paths moved onto the form's fields."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from aiohttp import web

from flagcore.change_requests import ChangeAction
from flagcore.errors import (
    Conflict,
    ErrorDetail,
    FlagcoreError,
    Forbidden,
    InvalidInput,
    NameConflict,
    NotFound,
)
from flagcore.service import ChangeRequestConfig, DraftChange
from flagcore.wire import write_payload
from flagcore_http.calls import call
from flagcore_http.ui.flash import with_flash
from flagcore_http.ui.pages import redirect, svc, viewer
from flagcore_http.ui.views.change_requests import change_request_url

__all__ = [
    "drafted",
    "drafted_all",
    "drafting_in",
    "flag_draft_environment",
    "on_the_form",
    "segment_draft_target",
    "segment_draft_targets",
]


def drafting_in(config: Iterable[ChangeRequestConfig], environment: str) -> bool:
    """Whether a change to ``environment`` goes to a draft."""
    return any(row.enabled for row in config if row.environment == environment)


def flag_draft_environment(config: Sequence[ChangeRequestConfig]) -> str | None:
    """Where a change to the whole flag (its dependencies) is drafted: as Unleash's UI
    (``getHighestChangeRequestEnv``), the first environment with change requests on of
    type production, else the first with them on; None when they are on nowhere."""
    on = [row for row in config if row.enabled]
    chosen = next((row for row in on if row.type == "production"), on[0] if on else None)
    return chosen.environment if chosen else None


async def drafted(
    request: web.Request,
    project: str,
    environment: str,
    flag: str | None,
    action: ChangeAction,
    value: Any,
) -> web.Response:
    """``value`` (the action's typed payload) added to the viewer's draft there (about
    ``flag``, or None for a segment); the browser goes to the draft."""
    return await drafted_all(request, project, environment, flag, action, [value])


async def drafted_all(
    request: web.Request,
    project: str,
    environment: str,
    flag: str | None,
    action: ChangeAction,
    values: Sequence[Any],
) -> web.Response:
    """One change per value, added to the viewer's draft in one call (all or none)."""
    changes = [
        DraftChange(
            flag, action.value, write_payload(action, value), "$" if len(values) == 1 else f"$[{i}]"
        )
        for i, value in enumerate(values)
    ]
    draft = await call(
        request,
        svc(request).change_requests.add_changes,
        project,
        environment,
        changes,
        actor=viewer(request).actor,
    )
    url = change_request_url(project, draft.id)
    return redirect(with_flash(request, url, "change-drafted", str(draft.id)))


async def segment_draft_target(request: web.Request, segment_id: int) -> tuple[str, str] | None:
    """Where an edit of a segment is drafted: the (project, environment) of an active
    flag's strategy using it where change requests are on (those are what refuse the
    direct edit), an environment of type production first; None when nothing holds the
    segment back."""
    return (await segment_draft_targets(request, [segment_id])).get(segment_id)


async def segment_draft_targets(
    request: web.Request, segment_ids: Sequence[int]
) -> dict[int, tuple[str, str]]:
    """`segment_draft_target` of each segment held back, in one read."""
    service = svc(request)
    return await call(request, service.change_requests.segment_draft_targets, segment_ids)


def on_the_form(error: FlagcoreError, moves: Sequence[tuple[str, str]]) -> FlagcoreError:
    """``error`` with each detail path's first matching prefix replaced (the draft names
    ``$.payload[1].weight``, the form's row is ``$.variants[1].weight``)."""
    if isinstance(error, Forbidden):
        return error  # a refusal stays one (403)
    details = [_moved(d, moves) for d in error.details]
    if type(error) in (InvalidInput, NotFound, Conflict, NameConflict):
        return type(error)(error.message, details)
    return FlagcoreError(error.message, details)


def _moved(detail: ErrorDetail, moves: Sequence[tuple[str, str]]) -> ErrorDetail:
    path = detail.path
    if path is not None:
        for old, new in moves:
            if path == old or path.startswith((old + ".", old + "[")):
                return ErrorDetail(detail.message, new + path[len(old) :])
    return detail
