"""Personal access tokens (Unleash's PATs) and service accounts' tokens: a token that acts
as the user who owns it.

A token names its owner, not a set of permissions: a request made with it is the owner's
request, so whatever roles the owner has at that moment apply, and a disabled or deleted
owner's tokens stop at once (the token is checked against the store at every request, as
a session is, so on every server over the same database). Secrets are Unleash's shape
(``user:`` and 56 hex characters), shown once; the store keeps their SHA-256.
"""

from __future__ import annotations

import datetime as dt
import hmac
import secrets
from contextlib import AbstractContextManager

import attrs

from flagcore.errors import ErrorDetail, InvalidInput, LimitExceeded, NameConflict, NotFound
from flagcore.people import PersonalToken, User
from flagcore.ports import Records, Transaction
from flagcore.principals import Principal
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.roles import principal_in
from flagcore.service.users import secret_digest
from flagcore.tables import PERSONAL_TOKENS, USERS
from flagcore.wire.event_data import PersonalTokenData

__all__ = [
    "MAX_PERSONAL_TOKENS",
    "MAX_PERSONAL_TOKEN_LIFETIME",
    "PERSONAL_TOKEN_PREFIX",
    "CreatedPersonalToken",
    "PersonalTokenHolder",
    "PersonalTokens",
]

PERSONAL_TOKEN_PREFIX = "user:"
"""Unleash's PAT secrets start so; an admin API token's never does (``*:*.``)."""
MAX_PERSONAL_TOKENS = 10
"""Unleash's ``PAT_LIMIT``: tokens one owner may hold at once."""
MAX_PERSONAL_TOKEN_LIFETIME = dt.timedelta(days=366)
"""flagcore's own bound (Unleash has none): a token lives at most a year (and a day, so
"a year from today" in any time zone is accepted)."""
MAX_DESCRIPTION_LENGTH = 255
SEEN_EVERY = dt.timedelta(minutes=1)
"""A token's last-seen time is written at most this often."""


@attrs.frozen
class CreatedPersonalToken:
    """A new token and its secret; only the digest is kept: it cannot be shown again."""

    token: PersonalToken
    secret: str = attrs.field(repr=False)


@attrs.frozen
class PersonalTokenHolder:
    """Who a live token acts as: its owner, enabled, and the token itself; ``principal``
    is the owner with every role they hold (root, custom root, project roles), read with
    the token, so a token may do exactly what its owner may."""

    token: PersonalToken
    user: User
    principal: Principal | None = None

    @property
    def actor(self) -> str:
        """The event log's name: the owner, and that it was one of their tokens."""
        kind = "token" if self.user.service_account else "personal token"
        return f"{self.user.actor} ({kind} {self.token.id})"


class PersonalTokens:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def list_of(self, owner_id: int, *, service_account: bool = False) -> list[PersonalToken]:
        """The owner's tokens, expired ones too (so they can be seen and deleted). The
        owner is a person, or (``service_account``) a service account: each kind is
        reached only through its own routes."""
        with self._context.read() as tx:
            _owner(tx, owner_id, service_account)
            return list(tx.list_records(PERSONAL_TOKENS, {"user_id": owner_id}))

    def create_personal_token(
        self,
        owner_id: int,
        description: str,
        expires_at: dt.datetime,
        *,
        service_account: bool = False,
        actor: Actor = SYSTEM,
    ) -> CreatedPersonalToken:
        """A new token for ``owner_id``: a description unique among theirs, an expiry in
        the future and at most `MAX_PERSONAL_TOKEN_LIFETIME` away. A person makes their
        own; anyone else's (a service account's) needs ADMIN."""
        actor = _own_or_authorized(actor, owner_id, "create_personal_token")
        now = self._context.clock()
        _check(description, expires_at, now)
        secret = PERSONAL_TOKEN_PREFIX + secrets.token_hex(28)
        with self._context.unit() as tx:
            _owner(tx, owner_id, service_account)
            held = tx.list_records(PERSONAL_TOKENS, {"user_id": owner_id})
            if len(held) >= MAX_PERSONAL_TOKENS:
                raise LimitExceeded(
                    f"Too many personal access tokens ({MAX_PERSONAL_TOKENS}) already exist "
                    "for this user: delete one first.",
                    "personal_tokens",
                    MAX_PERSONAL_TOKENS,
                )
            if any(t.description == description for t in held):
                raise NameConflict(
                    "A personal access token with this description already exists.",
                    [ErrorDetail("taken", "$.description")],
                )
            token = tx.create_record(
                PERSONAL_TOKENS,
                PersonalToken(0, owner_id, description, secret_digest(secret), now, expires_at),
            )
            self._context.record_event(tx, "pat-created", actor, data=PersonalTokenData.of(token))
        return CreatedPersonalToken(token, secret)

    def delete_personal_token(
        self,
        owner_id: int,
        token_id: int,
        *,
        service_account: bool = False,
        actor: Actor = SYSTEM,
    ) -> None:
        """Delete one of the owner's tokens; another owner's is `NotFound`, as an unknown
        one is (nobody learns which ids exist). A person deletes their own; anyone else's
        needs ADMIN."""
        actor = _own_or_authorized(actor, owner_id, "delete_personal_token")
        with self._context.unit() as tx:
            _owner(tx, owner_id, service_account)
            token = tx.get_record(PERSONAL_TOKENS, token_id)
            if token is None or token.user_id != owner_id:
                raise NotFound(
                    f"You have no personal access token with id {token_id}.",
                    [ErrorDetail("no such token of yours", "$.id")],
                )
            tx.delete_record(PERSONAL_TOKENS, token_id)
            self._context.record_event(
                tx, "pat-deleted", actor, pre_data=PersonalTokenData.of(token)
            )

    def token_holder(self, secret: str) -> PersonalTokenHolder | None:
        """Who the token of ``secret`` acts as, or None: unknown, expired, or its owner
        disabled or gone. Notes it as seen, at most once a `SEEN_EVERY`."""
        digest = secret_digest(secret)
        now = self._context.clock()
        with self._context.read() as tx:
            found = tx.list_records(PERSONAL_TOKENS, {"secret_digest": digest}, limit=1)
            token = found[0] if found else None
            user = tx.get_record(USERS, token.user_id) if token is not None else None
            principal = principal_in(tx, user) if user is not None else None
        if token is None or not hmac.compare_digest(token.secret_digest, digest):
            return None
        if token.expires_at <= now or user is None or user.disabled:
            return None
        if token.seen_at is None or now - token.seen_at >= SEEN_EVERY:
            with self._quiet() as tx:
                tx.save_record(PERSONAL_TOKENS, attrs.evolve(token, seen_at=now))
        return PersonalTokenHolder(token, user, principal)

    def _quiet(self) -> AbstractContextManager[Transaction]:
        """Last-seen times are not changes SDKs see: written past the revision."""
        return self._context.store.transaction()


def _check(description: str, expires_at: dt.datetime, now: dt.datetime) -> None:
    details = []
    if not description.strip():
        details.append(ErrorDetail("may not be blank", "$.description"))
    elif len(description) > MAX_DESCRIPTION_LENGTH:
        details.append(ErrorDetail(f"at most {MAX_DESCRIPTION_LENGTH} characters", "$.description"))
    if expires_at.tzinfo is None:
        details.append(ErrorDetail("a date-time with its UTC offset", "$.expiresAt"))
    elif expires_at <= now:
        details.append(ErrorDetail("must be in the future", "$.expiresAt"))
    elif expires_at - now > MAX_PERSONAL_TOKEN_LIFETIME:
        days = MAX_PERSONAL_TOKEN_LIFETIME.days
        details.append(ErrorDetail(f"at most {days} days from now", "$.expiresAt"))
    if details:
        raise InvalidInput("The personal access token cannot be created as given.", details)


def _owner(tx: Records, owner_id: int, service_account: bool) -> User:
    user = tx.get_record(USERS, owner_id)
    if user is None or user.service_account is not service_account:
        kind = "service account" if service_account else "user"
        raise NotFound(f"Could not find {kind} with id {owner_id}")
    return user


def _own_or_authorized(actor: Actor, owner_id: int, operation: str) -> str:
    """The event log's name of ``actor``: any person may manage their own tokens (as in
    Unleash, no permission is needed for that); another owner's need ``operation``'s."""
    if isinstance(actor, Principal) and actor.user_id == owner_id:
        return actor.actor
    return authorize(actor, operation)
