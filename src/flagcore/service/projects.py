"""Projects and environments."""

from __future__ import annotations

import attrs

from flagcore.entities import Environment, Project, TagType
from flagcore.errors import Conflict, ErrorDetail, InvalidInput, NameConflict, NotFound
from flagcore.ports import Transaction
from flagcore.service._base import SYSTEM, ServiceBase
from flagcore.validation import check_name

__all__ = ["ProjectsMixin", "require_project"]

DEFAULT_PROJECT = Project("default", "Default", "Default project")
DEFAULT_ENVIRONMENTS = (
    Environment("development", "development", 2),
    Environment("production", "production", 3),
)


def require_project(tx: Transaction, project_id: str) -> Project:
    """The project, or `NotFound`: a project-scoped call on an unknown project is an error,
    not an empty answer (Unleash 8.2 lists an unknown project's flags as ``[]``)."""
    project = tx.get_project(project_id)
    if project is None:
        raise NotFound(f'there is no project "{project_id}"')
    return project


class ProjectsMixin(ServiceBase):
    def ensure_defaults(self) -> None:
        """Give a fresh store project ``default`` and environments development, production."""
        with self._read() as tx:
            if tx.list_projects() or tx.list_environments():
                return
        with self._unit() as tx:
            if not tx.get_project(DEFAULT_PROJECT.id):
                tx.save_project(attrs.evolve(DEFAULT_PROJECT, created_at=self.clock()))
            for environment in DEFAULT_ENVIRONMENTS:
                if not tx.get_environment(environment.name):
                    tx.save_environment(environment)
            if not tx.get_tag_type("simple"):
                tx.save_tag_type(TagType("simple", "Used to simplify filtering of features"))

    def list_projects(self) -> list[Project]:
        with self._read() as tx:
            return list(tx.list_projects())

    def get_project(self, project_id: str) -> Project:
        with self._read() as tx:
            return require_project(tx, project_id)

    def create_project(
        self, project_id: str, name: str, description: str | None = None, *, actor: str = SYSTEM
    ) -> Project:
        check_name(project_id, "project", "$.id")
        _check_display_name(name)
        with self._unit() as tx:
            if tx.get_project(project_id):
                raise NameConflict(f'a project with id "{project_id}" already exists')
            project = Project(project_id, name, description, self.clock())
            tx.save_project(project)
            self._event(
                tx, "project-created", actor, project=project_id, data=_project_data(project)
            )
        return project

    def update_project(
        self,
        project_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        actor: str = SYSTEM,
    ) -> Project:
        if name is not None:
            _check_display_name(name)
        with self._unit() as tx:
            before = require_project(tx, project_id)
            after = attrs.evolve(
                before,
                name=before.name if name is None else name,
                description=before.description if description is None else description,
            )
            tx.save_project(after)
            self._event(
                tx,
                "project-updated",
                actor,
                project=project_id,
                data=_project_data(after),
                pre_data=_project_data(before),
            )
        return after

    def delete_project(self, project_id: str, *, actor: str = SYSTEM) -> None:
        with self._unit() as tx:
            require_project(tx, project_id)
            active = tx.list_flags(project=project_id, archived=False)
            if active:
                raise Conflict(
                    f'project "{project_id}" still has {len(active)} active flag(s); '
                    "archive or move them first",
                    [ErrorDetail(f"active flag: {flag.name}") for flag in active[:10]],
                )
            tx.delete_project(project_id)
            self._event(tx, "project-deleted", actor, project=project_id)

    def list_environments(self) -> list[Environment]:
        with self._read() as tx:
            return list(tx.list_environments())

    def create_environment(
        self,
        name: str,
        type: str = "development",
        sort_order: int | None = None,
        *,
        actor: str = SYSTEM,
    ) -> Environment:
        check_name(name, "environment")
        with self._unit() as tx:
            if tx.get_environment(name):
                raise NameConflict(f'an environment named "{name}" already exists')
            order = sort_order
            if order is None:
                order = max((e.sort_order for e in tx.list_environments()), default=0) + 1
            environment = Environment(name, type, order)
            tx.save_environment(environment)
            self._event(tx, "environment-created", actor, environment=name, data={"type": type})
        return environment


def _check_display_name(name: object) -> None:
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput("a name must not be empty", [ErrorDetail("must not be empty", "$.name")])


def _project_data(project: Project) -> dict[str, object]:
    return {"id": project.id, "name": project.name, "description": project.description}
