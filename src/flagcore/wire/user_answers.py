"""Users and roles as Unleash's admin API answers them (``userSchema``, ``usersSchema``,
``roleSchema``, ``resetPasswordSchema``): typed values with their rows of keys.

No answer has a field for a password or its hash: there is nothing to leave out by mistake.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import attrs

from flagcore.people import Group, GroupMember, PersonalToken, RootRole, User
from flagcore.permissions import Role
from flagcore.wire.answer_table import AnswerField, answer

__all__ = [
    "GroupAnswer",
    "GroupUserAnswer",
    "GroupsAnswer",
    "PermissionAnswer",
    "PersonalTokenAnswer",
    "PersonalTokensAnswer",
    "ProjectAccessAnswer",
    "ProjectGroupAnswer",
    "ProjectUserAnswer",
    "ResetPasswordAnswer",
    "RoleAnswer",
    "RoleWithPermissionsAnswer",
    "RolesAnswer",
    "ServiceAccountAnswer",
    "ServiceAccountsAnswer",
    "UserAnswer",
    "UsersAnswer",
    "token_user",
]

_ROLE_DESCRIPTIONS = {
    RootRole.ADMIN: "Users with the root admin role have superuser access to Unleash.",
    RootRole.EDITOR: "Users with the root editor role have access to most features in "
    "Unleash, but can not manage users and roles in the root scope.",
    RootRole.VIEWER: "Users with the root viewer role can only read root resources in Unleash.",
}


@answer(
    AnswerField("id", "id"),
    AnswerField("name", "name"),
    AnswerField("email", "email", omitted_when_none=True),
    AnswerField("username", "username"),
    AnswerField("root_role", "rootRole"),
    AnswerField("created_at", "createdAt"),
    AnswerField("seen_at", "seenAt"),
    AnswerField("account_type", "accountType"),
    AnswerField("disabled", "disabled"),
    AnswerField("invite_link", "inviteLink", omitted_when_none=True),
    AnswerField("email_sent", "emailSent", omitted_when_none=True),
)
@attrs.frozen
class UserAnswer:
    """A user as Unleash lists one; ``disabled`` is flagcore's own (Unleash's open edition
    has no disabled users); ``inviteLink`` only in the answer that created a user without
    a password, with Unleash's ``emailSent`` when it was asked to mail it (``sendEmail``)."""

    id: int
    name: str | None
    email: str | None
    username: str | None
    root_role: int
    created_at: dt.datetime
    seen_at: dt.datetime | None
    account_type: str
    disabled: bool
    invite_link: str | None = None
    email_sent: bool | None = None

    @classmethod
    def of(
        cls, user: User, invite_link: str | None = None, email_sent: bool | None = None
    ) -> UserAnswer:
        return cls(
            user.id,
            user.name,
            user.email,
            user.username,
            user.root_role_id,
            user.created_at,
            user.seen_at,
            "Service Account" if user.service_account else "User",
            user.disabled,
            invite_link,
            email_sent,
        )


def token_user(name: str, created_at: dt.datetime) -> UserAnswer:
    """An admin API token asking who it is: Unleash answers its API user (named by the
    token, acting as Admin, ``isAPI``); flagcore answers the token's name, id 0 (no user
    has it), the Admin root role and the account type ``API token``."""
    return UserAnswer(
        0, name, None, None, RootRole.ADMIN.role_id, created_at, None, "API token", False
    )


@answer(
    AnswerField("id", "id"),
    AnswerField("type", "type"),
    AnswerField("name", "name"),
    AnswerField("description", "description"),
)
@attrs.frozen
class RoleAnswer:
    id: int
    type: str
    name: str
    description: str

    @classmethod
    def of(cls, role: RootRole) -> RoleAnswer:
        return cls(role.role_id, "root", role.value, _ROLE_DESCRIPTIONS[role])

    @classmethod
    def of_role(cls, role: Role) -> RoleAnswer:
        return cls(role.id, role.type.value, role.name, role.description)


@answer(
    AnswerField("name", "name"),
    AnswerField("environment", "environment", omitted_when_none=True),
)
@attrs.frozen
class PermissionAnswer:
    name: str
    environment: str | None


@answer(
    AnswerField("id", "id"),
    AnswerField("type", "type"),
    AnswerField("name", "name"),
    AnswerField("description", "description"),
    AnswerField("permissions", "permissions"),
)
@attrs.frozen
class RoleWithPermissionsAnswer:
    """Unleash's ``roleWithPermissionsSchema``: a role and the permissions it is made of
    (Admin: ``ADMIN`` alone, which holds every other)."""

    id: int
    type: str
    name: str
    description: str
    permissions: tuple[PermissionAnswer, ...]

    @classmethod
    def of(cls, role: Role) -> RoleWithPermissionsAnswer:
        permissions = tuple(
            PermissionAnswer(g.permission.value, g.environment) for g in role.grants
        )
        return cls(role.id, role.type.value, role.name, role.description, permissions)


@answer(AnswerField("version", "version"), AnswerField("roles", "roles"))
@attrs.frozen
class RolesAnswer:
    version: int
    roles: tuple[RoleAnswer, ...]

    @classmethod
    def of(cls, roles: Sequence[Role]) -> RolesAnswer:
        return cls(1, tuple(map(RoleAnswer.of_role, roles)))


@answer(
    AnswerField("id", "id"),
    AnswerField("name", "name"),
    AnswerField("email", "email", omitted_when_none=True),
    AnswerField("username", "username", omitted_when_none=True),
    AnswerField("roles", "roles"),
)
@attrs.frozen
class ProjectUserAnswer:
    id: int
    name: str | None
    email: str | None
    username: str | None
    roles: tuple[int, ...]


@answer(
    AnswerField("joined_at", "joinedAt"),
    AnswerField("created_by", "createdBy"),
    AnswerField("user", "user"),
)
@attrs.frozen
class GroupUserAnswer:
    """Unleash's ``groupUserModelSchema``: a member, when and by whom they were added
    (``system`` when the provider's group claim made them one)."""

    joined_at: dt.datetime
    created_by: str
    user: UserAnswer

    @classmethod
    def of(cls, member: GroupMember, user: User) -> GroupUserAnswer:
        return cls(member.joined_at, member.created_by, UserAnswer.of(user))


@answer(
    AnswerField("id", "id"),
    AnswerField("name", "name"),
    AnswerField("description", "description"),
    AnswerField("mappings_sso", "mappingsSSO"),
    AnswerField("root_role", "rootRole"),
    AnswerField("created_by", "createdBy"),
    AnswerField("created_at", "createdAt"),
    AnswerField("users", "users"),
    AnswerField("projects", "projects"),
    AnswerField("user_count", "userCount"),
)
@attrs.frozen
class GroupAnswer:
    """Unleash's ``groupSchema``: a group, its members and the projects it has a role in."""

    id: int
    name: str
    description: str | None
    mappings_sso: tuple[str, ...]
    root_role: int | None
    created_by: str | None
    created_at: dt.datetime
    users: tuple[GroupUserAnswer, ...]
    projects: tuple[str, ...]
    user_count: int

    @classmethod
    def of(
        cls,
        group: Group,
        members: Sequence[tuple[GroupMember, User]],
        projects: Sequence[str] = (),
    ) -> GroupAnswer:
        users = tuple(GroupUserAnswer.of(member, user) for member, user in members)
        return cls(
            group.id,
            group.name,
            group.description,
            group.mappings_sso,
            group.root_role,
            group.created_by,
            group.created_at,
            users,
            tuple(projects),
            len(users),
        )


@answer(AnswerField("groups", "groups"))
@attrs.frozen
class GroupsAnswer:
    """Unleash's ``groupsSchema``."""

    groups: tuple[GroupAnswer, ...]


@answer(
    AnswerField("id", "id"),
    AnswerField("name", "name"),
    AnswerField("description", "description"),
    AnswerField("mappings_sso", "mappingsSSO"),
    AnswerField("root_role", "rootRole"),
    AnswerField("created_by", "createdBy"),
    AnswerField("created_at", "createdAt"),
    AnswerField("roles", "roles"),
    AnswerField("users", "users"),
)
@attrs.frozen
class ProjectGroupAnswer:
    """Unleash's ``groupWithProjectRoleSchema``: a group with its roles in the project."""

    id: int
    name: str
    description: str | None
    mappings_sso: tuple[str, ...]
    root_role: int | None
    created_by: str | None
    created_at: dt.datetime
    roles: tuple[int, ...]
    users: tuple[GroupUserAnswer, ...]


@answer(
    AnswerField("users", "users"),
    AnswerField("roles", "roles"),
    AnswerField("groups", "groups"),
)
@attrs.frozen
class ProjectAccessAnswer:
    """Unleash's ``projectAccessSchema``: who has which roles (users and groups), and the
    project roles to give."""

    users: tuple[ProjectUserAnswer, ...]
    roles: tuple[RoleAnswer, ...]
    groups: tuple[ProjectGroupAnswer, ...]

    @classmethod
    def of(
        cls,
        users: Sequence[tuple[User, tuple[int, ...]]],
        roles: Sequence[Role],
        groups: Sequence[tuple[Group, Sequence[tuple[GroupMember, User]], tuple[int, ...]]] = (),
    ) -> ProjectAccessAnswer:
        rows = tuple(
            ProjectUserAnswer(u.id, u.name, u.email, u.username, held) for u, held in users
        )
        group_rows = tuple(
            ProjectGroupAnswer(
                g.id,
                g.name,
                g.description,
                g.mappings_sso,
                g.root_role,
                g.created_by,
                g.created_at,
                held,
                tuple(GroupUserAnswer.of(member, user) for member, user in members),
            )
            for g, members, held in groups
        )
        return cls(rows, tuple(map(RoleAnswer.of_role, roles)), group_rows)


@answer(AnswerField("users", "users"), AnswerField("root_roles", "rootRoles"))
@attrs.frozen
class UsersAnswer:
    users: tuple[UserAnswer, ...]
    root_roles: tuple[RoleAnswer, ...]

    @classmethod
    def of(cls, users: list[User], custom_root_roles: Sequence[Role] = ()) -> UsersAnswer:
        """``rootRoles``: the three predefined, then the custom root roles (Unleash's)."""
        return cls(tuple(map(UserAnswer.of, users)), root_role_answers(custom_root_roles))


@answer(
    AnswerField("reset_password_url", "resetPasswordUrl"),
    AnswerField("email_sent", "emailSent", omitted_when_none=True),
)
@attrs.frozen
class ResetPasswordAnswer:
    """Unleash's ``resetPasswordSchema``; ``emailSent`` (flagcore's) when a mail server
    is configured: whether the link was mailed to the user too."""

    reset_password_url: str
    email_sent: bool | None = None


@answer(
    AnswerField("id", "id"),
    AnswerField("description", "description"),
    AnswerField("expires_at", "expiresAt"),
    AnswerField("created_at", "createdAt"),
    AnswerField("seen_at", "seenAt"),
    AnswerField("user_id", "userId"),
    AnswerField("secret", "secret", omitted_when_none=True),
)
@attrs.frozen
class PersonalTokenAnswer:
    """Unleash's ``patSchema``: ``secret`` only in the answer that created the token."""

    id: int
    description: str
    expires_at: dt.datetime
    created_at: dt.datetime
    seen_at: dt.datetime | None
    user_id: int
    secret: str | None = None

    @classmethod
    def of(cls, token: PersonalToken, secret: str | None = None) -> PersonalTokenAnswer:
        return cls(
            token.id,
            token.description,
            token.expires_at,
            token.created_at,
            token.seen_at,
            token.user_id,
            secret,
        )


@answer(AnswerField("pats", "pats"))
@attrs.frozen
class PersonalTokensAnswer:
    """Unleash's ``patsSchema``."""

    pats: tuple[PersonalTokenAnswer, ...]

    @classmethod
    def of(cls, tokens: list[PersonalToken]) -> PersonalTokensAnswer:
        return cls(tuple(map(PersonalTokenAnswer.of, tokens)))


@answer(
    AnswerField("id", "id"),
    AnswerField("name", "name"),
    AnswerField("username", "username"),
    AnswerField("root_role", "rootRole"),
    AnswerField("created_at", "createdAt"),
    AnswerField("seen_at", "seenAt"),
    AnswerField("tokens", "tokens"),
)
@attrs.frozen
class ServiceAccountAnswer:
    """Unleash's ``serviceAccountSchema`` (the fields a service account has here): its
    tokens listed with it, never their secrets."""

    id: int
    name: str | None
    username: str | None
    root_role: int
    created_at: dt.datetime
    seen_at: dt.datetime | None
    tokens: tuple[PersonalTokenAnswer, ...]

    @classmethod
    def of(cls, account: User, tokens: list[PersonalToken]) -> ServiceAccountAnswer:
        return cls(
            account.id,
            account.name,
            account.username,
            account.root_role_id,
            account.created_at,
            account.seen_at,
            tuple(map(PersonalTokenAnswer.of, tokens)),
        )


@answer(AnswerField("service_accounts", "serviceAccounts"), AnswerField("root_roles", "rootRoles"))
@attrs.frozen
class ServiceAccountsAnswer:
    service_accounts: tuple[ServiceAccountAnswer, ...]
    root_roles: tuple[RoleAnswer, ...]

    @classmethod
    def of(
        cls,
        accounts: list[tuple[User, list[PersonalToken]]],
        custom_root_roles: Sequence[Role] = (),
    ) -> ServiceAccountsAnswer:
        return cls(
            tuple(ServiceAccountAnswer.of(account, tokens) for account, tokens in accounts),
            root_role_answers(custom_root_roles),
        )


def root_role_answers(custom_root_roles: Sequence[Role]) -> tuple[RoleAnswer, ...]:
    """The root roles a user may be given: the predefined three, then the custom ones."""
    return (*map(RoleAnswer.of, RootRole), *map(RoleAnswer.of_role, custom_root_roles))
