"""A flag's usage history (issue 32): what SDKs reported, as a series over time.

The store keeps hour buckets for `RetentionSettings.metrics_hours` (30 days), then rolls
them up into day buckets (`flagcore.service.retention.roll_up_hours`). A series asks for
the last ``hours_back`` hours: in hours while they are all still kept as hours, else in
days, each day the sum of its day bucket and of its hours not yet rolled up (the roll-up
moves counts, never copies them, so nothing is counted twice). As Unleash's
``getClientMetricsForToggle`` does, every (environment, application) pair seen gets a
point for every hour or day, zero where nothing was reported, at most 100 applications.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

import attrs

from flagcore.entities import FlagMetrics
from flagcore.errors import ErrorDetail, InvalidInput, NotFound
from flagcore.ports import FlagRepository, MetricsRepository
from flagcore.service.context import ServiceContext
from flagcore.service.retention import start_of_day

__all__ = [
    "HOURS_BACK_MAX",
    "SERIES_APPLICATIONS",
    "AppLastSeen",
    "EnvironmentUsage",
    "UsageHistory",
    "UsageSeries",
    "UsageSummary",
]

HOURS_BACK_MAX = 24 * 366
"""A year and a day: the day buckets' default retention, and a bound on one answer's
size (366 points per environment and application)."""

SERIES_APPLICATIONS = 100
"""Applications one series shows at most (Unleash's own cut), in name order."""

_MAX_COUNT = 2**63 - 1
_HOUR = dt.timedelta(hours=1)
_DAY = dt.timedelta(days=1)


@attrs.frozen
class UsageSeries:
    """Points (`FlagMetrics`, ``hour`` the start of an hour or of a day) ordered by time,
    environment and application; ``daily`` when each point is a day."""

    flag: str
    hours_back: int
    daily: bool
    points: tuple[FlagMetrics, ...]


@attrs.frozen
class EnvironmentUsage:
    """Yes/no of one environment in the last hour (Unleash's ``lastHourUsage`` item)."""

    environment: str
    timestamp: dt.datetime
    yes: int
    no: int


@attrs.frozen
class AppLastSeen:
    """The start of the newest bucket in which an application reported the flag;
    ``by_day`` when that bucket is a day (its hours were rolled up)."""

    app_name: str
    last_seen: dt.datetime
    by_day: bool = False


@attrs.frozen
class UsageSummary:
    """Unleash's feature usage summary: the last hour per environment, the applications
    that reported the flag in the last 24 hours."""

    flag: str
    last_hour: tuple[EnvironmentUsage, ...]
    seen_applications: tuple[str, ...]


def _hour_of(time: dt.datetime) -> dt.datetime:
    return time.astimezone(dt.UTC).replace(minute=0, second=0, microsecond=0)


def _known_flag(tx: FlagRepository, name: str) -> None:
    if tx.get_flag(name) is None:
        raise NotFound(f'there is no flag named "{name}"')


def _added(a: FlagMetrics, b: FlagMetrics) -> FlagMetrics:
    variants = dict(a.variants)
    for name, count in b.variants.items():
        variants[name] = min(variants.get(name, 0) + count, _MAX_COUNT)
    return attrs.evolve(
        a, yes=min(a.yes + b.yes, _MAX_COUNT), no=min(a.no + b.no, _MAX_COUNT), variants=variants
    )


def merged(rows: Iterable[FlagMetrics]) -> dict[tuple[str, str, dt.datetime], FlagMetrics]:
    """Rows of the same (environment, application, start) added up."""
    found: dict[tuple[str, str, dt.datetime], FlagMetrics] = {}
    for row in rows:
        key = (row.environment, row.app_name, row.hour)
        found[key] = _added(found[key], row) if key in found else row
    return found


def history_rows(
    tx: MetricsRepository, flag: str, since: dt.datetime
) -> tuple[list[FlagMetrics], list[FlagMetrics]]:
    """The flag's day buckets from ``since``'s day and its hour buckets from ``since``'s
    day: every count reported since then, each once."""
    day = start_of_day(since)
    return list(tx.list_daily_flag_metrics(flag, since=day)), list(
        tx.list_flag_metrics(flag, since=day)
    )


class UsageHistory:
    """`service.usage_history`: a flag's usage as series, summaries and last sightings."""

    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def series(
        self, flag: str, hours_back: int, *, hour_buckets_hours: float, by_day: bool = False
    ) -> UsageSeries:
        """The flag's usage over the last ``hours_back`` hours (1 to `HOURS_BACK_MAX`):
        hourly when every hour asked for is still kept as an hour bucket
        (``hour_buckets_hours``, the retention setting; 0 keeps them forever) unless
        ``by_day``, else daily over ``hours_back // 24`` days (at least one). `NotFound`
        for no such flag, active or archived."""
        if not 1 <= hours_back <= HOURS_BACK_MAX:
            raise InvalidInput(
                f"hoursBack must be a whole number from 1 to {HOURS_BACK_MAX}",
                [ErrorDetail(f"1 to {HOURS_BACK_MAX}", "/query/hoursBack")],
            )
        now = self._context.clock()
        daily = by_day or 0 < hour_buckets_hours < hours_back
        if daily:
            last = start_of_day(now)
            starts = [last - _DAY * n for n in range(max(1, hours_back // 24))][::-1]
        else:
            last = _hour_of(now)
            starts = [last - _HOUR * n for n in range(hours_back)][::-1]
        with self._context.read() as tx:
            _known_flag(tx, flag)
            if daily:
                days, hours = history_rows(tx, flag, starts[0])
                rows = days + [attrs.evolve(r, hour=start_of_day(r.hour)) for r in hours]
            else:
                rows = list(tx.list_flag_metrics(flag, since=starts[0]))
        found = merged(r for r in rows if r.hour <= last)
        pairs = sorted({(env, app) for env, app, _start in found})
        apps = sorted({app for _env, app in pairs})[:SERIES_APPLICATIONS]
        kept = set(apps)
        points = [
            found.get((env, app, start)) or FlagMetrics(flag, app, env, start)
            for start in starts
            for env, app in pairs
            if app in kept
        ]
        return UsageSeries(flag, hours_back, daily, tuple(points))

    def summary(self, flag: str) -> UsageSummary:
        """Unleash's ``getFeatureToggleMetricsSummary``: yes/no per environment over the
        hour buckets overlapping the last hour, and the applications seen in the last 24
        hours, by name."""
        now = self._context.clock()
        with self._context.read() as tx:
            _known_flag(tx, flag)
            rows = list(tx.list_flag_metrics(flag, since=_hour_of(now - dt.timedelta(hours=24))))
        since = _hour_of(now - _HOUR)
        usage: dict[str, EnvironmentUsage] = {}
        for row in rows:
            if row.hour < since:
                continue
            before = usage.get(row.environment)
            usage[row.environment] = (
                EnvironmentUsage(row.environment, row.hour, row.yes, row.no)
                if before is None
                else attrs.evolve(
                    before,
                    yes=min(before.yes + row.yes, _MAX_COUNT),
                    no=min(before.no + row.no, _MAX_COUNT),
                )
            )
        apps = sorted({row.app_name for row in rows})
        return UsageSummary(flag, tuple(usage[e] for e in sorted(usage)), tuple(apps))

    def last_seen(self, flag: str) -> list[AppLastSeen]:
        """Per application (by name), the start of the newest hour (or, once rolled up,
        day) in which it reported the flag."""
        with self._context.read() as tx:
            days = list(tx.list_daily_flag_metrics(flag))
            hours = list(tx.list_flag_metrics(flag))
        latest: dict[str, AppLastSeen] = {}
        for rows, by_day in ((days, True), (hours, False)):
            for row in rows:
                seen = latest.get(row.app_name)
                if (row.yes or row.no) and (seen is None or row.hour >= seen.last_seen):
                    latest[row.app_name] = AppLastSeen(row.app_name, row.hour, by_day)
        return [latest[app] for app in sorted(latest)]
