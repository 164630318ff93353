"""The server's periodic check (hourly by default) for flags that outlived their type's
lifetime (issue 32): each newly potentially stale flag gets one
``feature-potentially-stale-on`` event, which integrations and the event log show
(`flagcore.service.feature_types`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from aiohttp import web

from flagcore.errors import FlagcoreError
from flagcore_http.keys import CONFIG, SERVICE, WORKER

__all__ = ["stale_announcements"]

_log = logging.getLogger("flagcore.stale")


async def stale_announcements(app: web.Application) -> AsyncIterator[None]:
    """A cleanup context: the check runs every ``stale_check_interval`` seconds (0:
    never), the first one interval after the start, so a start writes nothing."""
    interval = app[CONFIG].stale_check_interval
    if interval <= 0:
        yield
        return
    task = asyncio.create_task(_loop(app, interval))
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def _loop(app: web.Application, interval: float) -> None:
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(interval)
        try:
            announced = await loop.run_in_executor(
                app[WORKER], app[SERVICE].feature_types.announce_potentially_stale
            )
            if announced:
                _log.info("%d flags became potentially stale", len(announced))
        except FlagcoreError as error:  # the store away: tried again at the next check
            _log.warning("could not check for potentially stale flags: %s", error)
