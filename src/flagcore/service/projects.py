"""Projects: create, read, update, and delete (refused while a project has active flags)."""

from __future__ import annotations

import attrs

from flagcore.entities import Project
from flagcore.errors import Conflict, ErrorDetail, InvalidInput, NameConflict
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.lookups import require_project
from flagcore.validation import check_name, check_text
from flagcore.wire.event_data import ProjectData

__all__ = ["Projects", "require_project"]


class Projects:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def list_projects(self) -> list[Project]:
        with self._context.read() as tx:
            return list(tx.list_projects())

    def get_project(self, project_id: str) -> Project:
        with self._context.read() as tx:
            return require_project(tx, project_id)

    def create_project(
        self, project_id: str, name: str, description: str | None = None, *, actor: Actor = SYSTEM
    ) -> Project:
        actor = authorize(actor, "create_project")
        check_name(project_id, "project", "$.id")
        _check_display_name(name)
        check_text(description, "$.description")
        with self._context.unit() as tx:
            if tx.get_project(project_id):
                raise NameConflict(f'a project with id "{project_id}" already exists')
            project = Project(project_id, name, description, self._context.clock())
            tx.save_project(project)
            self._context.record_event(
                tx, "project-created", actor, project=project_id, data=ProjectData.of(project)
            )
        return project

    def update_project(
        self,
        project_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        actor: Actor = SYSTEM,
    ) -> Project:
        actor = authorize(actor, "update_project", project=project_id)
        if name is not None:
            _check_display_name(name)
        check_text(description, "$.description")
        with self._context.unit() as tx:
            before = require_project(tx, project_id)
            after = attrs.evolve(
                before,
                name=before.name if name is None else name,
                description=before.description if description is None else description,
            )
            tx.save_project(after)
            self._context.record_event(
                tx,
                "project-updated",
                actor,
                project=project_id,
                data=ProjectData.of(after),
                pre_data=ProjectData.of(before),
            )
        return after

    def delete_project(self, project_id: str, *, actor: Actor = SYSTEM) -> None:
        actor = authorize(actor, "delete_project", project=project_id)
        with self._context.unit() as tx:
            require_project(tx, project_id)
            active = tx.list_flags(project=project_id, archived=False)
            if active:
                raise Conflict(
                    f'project "{project_id}" still has {len(active)} active flag(s); '
                    "archive or move them first",
                    [ErrorDetail(f"active flag: {flag.name}") for flag in active[:10]],
                )
            tx.delete_project(project_id)
            self._context.record_event(tx, "project-deleted", actor, project=project_id)


def _check_display_name(name: object) -> None:
    check_text(name, "$.name", optional=False)
    assert isinstance(name, str)
    if not name.strip():
        raise InvalidInput("a name must not be empty", [ErrorDetail("must not be empty", "$.name")])
