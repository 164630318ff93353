"""Signing in through an OpenID provider: who the verified ID token names, and the rules
that decide whether they may come in and as whom.

The HTTP layer verifies the token (signature, issuer, audience, expiry, nonce) and hands
over a `ProviderIdentity`; the rules live here. A person is found by their account at the
provider (issuer and subject, linked at their first sign-in), else by their verified email
(whatever its case), so a user an admin made or invited signs in with the provider too;
an email whose user is linked to another account at the same provider is refused (a
reused address takes nobody over). A first sign-in creates the user with the role their
groups map to, else the default; a later one changes nothing about them (an admin's
change of role is never undone behind their back). With a group claim configured, every
sign-in (the first and each later one) brings the person's group memberships in line
with the claim: the groups whose ``mappingsSSO`` name a claimed group
(`flagcore.service.groups.sync_provider_groups`). Every refusal writes nothing.
"""

from __future__ import annotations

import attrs

from flagcore.errors import Unauthenticated
from flagcore.people import RootRole, User, UserIdentity
from flagcore.ports import Records
from flagcore.service.context import SYSTEM, ServiceContext
from flagcore.service.groups import sync_provider_groups
from flagcore.service.users import MAX_NAME_LENGTH, find_user
from flagcore.tables import USER_IDENTITIES, USERS
from flagcore.wire.event_data import UserData

__all__ = ["ProviderIdentity", "ProviderRules", "ProviderSignIn"]

# Most privileged first: a person in several mapped groups gets the strongest role.
_ROLE_ORDER = (RootRole.ADMIN, RootRole.EDITOR, RootRole.VIEWER)


@attrs.frozen(repr=False)
class ProviderIdentity:
    """The claims of a verified ID token that sign-in reads."""

    issuer: str
    subject: str
    email: str | None
    email_verified: bool
    name: str | None = None
    groups: tuple[str, ...] = ()
    # The ID token itself, kept with the session only to be sent back to the provider as
    # ``id_token_hint`` when the person signs out (RP-initiated logout).
    id_token: str | None = None

    def __repr__(self) -> str:  # claims are personal data: a log line names the issuer only
        return f"ProviderIdentity(issuer={self.issuer!r})"


@attrs.frozen
class ProviderRules:
    """Who may come in: ``email_domains`` (lower case; empty lets any domain in), the
    role of a new user, and optionally roles by group (``group_roles``). ``sync_groups``
    (a group claim is configured): group memberships follow the claim at every sign-in."""

    default_role: RootRole
    email_domains: tuple[str, ...] = ()
    group_roles: tuple[tuple[str, RootRole], ...] = ()
    sync_groups: bool = False

    def role_for(self, groups: tuple[str, ...]) -> RootRole:
        mapped = {role for group, role in self.group_roles if group in groups}
        return next((role for role in _ROLE_ORDER if role in mapped), self.default_role)

    def domain_allowed(self, email: str) -> bool:
        domain = email.rpartition("@")[2].casefold()
        return not self.email_domains or domain in self.email_domains


class ProviderSignIn:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def user_for(self, identity: ProviderIdentity, rules: ProviderRules) -> User:
        """The user ``identity`` signs in as, created on their first sign-in.

        Raises `Unauthenticated` with the reason a person can act on: no verified email,
        a domain not allowed, a disabled account."""
        email = identity.email
        if not email or "@" not in email:
            raise Unauthenticated("The provider did not tell us your email address.")
        if len(email) > MAX_NAME_LENGTH:
            raise Unauthenticated(
                f"Your email address is longer than {MAX_NAME_LENGTH} characters; ask an admin."
            )
        if not identity.email_verified:
            raise Unauthenticated(
                "The provider has not verified your email address; verify it there first."
            )
        if not rules.domain_allowed(email):
            domain = email.rpartition("@")[2]
            raise Unauthenticated(f"Email addresses at {domain} may not sign in here.")
        with self._context.unit() as tx:
            now = self._context.clock()
            linked = tx.get_record(USER_IDENTITIES, (identity.issuer, identity.subject))
            user = tx.get_record(USERS, linked.user_id) if linked is not None else None
            if user is None:
                user = find_user(tx, email)
                if user is not None:
                    _check_not_linked_elsewhere(tx, user, identity)
                else:
                    user = tx.create_record(
                        USERS,
                        User(
                            id=0,
                            root_role=rules.role_for(identity.groups),
                            name=(identity.name or "").strip()[:MAX_NAME_LENGTH] or None,
                            email=email,
                            created_at=now,
                        ),
                    )
                    data = UserData.of(user, signed_in_with=identity.issuer)
                    self._context.record_event(tx, "user-created", SYSTEM, data=data)
            if user.disabled:
                raise Unauthenticated("This account is disabled; ask an admin.")
            if linked is None:
                tx.save_record(
                    USER_IDENTITIES,
                    UserIdentity(identity.issuer, identity.subject, user.id, now),
                )
            if rules.sync_groups:
                sync_provider_groups(tx, self._context, user, identity.groups)
            return user


def _check_not_linked_elsewhere(tx: Records, user: User, identity: ProviderIdentity) -> None:
    for other in tx.list_records(USER_IDENTITIES, {"user_id": user.id}):
        if other.issuer == identity.issuer and other.subject != identity.subject:
            raise Unauthenticated(
                "This email belongs to a user who signs in with another account at this "
                "provider; ask an admin."
            )
