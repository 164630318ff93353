"""Server settings: command-line flags, ``FLAGCORE_*`` environment variables, defaults."""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping, Sequence

import attrs

from flagcore.service import RetentionSettings

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
    # --- hostile load: store queue, client caches, retention (docs/security.md) ---
    store_queue_limit: int = 256
    payload_cache_bytes: int = 32 * 1024 * 1024
    instance_write_interval: float = 5.0
    retention: RetentionSettings = attrs.field(factory=RetentionSettings)
    retention_interval: float = 60.0
    # --- admin web UI: session signing and lifetime (docs/ui.md) ---
    ui_secret: str | None = attrs.field(default=None, repr=False)
    ui_session_seconds: float = 8 * 3600.0

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
        values.update(_load_settings_from_env(env))
        values.update(_ui_settings_from_env(env))
        values.update({k: v for k, v in overrides.items() if v is not None})
        if isinstance(values.get("auth"), str):
            values["auth"] = AuthMode(str(values["auth"]))
        return cls(**values)  # type: ignore[arg-type]

    def with_tokens(self, admin: Sequence[str], client: Sequence[str]) -> ServerConfig:
        return attrs.evolve(self, init_admin_tokens=tuple(admin), init_client_tokens=tuple(client))


# --- hostile load: store queue, client caches, retention ---
_LOAD_SETTINGS = {
    "FLAGCORE_STORE_QUEUE_LIMIT": ("store_queue_limit", int),
    "FLAGCORE_PAYLOAD_CACHE_BYTES": ("payload_cache_bytes", int),
    "FLAGCORE_INSTANCE_WRITE_INTERVAL_SECONDS": ("instance_write_interval", float),
    "FLAGCORE_RETENTION_INTERVAL_SECONDS": ("retention_interval", float),
}
_RETENTION_SETTINGS = {
    "FLAGCORE_METRICS_RETENTION_HOURS": ("metrics_hours", float),
    "FLAGCORE_CLIENT_INSTANCE_RETENTION_DAYS": ("client_instance_days", float),
    "FLAGCORE_SIGNAL_RETENTION_DAYS": ("signal_days", float),
    "FLAGCORE_SIGNALS_KEPT_PER_ENDPOINT": ("signals_per_endpoint", int),
    "FLAGCORE_EVENT_RETENTION_DAYS": ("event_days", float),
}


def _load_settings_from_env(env: Mapping[str, str]) -> dict[str, object]:
    """The queue, cache and retention settings among ``env``; a bad number is an error."""
    values: dict[str, object] = {}
    for variable, (field, kind) in _LOAD_SETTINGS.items():
        if variable in env:
            values[field] = _non_negative(variable, env[variable], kind)
    retention = {
        field: _non_negative(variable, env[variable], kind)
        for variable, (field, kind) in _RETENTION_SETTINGS.items()
        if variable in env
    }
    if retention:
        values["retention"] = RetentionSettings(**retention)  # type: ignore[arg-type]
    return values


def _non_negative(variable: str, raw: str, kind: type[int] | type[float]) -> int | float:
    try:
        value = kind(raw)
    except ValueError:
        raise ValueError(f"{variable} must be a number, not {raw!r}") from None
    if not 0 <= value < float("inf"):
        raise ValueError(f"{variable} must be 0 or more, not {raw!r}")
    return value


# --- admin web UI ---
def _ui_settings_from_env(env: Mapping[str, str]) -> dict[str, object]:
    """``FLAGCORE_UI_SECRET`` signs session cookies (without it, a random secret per process:
    sessions end when the server restarts); ``FLAGCORE_UI_SESSION_HOURS`` is their lifetime."""
    values: dict[str, object] = {}
    if env.get("FLAGCORE_UI_SECRET"):
        values["ui_secret"] = env["FLAGCORE_UI_SECRET"]
    if "FLAGCORE_UI_SESSION_HOURS" in env:
        hours = _non_negative("FLAGCORE_UI_SESSION_HOURS", env["FLAGCORE_UI_SESSION_HOURS"], float)
        values["ui_session_seconds"] = hours * 3600.0
    return values
