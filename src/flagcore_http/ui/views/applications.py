"""The SDK instances that registered or reported metrics, and per application the yes/no
counts its metrics reported for each flag in the last hour."""

from __future__ import annotations

from aiohttp import web

from flagcore_http.calls import call
from flagcore_http.ui.pages import page, render, svc
from flagcore_http.usage_buffer import flush_usage

__all__ = ["routes"]

routes = web.RouteTableDef()


@routes.get("/ui/applications")
@page()
async def applications(request: web.Request) -> web.Response:
    await flush_usage(request.app)  # what SDKs posted to this node is shown at once
    instances = await call(request, svc(request).instances.client_instances)
    instances = sorted(instances, key=lambda i: (i.app_name, i.instance_id))
    last_hour = await call(request, svc(request).metrics.last_hour_by_flag)
    return render(
        request,
        "applications.html",
        {
            "instances": instances,
            "apps": last_hour.by_app(),
            "truncated": last_hour.truncated,
            "bucket_limit": last_hour.bucket_limit,
        },
    )
