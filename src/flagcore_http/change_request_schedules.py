"""The schedule runner (issue 30): every node applies scheduled change requests when
their time comes, and at its start those whose time passed while it was down.

Each tick asks the service which requests are due and applies each in a unit of work of
its own on the store worker; the service reads the state again inside it, and the store
runs write units one at a time across nodes, so a request is applied once however many
nodes run this (`flagcore.service.ChangeRequests.apply_scheduled_change_request`).
"""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from flagcore.errors import FlagcoreError
from flagcore_http.keys import SERVICE, WORKER
from flagcore_http.schedule_ticks import every_schedule_check

__all__ = ["schedule_runner"]

_log = logging.getLogger("flagcore.change_requests")


async def apply_due(app: web.Application) -> None:
    """Apply every request due now; a store outage is logged and retried next tick."""
    loop = asyncio.get_running_loop()
    change_requests = app[SERVICE].change_requests
    try:
        due = await loop.run_in_executor(app[WORKER], change_requests.due_change_requests)
        for project, request_id in due:
            applied = await loop.run_in_executor(
                app[WORKER],
                change_requests.apply_scheduled_change_request,
                project,
                request_id,
            )
            if applied is None:
                _log.info("scheduled change request %s was not applied here", request_id)
    except FlagcoreError as error:
        _log.warning("scheduled change requests could not be applied: %s", error)


schedule_runner = every_schedule_check(apply_due)
