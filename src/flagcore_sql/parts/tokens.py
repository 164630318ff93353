"""`flagcore.ports.TokenRepository`: API tokens by secret hash."""

from __future__ import annotations

from collections.abc import Sequence

from flagcore.entities import (
    ApiToken,
)
from flagcore_sql import mapping
from flagcore_sql.parts.base import SqlPart

__all__ = ["TokenQueries"]


class TokenQueries(SqlPart):
    """The queries of `flagcore.ports.TokenRepository`."""

    def get_token(self, secret_hash: str) -> ApiToken | None:
        row = self._one("SELECT * FROM api_tokens WHERE secret_hash = ?", [secret_hash])
        return None if row is None else mapping.token_from_row(row)

    def list_tokens(self) -> Sequence[ApiToken]:
        return [
            mapping.token_from_row(row)
            for row in self._rows("SELECT * FROM api_tokens ORDER BY created_at")
        ]

    def save_token(self, token: ApiToken) -> None:
        self._run(
            "INSERT INTO api_tokens (secret_hash, name, type, secret_hint, projects, "
            "environment, created_at, id) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(secret_hash) DO UPDATE SET name = excluded.name, type = excluded.type, "
            "secret_hint = excluded.secret_hint, projects = excluded.projects, "
            "environment = excluded.environment, created_at = excluded.created_at, "
            "id = excluded.id",
            [
                token.secret_hash,
                token.name,
                token.type.value,
                token.secret_hint,
                mapping.dumps(list(token.projects)),
                token.environment,
                mapping.time_text(token.created_at),
                token.id,
            ],
        )

    def delete_token(self, secret_hash: str) -> None:
        self._run("DELETE FROM api_tokens WHERE secret_hash = ?", [secret_hash])
