"""Service accounts (Unleash's ``/api/admin/service-account``): users for machines.

A service account is a `User` marked ``service_account``: it has a name, a username and
a root role, never a password, so it cannot sign in; it acts only through its tokens
(`flagcore.service.personal_tokens`), which act with its root role. It is not one of the
users ``/api/admin/user-admin`` lists or changes, and no password or link can be made for
it. Deleting it deletes its tokens, at once.
"""

from __future__ import annotations

import datetime as dt
import re

import attrs

from flagcore.errors import ErrorDetail, InvalidInput, NotFound
from flagcore.people import PersonalToken, RootRole, User
from flagcore.ports import Records
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.personal_tokens import CreatedPersonalToken, PersonalTokens
from flagcore.service.roles import root_role_of
from flagcore.service.users import check_unique, check_user_text
from flagcore.tables import PERSONAL_TOKENS, USERS
from flagcore.wire.event_data import UserData

__all__ = ["ServiceAccounts"]


class ServiceAccounts:
    def __init__(self, context: ServiceContext, *, personal_tokens: PersonalTokens) -> None:
        self._context = context
        self._tokens = personal_tokens

    def list_accounts(self) -> list[tuple[User, list[PersonalToken]]]:
        """Every service account with its tokens (Unleash lists them together)."""
        with self._context.read() as tx:
            accounts = [user for user in tx.list_records(USERS) if user.service_account]
            return [
                (account, list(tx.list_records(PERSONAL_TOKENS, {"user_id": account.id})))
                for account in accounts
            ]

    def get_account(self, account_id: int) -> User:
        with self._context.read() as tx:
            return _account(tx, account_id)

    def create_service_account(
        self, *, name: str, username: str, root_role: RootRole | int, actor: Actor = SYSTEM
    ) -> User:
        """A new service account: a name and a username (unique among every user's
        usernames and emails, whatever their case), both required."""
        actor = authorize(actor, "create_service_account")
        _check(name, username)
        with self._context.unit() as tx:
            check_unique(tx, None, username, own_id=-1)
            root, custom = root_role_of(tx, root_role)
            account = tx.create_record(
                USERS,
                User(
                    id=0,
                    name=name,
                    username=username,
                    created_at=self._context.clock(),
                    service_account=True,
                    root_role=root,
                    custom_root_role=custom,
                ),
            )
            self._context.record_event(
                tx, "service-account-created", actor, data=UserData.of(account)
            )
        return account

    def update_service_account(
        self,
        account_id: int,
        *,
        name: str | None = None,
        username: str | None = None,
        root_role: RootRole | int | None = None,
        actor: Actor = SYSTEM,
    ) -> User:
        """Change what is given (None keeps it); a new root role applies to the account's
        tokens at their next request."""
        actor = authorize(actor, "update_service_account")
        details = [
            *check_user_text(name, "$.name", None),
            *check_user_text(username, "$.username", _USERNAME),
        ]
        if details:
            raise InvalidInput("The service account cannot be changed as given.", details)
        with self._context.unit() as tx:
            before = _account(tx, account_id)
            check_unique(tx, None, username, own_id=account_id)
            after = attrs.evolve(
                before,
                name=before.name if name is None else name,
                username=before.username if username is None else username,
            )
            if root_role is not None:
                root, custom = root_role_of(tx, root_role)
                after = attrs.evolve(after, root_role=root, custom_root_role=custom)
            tx.save_record(USERS, after)
            self._context.record_event(
                tx,
                "service-account-updated",
                actor,
                data=UserData.of(after),
                pre_data=UserData.of(before),
            )
        return after

    def delete_service_account(self, account_id: int, *, actor: Actor = SYSTEM) -> None:
        """Its tokens go with it, and are refused at once on every server."""
        actor = authorize(actor, "delete_service_account")
        with self._context.unit() as tx:
            account = _account(tx, account_id)
            for token in tx.list_records(PERSONAL_TOKENS, {"user_id": account_id}):
                tx.delete_record(PERSONAL_TOKENS, token.id)
            tx.delete_record(USERS, account_id)
            self._context.record_event(
                tx, "service-account-deleted", actor, pre_data=UserData.of(account)
            )

    def tokens_of(self, account_id: int) -> list[PersonalToken]:
        return self._tokens.list_of(account_id, service_account=True)

    def create_service_account_token(
        self, account_id: int, description: str, expires_at: dt.datetime, *, actor: Actor = SYSTEM
    ) -> CreatedPersonalToken:
        """A token acting as the account; its rules are a personal token's."""
        actor = authorize(actor, "create_service_account_token")
        return self._tokens.create_personal_token(
            account_id, description, expires_at, service_account=True, actor=actor
        )

    def delete_service_account_token(
        self, account_id: int, token_id: int, *, actor: Actor = SYSTEM
    ) -> None:
        actor = authorize(actor, "delete_service_account_token")
        self._tokens.delete_personal_token(account_id, token_id, service_account=True, actor=actor)


# A username, not an email: what a service account is named by (Unleash requires one).
_USERNAME = re.compile(r"[^@\s]+")


def _check(name: str, username: str) -> None:
    details = [
        *check_user_text(name, "$.name", None),
        *check_user_text(username, "$.username", _USERNAME),
    ]
    if details:
        raise InvalidInput("The service account cannot be created as given.", details)


def _account(tx: Records, account_id: int) -> User:
    account = tx.get_record(USERS, account_id)
    if account is None or not account.service_account:
        raise NotFound(
            f"Could not find service account with id {account_id}",
            [ErrorDetail("no such service account", "/params/id")],
        )
    return account
