"""The names a metrics report may count: every flag, active or archived, at one revision.

A report's counts are kept only for flags that exist (`flagcore.service.Metrics`); names
that are not flags are dropped here with one set lookup each, before any of their counts
is read or any store work is queued, so a report of 9,000 made-up names costs about what
a report of the real ones does (docs/security.md, "Metrics and registrations").
"""

from __future__ import annotations

from aiohttp import web

from flagcore_http.calls import call, service
from flagcore_http.keys import CACHE

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


METRIC_NAMES = web.AppKey("metric_names", MetricNames)
