"""Integrations on Unleash's addons paths: ``/api/admin/addons`` (the list with every
provider, create, read, replace, delete), and flagcore's delivery log of each
(``/api/admin/addons/{id}/deliveries``, a failed one sent again with ``.../resend``).

A URL parameter is checked against the SSRF rules (`flagcore_http.integration_targets`)
after the person's permission and every other rule, before anything is written.
"""

from __future__ import annotations

import attrs
from aiohttp import web

from flagcore.service import IntegrationSpec
from flagcore.wire import AddonAnswer, AddonsAnswer, DeliveriesAnswer, DeliveryAnswer
from flagcore_http import shapes
from flagcore_http.answering import answered
from flagcore_http.bodies import int_parameter, query_int, read_body
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import documented
from flagcore_http.integration_delivery import DELIVERY
from flagcore_http.integration_sending import check_targets, resend_delivery
from flagcore_http.wire import AddonBody

__all__ = ["routes"]

routes = web.RouteTableDef()

ADDONS = "/api/admin/addons"
_ID = {"id": shapes.ID}
_DELIVERY = {"id": shapes.ID, "deliveryId": shapes.ID}


def _spec(body: AddonBody) -> IntegrationSpec:
    return IntegrationSpec(
        body.provider,
        body.enabled,
        dict(body.parameters),
        body.events,
        body.description,
        body.projects,
        body.environments,
    )


@routes.get(ADDONS)
@documented({200: AddonsAnswer})
async def list_addons(request: web.Request) -> web.Response:
    """The integrations (secrets masked) and every provider with its parameters and events."""
    integrations = await call(request, service(request).integrations.list_integrations)
    return answered(AddonsAnswer.of(integrations))


@routes.post(ADDONS)
@documented({201: AddonAnswer}, body=AddonBody, errors=(403,))
async def create_addon(request: web.Request) -> web.Response:
    """The answer is the one place the signing secret (``signingSecret``) is shown."""
    body = await read_body(request, AddonBody)
    parts = service(request).integrations
    checked = await call(request, parts.check_new_integration, _spec(body), actor=actor(request))
    await check_targets(request.app, checked.provider, checked.parameters)
    made = await call(request, parts.create_integration, checked, actor=actor(request))
    request.app[DELIVERY].wake()  # sent from its first event on
    return answered(
        AddonAnswer.of(made, show_secret=True),
        status=201,
        headers={"Location": f"addons/{made.id}"},
    )


@routes.get(ADDONS + "/{id}")
@documented({200: AddonAnswer}, path=_ID)
async def get_addon(request: web.Request) -> web.Response:
    integration_id = int_parameter(request, "id")
    found = await call(request, service(request).integrations.get_integration, integration_id)
    return answered(AddonAnswer.of(found))


@routes.put(ADDONS + "/{id}")
@documented({200: AddonAnswer}, body=AddonBody, path=_ID, errors=(403,))
async def update_addon(request: web.Request) -> web.Response:
    integration_id = int_parameter(request, "id")
    body = await read_body(request, AddonBody)
    parts = service(request).integrations
    checked = await call(
        request, parts.check_integration_change, integration_id, _spec(body), actor=actor(request)
    )
    await check_targets(request.app, checked.provider, checked.parameters)
    updated = await call(
        request,
        parts.update_integration,
        integration_id,
        attrs.evolve(_spec(body), parameters=checked.parameters),
        actor=actor(request),
    )
    request.app[DELIVERY].wake()
    return answered(AddonAnswer.of(updated))


@routes.delete(ADDONS + "/{id}")
@documented({200: None}, path=_ID, errors=(403,))
async def delete_addon(request: web.Request) -> web.Response:
    """With its delivery log; deliveries not yet sent are not sent."""
    await call(
        request,
        service(request).integrations.delete_integration,
        int_parameter(request, "id"),
        actor=actor(request),
    )
    return web.Response(status=200)


@routes.get(ADDONS + "/{id}/deliveries")
@documented({200: DeliveriesAnswer}, path=_ID, query=shapes.SIGNAL_PAGE)
async def list_deliveries(request: web.Request) -> web.Response:
    """Newest first, 50 a page (``limit`` up to 1000); ``before`` an id for older ones."""
    deliveries = await call(
        request,
        service(request).integration_outbox.list_integration_deliveries,
        int_parameter(request, "id"),
        limit=query_int(request, "limit", 50, 1, 1000) or 50,
        before_id=query_int(request, "before", None, 0, 2**63 - 1),
    )
    return answered(DeliveriesAnswer.of(deliveries))


@routes.post(ADDONS + "/{id}/deliveries/{deliveryId}/resend")
@documented({200: DeliveryAnswer}, path=_DELIVERY, errors=(403,))
async def resend(request: web.Request) -> web.Response:
    """Send a logged delivery's event again, once, now (with its original ``webhook-id``);
    the outcome is a new entry of the log, answered here."""
    work = await call(
        request,
        service(request).integration_outbox.delivery_to_resend,
        int_parameter(request, "id"),
        int_parameter(request, "deliveryId"),
        actor=actor(request),
    )
    logged = await resend_delivery(request, work)
    return answered(DeliveryAnswer.of(logged))
