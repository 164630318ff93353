"""Server settings: command-line flags, ``FLAGCORE_*`` environment variables, defaults.

Every setting is checked here, before anything is opened or created: a wrong value stops
the server with a `ConfigError` whose message names the flag or variable, the value (with
any secret elided), and what is allowed.
"""

from __future__ import annotations

import enum
import ipaddress
import math
import os
import re
from collections.abc import Mapping

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
MAX_WORKERS = 256  # fastpath: --workers; far past any core count a node has


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
        _Setting("frontend_origins", "--frontend-origins", "FLAGCORE_FRONTEND_ORIGINS"),
        _Setting("trust_forwarded_for", "--trust-forwarded-for", "FLAGCORE_TRUST_FORWARDED_FOR"),
        _Setting("sdk_fetch_mode", "--sdk-fetch-mode", "FLAGCORE_SDK_FETCH_MODE"),
        # PostgreSQL only (--db postgresql://...); see docs/deploying.md.
        _Setting("db_pool_size", "--db-pool-size", "FLAGCORE_DB_POOL_SIZE"),
        _Setting("db_pool_timeout", "--db-pool-timeout", "FLAGCORE_DB_POOL_TIMEOUT"),
        _Setting("db_connect_timeout", "--db-connect-timeout", "FLAGCORE_DB_CONNECT_TIMEOUT"),
        _Setting(
            "db_revision_check_interval",
            "--db-revision-check-interval",
            "FLAGCORE_DB_REVISION_CHECK_INTERVAL",
        ),
        # --- fastpath: worker processes and event loop (docs/performance.md) ---
        _Setting("workers", "--workers", "FLAGCORE_WORKERS"),
        _Setting("event_loop", "--loop", "FLAGCORE_LOOP"),
        # Rate limits (docs/security.md): whose X-Forwarded-For is believed.
        _Setting("trusted_proxies", "--trusted-proxies", "FLAGCORE_TRUSTED_PROXIES"),
        # --- observe (issue 18 §2): metrics port, log format and level (docs/operations.md) ---
        _Setting("metrics_port", "--metrics-port", "FLAGCORE_METRICS_PORT"),
        _Setting("log_format", "--log-format", "FLAGCORE_LOG_FORMAT"),
        _Setting("log_level", "--log-level", "FLAGCORE_LOG_LEVEL"),
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
    if field == "trusted_proxies":
        return _trusted_proxies(raw, where)
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
    if field == "frontend_origins":
        return _origins(raw, where)
    if field == "trust_forwarded_for":
        return _boolean(raw, where)
    if field == "sdk_fetch_mode":
        if raw.strip() not in ("polling", "streaming"):
            raise ConfigError(f"{where}={_shown(raw)}: use polling or streaming")
        return raw.strip()
    if field == "db_pool_size":
        return _integer(raw, where, 1, 1000, "not a connection count")
    if field in ("db_pool_timeout", "db_connect_timeout"):
        return _seconds(raw, where, 0.1, 600)
    if field == "db_revision_check_interval":
        return _seconds(raw, where, 0.1, 3600)
    # --- fastpath: worker processes and event loop (docs/performance.md) ---
    if field == "workers":
        return _integer(raw, where, 1, MAX_WORKERS, "not a worker count")
    if field == "event_loop":
        if raw.strip() not in ("auto", "uvloop", "asyncio"):
            raise ConfigError(f"{where}={_shown(raw)}: use auto, uvloop or asyncio")
        return raw.strip()
    # --- observe (issue 18 §2) ---
    if field == "metrics_port":
        return _integer(raw, where, 0, 65535, "not a port number (0 picks a free port)")
    if field == "log_format":
        return _one_of(raw, where, ("text", "json"))
    if field == "log_level":
        return _one_of(raw, where, ("debug", "info", "warning", "error"))
    if not raw.strip() or len(raw) > 4096 or any(ord(c) < 32 for c in raw):
        shown = _shown(raw) if "://" not in raw else "(a URL, not shown: it may hold a password)"
        raise ConfigError(f"{where}={shown}: must be a non-empty name, path or postgresql:// URL")
    return raw.strip()


def _origins(raw: str, where: str) -> tuple[str, ...]:
    """Browser origins allowed on the Frontend API and OFREP: ``*`` or a comma list."""
    origins = tuple(part.strip() for part in raw.split(",") if part.strip())
    for origin in origins:
        if origin != "*" and not re.fullmatch(r"https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?", origin):
            raise ConfigError(
                f"{where}={_shown(raw)}: {_shown(origin)} is not an origin; use * or a comma "
                "list such as https://app.example.com,http://localhost:3000"
            )
    if not origins:
        raise ConfigError(f"{where}={_shown(raw)}: empty; use * or a comma list of origins")
    return origins


def _one_of(raw: str, where: str, allowed: tuple[str, ...]) -> str:
    text = raw.strip().lower()
    if text not in allowed:
        raise ConfigError(f"{where}={_shown(raw)}: use {', '.join(allowed)}")
    return text


def _boolean(raw: str, where: str) -> bool:
    text = raw.strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(f"{where}={_shown(raw)}: use true or false")
    return text == "true"


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
    max_connections: int = 10_000
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
    # Frontend API and OFREP (docs/frontend-and-openfeature.md): allowed browser origins,
    # and whether the caller's address is the last X-Forwarded-For entry (behind a proxy).
    frontend_origins: tuple[str, ...] = ("*",)
    trust_forwarded_for: bool = False
    # Live updates (docs/streaming.md): what polling SDKs are told to use, and the hub's
    # bounds (0 connections turns streaming off).
    sdk_fetch_mode: str = "polling"
    streaming_max_connections: int = 10_000
    streaming_keepalive: float = 15.0
    streaming_buffer_events: int = 64
    streaming_history: int = 1_000
    # What one client can hold open (docs/security.md): streams per token and per address
    # (past either, 429; 0 is no limit), the kernel send buffer of a stream's socket, and
    # how long bytes may wait unacknowledged before the stream is closed as not draining.
    streaming_max_per_token: int = 1_000
    streaming_max_per_address: int = 100
    streaming_send_buffer_bytes: int = 64 * 1024
    streaming_drain_timeout: float = 10.0
    # Pause the cyclic garbage collector while a client payload is built on a cache miss
    # (flagcore.gc_pause): the snapshot step ~20% faster at 10,000 flags; off for a process
    # that must never defer collections (docs/engine.md, "Garbage collection").
    gc_pause: bool = True
    # --- admin web UI: session signing and lifetime (docs/ui.md) ---
    ui_secret: str | None = attrs.field(default=None, repr=False)
    ui_session_seconds: float = 8 * 3600.0
    # --- fastpath: worker processes on one port, and the event loop (docs/performance.md) ---
    workers: int = 1
    event_loop: str = "auto"
    # --- rate limits and the auth-failure tarpit (docs/security.md, rate_limits.py) ---
    # Requests a minute per (token, address), as Unleash's 6,000 defaults; 0 is no limit.
    metrics_rate_limit: int = 6000
    register_rate_limit: int = 6000
    frontend_metrics_rate_limit: int = 6000
    frontend_register_rate_limit: int = 6000
    # Rows (new SDK instances and new hour buckets) metrics posts may add to the store, an
    # hour per (token, address), and per frontend token from all addresses (its secret is
    # public); past it only existing rows are counted into. 0 is no limit.
    metrics_new_rows_per_hour: int = 10_000
    frontend_metrics_new_rows_per_hour: int = 1_000
    frontend_metrics_new_rows_per_hour_per_token: int = 10_000
    # Never-seen SDK instances noted from polls, a minute per token; past it, not tracked.
    new_instances_rate_limit: int = 1000
    # Refused secrets a minute per address before each further 401 waits this long.
    auth_failures_free_per_minute: int = 30
    auth_failure_delay: float = 1.0
    # Proxies whose X-Forwarded-For names the caller (addresses or networks); none: no one.
    trusted_proxies: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
    # --- observe (issue 18 §2): metrics on their own port (None: on the main port, at
    # /internal-backstage/prometheus), and the log's format and level (docs/operations.md) ---
    metrics_port: int | None = None
    log_format: str = "text"
    log_level: str = "info"

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
        values.update(_ui_settings_from_env(env))
        values.update(_rate_limit_settings_from_env(env))
        _check_metrics_port(values)
        return cls(**values)  # type: ignore[arg-type]


# --- observe (issue 18 §2) ---
def _check_metrics_port(values: Mapping[str, object]) -> None:
    """The metrics port must not be the main port (0, a free port, is always another)."""
    metrics_port, port = values.get("metrics_port"), values.get("port", 4242)
    if metrics_port and metrics_port == port:
        raise ConfigError(
            f"--metrics-port/FLAGCORE_METRICS_PORT={metrics_port}: the same as the main port; "
            "choose another, or leave it unset to serve metrics on the main port"
        )


# --- hostile load: store queue, client caches, retention ---
_LOAD_SETTINGS = {
    "FLAGCORE_STORE_QUEUE_LIMIT": ("store_queue_limit", int),
    "FLAGCORE_PAYLOAD_CACHE_BYTES": ("payload_cache_bytes", int),
    "FLAGCORE_INSTANCE_WRITE_INTERVAL_SECONDS": ("instance_write_interval", float),
    "FLAGCORE_RETENTION_INTERVAL_SECONDS": ("retention_interval", float),
    "FLAGCORE_STREAMING_MAX_CONNECTIONS": ("streaming_max_connections", int),
    "FLAGCORE_STREAMING_KEEPALIVE_SECONDS": ("streaming_keepalive", float),
    "FLAGCORE_STREAMING_BUFFER_EVENTS": ("streaming_buffer_events", int),
    "FLAGCORE_STREAMING_HISTORY": ("streaming_history", int),
    "FLAGCORE_STREAMING_MAX_PER_TOKEN": ("streaming_max_per_token", int),
    "FLAGCORE_STREAMING_MAX_PER_ADDRESS": ("streaming_max_per_address", int),
    "FLAGCORE_STREAMING_SEND_BUFFER_BYTES": ("streaming_send_buffer_bytes", int),
    "FLAGCORE_STREAMING_DRAIN_SECONDS": ("streaming_drain_timeout", float),
    "FLAGCORE_METRICS_NEW_ROWS_PER_HOUR": ("metrics_new_rows_per_hour", int),
    "FLAGCORE_FRONTEND_METRICS_NEW_ROWS_PER_HOUR": ("frontend_metrics_new_rows_per_hour", int),
    "FLAGCORE_FRONTEND_METRICS_NEW_ROWS_PER_HOUR_PER_TOKEN": (
        "frontend_metrics_new_rows_per_hour_per_token",
        int,
    ),
}
_SWITCHES = {"FLAGCORE_GC_PAUSE": "gc_pause"}
_SWITCH_VALUES = {"on": True, "true": True, "1": True, "off": False, "false": False, "0": False}
_RETENTION_SETTINGS = {
    "FLAGCORE_METRICS_RETENTION_HOURS": ("metrics_hours", float),
    "FLAGCORE_CLIENT_INSTANCE_RETENTION_DAYS": ("client_instance_days", float),
    "FLAGCORE_SIGNAL_RETENTION_DAYS": ("signal_days", float),
    "FLAGCORE_SIGNALS_KEPT_PER_ENDPOINT": ("signals_per_endpoint", int),
    "FLAGCORE_EVENT_RETENTION_DAYS": ("event_days", float),
}


def _load_settings_from_env(env: Mapping[str, str]) -> dict[str, object]:
    """The queue, cache, retention and switch settings among ``env``; a bad value is an error."""
    values: dict[str, object] = {}
    for variable, (field, kind) in _LOAD_SETTINGS.items():
        if variable in env:
            values[field] = _non_negative(variable, env[variable], kind)
    for variable, field in _SWITCHES.items():
        if variable in env:
            values[field] = _switch(variable, env[variable])
    retention = {
        field: _non_negative(variable, env[variable], kind)
        for variable, (field, kind) in _RETENTION_SETTINGS.items()
        if variable in env
    }
    if retention:
        values["retention"] = RetentionSettings(**retention)  # type: ignore[arg-type]
    return values


def _switch(variable: str, raw: str) -> bool:
    """On or off, spelled on/off, true/false or 1/0 (any case); anything else is an error."""
    value = _SWITCH_VALUES.get(raw.strip().lower())
    if value is None:
        raise ConfigError(f"{variable}={_shown(raw)}: not a switch; use on or off")
    return value


def _non_negative(variable: str, raw: str, kind: type[int] | type[float]) -> int | float:
    try:
        value = kind(raw)
    except ValueError:
        raise ConfigError(f"{variable}={_shown(raw)}: not a number; use 0 or more") from None
    if not 0 <= value < float("inf"):
        raise ConfigError(f"{variable}={_shown(raw)}: use 0 or more")
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


# --- rate limits and the auth-failure tarpit ---
_RATE_LIMIT_SETTINGS = {
    "FLAGCORE_METRICS_RATE_LIMIT_PER_MINUTE": "metrics_rate_limit",
    "FLAGCORE_REGISTER_RATE_LIMIT_PER_MINUTE": "register_rate_limit",
    "FLAGCORE_FRONTEND_METRICS_RATE_LIMIT_PER_MINUTE": "frontend_metrics_rate_limit",
    "FLAGCORE_FRONTEND_REGISTER_RATE_LIMIT_PER_MINUTE": "frontend_register_rate_limit",
    "FLAGCORE_NEW_INSTANCES_RATE_LIMIT_PER_MINUTE": "new_instances_rate_limit",
    "FLAGCORE_AUTH_FAILURES_FREE_PER_MINUTE": "auth_failures_free_per_minute",
}


def _rate_limit_settings_from_env(env: Mapping[str, str]) -> dict[str, object]:
    """Limits a minute (0 turns one off) and the tarpit's delay; a bad value is an error."""
    values: dict[str, object] = {
        field: _integer(env[variable], variable, 0, 10_000_000, "not a count a minute")
        for variable, field in _RATE_LIMIT_SETTINGS.items()
        if variable in env
    }
    if "FLAGCORE_AUTH_FAILURE_DELAY_SECONDS" in env:
        raw = env["FLAGCORE_AUTH_FAILURE_DELAY_SECONDS"]
        values["auth_failure_delay"] = _seconds(raw, "FLAGCORE_AUTH_FAILURE_DELAY_SECONDS", 0, 60)
    return values


def _trusted_proxies(
    raw: str, where: str
) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """Comma-separated addresses or networks (``10.0.0.0/8``); empty trusts no one."""
    if len(raw) > 4096:
        raise ConfigError(f"{where}: longer than 4096 characters")
    networks = []
    for part in (p.strip() for p in raw.split(",")):
        if not part:
            continue
        try:
            networks.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            raise ConfigError(
                f"{where}={_shown(raw)}: {_shown(part)} is not an IP address or network; "
                "use a comma list such as 127.0.0.1,10.0.0.0/8"
            ) from None
    return tuple(networks)
