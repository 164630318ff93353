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
)
from flagcore_sql import mapping
from flagcore_sql.parts.base import SqlPart

__all__ = ["FlagQueries"]


class FlagQueries(SqlPart):
    """The queries of `flagcore.ports.FlagRepository`."""

    def get_flag(self, name: str) -> FlagDefinition | None:
        row = self._one("SELECT * FROM flags WHERE name = ?", [name])
        return None if row is None else mapping.flag_from_row(row)

    def list_flags(
        self, *, project: str | None = None, archived: bool | None = False
    ) -> Sequence[FlagDefinition]:
        archived_sql = {True: "archived_at IS NOT NULL", False: "archived_at IS NULL"}
        where_sql, params = mapping.where({"project = ?": project})
        if archived is not None:
            where_sql += f" AND {archived_sql[archived]}"
        sql = f"SELECT * FROM flags WHERE {where_sql} ORDER BY created_at, name"
        return [mapping.flag_from_row(row) for row in self._rows(sql, params)]

    def save_flag(self, flag: FlagDefinition) -> None:
        self._run(
            "INSERT INTO flags (name, project, type, description, stale, impression_data, "
            "created_at, archived_at, dependencies) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(name) DO UPDATE SET project = excluded.project, type = excluded.type, "
            "description = excluded.description, stale = excluded.stale, "
            "impression_data = excluded.impression_data, archived_at = excluded.archived_at, "
            "dependencies = excluded.dependencies",
            [
                flag.name,
                flag.project,
                flag.type,
                flag.description,
                flag.stale,
                flag.impression_data,
                mapping.time_text(flag.created_at),
                mapping.time_text(flag.archived_at),
                mapping.dumps(converter.unstructure(flag.dependencies, tuple[Dependency, ...])),
            ],
        )

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
