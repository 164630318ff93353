"""Roles and project access, in Unleash's shape (``/api/admin/roles``, a project's access
list): custom roles made of permission names, and users and groups given project roles.

The predefined roles (Admin, Editor, Viewer, Owner, Member) are code and read-only; a
custom role is stored with an id after theirs. A project role's permissions must act in
a project (`flagcore.permissions.PROJECT_PERMISSIONS`), and only the environment
permissions may name environments, which must exist.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

import attrs

from flagcore.errors import Conflict, ErrorDetail, InvalidInput, NameConflict, NotFound
from flagcore.people import RootRole, User
from flagcore.permissions import (
    ENVIRONMENT_PERMISSIONS,
    PREDEFINED_ROLES,
    PROJECT_PERMISSIONS,
    Grant,
    GroupRoleAssignment,
    Role,
    RoleAssignment,
    RoleType,
    grants_of,
)
from flagcore.ports import KeptWrite, ProjectRepository, Records
from flagcore.principals import Principal
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.groups import GroupView, group_view
from flagcore.service.lookups import require_project
from flagcore.tables import (
    GROUP_MEMBERS,
    GROUP_ROLE_ASSIGNMENTS,
    GROUPS,
    ROLE_ASSIGNMENTS,
    ROLES,
    USERS,
    Table,
)
from flagcore.validation import check_text
from flagcore.wire.event_data import ProjectAccessData, RoleData

__all__ = ["NewRole", "ProjectAccess", "Roles", "principal_in", "root_role_of"]

_CUSTOM_TYPES = (RoleType.ROOT_CUSTOM, RoleType.CUSTOM)


_Assignment = TypeVar("_Assignment", RoleAssignment, GroupRoleAssignment)


class _Access(Records, ProjectRepository, Protocol):
    """Roles, users and groups, and the projects they are given roles in."""


@attrs.frozen
class NewRole:
    """A custom role as asked for: ``type`` ``custom`` (a project role) or ``root-custom``."""

    name: str
    type: RoleType
    description: str
    grants: tuple[Grant, ...]


@attrs.frozen
class ProjectAccess:
    """Who has which roles in a project (users and groups), and the project roles there
    are to give. A group comes with its members."""

    users: tuple[tuple[User, tuple[int, ...]], ...]
    roles: tuple[Role, ...]
    groups: tuple[tuple[GroupView, tuple[int, ...]], ...] = ()


class Roles:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def list_roles(self) -> list[Role]:
        with self._context.read() as tx:
            return [*PREDEFINED_ROLES.values(), *tx.list_records(ROLES)]

    def custom_root_roles(self) -> list[Role]:
        """The custom root roles, which a user or service account may hold as their root
        role."""
        with self._context.read() as tx:
            return [r for r in tx.list_records(ROLES) if r.type is RoleType.ROOT_CUSTOM]

    def get_role(self, role_id: int) -> Role:
        with self._context.read() as tx:
            return _role(tx, role_id)

    def create_role(self, new: NewRole, *, actor: Actor = SYSTEM) -> Role:
        actor = authorize(actor, "create_role")
        with self._context.unit() as tx:
            _check_role(tx, new, exclude=None)
            stored = [role.id for role in tx.list_records(ROLES)]
            role = Role(
                max([max(PREDEFINED_ROLES), *stored]) + 1,
                new.name,
                new.type,
                new.description,
                grants_of(new.grants),
            )
            tx.save_record(ROLES, role)
            self._context.record_event(tx, "role-created", actor, data=RoleData.of(role))
        return role

    def update_role(self, role_id: int, new: NewRole, *, actor: Actor = SYSTEM) -> Role:
        """Replace a custom role's name, description and permissions; its type stays."""
        actor = authorize(actor, "update_role")
        with self._context.unit() as tx:
            before = _custom_role(tx, role_id)
            if new.type is not before.type:
                raise InvalidInput(
                    "a role's type cannot change",
                    [ErrorDetail(f"must stay {before.type.value}", "$.type")],
                )
            _check_role(tx, new, exclude=role_id)
            after = attrs.evolve(
                before, name=new.name, description=new.description, grants=grants_of(new.grants)
            )
            tx.save_record(ROLES, after)
            self._context.record_event(
                tx, "role-updated", actor, data=RoleData.of(after), pre_data=RoleData.of(before)
            )
        return after

    def delete_role(self, role_id: int, *, actor: Actor = SYSTEM) -> None:
        """Refused while a user holds the role (Unleash: "role is in use")."""
        actor = authorize(actor, "delete_role")
        with self._context.unit() as tx:
            role = _custom_role(tx, role_id)
            as_root = bool(tx.list_records(USERS, where={"custom_root_role": role_id}, limit=1))
            in_projects = bool(
                tx.list_records(ROLE_ASSIGNMENTS, where={"role_id": role_id}, limit=1)
            )
            by_groups = bool(
                tx.list_records(GROUPS, where={"root_role": role_id}, limit=1)
                or tx.list_records(GROUP_ROLE_ASSIGNMENTS, where={"role_id": role_id}, limit=1)
            )
            if as_root or in_projects or by_groups:
                raise Conflict(
                    f'role "{role.name}" is given to users or groups; take it from them first'
                )
            tx.delete_record(ROLES, role_id)
            self._context.record_event(tx, "role-deleted", actor, pre_data=RoleData.of(role))

    def project_access(self, project: str) -> ProjectAccess:
        with self._context.read() as tx:
            require_project(tx, project)
            held: dict[int, list[int]] = {}
            for given in tx.list_records(ROLE_ASSIGNMENTS, where={"project": project}):
                held.setdefault(given.user_id, []).append(given.role_id)
            users = []
            for user_id, role_ids in held.items():
                user = tx.get_record(USERS, user_id)
                if user is not None:
                    users.append((user, tuple(role_ids)))
            roles = [r for r in self._all_roles(tx) if r.is_project_role]
            by_group: dict[int, list[int]] = {}
            for given_to in tx.list_records(GROUP_ROLE_ASSIGNMENTS, where={"project": project}):
                by_group.setdefault(given_to.group_id, []).append(given_to.role_id)
            groups = []
            for group_id, role_ids in by_group.items():
                group = tx.get_record(GROUPS, group_id)
                if group is not None:
                    groups.append((group_view(tx, group), tuple(role_ids)))
            return ProjectAccess(tuple(users), tuple(roles), tuple(groups))

    def add_project_access(
        self,
        project: str,
        user_ids: Sequence[int],
        role_ids: Sequence[int],
        *,
        group_ids: Sequence[int] = (),
        actor: Actor = SYSTEM,
    ) -> None:
        """Give each user and each group each role in ``project`` (Unleash's
        ``POST …/access``)."""
        with self._context.unit() as tx:
            actor = authorize(actor, "add_project_access", project=project)
            self._check_access(tx, project, user_ids, role_ids, group_ids)
            for user_id in user_ids:
                for role_id in role_ids:
                    tx.save_record(ROLE_ASSIGNMENTS, RoleAssignment(project, user_id, role_id))
            for group_id in group_ids:
                for role_id in role_ids:
                    tx.save_record(
                        GROUP_ROLE_ASSIGNMENTS, GroupRoleAssignment(project, group_id, role_id)
                    )
            self._record_access(tx, project, actor, user_ids)
            self._record_group_access(tx, project, actor, group_ids)

    def set_group_project_roles(
        self, project: str, group_id: int, role_ids: Sequence[int], *, actor: Actor = SYSTEM
    ) -> None:
        """A group's roles in ``project`` become exactly ``role_ids`` (none: no access)."""
        with self._context.unit() as tx:
            actor = authorize(actor, "set_group_project_roles", project=project)
            self._check_access(tx, project, (), role_ids, [group_id])
            for given in tx.list_records(
                GROUP_ROLE_ASSIGNMENTS, where={"project": project, "group_id": group_id}
            ):
                tx.delete_record(GROUP_ROLE_ASSIGNMENTS, GROUP_ROLE_ASSIGNMENTS.key_of(given))
            for role_id in role_ids:
                tx.save_record(
                    GROUP_ROLE_ASSIGNMENTS, GroupRoleAssignment(project, group_id, role_id)
                )
            self._record_group_access(tx, project, actor, [group_id])

    def set_user_project_roles(
        self, project: str, user_id: int, role_ids: Sequence[int], *, actor: Actor = SYSTEM
    ) -> None:
        """A user's roles in ``project`` become exactly ``role_ids`` (none: no access)."""
        with self._context.unit() as tx:
            actor = authorize(actor, "set_user_project_roles", project=project)
            self._check_access(tx, project, [user_id], role_ids)
            for given in tx.list_records(
                ROLE_ASSIGNMENTS, where={"project": project, "user_id": user_id}
            ):
                tx.delete_record(ROLE_ASSIGNMENTS, ROLE_ASSIGNMENTS.key_of(given))
            for role_id in role_ids:
                tx.save_record(ROLE_ASSIGNMENTS, RoleAssignment(project, user_id, role_id))
            self._record_access(tx, project, actor, [user_id])

    def principal_of(self, user: User) -> Principal:
        """``user`` with their root role and every project role they were given."""
        with self._context.read() as tx:
            return principal_in(tx, user)

    @staticmethod
    def _all_roles(tx: Records) -> list[Role]:
        return [*PREDEFINED_ROLES.values(), *tx.list_records(ROLES)]

    def _check_access(
        self,
        tx: _Access,
        project: str,
        user_ids: Sequence[int],
        role_ids: Sequence[int],
        group_ids: Sequence[int] = (),
    ) -> None:
        require_project(tx, project)
        details = [
            ErrorDetail(f"no user with id {user_id}", f"$.users[{index}]")
            for index, user_id in enumerate(user_ids)
            if tx.get_record(USERS, user_id) is None
        ]
        details += [
            ErrorDetail(f"no group with id {group_id}", f"$.groups[{index}]")
            for index, group_id in enumerate(group_ids)
            if tx.get_record(GROUPS, group_id) is None
        ]
        project_roles = {r.id for r in self._all_roles(tx) if r.is_project_role}
        details += [
            ErrorDetail(f"no project role with id {role_id}", f"$.roles[{index}]")
            for index, role_id in enumerate(role_ids)
            if role_id not in project_roles
        ]
        if details:
            raise InvalidInput("project access names unknown users, groups or roles", details)

    def _record_access(
        self, tx: KeptWrite, project: str, actor: str, user_ids: Sequence[int]
    ) -> None:
        for user_id in user_ids:
            roles = self._held(tx, ROLE_ASSIGNMENTS, project, "user_id", user_id)
            self._record_access_event(tx, project, actor, ProjectAccessData(user_id, None, roles))

    def _record_group_access(
        self, tx: KeptWrite, project: str, actor: str, group_ids: Sequence[int]
    ) -> None:
        for group_id in group_ids:
            roles = self._held(tx, GROUP_ROLE_ASSIGNMENTS, project, "group_id", group_id)
            self._record_access_event(tx, project, actor, ProjectAccessData(None, group_id, roles))

    @staticmethod
    def _held(
        tx: KeptWrite,
        table: Table[_Assignment],
        project: str,
        column: str,
        holder: int,
    ) -> tuple[int, ...]:
        """The role ids a user or a group holds in ``project`` (``column`` names which)."""
        rows = tx.list_records(table, where={"project": project, column: holder})
        return tuple(row.role_id for row in rows)

    def _record_access_event(
        self, tx: KeptWrite, project: str, actor: str, data: ProjectAccessData
    ) -> None:
        self._context.record_event(tx, "project-access-updated", actor, project=project, data=data)


def _role(tx: Records, role_id: int) -> Role:
    role = PREDEFINED_ROLES.get(role_id) or tx.get_record(ROLES, role_id)
    if role is None:
        raise NotFound(f"Could not find role with id {role_id}")
    return role


def _custom_role(tx: Records, role_id: int) -> Role:
    role = _role(tx, role_id)
    if role.predefined:
        raise InvalidInput(
            f'"{role.name}" is a predefined role: it cannot be changed or deleted',
            [ErrorDetail("a predefined role", "$.id")],
        )
    return role


def _check_role(tx: _Access, new: NewRole, exclude: int | None) -> None:
    details: list[ErrorDetail] = []
    if not isinstance(new.name, str) or not new.name.strip():
        details.append(ErrorDetail("must not be empty", "$.name"))
    if new.type not in _CUSTOM_TYPES:
        details.append(ErrorDetail("custom or root-custom", "$.type"))
    check_text(new.description, "$.description")
    environments = {e.name for e in tx.list_environments()}
    for index, grant in enumerate(new.grants):
        path = f"$.permissions[{index}]"
        if new.type is RoleType.CUSTOM and grant.permission not in PROJECT_PERMISSIONS:
            details.append(ErrorDetail("not a project permission", f"{path}.name"))
        if grant.environment is None:
            continue
        if new.type is not RoleType.CUSTOM or grant.permission not in ENVIRONMENT_PERMISSIONS:
            details.append(ErrorDetail("this permission is not per environment", path))
        elif grant.environment not in environments:
            details.append(ErrorDetail("no such environment", f"{path}.environment"))
    if details:
        raise InvalidInput("the role is not valid", details)
    taken = [r for r in [*PREDEFINED_ROLES.values(), *tx.list_records(ROLES)] if r.id != exclude]
    if any(r.name.casefold() == new.name.strip().casefold() for r in taken):
        raise NameConflict(f'a role named "{new.name}" already exists')


def principal_in(tx: Records, user: User) -> Principal:
    """`Roles.principal_of` inside the caller's transaction (a session's check reads the
    user and their roles at once): their own root and project roles, and those of every
    group they are in."""
    roles = {role.id: role for role in PREDEFINED_ROLES.values()}
    given: list[tuple[str, int]] = [
        (g.project, g.role_id)
        for g in tx.list_records(ROLE_ASSIGNMENTS, where={"user_id": user.id})
    ]
    group_root_ids: list[int] = []
    for membership in tx.list_records(GROUP_MEMBERS, where={"user_id": user.id}):
        group = tx.get_record(GROUPS, membership.group_id)
        if group is None:
            continue
        if group.root_role is not None:
            group_root_ids.append(group.root_role)
        given += [
            (g.project, g.role_id)
            for g in tx.list_records(GROUP_ROLE_ASSIGNMENTS, where={"group_id": group.id})
        ]
    wanted = {role_id for _, role_id in given} | {user.root_role_id, *group_root_ids}
    if not wanted <= roles.keys():
        roles.update((role.id, role) for role in tx.list_records(ROLES))
    project_roles = [(project, roles[role_id]) for project, role_id in given if role_id in roles]
    # A custom root role is never deleted while held; were it gone, the user is a Viewer.
    root = roles.get(user.root_role_id) or PREDEFINED_ROLES[RootRole.VIEWER.role_id]
    group_roots = [roles[role_id] for role_id in group_root_ids if role_id in roles]
    return Principal.of_roles(
        user.actor, root, project_roles, user_id=user.id, group_root_roles=group_roots
    )


def root_role_of(tx: Records, choice: RootRole | int) -> tuple[RootRole, int | None]:
    """A `User`'s ``root_role`` and ``custom_root_role`` for ``choice``: a predefined root
    role (by name or id 1-3), or a custom root role's id (Unleash's ``rootRole`` may be
    one). Anything else is refused at ``$.rootRole``."""
    if isinstance(choice, RootRole):
        return choice, None
    predefined = RootRole.of_id(choice)
    if predefined is not None:
        return predefined, None
    role = tx.get_record(ROLES, choice)
    if role is None or role.type is not RoleType.ROOT_CUSTOM:
        raise InvalidInput(
            f"There is no root role with id {choice}.",
            [ErrorDetail(f"no root role with id {choice}", "$.rootRole")],
        )
    return RootRole.VIEWER, role.id
