"""People who sign in: users, their password hashes, their sessions, single-use links.

Kept apart on purpose: a `User` never carries its password hash (a `UserPassword` row of
its own), so no answer or event built from a user can leak it. Sessions and links are
kept by a digest of their secret, never the secret itself: the store alone cannot be used
to sign in.
"""

from __future__ import annotations

import datetime as dt
import enum

import attrs

__all__ = [
    "Group",
    "GroupMember",
    "LinkKind",
    "PersonalToken",
    "ResetLink",
    "RootRole",
    "User",
    "UserIdentity",
    "UserPassword",
    "UserSession",
]


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class RootRole(enum.StrEnum):
    """Unleash's three predefined root roles; their ids are Unleash's (1, 2, 3)."""

    ADMIN = "Admin"
    EDITOR = "Editor"
    VIEWER = "Viewer"

    @property
    def role_id(self) -> int:
        return _ROLE_IDS[self]

    @classmethod
    def of_id(cls, role_id: int) -> RootRole | None:
        return next((role for role, known in _ROLE_IDS.items() if known == role_id), None)


_ROLE_IDS = {RootRole.ADMIN: 1, RootRole.EDITOR: 2, RootRole.VIEWER: 3}


@attrs.frozen
class User:
    """A person. ``email`` or ``username`` (or both) names them at sign-in; both are
    unique regardless of case. ``disabled`` users keep their row but cannot sign in."""

    id: int
    root_role: RootRole
    name: str | None = None
    email: str | None = None
    username: str | None = None
    disabled: bool = False
    created_at: dt.datetime = attrs.field(factory=_utc_now)
    seen_at: dt.datetime | None = None
    service_account: bool = False
    # A custom root role's id (Unleash's ``root-custom``): then it is the user's root role,
    # and ``root_role`` is kept as Viewer, the least, for any reader that knows only the
    # three predefined ones.
    custom_root_role: int | None = None

    @property
    def root_role_id(self) -> int:
        """The id of the user's one root role, predefined (1-3) or custom."""
        return self.custom_root_role or self.root_role.role_id

    @property
    def display_name(self) -> str:
        """What the header and the event log show: the name, else the email or username."""
        return self.name or self.email or self.username or f"user {self.id}"

    @property
    def actor(self) -> str:
        """The event log's name for this person (a string, as every actor is); a service
        account's is ``service-account:<id>:<name>``."""
        kind = "service-account" if self.service_account else "user"
        return f"{kind}:{self.id}:{self.display_name}"


@attrs.frozen
class UserPassword:
    """A user's password as an Argon2id hash (the PHC string: parameters, salt, hash)."""

    user_id: int
    hash: str
    changed_at: dt.datetime = attrs.field(factory=_utc_now)


@attrs.frozen
class UserSession:
    """A signed-in browser, kept server-side so it can be ended from anywhere.

    ``id_digest`` is the SHA-256 of the cookie's 256-bit random id. A session belongs to a
    user, or (signing in to the UI with an admin token, as before users existed) to the
    token of ``token_id``.
    """

    id_digest: str
    user_id: int | None
    token_id: str | None
    created_at: dt.datetime
    expires_at: dt.datetime
    last_seen_at: dt.datetime
    # A session started at an OpenID provider keeps the provider's ID token, only to send
    # it back as ``id_token_hint`` when the person signs out there too (RP-initiated
    # logout); it signs nobody in here. Never in a repr.
    id_token: str | None = attrs.field(default=None, repr=False)


class LinkKind(enum.StrEnum):
    INVITATION = "invitation"
    RESET = "reset"


@attrs.frozen
class ResetLink:
    """A single-use link that lets a user set a password: an invitation (the first start's
    admin, a new user) or a reset an admin made. Kept by a digest of its token."""

    token_digest: str
    user_id: int
    kind: LinkKind
    created_by: str
    created_at: dt.datetime
    expires_at: dt.datetime
    used_at: dt.datetime | None = None


@attrs.frozen
class PersonalToken:
    """A token that acts as the user who owns it (a person's personal access token, or a
    service account's token), until ``expires_at``. Kept by the SHA-256 of its secret;
    the secret is shown once, when it is made. It names its owner by id, not their
    permissions: whatever the owner may do at the time of a request, the token may do,
    and a disabled or deleted owner's tokens stop at once."""

    id: int
    user_id: int
    description: str
    secret_digest: str
    created_at: dt.datetime
    expires_at: dt.datetime
    seen_at: dt.datetime | None = None


@attrs.frozen
class UserIdentity:
    """A person's account at an OpenID provider (its issuer and the token's ``sub``),
    linked to a user at their first sign-in there: later sign-ins find the user by it,
    whatever their email has become, and another account at the same provider cannot take
    the user over by showing the same email."""

    issuer: str
    subject: str
    user_id: int
    created_at: dt.datetime


@attrs.frozen
class Group:
    """A group of people (Unleash's user groups): its members get its ``root_role`` (a
    root role's id, predefined or custom; None: none) and the project roles it is given,
    on top of their own. ``mappings_sso`` names the groups of an OpenID provider's group
    claim whose people are made members at each sign-in."""

    id: int
    name: str
    description: str | None = None
    mappings_sso: tuple[str, ...] = ()
    root_role: int | None = None
    created_at: dt.datetime = attrs.field(factory=_utc_now)
    created_by: str | None = None


@attrs.frozen
class GroupMember:
    """A user in a group. ``via_provider``: made a member by the provider's group claim at
    a sign-in, and taken out again at a sign-in whose claim no longer maps to the group;
    a member an admin added stays whatever the provider says."""

    group_id: int
    user_id: int
    joined_at: dt.datetime
    created_by: str
    via_provider: bool = False
