"""`flagcore.ports.MetricsRepository`: metric buckets and SDK instances."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterable, Mapping, Sequence

import attrs
import orjson

from flagcore.entities import (
    ClientInstance,
    FlagMetrics,
)
from flagcore_sql import mapping
from flagcore_sql.parts.base import IN_CHUNK, SqlPart
from flagcore_sql.session import Row

__all__ = ["MetricsQueries"]


class MetricsQueries(SqlPart):
    """The queries of `flagcore.ports.MetricsRepository`."""

    def add_flag_metrics(
        self,
        rows: Iterable[FlagMetrics],
        *,
        max_new: int | None = None,
        max_variants: int | None = None,
    ) -> int:
        return self._add_buckets("flag_metrics", rows, max_new, max_variants)

    def add_daily_flag_metrics(
        self, rows: Iterable[FlagMetrics], *, max_variants: int | None = None
    ) -> int:
        return self._add_buckets("flag_metrics_daily", rows, None, max_variants)

    def _add_buckets(
        self,
        table: str,
        rows: Iterable[FlagMetrics],
        max_new: int | None,
        max_variants: int | None,
    ) -> int:
        """Both tables have the same columns (m022): ``hour`` is a day's midnight in the
        daily one."""
        yes = self._dialect.saturating_sum(f"{table}.yes", "excluded.yes")
        no = self._dialect.saturating_sum(f"{table}.no", "excluded.no")
        created = 0
        for row in rows:
            key = [row.flag, row.app_name, row.environment, mapping.time_text(row.hour)]
            current = self._one(
                f"SELECT variants FROM {table} WHERE flag = ? AND app_name = ? "
                "AND environment = ? AND hour = ?",
                key,
            )
            if current is None:
                if max_new is not None and created >= max_new:
                    continue
                created += 1
            variants = {} if current is None else orjson.loads(current["variants"])
            for name, count in row.variants.items():
                if name in variants or max_variants is None or len(variants) < max_variants:
                    variants[name] = min(variants.get(name, 0) + count, mapping.MAX_COUNT)
            self._run(
                f"INSERT INTO {table} (flag, app_name, environment, hour, yes, no, variants) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(flag, app_name, environment, hour) "
                f"DO UPDATE SET yes = {yes}, no = {no}, variants = excluded.variants",
                [*key, row.yes, row.no, mapping.dumps(variants)],
            )
        return created

    def list_flag_metrics(
        self, flag: str, *, since: dt.datetime | None = None
    ) -> Sequence[FlagMetrics]:
        return self._buckets_of("flag_metrics", flag, since)

    def list_daily_flag_metrics(
        self, flag: str, *, since: dt.datetime | None = None
    ) -> Sequence[FlagMetrics]:
        return self._buckets_of("flag_metrics_daily", flag, since)

    def _buckets_of(self, table: str, flag: str, since: dt.datetime | None) -> list[FlagMetrics]:
        # Whole-hour UTC ISO text: text order is time order (see list_flag_metrics_since).
        return [
            _flag_metrics(row)
            for row in self._rows(
                f"SELECT * FROM {table} WHERE flag = ? AND hour >= ? "
                "ORDER BY hour, app_name, environment",
                [flag, "" if since is None else mapping.time_text(since)],
            )
        ]

    def rename_usage_environment(self, old: str, new: str) -> int:
        """Buckets whose key is free under ``new`` move in one statement; those that meet
        one there are taken out and added to it (`_add_buckets`), so counts add up."""
        moved = 0
        for table in ("flag_metrics", "flag_metrics_daily"):
            moved += self._run(
                f"UPDATE {table} SET environment = ? WHERE environment = ? AND NOT EXISTS "
                f"(SELECT 1 FROM {table} held WHERE held.flag = {table}.flag "
                f"AND held.app_name = {table}.app_name AND held.environment = ? "
                f"AND held.hour = {table}.hour)",
                [new, old, new],
            )
            meeting = [
                attrs.evolve(_flag_metrics(row), environment=new)
                for row in self._rows(
                    f"DELETE FROM {table} WHERE environment = ? RETURNING *", [old]
                )
            ]
            self._add_buckets(table, meeting, None, None)
            moved += len(meeting)
        moved += self._run(
            "UPDATE client_instances SET environment = ? WHERE environment = ?", [new, old]
        )
        return moved

    def take_flag_metrics_before(self, hour: dt.datetime, limit: int) -> Sequence[FlagMetrics]:
        # DELETE ... RETURNING: a row two transactions both chose is returned by the one
        # that deleted it (PostgreSQL re-checks a row another transaction deleted and
        # skips it; SQLite has one writer), so a roll-up never counts a bucket twice.
        row_id = self._dialect.row_id
        return [
            _flag_metrics(row)
            for row in self._rows(
                f"DELETE FROM flag_metrics WHERE {row_id} IN (SELECT {row_id} FROM "
                "flag_metrics WHERE hour < ? ORDER BY hour LIMIT ?) RETURNING *",
                [mapping.time_text(hour), limit],
            )
        ]

    def list_flag_metrics_since(self, hour: dt.datetime, *, limit: int) -> Sequence[FlagMetrics]:
        # Hours are stored as whole-hour UTC ISO text, so text order is time order (as
        # retention's ``hour < ?`` relies on) on SQLite and PostgreSQL alike.
        return [
            _flag_metrics(row)
            for row in self._rows(
                "SELECT * FROM flag_metrics WHERE hour >= ? "
                "ORDER BY flag, app_name, environment, hour LIMIT ?",
                [mapping.time_text(hour), limit],
            )
        ]

    def flag_projects(self, names: Collection[str]) -> Mapping[str, str]:
        found: dict[str, str] = {}
        wanted = list(names)
        for start in range(0, len(wanted), IN_CHUNK):
            chunk = wanted[start : start + IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT name, project FROM flags WHERE name IN ({marks})"
            for row in self._rows(sql, chunk):
                found[row["name"]] = row["project"]
        return found

    def save_client_instance(self, instance: ClientInstance, *, create: bool = True) -> bool:
        known = self._one(
            "SELECT 1 FROM client_instances WHERE app_name = ? AND instance_id = ?",
            [instance.app_name, instance.instance_id],
        )
        if known is None and not create:
            return False
        self._run(
            "INSERT INTO client_instances (app_name, instance_id, environment, sdk_version, "
            "strategies, started, interval, last_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(app_name, instance_id) DO UPDATE SET "
            "environment = coalesce(excluded.environment, client_instances.environment), "
            "sdk_version = coalesce(excluded.sdk_version, client_instances.sdk_version), "
            "strategies = CASE WHEN excluded.strategies = '[]' THEN client_instances.strategies "
            "ELSE excluded.strategies END, "
            "started = coalesce(excluded.started, client_instances.started), "
            "interval = coalesce(excluded.interval, client_instances.interval), "
            "last_seen = excluded.last_seen",
            [
                instance.app_name,
                instance.instance_id,
                instance.environment,
                instance.sdk_version,
                mapping.dumps(list(instance.strategies)),
                mapping.time_text(instance.started),
                instance.interval,
                mapping.time_text(instance.last_seen),
            ],
        )
        return known is None

    def list_client_instances(self) -> Sequence[ClientInstance]:
        return [
            ClientInstance(
                row["app_name"],
                row["instance_id"],
                row["environment"],
                row["sdk_version"],
                tuple(orjson.loads(row["strategies"])),
                mapping.parse_time(row["started"]),
                row["interval"],
                mapping.required_time(row["last_seen"]),
            )
            for row in self._rows("SELECT * FROM client_instances ORDER BY app_name, instance_id")
        ]


def _flag_metrics(row: Row) -> FlagMetrics:
    return FlagMetrics(
        row["flag"],
        row["app_name"],
        row["environment"],
        mapping.required_time(row["hour"]),
        row["yes"],
        row["no"],
        orjson.loads(row["variants"]),
    )
