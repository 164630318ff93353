"""Groups, in Unleash's shape (``/api/admin/groups``, its enterprise user groups): a named
set of people whose members hold the group's root role and the project roles it is given
(a project's access list), on top of their own.

A group's ``users`` are replaced whole by an update (Unleash's way); a member kept keeps
when and by whom they were added. ``mappingsSSO`` names the groups of an OpenID
provider's group claim: at every sign-in with the provider the person is made a member of
each group one of their claimed groups maps to, and taken out of the groups the provider
made them a member of that no longer map (`sync_provider_groups`); members an admin added
stay whatever the provider says.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from flagcore.errors import ErrorDetail, InvalidInput, NameConflict, NotFound
from flagcore.people import Group, GroupMember, User
from flagcore.permissions import PREDEFINED_ROLES, RoleType
from flagcore.ports import KeptWrite, Records
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.tables import GROUP_MEMBERS, GROUP_ROLE_ASSIGNMENTS, GROUPS, ROLES, USERS
from flagcore.validation import check_text
from flagcore.wire.event_data import GroupData, GroupMemberData

__all__ = [
    "MAX_GROUP_MAPPINGS",
    "GroupView",
    "Groups",
    "NewGroup",
    "group_view",
    "sync_provider_groups",
]

MAX_GROUP_MAPPINGS = 100
"""At most this many provider groups map to one group."""
MAX_GROUP_NAME_LENGTH = 255


@attrs.frozen
class NewGroup:
    """A group as asked for: ``root_role`` a root role's id (1-3 or a custom root role),
    or None; ``user_ids`` its members, people only."""

    name: str
    description: str | None = None
    mappings_sso: tuple[str, ...] = ()
    root_role: int | None = None
    user_ids: tuple[int, ...] = ()


@attrs.frozen
class GroupView:
    """A group with its members (each with the user) and the projects it has a role in."""

    group: Group
    members: tuple[tuple[GroupMember, User], ...]
    projects: tuple[str, ...]


class Groups:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def list_groups(self) -> list[GroupView]:
        with self._context.read() as tx:
            return [group_view(tx, group) for group in tx.list_records(GROUPS)]

    def get_group(self, group_id: int) -> GroupView:
        with self._context.read() as tx:
            return group_view(tx, _group(tx, group_id))

    def groups_of(self, user_id: int) -> list[Group]:
        """The groups a user is in (their own page lists them)."""
        with self._context.read() as tx:
            found = (
                tx.get_record(GROUPS, m.group_id)
                for m in tx.list_records(GROUP_MEMBERS, where={"user_id": user_id})
            )
            return [group for group in found if group is not None]

    def create_group(self, new: NewGroup, *, actor: Actor = SYSTEM) -> GroupView:
        actor = authorize(actor, "create_group")
        with self._context.unit() as tx:
            _check_group(tx, new, exclude=None)
            now = self._context.clock()
            group = tx.create_record(
                GROUPS,
                Group(
                    0,
                    new.name.strip(),
                    new.description,
                    new.mappings_sso,
                    new.root_role,
                    now,
                    actor,
                ),
            )
            for user_id in new.user_ids:
                tx.save_record(GROUP_MEMBERS, GroupMember(group.id, user_id, now, actor))
            self._context.record_event(
                tx, "group-created", actor, data=GroupData.of(group, new.user_ids)
            )
            return group_view(tx, group)

    def update_group(self, group_id: int, new: NewGroup, *, actor: Actor = SYSTEM) -> GroupView:
        """Replace the group's name, description, mappings, root role and members."""
        actor = authorize(actor, "update_group")
        with self._context.unit() as tx:
            before = _group(tx, group_id)
            _check_group(tx, new, exclude=group_id)
            members = tx.list_records(GROUP_MEMBERS, where={"group_id": group_id})
            after = attrs.evolve(
                before,
                name=new.name.strip(),
                description=new.description,
                mappings_sso=new.mappings_sso,
                root_role=new.root_role,
            )
            tx.save_record(GROUPS, after)
            kept = set(new.user_ids)
            for member in members:
                if member.user_id not in kept:
                    tx.delete_record(GROUP_MEMBERS, (group_id, member.user_id))
            had = {member.user_id for member in members}
            now = self._context.clock()
            for user_id in new.user_ids:
                if user_id not in had:
                    tx.save_record(GROUP_MEMBERS, GroupMember(group_id, user_id, now, actor))
            self._context.record_event(
                tx,
                "group-updated",
                actor,
                data=GroupData.of(after, new.user_ids),
                pre_data=GroupData.of(before, [m.user_id for m in members]),
            )
            return group_view(tx, after)

    def delete_group(self, group_id: int, *, actor: Actor = SYSTEM) -> None:
        """Its members lose what the group gave them, at their next request."""
        actor = authorize(actor, "delete_group")
        with self._context.unit() as tx:
            group = _group(tx, group_id)
            members = [m.user_id for m in tx.list_records(GROUP_MEMBERS, {"group_id": group_id})]
            tx.delete_record(GROUPS, group_id)
            self._context.record_event(
                tx, "group-deleted", actor, pre_data=GroupData.of(group, members)
            )


def sync_provider_groups(
    tx: KeptWrite, context: ServiceContext, user: User, claimed: Sequence[str]
) -> None:
    """At a sign-in with the provider: ``user`` joins each group a ``claimed`` group maps
    to (``mappings_sso``) and leaves each group the provider made them a member of that no
    longer maps; members an admin added stay. Each change is an event by ``system``."""
    claims = set(claimed)
    mapped = {g.id for g in tx.list_records(GROUPS) if claims.intersection(g.mappings_sso)}
    now = context.clock()
    held = {m.group_id: m for m in tx.list_records(GROUP_MEMBERS, where={"user_id": user.id})}
    for group_id in sorted(mapped - held.keys()):
        tx.save_record(GROUP_MEMBERS, GroupMember(group_id, user.id, now, SYSTEM, True))
        data = GroupMemberData(group_id, user.id)
        context.record_event(tx, "group-user-added", SYSTEM, data=data)
    for group_id, member in sorted(held.items()):
        if member.via_provider and group_id not in mapped:
            tx.delete_record(GROUP_MEMBERS, (group_id, user.id))
            data = GroupMemberData(group_id, user.id)
            context.record_event(tx, "group-user-removed", SYSTEM, data=data)


def _group(tx: Records, group_id: int) -> Group:
    group = tx.get_record(GROUPS, group_id)
    if group is None:
        raise NotFound(f"Could not find group with id {group_id}")
    return group


def group_view(tx: Records, group: Group) -> GroupView:
    """``group`` with its members and the projects it holds a role in, read in ``tx``."""
    members = []
    for member in tx.list_records(GROUP_MEMBERS, where={"group_id": group.id}):
        user = tx.get_record(USERS, member.user_id)
        if user is not None:
            members.append((member, user))
    given = tx.list_records(GROUP_ROLE_ASSIGNMENTS, where={"group_id": group.id})
    projects = tuple(sorted({g.project for g in given}))
    return GroupView(group, tuple(members), projects)


def _check_group(tx: Records, new: NewGroup, exclude: int | None) -> None:
    details: list[ErrorDetail] = []
    if not isinstance(new.name, str) or not new.name.strip():
        details.append(ErrorDetail("must not be empty", "$.name"))
    elif len(new.name) > MAX_GROUP_NAME_LENGTH:
        details.append(ErrorDetail(f"at most {MAX_GROUP_NAME_LENGTH} characters", "$.name"))
    check_text(new.name, "$.name")
    check_text(new.description, "$.description")
    if len(new.mappings_sso) > MAX_GROUP_MAPPINGS:
        details.append(ErrorDetail(f"at most {MAX_GROUP_MAPPINGS} groups", "$.mappingsSSO"))
    seen: set[str] = set()
    for index, mapping in enumerate(new.mappings_sso):
        path = f"$.mappingsSSO[{index}]"
        check_text(mapping, path, optional=False)
        if not mapping.strip() or len(mapping) > MAX_GROUP_NAME_LENGTH:
            details.append(ErrorDetail(f"1 to {MAX_GROUP_NAME_LENGTH} characters, not blank", path))
        elif mapping in seen:
            details.append(ErrorDetail(f"{mapping} is named twice", path))
        seen.add(mapping)
    if new.root_role is not None and not _is_root_role(tx, new.root_role):
        details.append(ErrorDetail(f"no root role with id {new.root_role}", "$.rootRole"))
    members: set[int] = set()
    for index, user_id in enumerate(new.user_ids):
        path = f"$.users[{index}].user.id"
        user = tx.get_record(USERS, user_id)
        if user is None or user.service_account:
            details.append(ErrorDetail(f"no user with id {user_id}", path))
        elif user_id in members:
            details.append(ErrorDetail(f"user {user_id} is named twice", path))
        members.add(user_id)
    if details:
        raise InvalidInput("The group is not valid.", details)
    name = new.name.strip().casefold()
    if any(g.name.casefold() == name for g in tx.list_records(GROUPS) if g.id != exclude):
        raise NameConflict(
            f'a group named "{new.name.strip()}" already exists', [ErrorDetail("taken", "$.name")]
        )


def _is_root_role(tx: Records, role_id: int) -> bool:
    predefined = PREDEFINED_ROLES.get(role_id)
    if predefined is not None:
        return predefined.type is RoleType.ROOT
    role = tx.get_record(ROLES, role_id)
    return role is not None and role.type is RoleType.ROOT_CUSTOM
