"""Integrations: the list, a form per provider, turning one on or off, a test event,
and the delivery log with failed deliveries sent again.

Built on the same service parts and checks as ``/api/admin/addons`` (the SSRF rules
included). A refused form comes back as typed; the signing secret is shown once, on the
page the form leads to, never in an address.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from aiohttp import web

from flagcore.entities import Event, Integration
from flagcore.errors import FlagcoreError, NotFound
from flagcore.service import PROVIDERS, IntegrationSpec
from flagcore_http.calls import call
from flagcore_http.integration_delivery import DELIVERY
from flagcore_http.integration_sending import check_targets, resent, send_once
from flagcore_http.keys import CONFIG
from flagcore_http.ui.flash import with_flash
from flagcore_http.ui.forms import checked, optional_text
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

LIST = "/ui/integrations"
_LOG_SHOWN = 50


def _number(request: web.Request, key: str) -> int:
    raw = request.match_info[key]
    if not raw.isdigit() or len(raw) > 12:
        raise NotFound("There is no such page.")
    return int(raw)


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


@routes.get(LIST)
@page()
async def list_integrations(request: web.Request) -> web.Response:
    integrations = await call(request, svc(request).integrations.list_integrations)
    return render(
        request, "integrations.html", {"integrations": integrations, "providers": PROVIDERS}
    )


def _form_page(
    request: web.Request,
    provider: str,
    values: dict[str, Any],
    error: FlagcoreError | None = None,
) -> web.Response:
    return render(
        request,
        "integration_new.html",
        {
            "provider": PROVIDERS[provider],
            "values": values,
            "error": error.message if error else None,
            "errors": field_errors(error) if error else {},
        },
        status=form_status(error),
    )


@routes.get(LIST + "/new")
@page()
async def new_integration(request: web.Request) -> web.Response:
    provider = request.query.get("provider", "webhook")
    if provider not in PROVIDERS:
        raise NotFound(f"There is no provider {provider[:100]!r}.")
    events = ["feature-created", "feature-environment-enabled", "feature-environment-disabled"]
    return _form_page(request, provider, {"enabled": "on", "events": events})


@routes.post(LIST + "/new")
@page()
async def create_integration(request: web.Request) -> web.Response:
    fields = form(request)
    provider = fields.get("provider", "")
    if provider not in PROVIDERS:
        raise NotFound(f"There is no provider {provider[:100]!r}.")
    definition = PROVIDERS[provider]
    parameters = {
        p.name: fields.get(f"parameters-{p.name}", "").replace("\r\n", "\n")
        for p in definition.parameters
    }
    values: dict[str, Any] = {
        "description": fields.get("description", ""),
        "enabled": fields.get("enabled", ""),
        "parameters": parameters,
        "events": fields.getall("events", []),
        "projects": fields.get("projects", ""),
        "environments": fields.get("environments", ""),
    }
    spec = IntegrationSpec(
        provider,
        checked(fields, "enabled"),
        {k: v for k, v in parameters.items() if v.strip()},
        tuple(values["events"]),
        optional_text(fields, "description"),
        _names(values["projects"]),
        _names(values["environments"]),
    )
    parts = svc(request).integrations
    by = viewer(request).actor
    try:
        spec = await call(request, parts.check_new_integration, spec, actor=by)
        await check_targets(request.app, spec.provider, spec.parameters)
        made = await call(request, parts.create_integration, spec, actor=by)
        request.app[DELIVERY].wake()  # sent from its first event on
    except FlagcoreError as error:
        return _form_page(request, provider, values, error)
    return await _detail(request, made, secret=made.signing_secret, status=201)


async def _detail(
    request: web.Request,
    integration: Integration,
    *,
    secret: str | None = None,
    status: int = 200,
) -> web.Response:
    deliveries = await call(
        request,
        svc(request).integration_outbox.list_integration_deliveries,
        integration.id,
        limit=_LOG_SHOWN,
    )
    return render(
        request,
        "integration.html",
        {
            "integration": integration,
            "provider": PROVIDERS.get(integration.provider),
            "deliveries": deliveries,
            "secret": secret,
        },
        status=status,
    )


@routes.get(LIST + "/{id}")
@page()
async def show_integration(request: web.Request) -> web.Response:
    found = await call(request, svc(request).integrations.get_integration, _number(request, "id"))
    return await _detail(request, found)


@routes.post(LIST + "/{id}/enabled")
@page()
async def set_enabled(request: web.Request) -> web.Response:
    parts = svc(request).integrations
    stored = await call(request, parts.get_integration, _number(request, "id"))
    spec = IntegrationSpec(
        stored.provider,
        form(request).get("enabled") == "on",
        stored.parameters,
        stored.events,
        stored.description,
        stored.projects,
        stored.environments,
    )
    await call(request, parts.update_integration, stored.id, spec, actor=viewer(request).actor)
    request.app[DELIVERY].wake()
    return redirect(
        with_flash(
            request,
            f"{LIST}/{stored.id}",
            "integration-on" if spec.enabled else "integration-off",
            f"#{stored.id}",
        )
    )


@routes.post(LIST + "/{id}/test")
@page()
async def send_test_event(request: web.Request) -> web.Response:
    """One made-up event (``integration-test``, id 0: never logged, never in the event
    log), sent now whatever the integration's filters, to see the receiver answer."""
    parts = svc(request).integrations
    stored = await call(request, parts.get_integration, _number(request, "id"))
    # The person must be one who may change it (a test costs the receiver a request).
    await call(
        request,
        parts.check_integration_change,
        stored.id,
        IntegrationSpec(
            stored.provider,
            stored.enabled,
            stored.parameters,
            stored.events,
            stored.description,
            stored.projects,
            stored.environments,
        ),
        actor=viewer(request).actor,
    )
    event = Event(
        0,
        "integration-test",
        viewer(request).actor.actor,
        dt.datetime.now(dt.UTC),
        data={"message": "A test event from flagcore"},
    )
    attempt = await send_once(stored, event, request.app[CONFIG])
    outcome = ("delivered: " if attempt.delivered else "not delivered: ") + attempt.detail
    return redirect(with_flash(request, f"{LIST}/{stored.id}", "integration-tested", outcome))


@routes.post(LIST + "/{id}/deliveries/{deliveryId}/resend")
@page()
async def resend(request: web.Request) -> web.Response:
    integration_id = _number(request, "id")
    outbox = svc(request).integration_outbox
    work = await call(
        request,
        outbox.delivery_to_resend,
        integration_id,
        _number(request, "deliveryId"),
        actor=viewer(request).actor,
    )
    attempt = await send_once(work.integration, work.event, request.app[CONFIG])
    logged = await call(
        request,
        outbox.record_integration_resend,
        resent(work, attempt),
        actor=viewer(request).actor,
    )
    return redirect(
        with_flash(request, f"{LIST}/{integration_id}", "delivery-resent", logged.state)
    )


@routes.post(LIST + "/{id}/delete")
@page()
async def delete_integration(request: web.Request) -> web.Response:
    parts = svc(request).integrations
    stored = await call(request, parts.get_integration, _number(request, "id"))
    await call(request, parts.delete_integration, stored.id, actor=viewer(request).actor)
    return redirect(with_flash(request, LIST, "integration-deleted", f"#{stored.id}"))
