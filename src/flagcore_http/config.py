"""Server settings: command-line flags, ``FLAGCORE_*`` environment variables, defaults.

Every setting is checked here, before anything is opened or created: a wrong value stops
the server with a `ConfigError` whose message names the flag or variable, the value (with
any secret elided), and what is allowed.
"""

from __future__ import annotations

import enum
import math
import os
import re
from collections.abc import Mapping, Sequence

import attrs

from flagcore.entities import TokenType
from flagcore.service import RetentionSettings

__all__ = ["AuthMode", "ConfigError", "InitToken", "ServerConfig", "parse_init_token"]


class AuthMode(enum.StrEnum):
    TOKEN = "token"
    NONE = "none"


class ConfigError(ValueError):
    """A setting that cannot be used; the message says which, its value, and what is allowed."""


# `project:environment.secret`, Unleash's token format. The project is `*` (all projects)
# or one project; the environment is `*` (admin tokens only) or one environment, so it ends
# at the first "." after the colon. The secret part is whatever the operator chose.
_INIT_TOKEN = re.compile(
    r"(?P<project>\*|\[\]|[A-Za-z0-9_.~-]+):(?P<environment>\*|[A-Za-z0-9_~-]+)\.(?P<secret>[A-Za-z0-9_.~-]+)"
)
MAX_INIT_TOKENS = 100
MAX_SECRET_LENGTH = 500
SHORT_SECRET = 16  # below this, the start warns that the secret is guessable


@attrs.frozen
class InitToken:
    """A token given in ``FLAGCORE_INIT_*_API_TOKENS``, already checked for shape."""

    type: TokenType
    secret: str = attrs.field(repr=False)
    projects: tuple[str, ...]
    environment: str | None
    origin: str  # "FLAGCORE_INIT_CLIENT_API_TOKENS, entry 1 (default:development.…)"

    @property
    def secret_is_short(self) -> bool:
        return len(self.secret.partition(":")[2].partition(".")[2]) < SHORT_SECRET


def _elided(secret: str) -> str:
    """What a message may show of a secret: the scope before the first ".", never the rest."""
    scope, dot, _ = secret.partition(".")
    if dot and len(scope) <= 80:
        return _shown(scope)[1:-1] + ".…"
    return "not shown: no . in it"


def parse_init_token(raw: str, kind: TokenType, variable: str, position: int) -> InitToken:
    """One entry of an init-token variable; `ConfigError` unless it has Unleash's shape."""
    origin = f"{variable}, entry {position} ({_elided(raw)})"
    allowed = (
        "admin tokens look like *:*.secret"
        if kind is TokenType.ADMIN
        else "client tokens look like project:environment.secret (* for all projects)"
    )
    if len(raw) > MAX_SECRET_LENGTH:
        raise ConfigError(f"{origin}: longer than {MAX_SECRET_LENGTH} characters")
    match = _INIT_TOKEN.fullmatch(raw)
    if match is None:
        raise ConfigError(
            f"{origin}: malformed; {allowed}, where secret is letters, digits, _ . ~ or -"
        )
    project, environment = match["project"], match["environment"]
    if project == "[]":
        raise ConfigError(
            f"{origin}: [] (several projects) cannot be given in a variable; "
            "name one project or * for all projects"
        )
    if kind is TokenType.ADMIN:
        if (project, environment) != ("*", "*"):
            raise ConfigError(
                f"{origin}: this is a client-shaped secret, and an admin token can do "
                f"everything; {allowed} (put client tokens in FLAGCORE_INIT_CLIENT_API_TOKENS)"
            )
        return InitToken(TokenType.ADMIN, raw, ("*",), None, origin)
    if environment == "*":
        raise ConfigError(
            f"{origin}: a client token serves one environment, not *; {allowed} "
            "(put admin tokens in FLAGCORE_INIT_ADMIN_API_TOKENS)"
        )
    return InitToken(TokenType.CLIENT, raw, (project,), environment, origin)


def _init_tokens(env: Mapping[str, str], variable: str, kind: TokenType) -> tuple[InitToken, ...]:
    entries = [part.strip() for part in env.get(variable, "").split(",") if part.strip()]
    if len(entries) > MAX_INIT_TOKENS:
        raise ConfigError(f"{variable}: {len(entries)} tokens; at most {MAX_INIT_TOKENS}")
    tokens = tuple(
        parse_init_token(entry, kind, variable, index + 1) for index, entry in enumerate(entries)
    )
    seen: set[str] = set()
    for token in tokens:
        if token.secret in seen:
            raise ConfigError(f"{token.origin}: the same secret is given twice")
        seen.add(token.secret)
    return tokens


def _shown(value: str) -> str:
    """A value quoted for a message: control characters escaped, length bounded."""
    text = value if len(value) <= 60 else value[:60] + "…"
    return repr(text)


@attrs.frozen
class _Setting:
    """One setting: where it comes from, and how to read it."""

    field: str
    flag: str
    variable: str


_SETTINGS = {
    s.field: s
    for s in (
        _Setting("host", "--host", "FLAGCORE_HOST"),
        _Setting("port", "--port", "FLAGCORE_PORT"),
        _Setting("db", "--db", "FLAGCORE_DB"),
        _Setting("auth", "--auth", "FLAGCORE_AUTH"),
        _Setting("header_timeout", "--header-timeout", "FLAGCORE_HEADER_TIMEOUT"),
        _Setting("body_timeout", "--body-timeout", "FLAGCORE_BODY_TIMEOUT"),
        _Setting("max_connections", "--max-connections", "FLAGCORE_MAX_CONNECTIONS"),
        # PostgreSQL only (--db postgresql://...); see docs/deploying.md.
        _Setting("db_pool_size", "--db-pool-size", "FLAGCORE_DB_POOL_SIZE"),
        _Setting("db_pool_timeout", "--db-pool-timeout", "FLAGCORE_DB_POOL_TIMEOUT"),
        _Setting("db_connect_timeout", "--db-connect-timeout", "FLAGCORE_DB_CONNECT_TIMEOUT"),
        _Setting(
            "db_revision_check_interval",
            "--db-revision-check-interval",
            "FLAGCORE_DB_REVISION_CHECK_INTERVAL",
        ),
    )
}


def _integer(raw: str, where: str, low: int, high: int, meaning: str) -> int:
    text = raw.strip()
    if not re.fullmatch(r"[0-9]{1,10}", text) or not low <= int(text) <= high:
        raise ConfigError(f"{where}={_shown(raw)}: {meaning}; use an integer from {low} to {high}")
    return int(text)


def _seconds(raw: str, where: str, low: float, high: float) -> float:
    try:
        value = float(raw.strip()) if re.fullmatch(r"[0-9.]{1,12}", raw.strip()) else math.nan
    except ValueError:
        value = math.nan
    if not low <= value <= high:  # NaN fails too
        raise ConfigError(
            f"{where}={_shown(raw)}: not a duration; use seconds from {low:g} to {high:g}"
        )
    return value


def _read(field: str, raw: str, where: str) -> object:
    """The value of ``field`` from ``raw`` text; `ConfigError` naming ``where`` otherwise."""
    if field == "port":
        return _integer(raw, where, 0, 65535, "not a port number (0 picks a free port)")
    if field == "auth":
        try:
            return AuthMode(raw.strip())
        except ValueError:
            raise ConfigError(
                f"{where}={_shown(raw)}: not an authentication mode; use token or none"
            ) from None
    if field == "header_timeout":
        return _seconds(raw, where, 0.1, 3600)
    if field == "body_timeout":
        return _seconds(raw, where, 0.1, 3600)
    if field == "max_connections":
        return _integer(raw, where, 1, 1_000_000, "not a connection count")
    if field == "db_pool_size":
        return _integer(raw, where, 1, 1000, "not a connection count")
    if field in ("db_pool_timeout", "db_connect_timeout"):
        return _seconds(raw, where, 0.1, 600)
    if field == "db_revision_check_interval":
        return _seconds(raw, where, 0.1, 3600)
    if not raw.strip() or len(raw) > 4096 or any(ord(c) < 32 for c in raw):
        shown = _shown(raw) if "://" not in raw else "(a URL, not shown: it may hold a password)"
        raise ConfigError(f"{where}={shown}: must be a non-empty name, path or postgresql:// URL")
    return raw.strip()


@attrs.frozen(kw_only=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 4242
    db: str = "./flagcore.db"
    auth: AuthMode = AuthMode.TOKEN
    init_admin_tokens: tuple[InitToken, ...] = ()
    init_client_tokens: tuple[InitToken, ...] = ()
    max_body_bytes: int = 1_000_000
    access_log: bool = True
    shutdown_timeout: float = 10.0
    # Slow clients (docs/security.md): complete headers within this many seconds of the
    # connection or of the previous response (idle keep-alive connections close then too)…
    header_timeout: float = 10.0
    # …the whole body within this many seconds of the headers…
    body_timeout: float = 30.0
    # …and at most this many open connections (lowered to fit the open-file limit).
    max_connections: int = 1000
    # --- PostgreSQL (--db postgresql://...): pool, timeouts, the revision safety net ---
    db_pool_size: int = 10
    db_pool_timeout: float = 5.0
    db_connect_timeout: float = 5.0
    db_revision_check_interval: float = 2.0
    # --- hostile load: store queue, client caches, retention (docs/security.md) ---
    store_queue_limit: int = 256
    payload_cache_bytes: int = 32 * 1024 * 1024
    instance_write_interval: float = 5.0
    retention: RetentionSettings = attrs.field(factory=RetentionSettings)
    retention_interval: float = 60.0

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, **flags: str | bool | None
    ) -> ServerConfig:
        """Settings from ``FLAGCORE_*`` variables; ``flags`` (command-line text) win.

        Raises `ConfigError` naming the flag or variable at fault.
        """
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for field, setting in _SETTINGS.items():
            if setting.variable in env:
                raw = env[setting.variable]
                values[field] = _read(field, raw, setting.variable)
            flag = flags.pop(field, None)
            if isinstance(flag, str):
                values[field] = _read(field, flag, setting.flag)
        access_log = flags.pop("access_log", None)
        if isinstance(access_log, bool):
            values["access_log"] = access_log
        if flags:
            raise TypeError(f"unknown settings: {sorted(flags)}")
        values["init_admin_tokens"] = _init_tokens(
            env, "FLAGCORE_INIT_ADMIN_API_TOKENS", TokenType.ADMIN
        )
        values["init_client_tokens"] = _init_tokens(
            env, "FLAGCORE_INIT_CLIENT_API_TOKENS", TokenType.CLIENT
        )
        values.update(_load_settings_from_env(env))
        return cls(**values)  # type: ignore[arg-type]

    def with_tokens(self, admin: Sequence[str], client: Sequence[str]) -> ServerConfig:
        """These secrets as init tokens (checked like the variables would be)."""
        return attrs.evolve(
            self,
            init_admin_tokens=_init_tokens(
                {"FLAGCORE_INIT_ADMIN_API_TOKENS": ",".join(admin)},
                "FLAGCORE_INIT_ADMIN_API_TOKENS",
                TokenType.ADMIN,
            ),
            init_client_tokens=_init_tokens(
                {"FLAGCORE_INIT_CLIENT_API_TOKENS": ",".join(client)},
                "FLAGCORE_INIT_CLIENT_API_TOKENS",
                TokenType.CLIENT,
            ),
        )


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
        raise ConfigError(f"{variable}={_shown(raw)}: not a number; use 0 or more") from None
    if not 0 <= value < float("inf"):
        raise ConfigError(f"{variable}={_shown(raw)}: use 0 or more")
    return value
