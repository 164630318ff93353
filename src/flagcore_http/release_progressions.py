"""The release plan runner (issue 32): every node looks, as often as for scheduled change
requests (`FLAGCORE_SCHEDULE_CHECK_SECONDS`) and once at its start, for plans to move: a
milestone's progression whose time came, or a safeguard that trips.

Each tick asks the service which plans are due (a read) and moves each in a unit of work
of its own on the store worker; the service reads the plan again inside it, and the store
runs write units one at a time across nodes, so a plan moves once however many nodes run
this (`flagcore.service.ReleasePlans.advance_release_plan`).
"""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from flagcore.errors import FlagcoreError
from flagcore_http.keys import SERVICE, WORKER
from flagcore_http.schedule_ticks import every_schedule_check

__all__ = ["advance_due_plans", "release_plan_runner"]

_log = logging.getLogger("flagcore.release_plans")


async def advance_due_plans(app: web.Application) -> None:
    """Move every plan due now; a store outage or a plan that cannot move (its flag's
    strategies refused) is logged and tried again next tick."""
    loop = asyncio.get_running_loop()
    plans = app[SERVICE].release_plans
    try:
        due = await loop.run_in_executor(app[WORKER], plans.due_release_plans)
    except FlagcoreError as error:
        _log.warning("release plans could not be read: %s", error)
        return
    for plan_id in due:
        try:
            await loop.run_in_executor(app[WORKER], plans.advance_release_plan, plan_id)
        except FlagcoreError as error:
            _log.warning("release plan %s could not move: %s", plan_id, error)


release_plan_runner = every_schedule_check(advance_due_plans)
