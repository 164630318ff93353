"""`flagcore.ports.FlagRepository`: flags and their per-environment state."""

from __future__ import annotations

from collections.abc import Sequence

from flagcore.entities import (
    FlagDefinition,
    FlagEnvironment,
)
from flagcore.model import Dependency, Variant
from flagcore.wire import (
    converter,
    structure_dependencies,
)
from flagcore_sql import mapping
from flagcore_sql.entity_tables import Column, EntityTable
from flagcore_sql.parts.base import SqlPart

__all__ = ["FLAGS", "FlagQueries"]

# Flags keep one column per field of `FlagDefinition` (a new plain field needs only its
# migration); dependencies are read through the wire's own reader, as everywhere.
FLAGS = EntityTable(
    FlagDefinition,
    "flags",
    key=("name",),
    kept=("created_at",),
    columns={
        "dependencies": Column(
            "dependencies",
            "dependencies",
            lambda value: mapping.dumps(converter.unstructure(value, tuple[Dependency, ...])),
            lambda text: structure_dependencies(mapping.loads_list(text)),
        )
    },
)


class FlagQueries(SqlPart):
    """The queries of `flagcore.ports.FlagRepository`."""

    def get_flag(self, name: str) -> FlagDefinition | None:
        row = self._one("SELECT * FROM flags WHERE name = ?", [name])
        return None if row is None else FLAGS.from_row(row)

    def list_flags(
        self, *, project: str | None = None, archived: bool | None = False
    ) -> Sequence[FlagDefinition]:
        archived_sql = {True: "archived_at IS NOT NULL", False: "archived_at IS NULL"}
        where_sql, params = mapping.where({"project = ?": project})
        if archived is not None:
            where_sql += f" AND {archived_sql[archived]}"
        sql = f"SELECT * FROM flags WHERE {where_sql} ORDER BY created_at, name"
        return [FLAGS.from_row(row) for row in self._rows(sql, params)]

    def save_flag(self, flag: FlagDefinition) -> None:
        self._run(FLAGS.upsert, FLAGS.values(flag))

    def delete_flag(self, name: str) -> None:
        self._run("DELETE FROM flags WHERE name = ?", [name])

    def get_flag_environment(self, flag: str, environment: str) -> FlagEnvironment | None:
        row = self._one(
            "SELECT * FROM flag_environments WHERE flag = ? AND environment = ?",
            [flag, environment],
        )
        return None if row is None else mapping.flag_environment_from_row(row)

    def list_flag_environments(
        self, *, flag: str | None = None, environment: str | None = None
    ) -> Sequence[FlagEnvironment]:
        where_sql, params = mapping.where({"flag = ?": flag, "environment = ?": environment})
        sql = f"SELECT * FROM flag_environments WHERE {where_sql} ORDER BY flag, environment"
        return [mapping.flag_environment_from_row(row) for row in self._rows(sql, params)]

    def save_flag_environment(self, state: FlagEnvironment) -> None:
        self._run(
            "INSERT INTO flag_environments (flag, environment, enabled, variants) "
            "VALUES (?, ?, ?, ?) ON CONFLICT(flag, environment) DO UPDATE SET "
            "enabled = excluded.enabled, variants = excluded.variants",
            [
                state.flag,
                state.environment,
                state.enabled,
                mapping.dumps(converter.unstructure(state.variants, tuple[Variant, ...])),
            ],
        )
