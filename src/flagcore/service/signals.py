"""Signal endpoints, their tokens, and the signals they receive."""

from __future__ import annotations

import hmac
import json
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
    RateLimited,
    Unauthenticated,
)
from flagcore.limits import enforce
from flagcore.ports import Transaction
from flagcore.service._base import SYSTEM, ServiceBase
from flagcore.service.tokens import hash_secret
from flagcore.validation import check_name

__all__ = ["CreatedSignalToken", "SignalsMixin"]


@attrs.frozen
class CreatedSignalToken:
    """A new endpoint token and its secret; the secret is shown this once."""

    token: SignalEndpointToken
    secret: str


class SignalsMixin(ServiceBase):
    # --- endpoints ---
    def create_signal_endpoint(
        self,
        name: str,
        description: str | None = None,
        *,
        enabled: bool = True,
        actor: str = SYSTEM,
    ) -> SignalEndpoint:
        check_name(name, "signal endpoint")
        with self._unit() as tx:
            existing = tx.list_signal_endpoints()
            enforce(self.limits, "signal_endpoints", len(existing) + 1, "signal endpoints")
            if tx.find_signal_endpoint(name) is not None:
                raise NameConflict(f'a signal endpoint named "{name}" already exists')
            endpoint = tx.create_signal_endpoint(name, description, enabled, self.clock())
            self._event(
                tx, "signal-endpoint-created", actor, data={"id": endpoint.id, "name": name}
            )
        return endpoint

    def list_signal_endpoints(self) -> list[SignalEndpoint]:
        with self._read() as tx:
            return list(tx.list_signal_endpoints())

    def get_signal_endpoint(self, endpoint_id: int) -> SignalEndpoint:
        with self._read() as tx:
            return self._endpoint(tx, endpoint_id)

    def update_signal_endpoint(
        self,
        endpoint_id: int,
        *,
        name: str | None = None,
        description: str | None = None,
        enabled: bool | None = None,
        actor: str = SYSTEM,
    ) -> SignalEndpoint:
        if name is not None:
            check_name(name, "signal endpoint")
        with self._unit() as tx:
            before = self._endpoint(tx, endpoint_id)
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
            self._event(
                tx,
                "signal-endpoint-updated",
                actor,
                data={"id": after.id, "name": after.name, "enabled": after.enabled},
            )
        return after

    def delete_signal_endpoint(self, endpoint_id: int, *, actor: str = SYSTEM) -> None:
        """Delete the endpoint with its tokens and the signals it received."""
        with self._unit() as tx:
            endpoint = self._endpoint(tx, endpoint_id)
            tx.delete_signal_endpoint(endpoint_id)
            self._event(tx, "signal-endpoint-deleted", actor, data={"name": endpoint.name})

    # --- tokens ---
    def create_signal_endpoint_token(
        self, endpoint_id: int, name: str, *, actor: str = SYSTEM
    ) -> CreatedSignalToken:
        if not isinstance(name, str) or not name.strip():
            raise InvalidInput("a token needs a name", [ErrorDetail("must not be empty", "$.name")])
        with self._unit() as tx:
            self._endpoint(tx, endpoint_id)
            tokens = tx.list_signal_endpoint_tokens(endpoint_id)
            enforce(
                self.limits,
                "tokens_per_signal_endpoint",
                len(tokens) + 1,
                "tokens on one signal endpoint",
            )
            secret = secrets.token_hex(32)
            token = tx.create_signal_endpoint_token(
                endpoint_id, name, hash_secret(secret), self.clock()
            )
            self._event(
                tx,
                "signal-endpoint-token-created",
                actor,
                data={"endpointId": endpoint_id, "tokenId": token.id, "name": name},
            )
        return CreatedSignalToken(token, secret)

    def list_signal_endpoint_tokens(self, endpoint_id: int) -> list[SignalEndpointToken]:
        with self._read() as tx:
            self._endpoint(tx, endpoint_id)
            return list(tx.list_signal_endpoint_tokens(endpoint_id))

    def delete_signal_endpoint_token(
        self, endpoint_id: int, token_id: int, *, actor: str = SYSTEM
    ) -> None:
        with self._unit() as tx:
            self._endpoint(tx, endpoint_id)
            if all(t.id != token_id for t in tx.list_signal_endpoint_tokens(endpoint_id)):
                raise NotFound(f"signal endpoint {endpoint_id} has no token {token_id}")
            tx.delete_signal_endpoint_token(token_id)
            self._event(
                tx,
                "signal-endpoint-token-deleted",
                actor,
                data={"endpointId": endpoint_id, "tokenId": token_id},
            )

    # --- receiving and reading signals ---
    def receive_signal(self, endpoint_name: str, secret: str | None, payload: Any) -> Signal:
        """Store a signal sent to ``endpoint_name`` with ``secret``; all checks, then one insert.

        Unknown endpoint: `NotFound`. No or unknown secret: `Unauthenticated`. A token of
        another endpoint, or a disabled endpoint: `Forbidden`. Over the rate limit:
        `RateLimited` with the seconds to wait. A refused signal stores nothing.
        """
        text = json.dumps(payload, separators=(",", ":"))
        enforce(
            self.limits,
            "signal_payload_bytes",
            len(text.encode("utf-8")),
            "bytes of signal payload",
        )
        digest = hash_secret(secret) if secret else None
        with self.store.transaction() as tx:
            endpoint = tx.find_signal_endpoint(endpoint_name)
            if endpoint is None:
                raise NotFound(f'there is no signal endpoint "{endpoint_name}"')
            if digest is None:
                raise Unauthenticated(
                    "a signal needs an endpoint token: Authorization: Bearer <token>"
                )
            token = self._token_with(tx, endpoint.id, digest)
            if token is None:
                if any(
                    self._token_with(tx, other.id, digest) is not None
                    for other in tx.list_signal_endpoints()
                ):
                    raise Forbidden(
                        f'that token belongs to another endpoint, not "{endpoint_name}"'
                    )
                raise Unauthenticated("the signal endpoint token is not valid")
            if not endpoint.enabled:
                raise Forbidden(f'signal endpoint "{endpoint_name}" is disabled')
            now = self.clock()
            interval = 1.0 / self.limits.signals_per_second
            (last,) = tx.list_signals(endpoint_id=endpoint.id, limit=1) or (None,)
            if last is not None:
                waited = (now - last.created_at).total_seconds()
                if waited < interval:
                    raise RateLimited(
                        f"signal endpoint {endpoint_name} accepts "
                        f"{self.limits.signals_per_second:g} signal(s) per second",
                        retry_after=min(interval, interval - waited),
                    )
            return tx.add_signal(endpoint.id, token.id, payload, now)

    def list_signals(
        self, endpoint_id: int | None = None, *, limit: int = 50, before_id: int | None = None
    ) -> list[Signal]:
        """Newest first; ``before_id`` pages back."""
        with self._read() as tx:
            if endpoint_id is not None:
                self._endpoint(tx, endpoint_id)
            return list(tx.list_signals(endpoint_id=endpoint_id, limit=limit, before_id=before_id))

    # --- shared ---
    @staticmethod
    def _endpoint(tx: Transaction, endpoint_id: int) -> SignalEndpoint:
        endpoint = tx.get_signal_endpoint(endpoint_id)
        if endpoint is None:
            raise NotFound(f"there is no signal endpoint with id {endpoint_id}")
        return endpoint

    @staticmethod
    def _token_with(tx: Transaction, endpoint_id: int, digest: str) -> SignalEndpointToken | None:
        for token in tx.list_signal_endpoint_tokens(endpoint_id):
            if hmac.compare_digest(token.secret_hash, digest):
                return token
        return None
