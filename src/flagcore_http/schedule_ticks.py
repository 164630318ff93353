"""A background step run at start and then every ``FLAGCORE_SCHEDULE_CHECK_SECONDS``, for
as long as the app lives: the scheduled change requests (issue 30) and the release plans'
progressions (issue 32) each tick on it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from aiohttp import web

from flagcore_http.keys import CONFIG

__all__ = ["every_schedule_check"]

Step = Callable[[web.Application], Awaitable[None]]


def every_schedule_check(step: Step) -> Callable[[web.Application], AsyncIterator[None]]:
    """A cleanup context running ``step`` now and at every schedule check (the step
    catches what it expects; the task ends with the app and its store worker)."""

    async def run(app: web.Application) -> None:
        while True:
            await step(app)
            await asyncio.sleep(app[CONFIG].schedule_check_interval)

    async def lifetime(app: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(run(app))
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    return lifetime
