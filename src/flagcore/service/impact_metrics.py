"""Impact metrics (issue 32): counters, gauges and histograms per flag and environment,
from SDKs (``impactMetrics`` in their metrics reports, a sample's ``featureName`` label
naming its flag) or posted for a flag by an operator; kept a minute per row for a day,
and read over a window by release plan safeguards.

Bounded: a report's size (`flagcore.wire.impact_metrics`), at most
`MAX_SERIES_PER_ENVIRONMENT` series per environment (a flag's metric; a new one past it is
not kept) and `MAX_SERIES_PER_FLAG` per flag, points older than `POINTS_KEPT` deleted as
new ones come, so an environment holds at most 300 series × 1,440 minutes of rows.
Samples of flags that do not exist are not kept (a made-up name makes no row).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Sequence
from typing import Protocol

import attrs

from flagcore.errors import LimitExceeded
from flagcore.ports import FlagRepository, Records
from flagcore.release_plans import ImpactPoint, ImpactSeries, ReleasePlan, Safeguard
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.lookups import active_flag, require_environment
from flagcore.tables import IMPACT_POINTS, IMPACT_SERIES, Below
from flagcore.wire.impact_metrics import ImpactMetric, ImpactSample

__all__ = [
    "FLAG_LABEL",
    "MAX_SERIES_PER_ENVIRONMENT",
    "MAX_SERIES_PER_FLAG",
    "POINTS_KEPT",
    "ImpactMetrics",
    "RecordedImpact",
]

FLAG_LABEL = "featureName"
MAX_SERIES_PER_ENVIRONMENT = 300
MAX_SERIES_PER_FLAG = 20
POINTS_KEPT = dt.timedelta(days=1)
_PRUNED_PER_WRITE = 500
_CLOCK_SLACK_MINUTES = 10


@attrs.frozen
class RecordedImpact:
    """What a report added: samples kept, and those not kept (no such flag, no flag
    label, a series past the bounds, a kind other than the series')."""

    kept: int
    dropped: int


def _minute(at: dt.datetime) -> dt.datetime:
    return at.astimezone(dt.UTC).replace(second=0, microsecond=0)


class _Recording(FlagRepository, Records, Protocol):
    """Impact metrics kept for flags that exist."""


class ImpactMetrics:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def record_sdk_impact_metrics(
        self,
        environment: str,
        metrics: Sequence[ImpactMetric],
        *,
        projects: Collection[str] | None = None,
    ) -> RecordedImpact:
        """An SDK's report (its token's environment): each sample goes to the flag its
        ``featureName`` label names, if that flag is in one of ``projects`` (the token's;
        None: every project), so an SDK cannot trip another project's safeguards."""
        with self._context.unit() as tx:
            return self._recorded(tx, environment, metrics, None, projects)

    def post_impact_metrics(
        self,
        project: str,
        flag: str,
        environment: str,
        metrics: Sequence[ImpactMetric],
        *,
        actor: Actor = SYSTEM,
    ) -> RecordedImpact:
        """An operator's samples for one flag (a monitoring system's error counts); past
        the bounds a `LimitExceeded` rather than samples dropped unsaid."""
        authorize(actor, "post_impact_metrics", project=project, environment=environment)
        with self._context.unit() as tx:
            active_flag(tx, project, flag)
            require_environment(tx, environment)
            recorded = self._recorded(tx, environment, metrics, flag, None)
            if recorded.dropped:
                raise LimitExceeded(
                    f"{flag} in {environment} reports at most {MAX_SERIES_PER_FLAG} metrics "
                    f"(and an environment {MAX_SERIES_PER_ENVIRONMENT}), each of one type",
                    "impact metric series",
                    MAX_SERIES_PER_FLAG,
                    "$.impactMetrics",
                )
            return recorded

    def impact_points(
        self, project: str, flag: str, environment: str, name: str, *, minutes: int = 60
    ) -> list[ImpactPoint]:
        """One series' points over the last ``minutes`` (this one included), oldest
        first."""
        since = _minute(self._context.clock()) - dt.timedelta(minutes=minutes - 1)
        with self._context.read() as tx:
            active_flag(tx, project, flag)
            require_environment(tx, environment)
            return _points(tx, environment, flag, name, since)

    def safeguard_value(
        self, tx: Records, plan: ReleasePlan, safeguard: Safeguard, now: dt.datetime
    ) -> float | None:
        """The value a safeguard compares to its threshold over its window (None while no
        point is in it, or the divisor of a ratio is 0)."""
        since = _minute(now) - dt.timedelta(minutes=safeguard.window_minutes - 1)
        value = self._aggregate(tx, plan, safeguard.metric_name, safeguard, since)
        if safeguard.ratio_of is None or value is None:
            return value
        divisor = self._aggregate(tx, plan, safeguard.ratio_of, safeguard, since)
        if not divisor:
            return None
        return value / divisor

    # --- inner steps ---
    def _aggregate(
        self,
        tx: Records,
        plan: ReleasePlan,
        name: str,
        safeguard: Safeguard,
        since: dt.datetime,
    ) -> float | None:
        series: ImpactSeries | None = tx.get_record(
            IMPACT_SERIES, (plan.environment, plan.flag, name)
        )
        # A few rows more than the window: a node whose clock runs ahead may have
        # written minutes later than this one's now.
        newest = safeguard.window_minutes + _CLOCK_SLACK_MINUTES
        points = _points(tx, plan.environment, plan.flag, name, since, newest=newest)
        if series is None or not points:
            return None
        mode = safeguard.aggregation_mode
        if series.kind == "gauge":
            values = [p.value for p in points]
            return sum(values) / len(values) if mode == "avg" else values[-1]
        if series.kind == "counter":
            total = sum(p.value for p in points)
            if mode == "rps":
                return total / (safeguard.window_minutes * 60)
            if mode == "avg":
                return total / safeguard.window_minutes
            return total
        count = sum(p.count for p in points)
        if mode == "count":
            return float(count)
        if mode == "sum":
            return sum(p.value for p in points)
        if mode == "rps":
            return count / (safeguard.window_minutes * 60)
        if mode == "avg":
            return sum(p.value for p in points) / count if count else None
        return _quantile(points, {"p50": 0.5, "p95": 0.95, "p99": 0.99}[mode])

    def _recorded(
        self,
        tx: _Recording,
        environment: str,
        metrics: Sequence[ImpactMetric],
        flag: str | None,
        projects: Collection[str] | None,
    ) -> RecordedImpact:
        now = self._context.clock()
        minute = _minute(now)
        known: dict[tuple[str, str], ImpactSeries] = {
            (s.flag, s.name): s
            for s in tx.list_records(IMPACT_SERIES, where={"environment": environment})
        }
        flags: dict[str, bool] = {}
        kept = dropped = 0
        for metric in metrics:
            for sample in metric.samples:
                target = flag or sample.labels.get(FLAG_LABEL)
                if target is None:
                    dropped += 1
                    continue
                if target not in flags:
                    found = tx.get_flag(target)
                    flags[target] = (
                        found is not None
                        and not found.archived
                        and (projects is None or found.project in projects)
                    )
                series = known.get((target, metric.name))
                if not flags[target] or (series is not None and series.kind != metric.kind):
                    dropped += 1
                    continue
                if series is None:
                    per_flag = sum(1 for f, _ in known if f == target)
                    if len(known) >= MAX_SERIES_PER_ENVIRONMENT or per_flag >= MAX_SERIES_PER_FLAG:
                        dropped += 1
                        continue
                    series = ImpactSeries(environment, target, metric.name, metric.kind, now)
                    tx.save_record(IMPACT_SERIES, series)
                    known[(target, metric.name)] = series
                self._added(tx, environment, target, metric, sample, minute)
                kept += 1
        self._pruned(tx, environment, minute - POINTS_KEPT)
        return RecordedImpact(kept, dropped)

    @staticmethod
    def _added(
        tx: Records,
        environment: str,
        flag: str,
        metric: ImpactMetric,
        sample: ImpactSample,
        minute: dt.datetime,
    ) -> None:
        key = (environment, flag, metric.name, minute)
        point: ImpactPoint = tx.get_record(IMPACT_POINTS, key) or ImpactPoint(
            environment, flag, metric.name, minute
        )
        if metric.kind == "counter":
            point = attrs.evolve(point, value=point.value + sample.value, count=point.count + 1)
        elif metric.kind == "gauge":
            point = attrs.evolve(point, value=sample.value, count=point.count + 1)
        else:
            buckets = dict(point.buckets)
            for le, count in sample.buckets:
                buckets[le] = buckets.get(le, 0) + count
            point = attrs.evolve(
                point,
                value=point.value + sample.sum,
                count=point.count + sample.count,
                buckets=buckets,
            )
        tx.save_record(IMPACT_POINTS, point)

    @staticmethod
    def _pruned(tx: Records, environment: str, before: dt.datetime) -> None:
        old = tx.list_records(
            IMPACT_POINTS,
            where={"environment": environment, "minute": Below(before)},
            limit=_PRUNED_PER_WRITE,
        )
        for point in old:
            tx.delete_record(
                IMPACT_POINTS, (point.environment, point.flag, point.name, point.minute)
            )


def _points(
    tx: Records,
    environment: str,
    flag: str,
    name: str,
    since: dt.datetime,
    *,
    newest: int | None = None,
) -> list[ImpactPoint]:
    """One series' points from ``since``, oldest first. Rows come newest first (a point a
    minute), so ``newest`` bounds the read to the window's few rows, not the day's."""
    found = tx.list_records(
        IMPACT_POINTS,
        where={"environment": environment, "flag": flag, "name": name},
        limit=newest,
    )
    return sorted((p for p in found if p.minute >= since), key=lambda p: p.minute)


def _quantile(points: Sequence[ImpactPoint], q: float) -> float | None:
    """The upper bound of the first bucket holding the ``q`` quantile of the observations
    (Prometheus's buckets without its interpolation); +Inf is infinity."""
    merged: dict[float, int] = {}
    for point in points:
        for le, count in point.buckets.items():
            bound = float("inf") if le == "+Inf" else float(le)
            merged[bound] = merged.get(bound, 0) + count
    if not merged:
        return None
    total = merged.get(float("inf"), max(merged.values()))
    if total == 0:
        return None
    for bound in sorted(merged):
        if merged[bound] >= q * total:
            return bound
    return None
