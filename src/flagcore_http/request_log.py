"""Which requests get a log line of their own, and the summary that counts the rest.

Formatting and writing one line per SDK poll took more than half the throughput of the
path every SDK hits every few seconds (issue 26). So the request log has three levels
(``--access-log``, ``FLAGCORE_ACCESS_LOG``; docs/operations.md):

- ``off``: no request lines, no summary (``--no-access-log`` is this level);
- ``default``: a line for what an operator must see one by one: every write (admin API,
  admin UI, sign-ins, signals), every error and refusal (status 400 or more), and every
  request slower than `SLOW_SECONDS`; routine traffic (reads, and SDK writes of metrics
  and registrations on `SDK_ROUTES`) is only counted, per method, route template, status
  and ``UNLEASH-APPNAME``, and written as one summary line per group every
  `SUMMARY_SECONDS` and at stop;
- ``all``: a line for every request, as before.

Counting a routine request is a few attribute reads and one dictionary increment on the
event loop. The SDK poll's fast path (`flagcore_http.routes.client.with_fast_path`) counts
its own answers, where the route, method and application are already in hand, and answers
with a `CountedResponse`, which the access-log hook passes over at once: the poll then
costs the log one type check (issue 26). the lines themselves are formatted and written off the loop
(`flagcore_http.log_writer`). The summary keeps at most `MAX_SUMMARY_GROUPS` groups per
period: an application name is the client's to choose, so past the bound the further
names share one group (``app_name`` null, ``other_apps`` true).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any, ClassVar

from aiohttp import web

from flagcore_http.logs import (
    ACCESS_LOGGER,
    APP_NAME_HEADER,
    MAX_APP_NAME_LENGTH,
    REQUEST_FIELDS,
    AccessLog,
    flush_logging,
    route_template,
)

__all__ = [
    "ACCESS_LOG_LEVELS",
    "MAX_SUMMARY_GROUPS",
    "REQUEST_LOG",
    "SDK_ROUTES",
    "SLOW_SECONDS",
    "SUMMARY_SECONDS",
    "CountedResponse",
    "RequestLog",
    "RequestSummary",
]

ACCESS_LOG_LEVELS = ("off", "default", "all")
SLOW_SECONDS = 1.0
SUMMARY_SECONDS = 60.0
MAX_SUMMARY_GROUPS = 1000
# Routes SDKs call on their own, every few seconds or every minute: their writes
# (metrics, registrations, Frontend API and OFREP evaluations by POST) are routine too.
SDK_ROUTES = ("/api/client/", "/api/frontend", "/ofrep/")
_READS = frozenset(("GET", "HEAD", "OPTIONS"))
_OTHER_APPS = object()  # the group of every application past the bound

GroupKey = tuple[str, str | None, int, Any]


class CountedResponse(web.Response):
    """An answer its handler has already counted in the summary: at the ``default`` level
    the access-log hook writes nothing for it."""


class RequestSummary:
    """Routine requests counted per (method, route template, status, application)."""

    def __init__(self, clock: Any = time.monotonic) -> None:
        self._clock = clock
        self._counts: dict[GroupKey, int] = {}
        self._since = clock()

    def count(self, method: str, route: str | None, status: int, app: str | None) -> None:
        key: GroupKey = (method, route, status, app)
        counts = self._counts
        try:
            counts[key] += 1
        except KeyError:
            if len(counts) >= MAX_SUMMARY_GROUPS:
                key = (method, route, status, _OTHER_APPS)
                counts[key] = counts.get(key, 0) + 1
            else:
                counts[key] = 1

    def take(self) -> tuple[float, dict[GroupKey, int]]:
        """The seconds since the last take and what was counted in them; starts afresh."""
        now = self._clock()
        seconds, self._since = now - self._since, now
        counts, self._counts = self._counts, {}
        return seconds, counts


class _LeveledAccessLog(AccessLog):
    """`AccessLog` at the ``default`` level: routine requests go to ``summary``."""

    summary: ClassVar[RequestSummary]
    slow_seconds: ClassVar[float]

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        if response.__class__ is CountedResponse:  # counted where it was made
            return
        status = response.status
        if status < 400 and time < self.slow_seconds:
            method = request.method
            route = route_template(request)
            if method in _READS or (route is not None and route.startswith(SDK_ROUTES)):
                app = request.headers.get(APP_NAME_HEADER)
                self.summary.count(
                    method, route, status, app[:MAX_APP_NAME_LENGTH] if app else None
                )
                return
        super().log(request, response, time)


class RequestLog:
    """The request log of one server process at one level: the access-log class and
    logger to give aiohttp's runner, and (``default``) the summary and its timer."""

    def __init__(
        self,
        level: str,
        logger: logging.Logger | None = None,
        *,
        slow_seconds: float = SLOW_SECONDS,
        summary_seconds: float = SUMMARY_SECONDS,
    ) -> None:
        if level not in ACCESS_LOG_LEVELS:
            raise ValueError(f"access log level {level!r}: use one of {ACCESS_LOG_LEVELS}")
        self.level = level
        self.logger = logger or logging.getLogger(ACCESS_LOGGER)
        self.summary: RequestSummary | None = None
        self.summary_seconds = summary_seconds
        self._timer: asyncio.TimerHandle | None = None
        self.access_log_class: type[AccessLog] = AccessLog
        if level == "default":
            counted = self.summary = RequestSummary()
            slow = slow_seconds

            class DefaultAccessLog(_LeveledAccessLog):
                summary = counted
                slow_seconds = slow

            self.access_log_class = DefaultAccessLog

    def routine_summary(self) -> RequestSummary | None:
        """Where a handler counts its own routine answers (then answered as a
        `CountedResponse`); None unless the level is ``default``."""
        return self.summary

    def runner_options(self) -> dict[str, Any]:
        """``access_log_class`` and ``access_log`` for `aiohttp.web.AppRunner`."""
        return {
            "access_log_class": self.access_log_class,
            "access_log": None if self.level == "off" else self.logger,
        }

    def start(self) -> None:
        """Write the summary every ``summary_seconds`` (call on the server's event loop)."""
        if self.summary is not None:
            self.summary.take()  # the first period starts now
            self._schedule()

    def _schedule(self) -> None:
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self.summary_seconds, self._tick)

    def _tick(self) -> None:
        self.write_summary()
        self._schedule()

    def stop(self) -> None:
        """Stop the timer, write what was counted since the last summary, and wait until
        every queued line is written (the server's last words come after them)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.write_summary()
        flush_logging()

    def write_summary(self) -> None:
        """One line per group counted since the last summary (none when nothing was)."""
        if self.summary is None:
            return
        seconds, counts = self.summary.take()
        if not self.logger.isEnabledFor(logging.INFO):
            return
        for (method, route, status, app), requests in counts.items():
            other = app is _OTHER_APPS
            name = None if other else app
            shown = "(other apps)" if other else "-" if name is None else json.dumps(name)
            fields: dict[str, Any] = {
                "kind": "summary",
                "method": method,
                "route": route,
                "status": status,
                "app_name": name,
                "requests": requests,
                "seconds": round(seconds, 3),
            }
            if other:
                fields["other_apps"] = True
            self.logger.info(
                'summary %.0fs "%s %s" %s app=%s requests=%d',
                seconds,
                method,
                route or "-",
                status,
                shown,
                requests,
                extra={REQUEST_FIELDS: fields},
            )


# The app's request log: made with the app (`flagcore_http.app.create_app`) so that the
# fast path can count into its summary; the server gives its runner its options.
REQUEST_LOG = web.AppKey("request_log", RequestLog)
