"""Users, in Unleash's shape (``/api/admin/user-admin``): create, change, delete, set a
password, and the single-use links that let someone set their own.

Emails and usernames are unique regardless of case (``Ann@x.io`` and ``ann@x.io`` are one
person); a user is named by at least one of them (Unleash's rule). Passwords arrive
already checked and hashed (`flagcore.passwords.NewPassword`): hashing is slow and runs
off the store's worker. No event carries a password or its hash.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import secrets

import attrs

from flagcore.errors import ErrorDetail, InvalidInput, NameConflict, NotFound
from flagcore.passwords import NewPassword
from flagcore.people import LinkKind, ResetLink, RootRole, User, UserIdentity, UserPassword
from flagcore.ports import KeptWrite, Records
from flagcore.principals import Principal
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.roles import root_role_of
from flagcore.tables import (
    IS_NULL,
    USER_IDENTITIES,
    USER_PASSWORDS,
    USER_RESET_LINKS,
    USER_SESSIONS,
    USERS,
)
from flagcore.wire.event_data import PasswordChangedData, ResetLinkData, UserData

__all__ = [
    "RESET_LINK_LIFETIME",
    "CreatedLink",
    "NewUser",
    "Users",
    "check_unique",
    "check_user_text",
    "secret_digest",
]

RESET_LINK_LIFETIME = dt.timedelta(hours=24)
"""How long an invitation or a reset link works (Unleash's reset tokens: one day)."""

MAX_NAME_LENGTH = 255
# One "@" with something either side and no space: the address is checked by the mail it
# receives, not by a grammar; this only refuses what cannot be one.
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+")
_USERNAME = re.compile(r"[^@\s]+")


def secret_digest(secret: str) -> str:
    """Session ids and link tokens are 256 random bits: an unsalted SHA-256 is enough to
    keep a leaked database from holding anything that signs in."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


@attrs.frozen
class NewUser:
    """A user to create: email or username (or both), the root role, and optionally a
    name and a password already checked and hashed. ``root_role`` is a predefined root
    role, or a custom root role's id."""

    root_role: RootRole | int
    email: str | None = None
    username: str | None = None
    name: str | None = None
    password: NewPassword | None = None


@attrs.frozen
class CreatedLink:
    """A link's secret token, shown once to whoever made it (only its digest is kept)."""

    token: str
    link: ResetLink


def check_user_text(
    value: str | None, path: str, pattern: re.Pattern[str] | None
) -> list[ErrorDetail]:
    if value is None:
        return []
    if not value.strip():
        return [ErrorDetail("may not be blank", path)]
    if len(value) > MAX_NAME_LENGTH:
        return [ErrorDetail(f"at most {MAX_NAME_LENGTH} characters", path)]
    if pattern is not None and not pattern.fullmatch(value):
        return [ErrorDetail("not a valid " + path.rsplit(".", 1)[-1], path)]
    return []


def find_user(tx: Records, login: str) -> User | None:
    """The user whose email or username is ``login``, whatever its case."""
    folded = login.casefold()
    for user in tx.list_records(USERS):
        if (user.email and user.email.casefold() == folded) or (
            user.username and user.username.casefold() == folded
        ):
            return user
    return None


def check_unique(tx: Records, email: str | None, username: str | None, own_id: int) -> None:
    for other in tx.list_records(USERS):
        if other.id == own_id:
            continue
        if email and other.email and other.email.casefold() == email.casefold():
            raise NameConflict(
                "a user with this email already exists", [ErrorDetail("taken", "$.email")]
            )
        if username and other.username and other.username.casefold() == username.casefold():
            raise NameConflict(
                "a user with this username already exists", [ErrorDetail("taken", "$.username")]
            )


def end_sessions_of(tx: Records, user_id: int, *, keep: str | None = None) -> int:
    """End every session of one user (but the one whose id is ``keep``); how many."""
    kept = secret_digest(keep) if keep is not None else None
    sessions = [
        s for s in tx.list_records(USER_SESSIONS, {"user_id": user_id}) if s.id_digest != kept
    ]
    for session in sessions:
        tx.delete_record(USER_SESSIONS, session.id_digest)
    return len(sessions)


def spend_links_of(tx: Records, user_id: int, now: dt.datetime) -> int:
    """Spend every unused link of one user; how many. A new link, a link used, a password
    set and a user disabled each leave no older link working (as Unleash expires a
    user's reset tokens on each of these)."""
    links = tx.list_records(USER_RESET_LINKS, {"user_id": user_id, "used_at": IS_NULL})
    for link in links:
        tx.save_record(USER_RESET_LINKS, attrs.evolve(link, used_at=now))
    return len(links)


class Users:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def list_users(self) -> list[User]:
        """People only: service accounts are listed on their own (Unleash's way)."""
        with self._context.read() as tx:
            return [user for user in tx.list_records(USERS) if not user.service_account]

    def provider_accounts(self) -> dict[int, list[UserIdentity]]:
        """Each user's accounts at OpenID providers (linked at their first sign-in there),
        by user id: what the Users page shows an admin, so a person signing in through a
        provider is told apart from one with a password."""
        with self._context.read() as tx:
            linked: dict[int, list[UserIdentity]] = {}
            for identity in tx.list_records(USER_IDENTITIES):
                linked.setdefault(identity.user_id, []).append(identity)
            return linked

    def get_user(self, user_id: int) -> User:
        with self._context.read() as tx:
            return _user(tx, user_id)

    def count_users(self) -> int:
        with self._context.read() as tx:
            return len(tx.list_records(USERS, limit=1))

    def create_user(self, new: NewUser, *, actor: Actor = SYSTEM) -> User:
        actor = authorize(actor, "create_user")
        user, _link = self._create(new, actor, invitation=None)
        return user

    def invite_user(
        self, new: NewUser, *, actor: Actor = SYSTEM, lifetime: dt.timedelta = RESET_LINK_LIFETIME
    ) -> tuple[User, CreatedLink]:
        """A user without a password and their invitation link, written together."""
        actor = authorize(actor, "invite_user")
        user, link = self._create(attrs.evolve(new, password=None), actor, invitation=lifetime)
        assert link is not None
        return user, link

    def _create(
        self, new: NewUser, actor: str, *, invitation: dt.timedelta | None
    ) -> tuple[User, CreatedLink | None]:
        details = [
            *check_user_text(new.email, "$.email", _EMAIL),
            *check_user_text(new.username, "$.username", _USERNAME),
            *check_user_text(new.name, "$.name", None),
        ]
        if new.email is None and new.username is None:
            details.append(ErrorDetail("give an email or a username", "$.email"))
        if details:
            raise InvalidInput("The user cannot be created as given.", details)
        link = None
        with self._context.unit() as tx:
            check_unique(tx, new.email, new.username, own_id=-1)
            root, custom = root_role_of(tx, new.root_role)
            user = tx.create_record(
                USERS,
                User(
                    id=0,
                    name=new.name,
                    email=new.email,
                    username=new.username,
                    created_at=self._context.clock(),
                    root_role=root,
                    custom_root_role=custom,
                ),
            )
            if new.password is not None:
                tx.save_record(
                    USER_PASSWORDS, UserPassword(user.id, new.password.hash, self._context.clock())
                )
            self._context.record_event(tx, "user-created", actor, data=UserData.of(user))
            if invitation is not None:
                link = _new_link(tx, self._context, user, LinkKind.INVITATION, actor, invitation)
        return user, link

    def update_user(
        self,
        user_id: int,
        *,
        name: str | None = None,
        email: str | None = None,
        root_role: RootRole | int | None = None,
        disabled: bool | None = None,
        actor: Actor = SYSTEM,
    ) -> User:
        """Change what is given (None keeps it). Disabling a user ends their sessions."""
        actor = authorize(actor, "update_user")
        details = [
            *check_user_text(email, "$.email", _EMAIL),
            *check_user_text(name, "$.name", None),
        ]
        if details:
            raise InvalidInput("The user cannot be changed as given.", details)
        with self._context.unit() as tx:
            before = _user(tx, user_id)
            check_unique(tx, email, None, own_id=user_id)
            after = attrs.evolve(
                before,
                name=before.name if name is None else name,
                email=before.email if email is None else email,
                disabled=before.disabled if disabled is None else disabled,
            )
            if root_role is not None:
                root, custom = root_role_of(tx, root_role)
                after = attrs.evolve(after, root_role=root, custom_root_role=custom)
            tx.save_record(USERS, after)
            if after.disabled:
                end_sessions_of(tx, user_id)
                spend_links_of(tx, user_id, self._context.clock())
            self._context.record_event(
                tx, "user-updated", actor, data=UserData.of(after), pre_data=UserData.of(before)
            )
        return after

    def set_name(self, user_id: int, name: str | None, *, actor: Actor = SYSTEM) -> User:
        """Change a user's name (None or blank: none, then the email or username names
        them). A user may change their own; anyone else's needs ADMIN."""
        if isinstance(actor, Principal) and actor.user_id == user_id:
            actor = actor.actor
        actor = authorize(actor, "set_name")
        name = name.strip() if name is not None else None
        details = check_user_text(name or None, "$.name", None)
        if details:
            raise InvalidInput("The name cannot be changed as given.", details)
        with self._context.unit() as tx:
            before = _user(tx, user_id)
            after = attrs.evolve(before, name=name or None)
            tx.save_record(USERS, after)
            self._context.record_event(
                tx, "user-updated", actor, data=UserData.of(after), pre_data=UserData.of(before)
            )
        return after

    def delete_user(self, user_id: int, *, actor: Actor = SYSTEM) -> None:
        """Delete a user: their password, sessions and links go with them, at once."""
        actor = authorize(actor, "delete_user")
        with self._context.unit() as tx:
            user = _user(tx, user_id)
            end_sessions_of(tx, user_id)
            tx.delete_record(USERS, user_id)
            self._context.record_event(tx, "user-deleted", actor, pre_data=UserData.of(user))

    def set_password(
        self,
        user_id: int,
        password: NewPassword,
        *,
        actor: Actor = SYSTEM,
        keep_session: str | None = None,
    ) -> None:
        """Set a user's password; every session they had ends (Unleash's rule too), but
        ``keep_session`` (the id of the session of a user changing their own). A user may
        set their own; anyone else's needs ADMIN."""
        if isinstance(actor, Principal) and actor.user_id == user_id:
            actor = actor.actor
        actor = authorize(actor, "set_password")
        with self._context.unit() as tx:
            user = _user(tx, user_id)
            now = self._context.clock()
            tx.save_record(USER_PASSWORDS, UserPassword(user.id, password.hash, now))
            end_sessions_of(tx, user_id, keep=keep_session)
            spend_links_of(tx, user_id, now)
            self._context.record_event(
                tx, "user-password-changed", actor, data=PasswordChangedData(user.id)
            )

    def create_link(
        self,
        login: str,
        *,
        kind: LinkKind = LinkKind.RESET,
        actor: Actor = SYSTEM,
        lifetime: dt.timedelta = RESET_LINK_LIFETIME,
    ) -> CreatedLink:
        """A single-use link for the user ``login`` names (email or username)."""
        actor = authorize(actor, "create_link")
        with self._context.unit() as tx:
            user = find_user(tx, login)
            if user is None or user.service_account:
                raise NotFound(
                    "There is no user with this email or username.",
                    [ErrorDetail("no such user", "$.id")],
                )
            return _new_link(tx, self._context, user, kind, actor, lifetime)

    def create_link_for(
        self,
        user_id: int,
        *,
        kind: LinkKind = LinkKind.INVITATION,
        actor: Actor = SYSTEM,
        lifetime: dt.timedelta = RESET_LINK_LIFETIME,
    ) -> CreatedLink:
        actor = authorize(actor, "create_link_for")
        with self._context.unit() as tx:
            return _new_link(tx, self._context, _user(tx, user_id), kind, actor, lifetime)

    def link_user(self, token: str) -> User:
        """Whose link this is, if it can still be used (else `NotFound`)."""
        with self._context.read() as tx:
            return _usable_user(tx, _usable_link(tx, token, self._context.clock()))

    def use_link(self, token: str, password: NewPassword) -> User:
        """Set the password through a link, once: the link is spent, sessions end."""
        with self._context.unit() as tx:
            now = self._context.clock()
            link = _usable_link(tx, token, now)
            user = _usable_user(tx, link)
            spend_links_of(tx, user.id, now)  # this one and any other
            tx.save_record(USER_PASSWORDS, UserPassword(user.id, password.hash, now))
            end_sessions_of(tx, user.id)
            self._context.record_event(
                tx,
                "user-password-changed",
                user.actor,
                data=PasswordChangedData(user.id, link.kind.value),
            )
        return user

    def ensure_first_admin(
        self, *, lifetime: dt.timedelta = RESET_LINK_LIFETIME
    ) -> CreatedLink | None:
        """On a database with no user yet: an admin user ``admin`` and an invitation link
        for them (so the first person signs in from a browser); None when users exist."""
        with self._context.unit() as tx:
            if tx.list_records(USERS, limit=1):
                return None
            user = tx.create_record(
                USERS,
                User(
                    id=0,
                    root_role=RootRole.ADMIN,
                    name="Admin",
                    username="admin",
                    created_at=self._context.clock(),
                ),
            )
            self._context.record_event(tx, "user-created", SYSTEM, data=UserData.of(user))
            return _new_link(tx, self._context, user, LinkKind.INVITATION, SYSTEM, lifetime)


def _user(tx: Records, user_id: int) -> User:
    """A person: a service account is not one of the users these routes manage (it has
    no password and no links; `flagcore.service.service_accounts` keeps it)."""
    user = tx.get_record(USERS, user_id)
    if user is None or user.service_account:
        raise NotFound(f"Could not find user with id {user_id}")
    return user


def _new_link(
    tx: KeptWrite,
    context: ServiceContext,
    user: User,
    kind: LinkKind,
    actor: str,
    lifetime: dt.timedelta,
) -> CreatedLink:
    token = secrets.token_urlsafe(32)
    now = context.clock()
    spend_links_of(tx, user.id, now)  # only the newest link works
    link = ResetLink(secret_digest(token), user.id, kind, actor, now, now + lifetime)
    tx.save_record(USER_RESET_LINKS, link)
    context.record_event(tx, "user-link-created", actor, data=ResetLinkData(user.id, kind.value))
    return CreatedLink(token, link)


def _usable_link(tx: Records, token: str, now: dt.datetime) -> ResetLink:
    link = tx.get_record(USER_RESET_LINKS, secret_digest(token))
    if link is None or link.used_at is not None or link.expires_at <= now:
        raise NotFound(
            "This link is unknown, used or expired. Ask an admin for a new one.",
            [ErrorDetail("unknown, used or expired", "$.token")],
        )
    return link


def _usable_user(tx: Records, link: ResetLink) -> User:
    """The user of a usable link, unless disabled (their links are spent when they are
    disabled; this covers a link of a user disabled before that rule)."""
    user = _user(tx, link.user_id)
    if user.disabled:
        raise NotFound(
            "This link is unknown, used or expired. Ask an admin for a new one.",
            [ErrorDetail("unknown, used or expired", "$.token")],
        )
    return user
