"""Signal endpoints, their tokens, and the signals they receive."""

from __future__ import annotations

import datetime as dt
import secrets
from typing import Any

import attrs

from flagcore.entities import Signal, SignalEndpoint, SignalEndpointToken
from flagcore.errors import (
    ErrorDetail,
    Forbidden,
    InvalidInput,
    NameConflict,
    NotFound,
    Unauthenticated,
)
from flagcore.limits import enforce
from flagcore.ports import SignalRepository
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.signal_intake import (
    BAD_TOKEN,
    SignalCredentials,
    SignalSender,
    check_signal_payload,
    check_signal_rate,
    disabled_endpoint_message,
)
from flagcore.service.tokens import hash_secret
from flagcore.validation import check_name, check_text
from flagcore.wire.event_data import IdNameData, NameData, NamedSwitchData, SignalTokenData

__all__ = ["CreatedSignalToken", "Signals"]


@attrs.frozen
class CreatedSignalToken:
    """A new endpoint token and its secret; the secret is shown this once."""

    token: SignalEndpointToken
    secret: str


class Signals:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context
        # When this service last stored a signal, per endpoint id (see
        # `refuse_early_if_rate_limited`); one entry per endpoint, dropped with it.
        self._last_signal_at: dict[int, dt.datetime] = {}

    # --- endpoints ---
    def create_signal_endpoint(
        self,
        name: str,
        description: str | None = None,
        *,
        enabled: bool = True,
        actor: Actor = SYSTEM,
    ) -> SignalEndpoint:
        actor = authorize(actor, "create_signal_endpoint")
        check_name(name, "signal endpoint")
        check_text(description, "$.description")
        with self._context.unit() as tx:
            existing = tx.list_signal_endpoints()
            enforce(self._context.limits, "signal_endpoints", len(existing) + 1, "signal endpoints")
            if tx.find_signal_endpoint(name) is not None:
                raise NameConflict(f'a signal endpoint named "{name}" already exists')
            endpoint = tx.create_signal_endpoint(name, description, enabled, self._context.clock())
            self._context.record_event(
                tx, "signal-endpoint-created", actor, data=IdNameData(endpoint.id, name)
            )
        return endpoint

    def list_signal_endpoints(self) -> list[SignalEndpoint]:
        with self._context.read() as tx:
            return list(tx.list_signal_endpoints())

    def get_signal_endpoint(self, endpoint_id: int) -> SignalEndpoint:
        with self._context.read() as tx:
            return _endpoint(tx, endpoint_id)

    def update_signal_endpoint(
        self,
        endpoint_id: int,
        *,
        name: str | None = None,
        description: str | None = None,
        enabled: bool | None = None,
        actor: Actor = SYSTEM,
    ) -> SignalEndpoint:
        actor = authorize(actor, "update_signal_endpoint")
        if name is not None:
            check_name(name, "signal endpoint")
        check_text(description, "$.description")
        with self._context.unit() as tx:
            before = _endpoint(tx, endpoint_id)
            taken = name is not None and name != before.name and tx.find_signal_endpoint(name)
            if taken:
                raise NameConflict(f'a signal endpoint named "{name}" already exists')
            after = attrs.evolve(
                before,
                name=before.name if name is None else name,
                description=before.description if description is None else description,
                enabled=before.enabled if enabled is None else enabled,
            )
            tx.save_signal_endpoint(after)
            self._context.record_event(
                tx,
                "signal-endpoint-updated",
                actor,
                data=NamedSwitchData(after.id, after.name, after.enabled),
            )
        return after

    def delete_signal_endpoint(self, endpoint_id: int, *, actor: Actor = SYSTEM) -> None:
        """Delete the endpoint with its tokens and the signals it received."""
        actor = authorize(actor, "delete_signal_endpoint")
        with self._context.unit() as tx:
            endpoint = _endpoint(tx, endpoint_id)
            tx.delete_signal_endpoint(endpoint_id)
            self._context.record_event(
                tx, "signal-endpoint-deleted", actor, data=NameData(endpoint.name)
            )
        self._last_signal_at.pop(endpoint_id, None)

    # --- tokens ---
    def create_signal_endpoint_token(
        self, endpoint_id: int, name: str, *, actor: Actor = SYSTEM
    ) -> CreatedSignalToken:
        actor = authorize(actor, "create_signal_endpoint_token")
        if not isinstance(name, str) or not name.strip():
            raise InvalidInput("a token needs a name", [ErrorDetail("must not be empty", "$.name")])
        with self._context.unit() as tx:
            _endpoint(tx, endpoint_id)
            tokens = tx.list_signal_endpoint_tokens(endpoint_id)
            enforce(
                self._context.limits,
                "tokens_per_signal_endpoint",
                len(tokens) + 1,
                "tokens on one signal endpoint",
            )
            secret = secrets.token_hex(32)
            token = tx.create_signal_endpoint_token(
                endpoint_id, name, hash_secret(secret), self._context.clock()
            )
            self._context.record_event(
                tx,
                "signal-endpoint-token-created",
                actor,
                data=SignalTokenData(endpoint_id, token.id, name),
            )
        return CreatedSignalToken(token, secret)

    def list_signal_endpoint_tokens(self, endpoint_id: int) -> list[SignalEndpointToken]:
        with self._context.read() as tx:
            _endpoint(tx, endpoint_id)
            return list(tx.list_signal_endpoint_tokens(endpoint_id))

    def delete_signal_endpoint_token(
        self, endpoint_id: int, token_id: int, *, actor: Actor = SYSTEM
    ) -> None:
        actor = authorize(actor, "delete_signal_endpoint_token")
        with self._context.unit() as tx:
            _endpoint(tx, endpoint_id)
            if all(t.id != token_id for t in tx.list_signal_endpoint_tokens(endpoint_id)):
                raise NotFound(f"signal endpoint {endpoint_id} has no token {token_id}")
            tx.delete_signal_endpoint_token(token_id)
            self._context.record_event(
                tx,
                "signal-endpoint-token-deleted",
                actor,
                data=SignalTokenData(endpoint_id, token_id),
            )

    # --- receiving and reading signals ---
    def signal_credentials(self) -> SignalCredentials:
        """Every endpoint token digest with its endpoint, read at once (see `SignalCredentials`)."""
        with self._context.read() as tx:
            endpoints = list(tx.list_signal_endpoints())
            senders = {
                token.secret_hash: SignalSender(token, endpoint)
                for endpoint in endpoints
                for token in tx.list_signal_endpoint_tokens(endpoint.id)
            }
        return SignalCredentials(senders, frozenset(e.name for e in endpoints))

    def receive_signal(self, endpoint_name: str, secret: str | None, payload: Any) -> Signal:
        """Store a signal sent to ``endpoint_name`` with ``secret``: `SignalCredentials.sender`
        decides who may send, then `accept_signal` stores it. A refused signal stores nothing.
        """
        sender = self.signal_credentials().sender(endpoint_name, secret)
        return self.accept_signal(sender, payload)

    def accept_signal(self, sender: SignalSender, payload: Any) -> Signal:
        """Store ``payload`` from an authenticated ``sender``; every check, then one insert.

        ``sender`` may come from credentials read a moment ago (an adapter's cache), so the
        token and endpoint are checked again inside the write transaction: a token revoked
        or an endpoint disabled or deleted since is refused, never stored. The rate limit
        is decided in the same transaction, so concurrent senders cannot slip two signals
        into one interval and every accepted signal is stored.
        """
        check_signal_payload(payload, self._context.limits)
        with self._context.store.transaction() as tx:
            endpoint = tx.get_signal_endpoint(sender.endpoint.id)
            if endpoint is None or endpoint.name != sender.endpoint.name:
                raise NotFound(f'there is no signal endpoint "{sender.endpoint.name}"')
            token_ids = {t.id for t in tx.list_signal_endpoint_tokens(endpoint.id)}
            if sender.token.id not in token_ids:
                raise Unauthenticated(BAD_TOKEN)
            if not endpoint.enabled:
                raise Forbidden(disabled_endpoint_message(endpoint.name))
            now = self._context.clock()
            (last,) = tx.list_signals(endpoint_id=endpoint.id, limit=1) or (None,)
            if last is not None:
                check_signal_rate(endpoint.name, last.created_at, now, self._context.limits)
            signal = tx.add_signal(endpoint.id, sender.token.id, payload, now)
        self._last_signal_at[endpoint.id] = now  # committed: the in-memory check may use it
        return signal

    def refuse_early_if_rate_limited(self, sender: SignalSender) -> None:
        """`RateLimited` if this service itself stored a signal for the endpoint too recently.

        Memory only, so an adapter can call it before queueing any store work: a flood
        from a valid token costs no transaction. It only ever refuses what `accept_signal`
        would refuse (its own last signal is never newer than the store's); the store
        stays the judge for everything else, including signals other processes stored.
        """
        last_at = self._last_signal_at.get(sender.endpoint.id)
        if last_at is not None:
            check_signal_rate(
                sender.endpoint.name, last_at, self._context.clock(), self._context.limits
            )

    def list_signals(
        self, endpoint_id: int | None = None, *, limit: int = 50, before_id: int | None = None
    ) -> list[Signal]:
        """Newest first; ``before_id`` pages back."""
        with self._context.read() as tx:
            if endpoint_id is not None:
                _endpoint(tx, endpoint_id)
            return list(tx.list_signals(endpoint_id=endpoint_id, limit=limit, before_id=before_id))


def _endpoint(tx: SignalRepository, endpoint_id: int) -> SignalEndpoint:
    endpoint = tx.get_signal_endpoint(endpoint_id)
    if endpoint is None:
        raise NotFound(f"there is no signal endpoint with id {endpoint_id}")
    return endpoint
