"""What SDKs report about evaluations: counts per flag, app, environment and hour.

Everything here is written by SDK traffic, so everything is bounded: a metrics post
counts only flags that exist within the reporting token's projects (made-up names are
dropped, as are flags of other projects), carries at most `Limits.metrics_toggles_per_post`
flags, and its counts are added into one row per (flag, app, environment, hour), so the
stored size depends on flags and hours, not on how often or how much SDKs post. A bucket
must start within `Metrics.bucket_window` (else it is dropped: one dated 2999 would
outlive retention), a stored bucket keeps at most `Limits.metrics_variants_per_toggle`
variant names, and the caller may cap the rows a report creates (``max_new_rows``: the
HTTP layer's budget per token and address). Retention (`flagcore.service.retention`)
deletes old hours.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Mapping
from itertools import groupby
from typing import Any

import attrs

from flagcore.entities import ClientInstance, FlagMetrics
from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.limits import enforce
from flagcore.service.context import ServiceContext
from flagcore.service.instances import ClientInstances, reported_text
from flagcore.service.lifecycle import note_seen
from flagcore.wire import json_member

__all__ = [
    "LAST_HOUR_ROWS",
    "MAX_COUNT",
    "AppFlagCounts",
    "CheckedReport",
    "HeldCounts",
    "LastHourCounts",
    "Metrics",
    "RecordedMetrics",
    "known_variants_only",
]

# Counts are stored as SQLite (and PostgreSQL bigint) integers.
MAX_COUNT = 2**63 - 1

# The keys of a flag's counts that `Metrics._checked_counts` reads without building paths.
_PLAIN_COUNT_KEYS = frozenset({"yes", "no", "variants"})

# At most this many stored buckets (one per flag, app, environment and hour) are read
# for the Applications page, whatever SDKs sent: the page stays small and quick.
LAST_HOUR_ROWS = 500


@attrs.frozen
class RecordedMetrics:
    """What one metrics report did: flags ``counted`` (0 when the bucket was outside the
    window), ``created`` rows (instance and buckets, for the caller's budget)."""

    counted: int
    created: int
    in_window: bool = True


@attrs.frozen
class CheckedReport:
    """A metrics report whose every field was checked, not yet written: the instance it
    says was seen, the hour its bucket counts for (None: outside the window, dropped) and
    per flag its (name, yes, no, variants)."""

    instance: ClientInstance
    environment: str
    hour: dt.datetime | None
    counts: tuple[tuple[str, int, int, dict[str, int]], ...]


@attrs.frozen
class HeldCounts:
    """Counts kept in memory while the store could not take them (the HTTP layer's usage
    buffer), merged by key; ``projects`` is the reporting token's scope, applied when
    they are written."""

    row: FlagMetrics
    projects: tuple[str, ...] | None


@attrs.frozen
class AppFlagCounts:
    """Yes/no counts one application reported for one flag (all environments)."""

    app_name: str
    flag: str
    yes: int
    no: int


@attrs.frozen
class LastHourCounts:
    """Counts per application and flag, ordered by application then flag; ``truncated``
    when more buckets existed than `LAST_HOUR_ROWS` (the later flags are left out)."""

    counts: list[AppFlagCounts]
    truncated: bool
    bucket_limit: int = LAST_HOUR_ROWS

    def by_app(self) -> list[tuple[str, list[AppFlagCounts]]]:
        """One (application, its flags) pair per application, in order."""
        return [(app, list(rows)) for app, rows in groupby(self.counts, key=lambda c: c.app_name)]


def _count(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise InvalidInput(
            f"{path} must be a whole number from 0 to 2^63 - 1",
            [ErrorDetail("a count from 0 to 2^63 - 1", path)],
        )
    return value


def _in_scope(projects: Collection[str] | None) -> Any:
    if projects is None or "*" in projects:
        return lambda _project: True
    return frozenset(projects).__contains__


class Metrics:
    """Evaluation counts; a metrics post also says its SDK instance was seen, checked by
    `ClientInstances` like a registration."""

    def __init__(self, context: ServiceContext, *, instances: ClientInstances) -> None:
        self._context = context
        self._instances = instances

    def countable_flag_names(self) -> frozenset[str]:
        """The names a report's counts are kept for: every flag, active or archived (see
        `record_metrics`), in one read."""
        with self._context.read() as tx:
            return frozenset(flag.name for flag in tx.list_flags(archived=None))

    def record_metrics(
        self,
        app_name: str,
        instance_id: str,
        environment: str,
        start: dt.datetime,
        toggles: Mapping[str, Any],
        *,
        projects: Collection[str] | None = None,
        sdk_version: Any = None,
        max_new_rows: int | None = None,
    ) -> RecordedMetrics:
        """Add a bucket of yes/no/variant counts; says what was counted and created.

        Only flags that exist (active or archived) in ``projects`` (None or ``*``: all)
        are counted; other names are accepted and dropped, as Unleash accepts them. A
        bucket starting outside `bucket_window` is dropped whole (Unleash stores any date;
        a bucket dated 2999 would outlive retention). At most ``max_new_rows`` rows are
        created (the instance, if new, and new hour buckets; None: no bound): the caller's
        budget for what one token and address may add to the disk. Counts for rows that
        exist always add up.
        """
        report = self.check_report(
            app_name, instance_id, environment, start, toggles, sdk_version=sdk_version
        )
        return self.record_report(report, projects=projects, max_new_rows=max_new_rows)

    def check_report(
        self,
        app_name: Any,
        instance_id: Any,
        environment: str,
        start: dt.datetime,
        toggles: Mapping[str, Any],
        *,
        sdk_version: Any = None,
    ) -> CheckedReport:
        """Every rule of `record_metrics` that needs no store: `InvalidInput` for a bad
        field, the hour (or None outside the window). Pure, so the HTTP layer can check a
        report while the store is away and answer a bad one with 400 all the same."""
        instance = self._instances.checked_instance(
            app_name, instance_id, environment=environment, sdk_version=sdk_version
        )
        enforce(
            self._context.limits,
            "metrics_toggles_per_post",
            len(toggles),
            "flags in one report",
            "$.bucket.toggles",
        )
        if not self._in_window(start):
            # Dropped whole, so its counts are not read (as counts of names that are no
            # flag are not): a flood of far-dated reports costs no counting.
            return CheckedReport(instance, environment, None, ())
        hour = start.astimezone(dt.UTC).replace(minute=0, second=0, microsecond=0)
        counted = tuple(self._checked_counts(name, counts) for name, counts in toggles.items())
        return CheckedReport(instance, environment, hour, counted)

    def record_report(
        self,
        report: CheckedReport,
        *,
        projects: Collection[str] | None = None,
        max_new_rows: int | None = None,
    ) -> RecordedMetrics:
        """Write a `check_report` result in one transaction (see `record_metrics`)."""
        wanted = _in_scope(projects)
        limits = self._context.limits
        instance, hour = report.instance, report.hour
        with self._context.store.transaction() as tx:
            created = int(tx.save_client_instance(instance, create=max_new_rows != 0))
            rows: list[FlagMetrics] = []
            if hour is not None:
                names = [c[0] for c in report.counts if len(c[0]) <= limits.client_field_length]
                projects_of = tx.flag_projects(names)
                rows = [
                    FlagMetrics(name, instance.app_name, report.environment, hour, yes, no, v)
                    for name, yes, no, v in report.counts
                    if name in projects_of and wanted(projects_of[name])
                ]
            if rows:
                created += tx.add_flag_metrics(
                    rows,
                    max_new=None if max_new_rows is None else max(0, max_new_rows - created),
                    max_variants=limits.metrics_variants_per_toggle,
                )
                note_seen(tx, rows, self._context.clock())  # lifecycle: pre-live, live
        return RecordedMetrics(len(rows), created, hour is not None)

    def record_held(
        self, counts: Collection[HeldCounts], instances: Collection[tuple[ClientInstance, bool]]
    ) -> int:
        """Write what the HTTP layer held while the store was away, in one transaction:
        all of it or (the transaction fails) none, so a failed attempt can be retried
        without counting anything twice. ``instances`` are (instance, may create) pairs.
        Counts of flags that no longer exist or are outside their token's scope are
        dropped, as `record_report` drops them; returns the buckets written."""
        limits = self._context.limits
        with self._context.store.transaction() as tx:
            for instance, create in instances:
                tx.save_client_instance(instance, create=create)
            names = {h.row.flag for h in counts if len(h.row.flag) <= limits.client_field_length}
            projects_of = tx.flag_projects(sorted(names))
            rows = [
                h.row
                for h in counts
                if h.row.flag in projects_of and _in_scope(h.projects)(projects_of[h.row.flag])
            ]
            if rows:
                tx.add_flag_metrics(rows, max_variants=limits.metrics_variants_per_toggle)
                note_seen(tx, rows, self._context.clock())
        return len(rows)

    def bucket_window(self) -> tuple[dt.datetime, dt.datetime]:
        """The earliest and latest start a metrics bucket may have now, by the context
        clock and `Limits.metrics_bucket_past_hours` / ``metrics_bucket_future_minutes``."""
        now = self._context.clock()
        limits = self._context.limits
        return (
            now - dt.timedelta(hours=limits.metrics_bucket_past_hours),
            now + dt.timedelta(minutes=limits.metrics_bucket_future_minutes),
        )

    def _in_window(self, start: dt.datetime) -> bool:
        earliest, latest = self.bucket_window()
        return earliest <= start <= latest

    def _checked_counts(self, name: str, counts: Any) -> tuple[str, int, int, dict[str, int]]:
        if type(counts) is dict and counts.keys() <= _PLAIN_COUNT_KEYS:
            # What SDKs send: checked without building any path (a flood of reports
            # costs no more than it must); anything odd takes the path below.
            yes, no = counts.get("yes", 0), counts.get("no", 0)
            variants = counts.get("variants") or {}
            if (
                type(yes) is int
                and type(no) is int
                and 0 <= yes <= MAX_COUNT >= no >= 0
                and type(variants) is dict
                and self._plain_variants(variants)
            ):
                return name, yes, no, dict(variants)
        path = json_member("$.bucket.toggles", name)
        if not isinstance(counts, Mapping):
            raise InvalidInput(f"{path} must be an object", [ErrorDetail("an object", path)])
        variants = counts.get("variants") or {}
        if not isinstance(variants, Mapping):
            raise InvalidInput(
                f"{path}.variants must be an object",
                [ErrorDetail("an object", f"{path}.variants")],
            )
        enforce(
            self._context.limits,
            "metrics_variants_per_toggle",
            len(variants),
            f"variants of {path}",
            f"{path}.variants",
        )
        maximum = self._context.limits.client_field_length
        checked_variants = {}
        for variant, count in variants.items():
            variant_path = json_member(f"{path}.variants", str(variant))
            reported_text(variant, variant_path, maximum, required=True)
            checked_variants[str(variant)] = _count(count, variant_path)
        return (
            name,
            _count(counts.get("yes", 0), f"{path}.yes"),
            _count(counts.get("no", 0), f"{path}.no"),
            checked_variants,
        )

    def _plain_variants(self, variants: dict[Any, Any]) -> bool:
        """Whether every variant count is one `_checked_counts` would keep as sent."""
        limits = self._context.limits
        if len(variants) > limits.metrics_variants_per_toggle:
            return False
        maximum = limits.client_field_length
        return all(
            type(variant) is str
            and 0 < len(variant) <= maximum
            and type(count) is int
            and 0 <= count <= MAX_COUNT
            for variant, count in variants.items()
        )

    def flag_metrics(self, flag: str) -> list[FlagMetrics]:
        with self._context.read() as tx:
            return list(tx.list_flag_metrics(flag))

    def last_hour_by_flag(self) -> LastHourCounts:
        """Yes/no per application and flag over the hour buckets that overlap the last
        hour by the context clock (buckets are whole hours, so the current and the
        previous one), summed over environments and saturating at `MAX_COUNT`."""
        since = (self._context.clock() - dt.timedelta(hours=1)).astimezone(dt.UTC)
        since = since.replace(minute=0, second=0, microsecond=0)
        with self._context.read() as tx:
            found = tx.list_flag_metrics_since(since, limit=LAST_HOUR_ROWS + 1)
        rows = found[:LAST_HOUR_ROWS]
        totals: dict[tuple[str, str], tuple[int, int]] = {}
        for row in rows:
            yes, no = totals.get((row.app_name, row.flag), (0, 0))
            totals[row.app_name, row.flag] = (
                min(yes + row.yes, MAX_COUNT),
                min(no + row.no, MAX_COUNT),
            )
        counts = [
            AppFlagCounts(app, flag, yes, no) for (app, flag), (yes, no) in sorted(totals.items())
        ]
        return LastHourCounts(counts, len(found) > LAST_HOUR_ROWS, LAST_HOUR_ROWS)


def known_variants_only(
    toggles: dict[str, Any], known: Callable[[str], Collection[str]]
) -> dict[str, Any]:
    """Each flag's counts with only the variant names ``known`` gives it (a browser SDK can
    have been given no other, so nothing else it reports is kept); counts that are not
    plainly an object of objects are left whole for `Metrics.check_report` to refuse."""
    kept: dict[str, Any] = {}
    for name, counts in toggles.items():
        variants = counts.get("variants") if type(counts) is dict else None
        if type(variants) is dict and variants:
            names = known(name)
            if len(names) < len(variants):  # walk the shorter side: a flag has few variants
                counts = {**counts, "variants": {v: variants[v] for v in names if v in variants}}
            else:
                counts = {**counts, "variants": {v: n for v, n in variants.items() if v in names}}
        kept[name] = counts
    return kept
