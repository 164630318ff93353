"""The in-memory store: the reference implementation of `flagcore.ports`.

It implements the generic keyed repository (`flagcore.ports.Records`) over the table
descriptions of `flagcore.tables`, the metric buckets and retention, and inherits every
other method of the port from `flagcore.repositories.KeptEntities`.
Every value is frozen, so a table is a plain dict of values. A transaction holds the
store's lock and keeps an undo log (table, key, previous value): commit drops the log,
rollback replays it backwards. That makes the memory store transactional in the same
way the durable stores are, so one contract suite covers all of them.
"""

from __future__ import annotations

import datetime as dt
import functools
import operator
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import attrs

from flagcore.entities import (
    ClientInstance,
    FlagMetrics,
)
from flagcore.errors import Conflict
from flagcore.repositories import KeptEntities
from flagcore.tables import IS_NULL, NOT_NULL, TABLES, Below, Table

__all__ = ["MemoryStore"]

_MISSING = object()
_MAX_COUNT = 2**63 - 1  # as in the SQL stores: sums of metric counts stop there
_TABLES = (
    *(table.name for table in TABLES),
    "metrics",
    "instances",
    "counters",
    "daily_metrics",
)
_E = TypeVar("_E")


def _where(rows: Iterable[Any], where: Mapping[str, Any]) -> list[Any]:
    """The rows meeting every condition, one comprehension per condition in the given
    order (this runs over every row of a table for each client snapshot and each strategy
    added: the first condition, usually the most selective, sees every row)."""
    kept = rows
    for path, condition in where.items():
        kept = _matching(kept, path, condition)
    return kept if isinstance(kept, list) else list(kept)


def _matching(rows: Iterable[Any], path: str, condition: Any) -> list[Any]:
    if condition is IS_NULL or condition is NOT_NULL:
        return _filter(path, "is not" if condition.present else "is")(rows, None)
    if isinstance(condition, Below):
        return _filter(path, "<")(rows, condition.value)
    return _filter(path, "==")(rows, condition)


@functools.cache
def _filter(path: str, test: str) -> Callable[[Iterable[Any], Any], list[Any]]:
    """``[row for row in rows if row.<path> <test> value]``, generated once per path and
    test: attribute access in the comprehension itself, no call per row."""
    scope: dict[str, Any] = {}
    source = (
        f"def kept(rows, value):\n    return [row for row in rows if row.{path} {test} value]\n"
    )
    exec(source, scope)
    kept: Callable[[Iterable[Any], Any], list[Any]] = scope["kept"]
    return kept


@functools.cache
def _getter(path: str) -> Callable[[Any], Any]:
    return operator.attrgetter(path)


def _none_first(read: Callable[[Any], Any]) -> Callable[[Any], tuple[bool, Any]]:
    return lambda row: ((value := read(row)) is not None, value)  # as SQLite orders NULL


@functools.cache
def _one_sort(order: tuple[str, ...]) -> tuple[Callable[[Any], Any], bool] | None:
    """The key and direction of a single sort by ``order``, if every path goes one way."""
    directions = {path.startswith("-") for path in order}
    if len(directions) != 1:
        return None
    return operator.attrgetter(*(path.lstrip("-") for path in order)), directions.pop()


def _in_order(table: Table[Any], rows: list[Any]) -> list[Any]:
    """``rows`` in ``table.order``: one sort when every path goes one way; else, or when a
    value is None, a stable sort per path, the last path first."""
    if len(rows) < 2:
        return rows
    one = _one_sort(table.order)
    if one is not None:
        try:
            return sorted(rows, key=one[0], reverse=one[1])
        except TypeError:  # None beside a value: ordered as SQL orders NULL, below
            pass
    for path in reversed(table.order):
        rows.sort(key=_none_first(_getter(path.lstrip("-"))), reverse=path.startswith("-"))
    return rows


class MemoryStore:
    """Keeps everything in dicts; fast, not durable. Thread-safe (one transaction at a time)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._tables: dict[str, dict[Any, Any]] = {name: {} for name in _TABLES}
        # The revision as of the last commit: `revision` reads it without the lock, so it
        # never waits for a unit in progress, and never sees one that may roll back.
        self._revision = 0

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[MemoryTransaction]:
        with self._lock:
            tx = MemoryTransaction(self._tables)
            try:
                yield tx
            except BaseException:
                tx.rollback()
                raise
            self._revision = int(self._tables["counters"].get("events", 0))

    def revision(self) -> int:
        return self._revision

    def close(self) -> None:
        """Nothing to release: the port asks every store for ``close``."""


class MemoryTransaction(KeptEntities):
    """One unit of work over the store's tables, undone on failure."""

    def __init__(self, tables: dict[str, dict[Any, Any]]) -> None:
        self._tables = tables
        self._undo: list[tuple[str, Any, Any]] = []

    # --- plumbing ---
    def _put(self, table: str, key: Any, value: Any) -> None:
        rows = self._tables[table]
        self._undo.append((table, key, rows.get(key, _MISSING)))
        rows[key] = value

    def _drop(self, table: str, key: Any) -> None:
        rows = self._tables[table]
        if key in rows:
            self._undo.append((table, key, rows[key]))
            del rows[key]

    def _drop_where(self, table: str, keep: Callable[[Any, Any], bool]) -> None:
        for key in [key for key, value in self._tables[table].items() if not keep(key, value)]:
            self._drop(table, key)

    def _next_id(self, counter: str) -> int:
        value = int(self._tables["counters"].get(counter, 0)) + 1
        self._put("counters", counter, value)
        return value

    def rollback(self) -> None:
        for table, key, previous in reversed(self._undo):
            if previous is _MISSING:
                self._tables[table].pop(key, None)
            else:
                self._tables[table][key] = previous
        self._undo.clear()

    # --- the generic repository (`flagcore.ports.Records`) ---
    def get_record(self, table: Table[_E], key: Any) -> _E | None:
        return self._tables[table.name].get(key)

    def list_records(
        self,
        table: Table[_E],
        where: Mapping[str, Any] | None = None,
        *,
        limit: int | None = None,
        offset: int = 0,
    ) -> Sequence[_E]:
        rows = _where(self._tables[table.name].values(), where or {})
        rows = _in_order(table, rows)
        return rows[offset:] if limit is None else rows[offset : offset + limit]

    def save_record(self, table: Table[_E], entity: _E) -> None:
        key = table.key_of(entity)
        self._check_unique(table, entity, key)
        self._put(table.name, key, entity)

    def delete_record(self, table: Table[_E], key: Any) -> None:
        if key not in self._tables[table.name]:
            return
        self._drop(table.name, key)
        for child in TABLES:
            for parent, path in child.deleted_with:
                if parent == table.name:
                    read = _getter(path)
                    rows = self._tables[child.name]
                    for doomed in [k for k, row in rows.items() if read(row) == key]:
                        self.delete_record(child, doomed)

    def create_record(self, table: Table[_E], entity: _E) -> _E:
        self._check_unique(table, entity, None)
        created = table.with_key(entity, self._next_id(table.name))
        self._put(table.name, table.key_of(created), created)
        return created

    def _check_unique(self, table: Table[Any], entity: Any, key: Any) -> None:
        for paths in table.unique:
            reads = [_getter(path) for path in paths]
            values = [read(entity) for read in reads]
            for other_key, other in self._tables[table.name].items():
                if other_key != key and [read(other) for read in reads] == values:
                    shown = ", ".join(f"{p}={v!r}" for p, v in zip(paths, values, strict=True))
                    raise Conflict(f"{table.name} already holds a row with {shown}")

    # --- metrics and instances ---
    def add_flag_metrics(
        self,
        rows: Iterable[FlagMetrics],
        *,
        max_new: int | None = None,
        max_variants: int | None = None,
    ) -> int:
        return self._add_buckets("metrics", rows, max_new, max_variants)

    def add_daily_flag_metrics(
        self, rows: Iterable[FlagMetrics], *, max_variants: int | None = None
    ) -> int:
        return self._add_buckets("daily_metrics", rows, None, max_variants)

    def _add_buckets(
        self,
        table: str,
        rows: Iterable[FlagMetrics],
        max_new: int | None,
        max_variants: int | None,
    ) -> int:
        created = 0
        for row in rows:
            key = (row.flag, row.app_name, row.environment, row.hour)
            current = self._tables[table].get(key)
            if current is None:
                if max_new is not None and created >= max_new:
                    continue
                created += 1
                current = attrs.evolve(row, yes=0, no=0, variants={})
            variants = dict(current.variants)
            for name, count in row.variants.items():
                if name in variants or max_variants is None or len(variants) < max_variants:
                    variants[name] = min(variants.get(name, 0) + count, _MAX_COUNT)
            row = attrs.evolve(
                current,
                yes=min(current.yes + row.yes, _MAX_COUNT),
                no=min(current.no + row.no, _MAX_COUNT),
                variants=variants,
            )
            self._put(table, key, row)
        return created

    def list_flag_metrics(
        self, flag: str, *, since: dt.datetime | None = None
    ) -> Sequence[FlagMetrics]:
        return self._buckets_of("metrics", flag, since)

    def list_daily_flag_metrics(
        self, flag: str, *, since: dt.datetime | None = None
    ) -> Sequence[FlagMetrics]:
        return self._buckets_of("daily_metrics", flag, since)

    def _buckets_of(self, table: str, flag: str, since: dt.datetime | None) -> list[FlagMetrics]:
        return sorted(
            (
                row
                for key, row in self._tables[table].items()
                if key[0] == flag and (since is None or row.hour >= since)
            ),
            key=lambda row: (row.hour, row.app_name, row.environment),
        )

    def rename_usage_environment(self, old: str, new: str) -> int:
        moved = 0
        for table in ("metrics", "daily_metrics"):
            rows = [row for row in self._tables[table].values() if row.environment == old]
            for row in rows:
                self._drop(table, (row.flag, row.app_name, old, row.hour))
            self._add_buckets(table, [attrs.evolve(r, environment=new) for r in rows], None, None)
            moved += len(rows)
        for key, instance in list(self._tables["instances"].items()):
            if instance.environment == old:
                self._put("instances", key, attrs.evolve(instance, environment=new))
                moved += 1
        return moved

    def take_flag_metrics_before(self, hour: dt.datetime, limit: int) -> Sequence[FlagMetrics]:
        doomed = sorted(
            (key for key, row in self._tables["metrics"].items() if row.hour < hour),
            key=lambda key: (key[3], key[0], key[1], key[2]),
        )[: max(0, limit)]
        taken = [self._tables["metrics"][key] for key in doomed]
        for key in doomed:
            self._drop("metrics", key)
        return taken

    def list_flag_metrics_since(self, hour: dt.datetime, *, limit: int) -> Sequence[FlagMetrics]:
        rows = (row for row in self._tables["metrics"].values() if row.hour >= hour)
        ordered = sorted(rows, key=lambda row: (row.flag, row.app_name, row.environment, row.hour))
        return ordered[:limit]

    def flag_projects(self, names: Collection[str]) -> Mapping[str, str]:
        flags = self._tables["flags"]
        return {name: flags[name].project for name in names if name in flags}

    def save_client_instance(self, instance: ClientInstance, *, create: bool = True) -> bool:
        """Merge: what a metrics post does not say (SDK version, ...) is kept from before."""
        key = (instance.app_name, instance.instance_id)
        before = self._tables["instances"].get(key)
        if before is None and not create:
            return False
        if before is not None:
            instance = attrs.evolve(
                instance,
                environment=instance.environment or before.environment,
                sdk_version=instance.sdk_version or before.sdk_version,
                strategies=instance.strategies or before.strategies,
                started=instance.started or before.started,
                interval=instance.interval if instance.interval is not None else before.interval,
            )
        self._put("instances", key, instance)
        return before is None

    def list_client_instances(self) -> Sequence[ClientInstance]:
        return [instance for _key, instance in sorted(self._tables["instances"].items())]

    # --- retention ---
    def _delete_oldest(self, table: str, old: Callable[[Any], bool], order: Any, limit: int) -> int:
        doomed = sorted(
            (key for key, row in self._tables[table].items() if old(row)),
            key=lambda key: order(self._tables[table][key]),
        )[: max(0, limit)]
        for key in doomed:
            self._drop(table, key)
        return len(doomed)

    def delete_flag_metrics_before(self, hour: dt.datetime, limit: int) -> int:
        return self._delete_oldest(
            "metrics", lambda row: row.hour < hour, lambda row: row.hour, limit
        )

    def delete_daily_flag_metrics_before(self, day: dt.datetime, limit: int) -> int:
        return self._delete_oldest(
            "daily_metrics", lambda row: row.hour < day, lambda row: row.hour, limit
        )

    def delete_client_instances_seen_before(self, time: dt.datetime, limit: int) -> int:
        return self._delete_oldest(
            "instances", lambda row: row.last_seen < time, lambda row: row.last_seen, limit
        )

    def delete_signals_before(self, time: dt.datetime, limit: int) -> int:
        return self._delete_oldest(
            "signals", lambda row: row.created_at < time, lambda row: row.id, limit
        )

    def delete_signals_beyond_newest(self, endpoint_id: int, keep: int, limit: int) -> int:
        ids = sorted(
            (row.id for row in self._tables["signals"].values() if row.endpoint_id == endpoint_id),
            reverse=True,
        )
        doomed = set(ids[keep:])
        return self._delete_oldest(
            "signals", lambda row: row.id in doomed, lambda row: row.id, limit
        )

    def delete_events_before(self, time: dt.datetime, limit: int) -> int:
        newest = max(self._tables["events"], default=None)
        return self._delete_oldest(
            "events",
            lambda row: row.created_at < time and row.id != newest,
            lambda row: row.id,
            limit,
        )
