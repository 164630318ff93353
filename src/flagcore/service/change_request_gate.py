"""Where change requests are on, a direct change does not take effect (issue 30).

Every direct write that a change request stands for (a flag switched in an environment,
its strategies, variants, dependencies; a segment used there) asks `refuse_direct_change`
(or `refuse_segment_change`) inside its unit of work before it writes. As in Unleash, a
person holding SKIP_CHANGE_REQUEST there (Admin, and admin API tokens, hold every
permission) goes through; the server's own trusted callers (a plain-string actor: imports,
action sets, the CLI) go through too: they are not a person's edit (docs/change-requests.md).
"""

from __future__ import annotations

from typing import Protocol

from flagcore.change_requests import ChangeRequestSettings
from flagcore.errors import ErrorDetail, Forbidden
from flagcore.permissions import Permission
from flagcore.ports import FlagRepository, ProjectRepository, Records, StrategyRepository
from flagcore.service.context import Actor
from flagcore.tables import CHANGE_REQUEST_SETTINGS

__all__ = [
    "change_requests_on",
    "refuse_direct_change",
    "refuse_flag_change",
    "refuse_segment_change",
]


class _Environments(Records, ProjectRepository, Protocol):
    """The settings of every environment of a project."""


class _SegmentUsers(Records, FlagRepository, StrategyRepository, Protocol):
    """The settings where the flags whose strategies use a segment live."""


def change_requests_on(tx: Records, project: str, environment: str) -> bool:
    settings: ChangeRequestSettings | None = tx.get_record(
        CHANGE_REQUEST_SETTINGS, (project, environment)
    )
    return settings is not None and settings.enabled


def refuse_direct_change(tx: Records, actor: Actor, project: str, environment: str) -> None:
    """`Forbidden` naming the change-request route, when change requests are on there and
    ``actor`` may not skip them."""
    if isinstance(actor, str) or not change_requests_on(tx, project, environment):
        return
    if actor.may(Permission.SKIP_CHANGE_REQUEST, project=project, environment=environment):
        return
    route = f"/api/admin/projects/{project}/environments/{environment}/change-requests"
    raise Forbidden(
        f"Change requests are enabled in project '{project}', environment '{environment}': "
        f"this change needs approval. Add it to a change request instead (POST {route}).",
        [ErrorDetail(f"needs {Permission.SKIP_CHANGE_REQUEST.value} to change it directly")],
    )


def refuse_flag_change(tx: _Environments, actor: Actor, project: str) -> None:
    """For a change to the whole flag (archiving it, its dependencies), which is not per
    environment: refused where change requests are on in any environment of the project
    (as Unleash), naming the route of the one Unleash's UI drafts in (of type production
    first)."""
    environments = sorted(tx.list_environments(), key=lambda e: e.type != "production")
    for environment in environments:
        refuse_direct_change(tx, actor, project, environment.name)


def refuse_segment_change(tx: _SegmentUsers, actor: Actor, segment_id: int) -> None:
    """A segment used by a strategy in an environment under change requests is changed
    through a request too (Unleash does the same)."""
    if isinstance(actor, str):
        return
    seen: set[tuple[str, str]] = set()
    for placement in tx.strategies_using_segment(segment_id):
        flag = tx.get_flag(placement.flag)
        if flag is None or flag.archived:
            continue
        where = (flag.project, placement.environment)
        if where not in seen:
            seen.add(where)
            refuse_direct_change(tx, actor, *where)
