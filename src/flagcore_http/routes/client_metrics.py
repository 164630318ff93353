"""A flag's usage history on Unleash's client-metrics paths (issue 32):
``GET /api/admin/client-metrics/features/<f>/raw?hoursBack=N`` (the series) and
``GET /api/admin/client-metrics/features/<f>`` (the last hour and the applications).

Unleash reads ``hoursBack`` leniently (a bad value becomes 24); here a bad one is a 400
naming ``/query/hoursBack`` (docs/migrating-from-unleash.md).
"""

from __future__ import annotations

from aiohttp import web

from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.service import HOURS_BACK_MAX, UsageSeries, UsageSummary
from flagcore.wire import FeatureEnvironmentMetricsAnswer, FeatureMetricsAnswer, FeatureUsageAnswer
from flagcore_http import shapes
from flagcore_http.answering import answered
from flagcore_http.calls import call, service
from flagcore_http.contract import Parameter, documented
from flagcore_http.keys import CONFIG
from flagcore_http.usage_buffer import flush_usage

__all__ = ["routes"]

routes = web.RouteTableDef()

FEATURE_METRICS = "/api/admin/client-metrics/features/{name}"
_DEFAULT_HOURS_BACK = 24  # Unleash's default


def _hours_back(request: web.Request) -> int:
    raw = request.query.get("hoursBack")
    if raw is None:
        return _DEFAULT_HOURS_BACK
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 5 and 1 <= int(raw) <= HOURS_BACK_MAX):
        raise InvalidInput(
            f"hoursBack must be a whole number from 1 to {HOURS_BACK_MAX}",
            [ErrorDetail(f"a whole number from 1 to {HOURS_BACK_MAX}", "/query/hoursBack")],
        )
    return int(raw)


def series_answer(series: UsageSeries) -> FeatureMetricsAnswer:
    """The series as Unleash's ``featureMetricsSchema``."""
    return FeatureMetricsAnswer(
        1,
        "stable",
        tuple(
            FeatureEnvironmentMetricsAnswer(
                p.flag, p.app_name, p.environment, p.hour, p.yes, p.no, dict(p.variants)
            )
            for p in series.points
        ),
    )


def summary_answer(summary: UsageSummary) -> FeatureUsageAnswer:
    """The summary as Unleash's ``featureUsageSchema``."""
    return FeatureUsageAnswer(
        1,
        "stable",
        summary.flag,
        tuple(
            FeatureEnvironmentMetricsAnswer(
                None, None, u.environment, u.timestamp, u.yes, u.no, None
            )
            for u in summary.last_hour
        ),
        summary.seen_applications,
    )


@routes.get(FEATURE_METRICS + "/raw")
@documented(
    {200: FeatureMetricsAnswer},
    query={
        "hoursBack": Parameter(
            shapes.whole(1, HOURS_BACK_MAX),
            "hours back from now (24 when left out); past the hours kept as hour "
            "buckets the points are days",
        )
    },
)
async def feature_metrics_series(request: web.Request) -> web.Response:
    """Yes/no/variant counts per hour (or day), environment and application."""
    hours_back = _hours_back(request)
    await flush_usage(request.app)  # what SDKs posted to this node counts at once
    series = await call(
        request,
        service(request).usage_history.series,
        request.match_info["name"],
        hours_back,
        hour_buckets_hours=request.app[CONFIG].retention.metrics_hours,
    )
    return answered(series_answer(series))


@routes.get(FEATURE_METRICS)
@documented({200: FeatureUsageAnswer})
async def feature_usage_summary(request: web.Request) -> web.Response:
    """The last hour's yes/no per environment, and the applications seen in 24 hours."""
    await flush_usage(request.app)
    summary = await call(
        request, service(request).usage_history.summary, request.match_info["name"]
    )
    return answered(summary_answer(summary))
