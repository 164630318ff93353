"""The lookups every part makes inside its own transaction, each with the error that
names what is missing: an active flag, a project, an environment.

Plain functions of the port parts they read (any `Transaction` is all of them), so any
part uses them inside the unit it holds; `active_flag` reads `flagcore.ports.FlagLookups`.
"""

from __future__ import annotations

from flagcore.entities import FlagDefinition, Project
from flagcore.errors import NotFound
from flagcore.ports import FlagLookups, ProjectRepository

__all__ = ["active_flag", "require_environment", "require_project"]


def require_project(tx: ProjectRepository, project_id: str) -> Project:
    """The project, or `NotFound`: a project-scoped call on an unknown project is an error,
    not an empty answer (Unleash 8.2 lists an unknown project's flags as ``[]``)."""
    project = tx.get_project(project_id)
    if project is None:
        raise NotFound(f'there is no project "{project_id}"')
    return project


def require_environment(tx: ProjectRepository, environment: str) -> None:
    if tx.get_environment(environment) is None:
        raise NotFound(f'there is no environment "{environment}"')


def active_flag(tx: FlagLookups, project: str | None, name: str) -> FlagDefinition:
    """The active flag ``name`` (in ``project`` when one is given), or `NotFound` saying
    whether the project, the flag, or the flag's place is wrong."""
    flag = tx.get_flag(name)
    # A typo in a project name should say so, not look like a missing flag.
    misplaced = project is not None and (flag is None or flag.project != project)
    if misplaced and project is not None and tx.get_project(project) is None:
        raise NotFound(f'there is no project "{project}"')
    if flag is None or flag.archived:
        where = f' in project "{project}"' if project else ""
        raise NotFound(f'there is no active flag named "{name}"{where}')
    if project is not None and flag.project != project:
        raise NotFound(
            f'there is no flag named "{name}" in project "{project}" '
            f'(it is in project "{flag.project}")'
        )
    return flag
