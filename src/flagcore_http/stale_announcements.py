"""The server's periodic check (hourly by default) for flags that outlived their type's
lifetime (issue 32): each newly potentially stale flag gets one
``feature-potentially-stale-on`` event, and once a day (``FLAGCORE_STALE_REMINDER_INTERVAL_
SECONDS``) one node, at its first check past the due time kept in the store, writes a
``feature-potentially-stale-reminder`` per project naming its flags still potentially
stale; integrations and the event log show both (`flagcore.service.feature_types`)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
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
    feature_types = app[SERVICE].feature_types
    reminder = app[CONFIG].stale_reminder_interval
    every = dt.timedelta(seconds=reminder)
    while True:
        await asyncio.sleep(interval)
        try:
            announced = await loop.run_in_executor(
                app[WORKER], feature_types.announce_potentially_stale
            )
            if announced:
                _log.info("%d flags became potentially stale", len(announced))
            if reminder > 0:
                reminded = await loop.run_in_executor(
                    app[WORKER], feature_types.remind_potentially_stale, every
                )
                if reminded:
                    _log.info(
                        "reminded %d projects of their potentially stale flags", len(reminded)
                    )
        except FlagcoreError as error:  # the store away: tried again at the next check
            _log.warning("could not check for potentially stale flags: %s", error)
