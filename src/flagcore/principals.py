"""Who acts: the one type the service is told, whatever proved the caller's identity.

A signed-in user acts with their root role and the project roles they were given, and
with the root role and project roles of each group they are in (their permissions are
the union of all of them); an admin API token, the server itself (``system``) and an
action set act as Admin. Other ways in (a personal access token acts with its owner's
permissions, a service account with its own root role) build a `Principal` the same way:
`Principal.of_roles`.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from flagcore.permissions import PREDEFINED_ROLES, Permission, Role

__all__ = ["ADMIN_ROLE", "Principal"]

ADMIN_ROLE = PREDEFINED_ROLES[1]


@attrs.frozen
class Principal:
    """An actor with what it may do. ``actor`` is the event log's string for it
    (``user:<id>:<name>``, ``token:<name>``, ``action-set:<name>``, ``system``)."""

    actor: str
    root_role: Role
    project_roles: tuple[tuple[str, Role], ...] = ()
    user_id: int | None = None
    # The root roles of the groups the user is in: they hold everywhere, as the user's own.
    group_root_roles: tuple[Role, ...] = ()

    @classmethod
    def admin(cls, actor: str) -> Principal:
        """An actor with every permission: an admin token, the server, an action set."""
        return cls(actor, ADMIN_ROLE)

    @classmethod
    def of_roles(
        cls,
        actor: str,
        root_role: Role,
        project_roles: Iterable[tuple[str, Role]] = (),
        *,
        user_id: int | None = None,
        group_root_roles: Iterable[Role] = (),
    ) -> Principal:
        """``project_roles`` (their own and their groups', in any order) are kept sorted,
        so two principals of the same roles compare equal."""
        return cls(
            actor,
            root_role,
            tuple(sorted(set(project_roles), key=_key)),
            user_id,
            tuple(sorted(set(group_root_roles), key=lambda role: role.id)),
        )

    def may(
        self, permission: Permission, *, project: str | None = None, environment: str | None = None
    ) -> bool:
        """Whether a root role (their own or a group's) allows it anywhere, or a role in
        ``project`` does."""
        if self.root_role.allows(permission, environment):
            return True
        if any(role.allows(permission, environment) for role in self.group_root_roles):
            return True
        return project is not None and any(
            role.allows(permission, environment)
            for held_in, role in self.project_roles
            if held_in == project
        )


def _key(pair: tuple[str, Role]) -> tuple[str, int]:
    return pair[0], pair[1].id
