"""The names a metrics report may count: every flag, active or archived, at one revision.

A report's counts are kept only for flags that exist (`flagcore.service.Metrics`); names
that are not flags are dropped here with one set lookup each, before any of their counts
is read or any store work is queued, so a report of 9,000 made-up names costs about what
a report of the real ones does (docs/security.md, "Metrics and registrations").
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from flagcore.errors import FlagcoreError
from flagcore_http.calls import call, service
from flagcore_http.keys import CACHE, CONFIG

__all__ = ["METRIC_NAMES", "MetricNames"]


class MetricNames:
    """One set of flag names per store revision, read once (however many reports ask
    together) and read again when the revision moves."""

    def __init__(self) -> None:
        self._revision = -1
        self._names: frozenset[str] | None = None

    async def current(self, request: web.Request) -> frozenset[str]:
        cache = request.app[CACHE]
        revision = cache.current_revision(service(request))
        names = self._names
        if names is None or self._revision != revision:
            read = service(request).metrics.countable_flag_names
            names = await cache.once(("metric-names", revision), lambda: call(request, read))
            if cache.revision == revision:  # tagged with the revision read before loading
                self._names, self._revision = names, revision
        return names

    async def current_or_last(self, request: web.Request) -> frozenset[str] | None:
        """`current`, or while the store cannot answer within ``usage_write_wait`` the
        names last read (None: none yet, the report is not filtered here; the store drops
        what is no flag when the counts are written)."""
        names = self._names
        try:
            revision = request.app[CACHE].current_revision(service(request))
            if names is not None and self._revision == revision:
                return names  # the common case: no task, no wait
            wait = request.app[CONFIG].usage_write_wait
            return await asyncio.wait_for(asyncio.shield(self.current(request)), wait)
        except (FlagcoreError, TimeoutError):
            return self._names


METRIC_NAMES = web.AppKey("metric_names", MetricNames)
