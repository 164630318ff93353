"""`flagcore.ports.ProjectRepository`: projects and environments."""

from __future__ import annotations

from collections.abc import Sequence

from flagcore.entities import (
    Environment,
    Project,
)
from flagcore_sql import mapping
from flagcore_sql.parts.base import SqlPart

__all__ = ["ProjectQueries"]


class ProjectQueries(SqlPart):
    """The queries of `flagcore.ports.ProjectRepository`."""

    def get_project(self, project_id: str) -> Project | None:
        row = self._one("SELECT * FROM projects WHERE id = ?", [project_id])
        return None if row is None else mapping.project_from_row(row)

    def list_projects(self) -> Sequence[Project]:
        return [
            mapping.project_from_row(row)
            for row in self._rows("SELECT * FROM projects ORDER BY id")
        ]

    def save_project(self, project: Project) -> None:
        self._run(
            "INSERT INTO projects (id, name, description, created_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET name = excluded.name, "
            "description = excluded.description",
            [project.id, project.name, project.description, mapping.time_text(project.created_at)],
        )

    def delete_project(self, project_id: str) -> None:
        self._run("DELETE FROM projects WHERE id = ?", [project_id])

    def get_environment(self, name: str) -> Environment | None:
        row = self._one("SELECT * FROM environments WHERE name = ?", [name])
        return None if row is None else mapping.environment_from_row(row)

    def list_environments(self) -> Sequence[Environment]:
        return [
            mapping.environment_from_row(row)
            for row in self._rows("SELECT * FROM environments ORDER BY sort_order, name")
        ]

    def save_environment(self, environment: Environment) -> None:
        self._run(
            "INSERT INTO environments (name, type, sort_order, enabled) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(name) DO UPDATE SET type = excluded.type, "
            "sort_order = excluded.sort_order, enabled = excluded.enabled",
            [environment.name, environment.type, environment.sort_order, environment.enabled],
        )
