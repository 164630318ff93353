"""Retention: what SDKs and signal senders write is deleted once it is old enough.

Metrics, SDK instances, signals and events grow with traffic, not with admin work, so
without pruning any token holder could fill the disk. `Retention.prune` deletes what
`RetentionSettings` no longer keep, at most ``batch`` rows of each kind per call, each
call one short transaction: the server runs it periodically on its store thread, and a
long backlog is worked off in many small steps that never hold the store for long.
"""

from __future__ import annotations

import datetime as dt

import attrs

from flagcore.context_sample import TRAFFIC
from flagcore.ports import MetricsRepository
from flagcore.service.context import ServiceContext
from flagcore.tables import CONTEXT_SAMPLES, USER_SESSIONS, Below

__all__ = [
    "DAY_APPLICATIONS",
    "OTHER_APPLICATIONS",
    "PruneReport",
    "Retention",
    "RetentionSettings",
    "roll_up_hours",
    "start_of_day",
]


@attrs.frozen(kw_only=True)
class RetentionSettings:
    """How long each kind of traffic-driven data is kept; 0 keeps it forever.

    Defaults: metrics in hour buckets 30 days (720 hours), then rolled up into day
    buckets kept 365 days (Unleash keeps raw client metrics 48 hours and, with its
    extended usage metrics, days for 91: the usage history of issue 32 keeps more, in
    rows bounded by the hours SDKs could create, see docs/lifecycle.md);
    SDK instances 7 days after they were last seen (Unleash shows instances seen in the
    last days; a stopped pod should not linger for months); the preview's traffic
    sample 7 days after a context was sampled (uploaded samples stay until replaced);
    signals 7 days and at most 1,000 per endpoint (they are inputs to action sets, read
    within seconds, kept only to debug); events 90 days (the audit log; admins can keep
    it forever with 0). The newest event is never deleted: its id is the store's revision.
    """

    metrics_hours: float = 720
    client_instance_days: float = 7
    signal_days: float = 7
    signals_per_endpoint: int = 1000
    event_days: float = 90
    context_sample_days: float = 7
    metrics_daily_days: float = 365


@attrs.frozen
class PruneReport:
    """How many rows one `Retention.prune` call deleted, per kind."""

    metrics: int = 0
    client_instances: int = 0
    signals: int = 0
    events: int = 0
    sessions: int = 0
    context_samples: int = 0
    daily_metrics: int = 0

    @property
    def total(self) -> int:
        return (
            self.metrics
            + self.client_instances
            + self.signals
            + self.events
            + self.sessions
            + self.context_samples
            + self.daily_metrics
        )


def start_of_day(time: dt.datetime) -> dt.datetime:
    """Midnight UTC of ``time``'s day: the key of its day bucket."""
    return time.astimezone(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)


OTHER_APPLICATIONS = ""
"""The application of a day bucket that holds the counts of every application past
`DAY_APPLICATIONS` that day (no SDK may call itself "": its name is required)."""

DAY_APPLICATIONS = 100
"""Applications kept by name per flag, environment and day (Unleash's series shows 100):
made-up application names in a flood of posts add counts, not day rows."""


def roll_up_hours(tx: MetricsRepository, before: dt.datetime, batch: int, variants: int) -> int:
    """Move at most ``batch`` hour buckets older than ``before`` into their day buckets,
    in the caller's transaction; says how many moved. The store hands each hour bucket to
    one transaction only (`take_flag_metrics_before`), and the counts are added where
    they were deleted, so a roll-up repeated, or run by two nodes at once, counts every
    evaluation exactly once. Past `DAY_APPLICATIONS` applications in a flag's environment
    and day, the counts go to `OTHER_APPLICATIONS`: day rows are bounded by flags, not by
    the names SDKs make up."""
    taken = tx.take_flag_metrics_before(before, batch)
    apps_of: dict[tuple[str, dt.datetime], dict[str, set[str]]] = {}
    rows = []
    for row in taken:
        day = start_of_day(row.hour)
        if (row.flag, day) not in apps_of:
            found: dict[str, set[str]] = {}
            for stored in tx.list_daily_flag_metrics(row.flag, since=day):
                if stored.hour == day:
                    found.setdefault(stored.environment, set()).add(stored.app_name)
            apps_of[row.flag, day] = found
        apps = apps_of[row.flag, day].setdefault(row.environment, set())
        app = row.app_name
        if app not in apps and len(apps - {OTHER_APPLICATIONS}) >= DAY_APPLICATIONS:
            app = OTHER_APPLICATIONS
        apps.add(app)
        rows.append(attrs.evolve(row, hour=day, app_name=app))
    if rows:
        tx.add_daily_flag_metrics(rows, max_variants=variants)
    return len(taken)


def _cutoff(now: dt.datetime, **age: float) -> dt.datetime | None:
    return None if not any(age.values()) else now - dt.timedelta(**age)


class Retention:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def prune(
        self,
        settings: RetentionSettings | None = None,
        *,
        now: dt.datetime | None = None,
        batch: int = 1000,
    ) -> PruneReport:
        """Delete up to ``batch`` rows of each kind that ``settings`` no longer keep.

        Call again while the report's ``total`` is not 0 to work off a backlog.
        Not a change SDKs see: the revision does not move.
        """
        settings = settings or RetentionSettings()
        now = now or self._context.clock()
        counts: dict[str, int] = {}
        with self._context.store.transaction() as tx:
            metrics_before = _cutoff(now, hours=settings.metrics_hours)
            if metrics_before is not None:
                counts["metrics"] = roll_up_hours(
                    tx, metrics_before, batch, self._context.limits.metrics_variants_per_toggle
                )
            days_before = _cutoff(start_of_day(now), days=settings.metrics_daily_days)
            if days_before is not None:
                counts["daily_metrics"] = tx.delete_daily_flag_metrics_before(days_before, batch)
            instances_before = _cutoff(now, days=settings.client_instance_days)
            if instances_before is not None:
                counts["client_instances"] = tx.delete_client_instances_seen_before(
                    instances_before, batch
                )
            signals = 0
            signals_before = _cutoff(now, days=settings.signal_days)
            if signals_before is not None:
                signals = tx.delete_signals_before(signals_before, batch)
            if settings.signals_per_endpoint > 0:
                for endpoint in tx.list_signal_endpoints():
                    if signals >= batch:
                        break
                    signals += tx.delete_signals_beyond_newest(
                        endpoint.id, settings.signals_per_endpoint, batch - signals
                    )
            counts["signals"] = signals
            events_before = _cutoff(now, days=settings.event_days)
            if events_before is not None:
                counts["events"] = tx.delete_events_before(events_before, batch)
            # Sign-in sessions past their expiry are refused already; their rows go too.
            expired = tx.list_records(USER_SESSIONS, {"expires_at": Below(now)}, limit=batch)
            for session in expired:
                tx.delete_record(USER_SESSIONS, session.id_digest)
            counts["sessions"] = len(expired)
            samples_before = _cutoff(now, days=settings.context_sample_days)
            if samples_before is not None:
                old = tx.list_records(
                    CONTEXT_SAMPLES,
                    {"source": TRAFFIC, "seen_at": Below(samples_before)},
                    limit=batch,
                )
                for row in old:
                    tx.delete_record(CONTEXT_SAMPLES, (row.environment, row.source, row.slot))
                counts["context_samples"] = len(old)
        return PruneReport(**counts)
