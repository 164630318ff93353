"""Flag types (issue 32): each with its description and expected lifetime, after which a
flag of the type is "potentially stale"; an admin changes a lifetime here (0 or empty:
never stale), through the service call the admin API's route makes. A refused lifetime
comes back as typed, at its row."""

from __future__ import annotations

import re

from aiohttp import web

from flagcore.errors import ErrorDetail, FlagcoreError, InvalidInput
from flagcore_http.calls import call
from flagcore_http.ui.flash import with_flash
from flagcore_http.ui.pages import form, form_status, page, redirect, render, svc, viewer

__all__ = ["routes"]

routes = web.RouteTableDef()

LIST = "/ui/feature-types"
_DAYS = re.compile(r"[0-9]{1,12}")


async def _list_page(
    request: web.Request,
    *,
    typed: tuple[str, str] | None = None,
    error: FlagcoreError | None = None,
    status: int = 200,
) -> web.Response:
    return render(
        request,
        "feature_types.html",
        {
            "types": await call(request, svc(request).feature_types.list_feature_types),
            "typed": typed,  # (type id, the days as typed) of a refused form
            "error": error.message if error else None,
            "details": [d.message for d in error.details] if error else [],
        },
        status=status,
    )


def _days(text: str) -> int | None:
    """Whole days, empty for "never" (the service takes 0 as never too); anything else
    is refused."""
    stripped = text.strip()
    if not stripped:
        return None
    if not _DAYS.fullmatch(stripped):
        raise InvalidInput(
            "the lifetime is a whole number of days (0 or empty: never potentially stale)",
            [ErrorDetail("a whole number of days", "$.lifetimeDays")],
        )
    return int(stripped)


@routes.get(LIST)
@page()
async def list_feature_types(request: web.Request) -> web.Response:
    return await _list_page(request)


@routes.post(LIST + "/{id}/lifetime")
@page()
async def set_type_lifetime(request: web.Request) -> web.Response:
    type_id = request.match_info["id"]
    typed = form(request).get("lifetimeDays", "")
    try:
        changed = await call(
            request,
            svc(request).feature_types.set_type_lifetime,
            type_id,
            _days(typed),
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _list_page(
            request, typed=(type_id, typed), error=error, status=form_status(error)
        )
    return redirect(with_flash(request, LIST, "feature-type-saved", changed.name))
