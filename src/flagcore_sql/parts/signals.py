"""`flagcore.ports.SignalRepository`: endpoints, their tokens, signals."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import orjson

from flagcore.entities import (
    Signal,
    SignalEndpoint,
    SignalEndpointToken,
)
from flagcore_sql import mapping
from flagcore_sql.parts.base import SqlPart

__all__ = ["SignalQueries"]


class SignalQueries(SqlPart):
    """The queries of `flagcore.ports.SignalRepository`."""

    def create_signal_endpoint(
        self, name: str, description: str | None, enabled: bool, created_at: dt.datetime
    ) -> SignalEndpoint:
        endpoint_id = self._insert(
            "INSERT INTO signal_endpoints (name, description, enabled, created_at) "
            "VALUES (?, ?, ?, ?)",
            [name, description, enabled, mapping.time_text(created_at)],
        )
        return SignalEndpoint(endpoint_id, name, description, enabled, created_at)

    def get_signal_endpoint(self, endpoint_id: int) -> SignalEndpoint | None:
        row = self._one("SELECT * FROM signal_endpoints WHERE id = ?", [endpoint_id])
        return None if row is None else mapping.endpoint_from_row(row)

    def find_signal_endpoint(self, name: str) -> SignalEndpoint | None:
        row = self._one("SELECT * FROM signal_endpoints WHERE name = ?", [name])
        return None if row is None else mapping.endpoint_from_row(row)

    def list_signal_endpoints(self) -> Sequence[SignalEndpoint]:
        return [
            mapping.endpoint_from_row(row)
            for row in self._rows("SELECT * FROM signal_endpoints ORDER BY id")
        ]

    def save_signal_endpoint(self, endpoint: SignalEndpoint) -> None:
        self._run(
            "UPDATE signal_endpoints SET name = ?, description = ?, enabled = ? WHERE id = ?",
            [endpoint.name, endpoint.description, endpoint.enabled, endpoint.id],
        )

    def delete_signal_endpoint(self, endpoint_id: int) -> None:
        self._run("DELETE FROM signal_endpoints WHERE id = ?", [endpoint_id])

    def create_signal_endpoint_token(
        self, endpoint_id: int, name: str, secret_hash: str, created_at: dt.datetime
    ) -> SignalEndpointToken:
        token_id = self._insert(
            "INSERT INTO signal_endpoint_tokens (endpoint_id, name, secret_hash, created_at) "
            "VALUES (?, ?, ?, ?)",
            [endpoint_id, name, secret_hash, mapping.time_text(created_at)],
        )
        return SignalEndpointToken(token_id, endpoint_id, name, secret_hash, created_at)

    def list_signal_endpoint_tokens(self, endpoint_id: int) -> Sequence[SignalEndpointToken]:
        return [
            SignalEndpointToken(
                row["id"],
                row["endpoint_id"],
                row["name"],
                row["secret_hash"],
                mapping.required_time(row["created_at"]),
            )
            for row in self._rows(
                "SELECT * FROM signal_endpoint_tokens WHERE endpoint_id = ? ORDER BY id",
                [endpoint_id],
            )
        ]

    def delete_signal_endpoint_token(self, token_id: int) -> None:
        self._run("DELETE FROM signal_endpoint_tokens WHERE id = ?", [token_id])

    def add_signal(
        self, endpoint_id: int, token_id: int | None, payload: Any, created_at: dt.datetime
    ) -> Signal:
        signal_id = self._insert(
            "INSERT INTO signals (endpoint_id, token_id, payload, created_at) VALUES (?, ?, ?, ?)",
            [endpoint_id, token_id, mapping.dumps(payload), mapping.time_text(created_at)],
        )
        return Signal(signal_id, endpoint_id, token_id, payload, created_at)

    def list_signals(
        self, *, endpoint_id: int | None = None, limit: int = 50, before_id: int | None = None
    ) -> Sequence[Signal]:
        where_sql, params = mapping.where({"endpoint_id = ?": endpoint_id, "id < ?": before_id})
        rows = self._rows(
            f"SELECT * FROM signals WHERE {where_sql} ORDER BY id DESC LIMIT ?",
            [*params, limit],
        )
        return [
            Signal(
                row["id"],
                row["endpoint_id"],
                row["token_id"],
                orjson.loads(row["payload"]),
                mapping.required_time(row["created_at"]),
            )
            for row in rows
        ]
