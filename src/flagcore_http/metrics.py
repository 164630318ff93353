"""Prometheus metrics at ``GET /internal-backstage/prometheus`` (Unleash's path).

Each app has its own `prometheus_client.CollectorRegistry` (never the global default), so
several apps in one process (tests) keep apart. What is counted per request is cheap:
each route's handler is wrapped once (`observed`) with its template
(``/api/admin/projects/{project}``, never the raw path: a hostile client cannot grow the
label set), and `RequestStats` keeps plain numbers per (method, template, status): a dict
lookup, a bisect and two additions; no regular expression, no lock.

What is not per request is read when Prometheus scrapes: connected streaming clients from
the hub, client payload cache lookups from the cache's own counters, and flag counts per
project and environment from the store (on the store worker, kept a few seconds).
"""

from __future__ import annotations

import asyncio
import bisect
import functools
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Executor
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler
from prometheus_client import (
    CollectorRegistry,
    Counter,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from flagcore.errors import FlagcoreError
from flagcore.service import Service
from flagcore_http import shapes
from flagcore_http.client_cache import ClientCache
from flagcore_http.contract import documented
from flagcore_http.logs import REQUEST_ID_HEADER, request_id
from flagcore_http.streaming import StreamingHub
from flagcore_http.usage_buffer import UsageBuffer

__all__ = [
    "CLIENT_CLOSED",
    "METRICS",
    "METRICS_PATH",
    "ServerMetrics",
    "metrics_app",
    "observed",
    "prometheus_handler",
    "recorder",
    "signal_refusal_reason",
    "with_request_id",
]

METRICS_PATH = "/internal-backstage/prometheus"

# Seconds. A 304 answers in well under a millisecond, a cache miss in a few; slow admin
# calls and long polls land in the upper buckets. Twelve buckets keep an observation cheap.
_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)
_BUCKET_LABELS = {bound: repr(bound) for bound in _LATENCY_BUCKETS}  # "le" as Prometheus writes it
_STORE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0)
_RENDER_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)

# Methods a client may invent (any token is a valid method): the rest share one label.
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# nginx's status for "the client closed the connection before the answer": not a 500.
CLIENT_CLOSED = 499
# Flag counts are read from the store at most this often, whatever the scrape interval.
FLAG_COUNT_TTL_S = 5.0
# ...and a scrape waits at most this long for them.
FLAG_COUNT_WAIT_S = 1.0


# flagcore_signals_refused_total's reason for a refusal made without a domain error (an
# answer built by the route, or aiohttp's own), named as the domain error of that status
# is, so one vocabulary covers every refusal: 429 is RateLimited however it was decided.
_SIGNAL_REFUSALS_BY_STATUS = {
    400: "InvalidInput",
    401: "Unauthenticated",
    408: "RequestTimeout",
    413: "LimitExceeded",
    415: "UnsupportedMediaType",
    429: "RateLimited",
}


def signal_refusal_reason(refused: FlagcoreError | web.HTTPException | int) -> str:
    """The ``reason`` label of a refused signal: a domain error's class name
    (``Unauthenticated``, ``InvalidInput``, ``LimitExceeded``, ``RateLimited``, ...), else
    the name its status has in `_SIGNAL_REFUSALS_BY_STATUS`, else ``HTTP`` and the status."""
    if isinstance(refused, FlagcoreError):
        return type(refused).__name__
    status = refused.status if isinstance(refused, web.HTTPException) else refused
    return _SIGNAL_REFUSALS_BY_STATUS.get(status, f"HTTP{status}")


class ServerMetrics:
    """The app's registry and the metrics the server's parts update."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = RequestStats()
        r.register(self.requests)
        self.render_seconds = Histogram(
            "flagcore_client_features_render_seconds",
            "Time to read and render a client features payload on a cache miss "
            "(store call included), once per revision and query.",
            buckets=_RENDER_BUCKETS,
            registry=r,
        )
        self.store_seconds = Histogram(
            "flagcore_store_call_duration_seconds",
            "Time of one call on the store worker thread, by operation.",
            ("operation",),
            buckets=_STORE_BUCKETS,
            registry=r,
        )
        self.store_errors = Counter(
            "flagcore_store_call_errors",
            "Store calls that raised, by operation and error (StorageError: the database "
            "failed; others are refusals such as NotFound).",
            ("operation", "error"),
            registry=r,
        )
        self.signals_received = Counter(
            "flagcore_signals_received",
            "Signals accepted at /api/signal-endpoint/{name}.",
            registry=r,
        )
        self.signals_refused = Counter(
            "flagcore_signals_refused",
            "Signals refused at /api/signal-endpoint/{name}, by reason (the error's name).",
            ("reason",),
            registry=r,
        )
        self.sdk_metrics_dropped = Counter(
            "flagcore_sdk_metrics_dropped",
            "SDK metrics reports (client and frontend) accepted but not wholly kept, by "
            "reason: outside_window (a bucket start too far from now), row_budget (the "
            "token and address may add no more rows this hour; existing rows still count).",
            ("reason",),
            registry=r,
        )
        self.streams_refused = Counter(
            "flagcore_streams_refused",
            "SSE streams refused with 429, by limit (per_token, per_address).",
            ("limit",),
            registry=r,
        )
        self.streams_not_draining = Counter(
            "flagcore_streams_closed_not_draining",
            "SSE streams closed because their client stopped reading.",
            registry=r,
        )
        self.action_executions = Counter(
            "flagcore_action_executions",
            "Action set executions, by result (success, failed, error).",
            ("result",),
            registry=r,
        )
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        GCCollector(registry=r)
        self.flag_counts: FlagCounts | None = None
        self._store_calls: dict[str, Any] = {}

    def observe_store_call(self, operation: str, seconds: float, error: str | None) -> None:
        """Called on the store worker thread (prometheus_client's values are thread-safe)."""
        child = self._store_calls.get(operation)
        if child is None:
            child = self._store_calls.setdefault(operation, self.store_seconds.labels(operation))
        child.observe(seconds)
        if error is not None:
            self.store_errors.labels(operation, error).inc()

    def watch(
        self, service: Service, cache: ClientCache, hub: StreamingHub, worker: Executor
    ) -> None:
        """Read at scrape time: cache counters, streaming clients and flag counts."""
        self.registry.register(_ClientCacheCollector(cache))
        self.registry.register(_StreamingCollector(hub))
        self.flag_counts = FlagCounts(service, worker)
        self.registry.register(self.flag_counts)

    def watch_usage(self, buffer: UsageBuffer) -> None:
        """Read at scrape time: what SDK usage is held while the store is away."""
        self.registry.register(_UsageBufferCollector(buffer))


METRICS = web.AppKey("metrics", ServerMetrics)


def recorder(stats: RequestStats, method: str, route: str) -> Callable[[str, int, float], None]:
    """Counts one route's answers: ``record(method, status, seconds)``.

    A route of one method (all but the catch-all, ``*``) keeps its series by status: one
    small-dict lookup per request instead of building and hashing a key (the 304 path's
    budget). The fast path of SDK polls counts its own answers with one of these.
    """
    if method == "*":
        return lambda used, status, seconds: stats.observe(used, route, status, seconds)
    by_status: dict[int, list[float]] = {}
    bisect_left = bisect.bisect_left
    buckets = _LATENCY_BUCKETS

    def record(_method: str, status: int, seconds: float) -> None:
        series = by_status.get(status)
        if series is None:
            series = by_status[status] = stats.series(method, route, status)
        series[bisect_left(buckets, seconds)] += 1
        series[-1] += seconds

    return record


def observed(handler: Handler, route: str, stats: RequestStats, method: str = "*") -> Handler:
    """``handler``, giving each request its id (``X-Request-Id`` on the answer, unless a
    stream already sent its headers: it sets the id itself) and counting it into ``stats``
    under ``route``, its template.

    A wrapper per route rather than an aiohttp middleware: the template is known here,
    not looked up per request, and any middleware costs every request two more layers
    (ours and aiohttp's current-app one); measured on the 304 path, about half the cost.
    """
    record = recorder(stats, method, route)
    clock = time.perf_counter

    @functools.wraps(handler)
    async def observed_handler(request: web.Request) -> web.StreamResponse:
        # Kept on the answer only: the access log reads it there (`flagcore_http.logs`), and
        # no per-request state is stored on the request (the 304 path's budget).
        rid = request_id(request.headers.get(REQUEST_ID_HEADER))
        started = clock()
        status = 500
        try:
            response = await handler(request)
            status = response.status
            if not response.prepared:
                response.headers[REQUEST_ID_HEADER] = rid
            return response
        except web.HTTPException as answer:  # aiohttp's own answers (redirects, 405)
            status = answer.status
            answer.headers[REQUEST_ID_HEADER] = rid
            raise
        except asyncio.CancelledError:  # the client went away before its answer
            status = CLIENT_CLOSED
            raise
        finally:
            record(request.method, status, clock() - started)

    return observed_handler


def with_request_id(request: web.Request, response: web.StreamResponse) -> None:
    """For a stream, before it sends its headers: the request's id on the answer (`observed`
    cannot add it once the headers are out)."""
    response.headers[REQUEST_ID_HEADER] = request_id(request.headers.get(REQUEST_ID_HEADER))


def _exposition(metrics: ServerMetrics, accept: str) -> web.Response:
    """Prometheus's text format 0.0.4 (what every Prometheus reads), or OpenMetrics when
    the scraper asks for it (prometheus_client's negotiation)."""
    encode, content_type = choose_encoder(accept[:1000])
    return web.Response(body=encode(metrics.registry), headers={"Content-Type": content_type})


@documented({200: shapes.STRING}, media="text/plain")
async def prometheus_handler(request: web.Request) -> web.Response:
    """The text exposition format; unauthenticated (bind it elsewhere: ``--metrics-port``)."""
    metrics = request.app[METRICS]
    if metrics.flag_counts is not None:
        await metrics.flag_counts.refresh()
    return _exposition(metrics, request.headers.get("Accept", ""))


def metrics_app(metrics: ServerMetrics) -> web.Application:
    """The app behind ``--metrics-port``: only the metrics path, over the main app's metrics."""
    app = web.Application()
    app[METRICS] = metrics
    app.router.add_get(METRICS_PATH, prometheus_handler)
    return app


class RequestStats(Collector):
    """Request counts and latency histograms by (method, route template, status), kept as
    plain numbers and turned into metric families at scrape time.

    prometheus_client's own counter and histogram take a lock per update (they may be
    updated from any thread); requests are only ever counted on the event loop's thread,
    so a list of numbers per series does the same work for a fraction of the cost on the
    304 path: a dict lookup, a bisect and two additions.
    """

    def __init__(self) -> None:
        # Per series: observations in each bucket (not cumulative), then above the last
        # bound, then the sum of the seconds.
        self._series: dict[tuple[str, str, int], list[float]] = {}

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        series = self.series(method, route, status)
        series[bisect.bisect_left(_LATENCY_BUCKETS, seconds)] += 1
        series[-1] += seconds

    def series(self, method: str, route: str, status: int) -> list[float]:
        """The numbers of one series (made on first use); `observed` keeps them per status."""
        key = (method if method in _METHODS else "other", route, status)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = [0.0] * (len(_LATENCY_BUCKETS) + 2)
        return series

    def collect(self) -> Iterable[Metric]:
        labels = ("method", "route", "status")
        requests = CounterMetricFamily(
            "flagcore_http_requests",
            "HTTP requests answered, by method, route template and status.",
            labels=labels,
        )
        durations = HistogramMetricFamily(
            "flagcore_http_request_duration_seconds",
            "Time to answer an HTTP request (for a stream: how long it stayed open).",
            labels=labels,
        )
        for (method, route, status), series in sorted(self._series.items()):
            values = (method, route, str(status))
            buckets, seen = [], 0.0
            for bound, count in zip(_LATENCY_BUCKETS, series, strict=False):
                seen += count
                buckets.append((_BUCKET_LABELS[bound], seen))
            total = seen + series[-2]
            buckets.append(("+Inf", total))
            requests.add_metric(values, total)
            durations.add_metric(values, buckets, sum_value=series[-1])
        yield requests
        yield durations


class _ClientCacheCollector(Collector):
    def __init__(self, cache: ClientCache) -> None:
        self._cache = cache

    def collect(self) -> Iterable[Metric]:
        lookups = self._cache.lookups
        family = CounterMetricFamily(
            "flagcore_client_features_cache_lookups",
            "Client features payload cache lookups, by result (a miss renders the payload, "
            "or finds the one rendered for the narrowed query; a repeated poll answered by "
            "the fast path is a hit).",
            labels=("result",),
        )
        family.add_metric(("hit",), lookups.hits)
        family.add_metric(("miss",), lookups.misses)
        yield family


class _StreamingCollector(Collector):
    def __init__(self, hub: StreamingHub) -> None:
        self._hub = hub

    def collect(self) -> Iterable[Metric]:
        yield GaugeMetricFamily(
            "flagcore_streaming_clients",
            "SDKs connected to /api/client/streaming now.",
            value=self._hub.connection_count,
        )


class _UsageBufferCollector(Collector):
    """The usage buffer (`flagcore_http.usage_buffer`): whether the node is holding SDK
    usage, how much, and what found no room."""

    def __init__(self, buffer: UsageBuffer) -> None:
        self._buffer = buffer

    def collect(self) -> Iterable[Metric]:
        b = self._buffer
        yield GaugeMetricFamily(
            "flagcore_usage_buffering",
            "1 while SDK metrics or registrations wait in memory longer than the flush "
            "interval (the store is away or behind), else 0.",
            value=int(b.behind),
        )
        yield GaugeMetricFamily(
            "flagcore_usage_buffer_entries",
            "Entries held: metrics keys (app, environment, flag, hour), their variant "
            "names, and SDK instances.",
            value=b.entries,
        )
        yield GaugeMetricFamily(
            "flagcore_usage_buffer_capacity",
            "Entries the buffer may hold (FLAGCORE_USAGE_BUFFER_ENTRIES).",
            value=b.capacity,
        )
        yield GaugeMetricFamily(
            "flagcore_usage_buffer_evaluations",
            "Evaluation counts (yes + no) held, not yet written.",
            value=b.evaluations,
        )
        yield GaugeMetricFamily(
            "flagcore_usage_buffer_instances",
            "SDK instances (registrations, metrics senders) held, not yet written.",
            value=b.instances,
        )
        yield CounterMetricFamily(
            "flagcore_usage_buffer_dropped_evaluations",
            "Evaluation counts dropped because the buffer was full.",
            value=b.dropped_evaluations,
        )
        yield CounterMetricFamily(
            "flagcore_usage_buffer_dropped_registrations",
            "SDK instances dropped because the buffer was full.",
            value=b.dropped_registrations,
        )
        flushes = CounterMetricFamily(
            "flagcore_usage_buffer_flushes",
            "Attempts to write held usage, by result (written, failed).",
            labels=("result",),
        )
        flushes.add_metric(("written",), b.flushed_writes)
        flushes.add_metric(("failed",), b.failed_flushes)
        yield flushes


class FlagCounts(Collector):
    """Active flags per project, and how many are on per project and environment, read
    from the store on its worker at most every `FLAG_COUNT_TTL_S` seconds: a scrape never
    queues more than one read, and a scraper polling fast costs nothing more. The cost is
    one read of the flags and their environment rows (linear in flags; no evaluation)."""

    def __init__(self, service: Service, worker: Executor) -> None:
        self._service = service
        self._worker = worker
        self._read_at = -float("inf")
        self._flags: dict[str, int] = {}
        self._enabled: dict[tuple[str, str], int] = {}

    async def refresh(self) -> None:
        now = time.monotonic()
        if now - self._read_at < FLAG_COUNT_TTL_S:
            return
        self._read_at = now
        loop = asyncio.get_running_loop()
        read = loop.run_in_executor(self._worker, self._count_flags)
        try:
            # A busy or blocked store worker never holds a scrape up: the usage buffer's
            # series matter most exactly then.
            self._flags, self._enabled = await asyncio.wait_for(
                asyncio.shield(read), FLAG_COUNT_WAIT_S
            )
        except (FlagcoreError, TimeoutError):  # store down or busy: keep the last counts
            return

    def _count_flags(self) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
        counts = self._service.flag_overviews.counts()
        return dict(counts.by_project), dict(counts.enabled)

    def collect(self) -> Iterable[Metric]:
        flags = GaugeMetricFamily(
            "flagcore_flags", "Active (not archived) flags, by project.", labels=("project",)
        )
        for project, n in sorted(self._flags.items()):
            flags.add_metric((project,), n)
        yield flags
        enabled = GaugeMetricFamily(
            "flagcore_flags_enabled",
            "Active flags that are on, by project and environment (the rest are off there).",
            labels=("project", "environment"),
        )
        for (project, environment), n in sorted(self._enabled.items()):
            enabled.add_metric((project, environment), n)
        yield enabled
