"""The server's hourly check for flags that outlived their type's lifetime (issue 32):
each newly potentially stale flag gets one ``feature-potentially-stale-on`` event, which
integrations and the event log show (`flagcore.service.feature_types`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from aiohttp import web

from flagcore.errors import FlagcoreError
from flagcore_http.keys import SERVICE, WORKER

__all__ = ["CHECK_SECONDS", "stale_announcements"]

CHECK_SECONDS = 3600.0
_log = logging.getLogger("flagcore.stale")


async def stale_announcements(app: web.Application) -> AsyncIterator[None]:
    """A cleanup context: the check runs once at start, then every `CHECK_SECONDS`."""
    task = asyncio.create_task(_loop(app))
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def _loop(app: web.Application) -> None:
    loop = asyncio.get_running_loop()
    while True:
        try:
            announced = await loop.run_in_executor(
                app[WORKER], app[SERVICE].feature_types.announce_potentially_stale
            )
            if announced:
                _log.info("%d flags became potentially stale", len(announced))
        except FlagcoreError as error:  # the store away: tried again at the next check
            _log.warning("could not check for potentially stale flags: %s", error)
        await asyncio.sleep(CHECK_SECONDS)
