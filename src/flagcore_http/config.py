"""Server settings: command-line flags, ``FLAGCORE_*`` environment variables, defaults."""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping, Sequence

import attrs

__all__ = ["AuthMode", "ServerConfig"]


class AuthMode(enum.StrEnum):
    TOKEN = "token"
    NONE = "none"


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(part.strip() for part in (value or "").split(",") if part.strip())


@attrs.frozen(kw_only=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 4242
    db: str = "./flagcore.db"
    auth: AuthMode = AuthMode.TOKEN
    init_admin_tokens: tuple[str, ...] = ()
    init_client_tokens: tuple[str, ...] = ()
    max_body_bytes: int = 1_000_000
    access_log: bool = True
    shutdown_timeout: float = 10.0

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, **overrides: object
    ) -> ServerConfig:
        """Settings from ``FLAGCORE_*`` variables; ``overrides`` (command-line flags) win."""
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        if "FLAGCORE_HOST" in env:
            values["host"] = env["FLAGCORE_HOST"]
        if "FLAGCORE_PORT" in env:
            values["port"] = int(env["FLAGCORE_PORT"])
        if "FLAGCORE_DB" in env:
            values["db"] = env["FLAGCORE_DB"]
        if "FLAGCORE_AUTH" in env:
            values["auth"] = AuthMode(env["FLAGCORE_AUTH"])
        values["init_admin_tokens"] = _split(env.get("FLAGCORE_INIT_ADMIN_API_TOKENS"))
        values["init_client_tokens"] = _split(env.get("FLAGCORE_INIT_CLIENT_API_TOKENS"))
        values.update({k: v for k, v in overrides.items() if v is not None})
        if isinstance(values.get("auth"), str):
            values["auth"] = AuthMode(str(values["auth"]))
        return cls(**values)  # type: ignore[arg-type]

    def with_tokens(self, admin: Sequence[str], client: Sequence[str]) -> ServerConfig:
        return attrs.evolve(self, init_admin_tokens=tuple(admin), init_client_tokens=tuple(client))
