"""Signal endpoints: create, enable or disable, their tokens, and the signals they received."""

from __future__ import annotations

from aiohttp import web

from flagcore.errors import FlagcoreError, NotFound
from flagcore_http.calls import call
from flagcore_http.ui.flash import with_flash
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

SIGNALS_SHOWN = 50


def _number(request: web.Request, key: str) -> int:
    raw = request.match_info[key]
    if not raw.isdigit() or len(raw) > 12:
        raise NotFound("There is no such page.")
    return int(raw)


async def _list_page(
    request: web.Request,
    *,
    values: dict[str, str] | None = None,
    error: FlagcoreError | None = None,
) -> web.Response:
    endpoints = await call(request, svc(request).signals.list_signal_endpoints)
    return render(
        request,
        "signals.html",
        {
            "endpoints": endpoints,
            "values": values or {},
            "error": error.message if error else None,
            "errors": field_errors(error) if error else {},
        },
        status=form_status(error),
    )


@routes.get("/ui/signals")
@page()
async def list_endpoints(request: web.Request) -> web.Response:
    return await _list_page(request)


@routes.post("/ui/signals")
@page()
async def create_endpoint(request: web.Request) -> web.Response:
    fields = form(request)
    values = {k: fields.get(k, "") for k in ("name", "description")}
    try:
        created = await call(
            request,
            svc(request).signals.create_signal_endpoint,
            values["name"],
            optional_text(fields, "description"),
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _list_page(request, values=values, error=error)
    return redirect(
        with_flash(request, f"/ui/signals/{created.id}", "endpoint-created", created.name)
    )


@routes.post("/ui/signals/{id}/enabled")
@page()
async def set_enabled(request: web.Request) -> web.Response:
    endpoint = _number(request, "id")
    await call(
        request,
        svc(request).signals.update_signal_endpoint,
        endpoint,
        enabled=form(request).get("enabled") == "true",
        actor=viewer(request).actor,
    )
    return redirect(f"/ui/signals/{endpoint}")


async def _endpoint_page(
    request: web.Request,
    endpoint_id: int,
    *,
    created: object = None,
    token_name: str = "",
    error: FlagcoreError | None = None,
) -> web.Response:
    service = svc(request)
    endpoint = await call(request, service.signals.get_signal_endpoint, endpoint_id)
    return render(
        request,
        "signal_endpoint.html",
        {
            "endpoint": endpoint,
            "tokens": await call(request, service.signals.list_signal_endpoint_tokens, endpoint_id),
            "signals": await call(
                request, service.signals.list_signals, endpoint_id, limit=SIGNALS_SHOWN
            ),
            "created": created,
            "token_name": token_name,  # as typed, after a refusal
            "error": error.message if error else None,
            "errors": field_errors(error) if error else {},
        },
        status=form_status(error),
    )


@routes.get("/ui/signals/{id}")
@page()
async def show_endpoint(request: web.Request) -> web.Response:
    return await _endpoint_page(request, _number(request, "id"))


@routes.post("/ui/signals/{id}/tokens")
@page()
async def create_token(request: web.Request) -> web.Response:
    endpoint = _number(request, "id")
    name = form(request).get("name", "")
    try:
        created = await call(
            request,
            svc(request).signals.create_signal_endpoint_token,
            endpoint,
            name,
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _endpoint_page(request, endpoint, token_name=name, error=error)
    # The secret is on this answer only; the server keeps its digest.
    return await _endpoint_page(request, endpoint, created=created)


@routes.post("/ui/signals/{id}/tokens/{token}/revoke")
@page()
async def revoke_token(request: web.Request) -> web.Response:
    endpoint = _number(request, "id")
    await call(
        request,
        svc(request).signals.delete_signal_endpoint_token,
        endpoint,
        _number(request, "token"),
        actor=viewer(request).actor,
    )
    return redirect(with_flash(request, f"/ui/signals/{endpoint}", "signal-token-revoked"))


@routes.post("/ui/signals/{id}/delete")
@page()
async def delete_endpoint(request: web.Request) -> web.Response:
    """Delete an endpoint with its tokens and the signals it received (the API's DELETE)."""
    endpoint = await call(request, svc(request).signals.get_signal_endpoint, _number(request, "id"))
    await call(
        request,
        svc(request).signals.delete_signal_endpoint,
        endpoint.id,
        actor=viewer(request).actor,
    )
    return redirect(with_flash(request, "/ui/signals", "endpoint-deleted", endpoint.name))
