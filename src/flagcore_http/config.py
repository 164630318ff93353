"""Server settings: command-line flags, ``FLAGCORE_*`` environment variables, defaults.

Every setting is checked here, before anything is opened or created: a wrong value stops
the server with a `ConfigError` whose message names the flag or variable, the value (with
any secret elided), and what is allowed.

Every setting is one row of `SETTINGS` (variable, flag, reader, default, help): it is the
only way `ServerConfig.from_env` reads one, and ``flagcore serve``'s flags and ``--help``
are made from it, so a new setting is listed with its default the moment it can be read
(tests/http/test_settings_table.py also holds docs/http.md to it).
"""

from __future__ import annotations

import contextlib
import enum
import ipaddress
import math
import os
import re
import urllib.parse
from collections.abc import Callable, Mapping

import attrs

from flagcore.entities import TokenType
from flagcore.people import RootRole
from flagcore.service import RetentionSettings

__all__ = [
    "SETTINGS",
    "AuthMode",
    "ConfigError",
    "InitToken",
    "ServerConfig",
    "Setting",
    "parse_init_token",
]


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


def _init_tokens(raw: str, variable: str, kind: TokenType) -> tuple[InitToken, ...]:
    entries = [part.strip() for part in raw.split(",") if part.strip()]
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


def _port(raw: str, where: str) -> int:
    return _integer(raw, where, 0, 65535, "not a port number (0 picks a free port)")


# A host name as RFC 1123 allows it; its last label is not all digits, so a mistyped
# IPv4 address (999.1.1.1) is refused here rather than looked up as a name.
_HOST_NAME = re.compile(
    r"(?=.{1,253}$)(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*"
    r"(?=[A-Za-z0-9-]*[A-Za-z-])[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.?"
)


def _host(raw: str, where: str) -> str:
    """An IP address (``127.0.0.1``, ``0.0.0.0``, ``::``) or a host name of this machine."""
    text = raw.strip()
    with contextlib.suppress(ValueError):
        ipaddress.ip_address(text)
        return text
    if not _HOST_NAME.fullmatch(text):
        raise ConfigError(
            f"{where}={_shown(raw)}: not an IP address or host name; use an address of this "
            "machine such as 127.0.0.1, 0.0.0.0 (every IPv4 address) or :: (every address)"
        )
    return text


def _auth(raw: str, where: str) -> AuthMode:
    try:
        return AuthMode(raw.strip())
    except ValueError:
        raise ConfigError(
            f"{where}={_shown(raw)}: not an authentication mode; use token or none"
        ) from None


def _text(raw: str, where: str) -> str:
    if not raw.strip() or len(raw) > 4096 or any(ord(c) < 32 for c in raw):
        shown = _shown(raw) if "://" not in raw else "(a URL, not shown: it may hold a password)"
        raise ConfigError(f"{where}={shown}: must be a non-empty name, path or postgresql:// URL")
    return raw.strip()


def _choice(*allowed: str) -> Callable[[str, str], str]:
    """A reader of one word among ``allowed`` (as typed, but for surrounding spaces)."""

    def read(raw: str, where: str) -> str:
        if raw.strip() not in allowed:
            listed = ", ".join(allowed[:-1]) + " or " + allowed[-1]
            raise ConfigError(f"{where}={_shown(raw)}: use {listed}")
        return raw.strip()

    return read


def _one_of(*allowed: str) -> Callable[[str, str], str]:
    """A reader of one word among ``allowed``, in any case."""

    def read(raw: str, where: str) -> str:
        text = raw.strip().lower()
        if text not in allowed:
            raise ConfigError(f"{where}={_shown(raw)}: use {', '.join(allowed)}")
        return text

    return read


def _between(low: int, high: int, meaning: str) -> Callable[[str, str], int]:
    return lambda raw, where: _integer(raw, where, low, high, meaning)


def _duration(low: float, high: float) -> Callable[[str, str], float]:
    return lambda raw, where: _seconds(raw, where, low, high)


def _count(raw: str, where: str) -> int:
    return int(_non_negative(where, raw, int))


def _at_least(low: int) -> Callable[[str, str], int]:
    def read(raw: str, where: str) -> int:
        value = _count(raw, where)
        if value < low:
            raise ConfigError(f"{where}={_shown(raw)}: use {low} or more")
        return value

    return read


def _amount(raw: str, where: str) -> float:
    return float(_non_negative(where, raw, float))


def _amount_up_to(high: float, unit: str) -> Callable[[str, str], float]:
    """0 to ``high``: a retention whose rows grow with it has a ceiling (usage history)."""

    def read(raw: str, where: str) -> float:
        value = _amount(raw, where)
        if value > high:
            raise ConfigError(f"{where}={_shown(raw)}: use 0 to {high:g} {unit}")
        return value

    return read


def _hours_as_seconds(raw: str, where: str) -> float:
    return float(_non_negative(where, raw, float)) * 3600.0


def _secret(raw: str, where: str) -> str | None:
    """The UI's signing secret; empty is unset (a random secret per process)."""
    return raw or None


def _init_tokens_of(kind: TokenType) -> Callable[[str, str], tuple[InitToken, ...]]:
    return lambda raw, where: _init_tokens(raw, where, kind)


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


def _boolean(raw: str, where: str) -> bool:
    text = raw.strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(f"{where}={_shown(raw)}: use true or false")
    return text == "true"


# --- sign-in with an OpenID provider (issue 28; docs/users-and-roles.md) ---
_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def _host_of(url: str) -> str | None:
    try:
        return urllib.parse.urlsplit(url).hostname
    except ValueError:  # a bad port or bracket
        return None


def _provider_url(raw: str, where: str) -> str | None:
    """An https URL (http only on this machine, for trying it out); empty is unset.

    Kept as typed: an issuer must equal the tokens' ``iss`` exactly."""
    text = raw.strip()
    if not text:
        return None
    match = re.fullmatch(r"(https?)://([^/?#\s]+)(/[^?#\s]*)?", text)
    if (
        match is None
        or len(text) > 2048
        or (match.group(1) == "http" and _host_of(text) not in _LOOPBACK_HOSTS)
    ):
        raise ConfigError(
            f"{where}={_shown(raw)}: use an https:// URL such as https://sso.example.com/realms/"
            "main (http:// only for 127.0.0.1 or localhost)"
        )
    return text


def _allow_list(raw: str, where: str) -> tuple[str, ...]:
    """Hosts or addresses, comma separated (Unleash's ``UNLEASH_ALLOW_LIST_INTEGRATION``)."""
    entries = tuple(part.strip() for part in raw.split(",") if part.strip())
    for entry in entries:
        if not re.fullmatch(r"[A-Za-z0-9.:\[\]_-]{1,253}", entry):
            raise ConfigError(
                f"{where}={_shown(raw)}: {_shown(entry)} is not a host or an address; use a "
                "comma list such as 127.0.0.1,hooks.internal"
            )
    return entries


def _ui_url(raw: str, where: str) -> str:
    text = raw.strip().rstrip("/")
    if not re.fullmatch(r"https?://[^/?#\s]+(/[^?#\s]*)?", text) or len(text) > 2048:
        raise ConfigError(
            f"{where}={_shown(raw)}: use the http(s) URL people reach the UI at, such as "
            "https://flags.example.com"
        )
    return text


def _public_url(raw: str, where: str) -> str | None:
    """An origin (scheme, host, port if any) with no path: links are built on it."""
    text = raw.strip().rstrip("/")
    if not text:
        return None
    if re.fullmatch(r"https?://[^/?#@\s]+", text) is None or len(text) > 2048:
        raise ConfigError(
            f"{where}={_shown(raw)}: use this server's address as browsers reach it, "
            "such as https://flags.example.com (a scheme and a host, no path)"
        )
    if _host_of(text) is None:
        raise ConfigError(f"{where}={_shown(raw)}: the address names no host")
    return text


# --- mail (issue 28): invitations and resets sent by SMTP when a server is configured ---
_MAIL_ADDRESS = re.compile(r"[^@\s<>\"',;]+@[^@\s<>\"',;]+\.[^@\s<>\"',;]+")


def _smtp_host(raw: str, where: str) -> str | None:
    """An IP address or a host name; empty sends no mail."""
    text = raw.strip()
    if not text:
        return None
    with contextlib.suppress(ValueError):
        ipaddress.ip_address(text)
        return text
    if not _HOST_NAME.fullmatch(text):
        raise ConfigError(f"{where}={_shown(raw)}: not a host name or IP address of a mail server")
    return text


def _smtp_port(raw: str, where: str) -> int:
    return _integer(raw, where, 1, 65535, "not a port number")


def _mail_address(raw: str, where: str) -> str | None:
    text = raw.strip()
    if not text:
        return None
    if len(text) > 254 or not _MAIL_ADDRESS.fullmatch(text):
        raise ConfigError(f"{where}={_shown(raw)}: use an email address such as flags@example.com")
    return text


def _check_smtp(values: Mapping[str, object]) -> None:
    """A mail server needs a sender; a user needs a password (and back); credentials are
    sent in the clear only to this machine."""
    host = values.get("smtp_host")
    if host is None:
        return
    if not values.get("smtp_from"):
        raise ConfigError(
            "FLAGCORE_SMTP_HOST is set: set FLAGCORE_SMTP_FROM too, the address mails come from"
        )
    if bool(values.get("smtp_user")) != bool(values.get("smtp_password")):
        raise ConfigError(
            "FLAGCORE_SMTP_USER and FLAGCORE_SMTP_PASSWORD go together: set both or neither"
        )
    loopback = host in _LOOPBACK_HOSTS
    if values.get("smtp_password") and values.get("smtp_starttls") is False and not loopback:
        raise ConfigError(
            "FLAGCORE_SMTP_STARTTLS=off with a password: it would cross the network in the "
            "clear; turn STARTTLS on (only a server on 127.0.0.1 or localhost may go without)"
        )


def _optional_text(raw: str, where: str) -> str | None:
    if len(raw) > 1024 or any(ord(c) < 32 for c in raw):
        raise ConfigError(f"{where}: at most 1024 printable characters")
    return raw.strip() or None


def _provider_name(raw: str, where: str) -> str:
    name = _optional_text(raw, where)
    if name is None or len(name) > 80:
        raise ConfigError(f"{where}={_shown(raw)}: a name of 1 to 80 characters, such as Okta")
    return name


def _client_secret(raw: str, where: str) -> str | None:
    return raw or None


def _root_role(raw: str, where: str) -> RootRole:
    for role in RootRole:
        if raw.strip().casefold() == role.value.casefold():
            return role
    raise ConfigError(f"{where}={_shown(raw)}: use Admin, Editor or Viewer")


def _email_domains(raw: str, where: str) -> tuple[str, ...]:
    """A comma list of email domains (any case); empty lets every domain in."""
    domains = tuple(part.strip().casefold() for part in raw.split(",") if part.strip())
    for domain in domains:
        if not re.fullmatch(r"[a-z0-9-]+(\.[a-z0-9-]+)+", domain):
            raise ConfigError(
                f"{where}={_shown(raw)}: {_shown(domain)} is not a domain; use a comma list "
                "such as example.com,example.org"
            )
    return domains


def _field_names(raw: str, where: str) -> tuple[str, ...]:
    """A comma list of context field names (Unleash's or properties'); empty: none."""
    names = tuple(part.strip() for part in raw.split(",") if part.strip())
    for name in names:
        if len(name) > 255:
            raise ConfigError(f"{where}={_shown(raw)}: a field name has at most 255 characters")
    return names


def _group_roles(raw: str, where: str) -> tuple[tuple[str, RootRole], ...]:
    """``group=Role`` pairs, comma separated: members of a group get its root role."""
    pairs = []
    for part in (p.strip() for p in raw.split(",")):
        if not part:
            continue
        group, equals, role = part.rpartition("=")
        if not equals or not group.strip():
            raise ConfigError(
                f"{where}={_shown(raw)}: {_shown(part)} is not group=Role; use a comma list "
                "such as flag-admins=Admin,developers=Editor"
            )
        pairs.append((group.strip(), _root_role(role, where)))
    return tuple(pairs)


def _scopes(raw: str, where: str) -> str:
    words = raw.split()
    if "openid" not in words or any(
        not re.fullmatch(r"[\x21\x23-\x5b\x5d-\x7e]+", w) for w in words
    ):
        raise ConfigError(
            f"{where}={_shown(raw)}: space-separated scopes including openid, such as "
            "'openid email profile'"
        )
    return " ".join(words)


@attrs.frozen(kw_only=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 4242
    db: str = "./flagcore.db"
    auth: AuthMode = AuthMode.TOKEN
    init_admin_tokens: tuple[InitToken, ...] = ()
    init_client_tokens: tuple[InitToken, ...] = ()
    max_body_bytes: int = 1_000_000
    # SDK metrics and registrations: a smaller body limit (flagcore_http.body_size).
    sdk_usage_max_body_bytes: int = 262_144
    # The request log's level (flagcore_http.request_log): off, default or all.
    access_log: str = "default"
    shutdown_timeout: float = 10.0
    # Slow clients (docs/security.md): complete headers within this many seconds of the
    # connection or of the previous response (idle keep-alive connections close then too)…
    header_timeout: float = 10.0
    # …the whole body within this many seconds of the headers…
    body_timeout: float = 30.0
    # …a signal's whole body within this many seconds, however it is framed (a sender that
    # declares more than it sends, or drips it, holds a connection no longer; then 408)…
    signal_body_timeout: float = 10.0
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
    # SDK usage, written behind the request in batches (flagcore_http.usage_buffer).
    usage_buffer_entries: int = 200_000
    usage_flush_interval: float = 1.0
    usage_write_wait: float = 0.5
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
    # This server's address as browsers reach it: links are built on it (docs/security.md).
    public_url: str | None = None
    # --- sign-in with an OpenID provider (docs/users-and-roles.md, "OpenID Connect") ---
    oidc_issuer: str | None = None
    oidc_client_id: str | None = None
    oidc_client_secret: str | None = attrs.field(default=None, repr=False)
    oidc_provider_name: str = "OpenID Connect"
    oidc_redirect_base_url: str | None = None
    oidc_scopes: str = "openid email profile"
    oidc_default_root_role: RootRole = RootRole.VIEWER
    oidc_email_domains: tuple[str, ...] = ()
    oidc_group_claim: str | None = None
    oidc_group_roles: tuple[tuple[str, RootRole], ...] = ()
    password_sign_in: bool = True
    # --- integrations out (issue 31, docs/integrations.md) ---
    integration_allow_list: tuple[str, ...] = ()
    integration_retry_seconds: float = 600.0
    integration_timeout: float = 10.0
    integration_ui_url: str = "http://localhost:4242"
    integration_sweep_interval: float = 2.0
    # --- change requests (issue 30): how often due schedules are looked for ---
    schedule_check_interval: float = 0.5
    # --- mail: invitations and resets by SMTP (docs/users-and-roles.md, "Mail") ---
    smtp_host: str | None = None
    smtp_port: int = 587
    smtp_user: str | None = None
    smtp_password: str | None = attrs.field(default=None, repr=False)
    smtp_from: str | None = None
    smtp_starttls: bool = True
    # --- fastpath: worker processes on one port, and the event loop (docs/performance.md) ---
    workers: int = 1
    event_loop: str = "auto"
    # --- rate limits and the auth-failure tarpit (docs/security.md, rate_limits.py) ---
    # Requests a minute per (token, address), as Unleash's 6,000 defaults; 0 is no limit.
    metrics_rate_limit: int = 6000
    register_rate_limit: int = 6000
    frontend_metrics_rate_limit: int = 6000
    frontend_register_rate_limit: int = 6000
    sdk_write_burst_seconds: float = 1.0
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
    # Failed password sign-ins allowed per account and per address in 15 minutes; past
    # them, sign-ins are refused with 429 until the window frees one (issue 28).
    sign_in_failures_per_account: int = 10
    sign_in_failures_per_address: int = 50
    # Proxies whose X-Forwarded-For names the caller (addresses or networks); none: no one.
    trusted_proxies: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
    # --- observe (issue 18 §2): metrics on their own port (None: on the main port, at
    # /internal-backstage/prometheus), and the log's format and level (docs/operations.md) ---
    metrics_port: int | None = None
    log_format: str = "text"
    log_level: str = "info"
    # --- the preview's context sample (issue 30; docs/preview.md) ---
    preview_sampling: bool = True
    preview_sample_size: int = 10_000
    preview_denied_fields: tuple[str, ...] = ("email", "remoteAddress")
    preview_sample_flush_interval: float = 10.0
    # Issue 32: seconds between checks for flags that outlived their type's lifetime.
    stale_check_interval: float = 3600.0
    # ... and between reminders naming each project's potentially stale flags (0: none).
    stale_reminder_interval: float = 86_400.0
    # Issue 32, usage history: days one answer everywhere makes a flag safe to archive.
    safe_to_archive_days: int = 30

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, **flags: str | bool | None
    ) -> ServerConfig:
        """Settings from ``FLAGCORE_*`` variables; ``flags`` (command-line text) win.

        Raises `ConfigError` naming the flag or variable at fault.
        """
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        retention: dict[str, object] = {}
        for setting in SETTINGS:
            read: list[tuple[object, str]] = [(env.get(setting.variable), setting.variable)]
            if setting.flag is not None:
                read.append((flags.pop(setting.field, None), setting.flag))
            for raw, where in read:  # both are checked; the flag wins
                if isinstance(raw, str):
                    value = setting.read(raw, where)
                    if setting.field.startswith("retention."):
                        retention[setting.field.removeprefix("retention.")] = value
                    else:
                        values[setting.field] = value
        if flags:
            raise TypeError(f"unknown settings: {sorted(flags)}")
        if retention:
            values["retention"] = RetentionSettings(**retention)  # type: ignore[arg-type]
        _check_metrics_port(values)
        _check_oidc(values)
        _check_smtp(values)
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


def _check_oidc(values: Mapping[str, object]) -> None:
    """An issuer needs a client id and secret; group roles need the claim they read."""
    if values.get("oidc_issuer") and not (
        values.get("oidc_client_id") and values.get("oidc_client_secret")
    ):
        raise ConfigError(
            "FLAGCORE_OIDC_ISSUER is set: set FLAGCORE_OIDC_CLIENT_ID and "
            "FLAGCORE_OIDC_CLIENT_SECRET too (the client registered at the provider)"
        )
    if values.get("oidc_group_roles") and not values.get("oidc_group_claim"):
        raise ConfigError(
            "FLAGCORE_OIDC_GROUP_ROLES is set: set FLAGCORE_OIDC_GROUP_CLAIM, the ID token "
            "claim that lists a person's groups (often groups)"
        )


_SWITCH_VALUES = {"on": True, "true": True, "1": True, "off": False, "false": False, "0": False}


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


def _on_off(raw: str, where: str) -> bool:
    return _switch(where, raw)


@attrs.frozen
class Setting:
    """One setting of ``flagcore serve``: its variable, its flag if it has one, the
    `ServerConfig` field it fills, how its text is read, and what ``--help`` says of it.

    `SETTINGS` is the one table: `ServerConfig.from_env` reads only what is in it, the
    ``serve`` command's flags and ``--help`` are made from it, and a test holds
    docs/http.md to it, so a setting cannot be read without being listed and documented.
    """

    variable: str
    field: str  # a ServerConfig field; "retention.<name>" for a RetentionSettings one
    read: Callable[[str, str], object] = attrs.field(repr=False)  # (text, flag or variable)
    default: str  # as --help and docs/http.md show it; read() of it is the field's default
    help: str
    section: str
    flag: str | None = None
    metavar: str = "VALUE"


_LISTEN = "listening"
_DATABASE = "database"
_TOKENS = "authentication and tokens"
_CONNECTIONS = "connections and slow clients"
_SDKS = "SDKs, streaming and the Frontend API"
_LIMITS = "rate limits"
_LOAD = "store queue, caches and retention"
_UI = "admin web UI"
_PROCESSES = "processes"
_OBSERVE = "metrics and logs"
_PREVIEW = "the preview's context sample"
_INTEGRATIONS = "integrations out"

SETTINGS: tuple[Setting, ...] = (
    Setting(
        "FLAGCORE_HOST",
        "host",
        _host,
        flag="--host",
        metavar="ADDRESS",
        default="127.0.0.1",
        section=_LISTEN,
        help="address to listen on (:: or 0.0.0.0 for every address)",
    ),
    Setting(
        "FLAGCORE_PORT",
        "port",
        _port,
        flag="--port",
        metavar="N",
        default="4242",
        section=_LISTEN,
        help="port to listen on, 0 to 65535 (0 picks a free one)",
    ),
    Setting(
        "FLAGCORE_DB",
        "db",
        _text,
        flag="--db",
        metavar="PATH|URL",
        default="./flagcore.db",
        section=_DATABASE,
        help="SQLite file, or postgresql://user:password@host:5432/database for several nodes "
        "over one PostgreSQL",
    ),
    Setting(
        "FLAGCORE_DB_POOL_SIZE",
        "db_pool_size",
        _between(1, 1000, "not a connection count"),
        flag="--db-pool-size",
        metavar="N",
        default="10",
        section=_DATABASE,
        help="PostgreSQL connections at most (1 to 1000)",
    ),
    Setting(
        "FLAGCORE_DB_POOL_TIMEOUT",
        "db_pool_timeout",
        _duration(0.1, 600),
        flag="--db-pool-timeout",
        metavar="SECONDS",
        default="5",
        section=_DATABASE,
        help="seconds a request waits for a PostgreSQL connection before a 503",
    ),
    Setting(
        "FLAGCORE_DB_CONNECT_TIMEOUT",
        "db_connect_timeout",
        _duration(0.1, 600),
        flag="--db-connect-timeout",
        metavar="SECONDS",
        default="5",
        section=_DATABASE,
        help="seconds one PostgreSQL connection attempt may take",
    ),
    Setting(
        "FLAGCORE_DB_REVISION_CHECK_INTERVAL",
        "db_revision_check_interval",
        _duration(0.1, 3600),
        flag="--db-revision-check-interval",
        metavar="SECONDS",
        default="2",
        section=_DATABASE,
        help="seconds between PostgreSQL revision checks, the safety net behind LISTEN/NOTIFY",
    ),
    Setting(
        "FLAGCORE_AUTH",
        "auth",
        _auth,
        flag="--auth",
        metavar="token|none",
        default="token",
        section=_TOKENS,
        help="token, or none: anyone who can connect is admin",
    ),
    Setting(
        "FLAGCORE_INIT_ADMIN_API_TOKENS",
        "init_admin_tokens",
        _init_tokens_of(TokenType.ADMIN),
        default="",
        section=_TOKENS,
        help="comma-separated admin tokens to create at start: *:*.secret",
    ),
    Setting(
        "FLAGCORE_INIT_CLIENT_API_TOKENS",
        "init_client_tokens",
        _init_tokens_of(TokenType.CLIENT),
        default="",
        section=_TOKENS,
        help="comma-separated client tokens to create at start: project:environment.secret (* "
        "for all projects), e.g. default:development.secret",
    ),
    Setting(
        "FLAGCORE_HEADER_TIMEOUT",
        "header_timeout",
        _duration(0.1, 3600),
        flag="--header-timeout",
        metavar="SECONDS",
        default="10",
        section=_CONNECTIONS,
        help="seconds a client has to send complete request headers, and that an idle connection"
        " stays open",
    ),
    Setting(
        "FLAGCORE_BODY_TIMEOUT",
        "body_timeout",
        _duration(0.1, 3600),
        flag="--body-timeout",
        metavar="SECONDS",
        default="30",
        section=_CONNECTIONS,
        help="seconds a client has to send a request body",
    ),
    Setting(
        "FLAGCORE_SIGNAL_BODY_TIMEOUT_SECONDS",
        "signal_body_timeout",
        _duration(0.1, 3600),
        default="10",
        section=_CONNECTIONS,
        help="seconds a signal sender has to send its whole body, however it is framed; "
        "past it 408",
    ),
    Setting(
        "FLAGCORE_MAX_CONNECTIONS",
        "max_connections",
        _between(1, 1_000_000, "not a connection count"),
        flag="--max-connections",
        metavar="N",
        default="10000",
        section=_CONNECTIONS,
        help="open connections at most, streams included (lowered to fit the open-file limit); "
        "more get 503",
    ),
    Setting(
        "FLAGCORE_TRUSTED_PROXIES",
        "trusted_proxies",
        _trusted_proxies,
        flag="--trusted-proxies",
        metavar="ADDRESSES",
        default="",
        section=_CONNECTIONS,
        help="proxy addresses or networks (comma-separated) whose X-Forwarded-For names the "
        "caller for rate limits",
    ),
    Setting(
        "FLAGCORE_SDK_FETCH_MODE",
        "sdk_fetch_mode",
        _choice("polling", "streaming"),
        flag="--sdk-fetch-mode",
        metavar="polling|streaming",
        default="polling",
        section=_SDKS,
        help="what polling SDKs are told to use with the fetch-mode header",
    ),
    Setting(
        "FLAGCORE_STREAMING_MAX_CONNECTIONS",
        "streaming_max_connections",
        _count,
        default="10000",
        section=_SDKS,
        help="open streams at most on this node; past it a stream is told to poll (0 turns "
        "streaming off)",
    ),
    Setting(
        "FLAGCORE_STREAMING_KEEPALIVE_SECONDS",
        "streaming_keepalive",
        _amount,
        default="15",
        section=_SDKS,
        help="seconds between keep-alive comments on a stream",
    ),
    Setting(
        "FLAGCORE_STREAMING_BUFFER_EVENTS",
        "streaming_buffer_events",
        _count,
        default="64",
        section=_SDKS,
        help="messages queued per stream before it is dropped as slow",
    ),
    Setting(
        "FLAGCORE_STREAMING_HISTORY",
        "streaming_history",
        _count,
        default="1000",
        section=_SDKS,
        help="changes kept per environment for Last-Event-ID and delta catch-up",
    ),
    Setting(
        "FLAGCORE_STREAMING_MAX_PER_TOKEN",
        "streaming_max_per_token",
        _count,
        default="1000",
        section=_SDKS,
        help="open streams per token, from every address; past it 429 (0: no limit)",
    ),
    Setting(
        "FLAGCORE_STREAMING_MAX_PER_ADDRESS",
        "streaming_max_per_address",
        _count,
        default="100",
        section=_SDKS,
        help="open streams per address; past it 429 (0: no limit)",
    ),
    Setting(
        "FLAGCORE_STREAMING_SEND_BUFFER_BYTES",
        "streaming_send_buffer_bytes",
        _between(4096, 64 * 1024 * 1024, "not a size in bytes from 4096 to 64 MiB"),
        default="65536",
        section=_SDKS,
        help="kernel send buffer of a stream's socket, in bytes",
    ),
    Setting(
        "FLAGCORE_STREAMING_DRAIN_SECONDS",
        "streaming_drain_timeout",
        _amount,
        default="10",
        section=_SDKS,
        help="seconds a stream's bytes may wait unacknowledged before it is closed",
    ),
    Setting(
        "FLAGCORE_FRONTEND_ORIGINS",
        "frontend_origins",
        _origins,
        flag="--frontend-origins",
        metavar="ORIGINS",
        default="*",
        section=_SDKS,
        help="browser origins allowed on the Frontend API and OFREP: * or a comma list",
    ),
    Setting(
        "FLAGCORE_TRUST_FORWARDED_FOR",
        "trust_forwarded_for",
        _boolean,
        flag="--trust-forwarded-for",
        metavar="true|false",
        default="false",
        section=_SDKS,
        help="take a frontend caller's address from the last X-Forwarded-For entry, behind a "
        "proxy that sets it",
    ),
    Setting(
        "FLAGCORE_SDK_USAGE_MAX_BODY_BYTES",
        "sdk_usage_max_body_bytes",
        _between(1024, 1_000_000, "not a size in bytes"),
        default="262144",
        section=_LIMITS,
        help="largest body of an SDK metrics post or registration, client and frontend "
        "(413 past it, refused before it is read)",
    ),
    Setting(
        "FLAGCORE_METRICS_RATE_LIMIT_PER_MINUTE",
        "metrics_rate_limit",
        _between(0, 10_000_000, "not a count a minute"),
        default="6000",
        section=_LIMITS,
        help="POST /api/client/metrics a minute per token and address (0: no limit)",
    ),
    Setting(
        "FLAGCORE_REGISTER_RATE_LIMIT_PER_MINUTE",
        "register_rate_limit",
        _between(0, 10_000_000, "not a count a minute"),
        default="6000",
        section=_LIMITS,
        help="POST /api/client/register a minute per token and address (0: no limit)",
    ),
    Setting(
        "FLAGCORE_FRONTEND_METRICS_RATE_LIMIT_PER_MINUTE",
        "frontend_metrics_rate_limit",
        _between(0, 10_000_000, "not a count a minute"),
        default="6000",
        section=_LIMITS,
        help="POST /api/frontend/client/metrics a minute per token and address (0: no limit)",
    ),
    Setting(
        "FLAGCORE_FRONTEND_REGISTER_RATE_LIMIT_PER_MINUTE",
        "frontend_register_rate_limit",
        _between(0, 10_000_000, "not a count a minute"),
        default="6000",
        section=_LIMITS,
        help="POST /api/frontend/client/register a minute per token and address (0: no limit)",
    ),
    Setting(
        "FLAGCORE_SDK_WRITE_BURST_SECONDS",
        "sdk_write_burst_seconds",
        _duration(1, 60),
        default="1",
        section=_LIMITS,
        help="SDK metrics and registrations one token and address may send at once, in "
        "seconds of its rate a minute (at least 10; 60: a minute's allowance at once, as "
        "Unleash)",
    ),
    Setting(
        "FLAGCORE_NEW_INSTANCES_RATE_LIMIT_PER_MINUTE",
        "new_instances_rate_limit",
        _between(0, 10_000_000, "not a count a minute"),
        default="1000",
        section=_LIMITS,
        help="never-seen SDK instances noted from polls a minute per token (0: no limit)",
    ),
    Setting(
        "FLAGCORE_METRICS_NEW_ROWS_PER_HOUR",
        "metrics_new_rows_per_hour",
        _count,
        default="10000",
        section=_LIMITS,
        help="rows (instances, hour buckets) SDK metrics may add an hour per token and address",
    ),
    Setting(
        "FLAGCORE_FRONTEND_METRICS_NEW_ROWS_PER_HOUR",
        "frontend_metrics_new_rows_per_hour",
        _count,
        default="1000",
        section=_LIMITS,
        help="rows browser metrics may add an hour per frontend token and address",
    ),
    Setting(
        "FLAGCORE_FRONTEND_METRICS_NEW_ROWS_PER_HOUR_PER_TOKEN",
        "frontend_metrics_new_rows_per_hour_per_token",
        _count,
        default="10000",
        section=_LIMITS,
        help="rows browser metrics may add an hour per frontend token, every address",
    ),
    Setting(
        "FLAGCORE_AUTH_FAILURES_FREE_PER_MINUTE",
        "auth_failures_free_per_minute",
        _between(0, 10_000_000, "not a count a minute"),
        default="30",
        section=_LIMITS,
        help="refused secrets a minute per address before each further 401 waits",
    ),
    Setting(
        "FLAGCORE_SIGN_IN_FAILURES_PER_ACCOUNT",
        "sign_in_failures_per_account",
        _between(0, 1_000_000, "not a count"),
        default="10",
        section=_LIMITS,
        help="failed password sign-ins per account in 15 minutes before 429 (0: no limit)",
    ),
    Setting(
        "FLAGCORE_SIGN_IN_FAILURES_PER_ADDRESS",
        "sign_in_failures_per_address",
        _between(0, 1_000_000, "not a count"),
        default="50",
        section=_LIMITS,
        help="failed password sign-ins per address in 15 minutes before 429 (0: no limit)",
    ),
    Setting(
        "FLAGCORE_AUTH_FAILURE_DELAY_SECONDS",
        "auth_failure_delay",
        _duration(0, 60),
        default="1",
        section=_LIMITS,
        help="seconds each further 401 waits (0 to 60)",
    ),
    Setting(
        "FLAGCORE_STORE_QUEUE_LIMIT",
        "store_queue_limit",
        _count,
        default="256",
        section=_LOAD,
        help="store calls waiting at most; past it requests that need the store get 503",
    ),
    Setting(
        "FLAGCORE_PAYLOAD_CACHE_BYTES",
        "payload_cache_bytes",
        _count,
        default="33554432",
        section=_LOAD,
        help="bytes of rendered client payloads kept (32 MiB)",
    ),
    Setting(
        "FLAGCORE_INSTANCE_WRITE_INTERVAL_SECONDS",
        "instance_write_interval",
        _amount,
        default="5",
        section=_LOAD,
        help="seconds between batched writes of the SDK instances seen polling",
    ),
    Setting(
        "FLAGCORE_USAGE_BUFFER_ENTRIES",
        "usage_buffer_entries",
        _at_least(1000),
        default="200000",
        section=_LOAD,
        help="SDK metrics keys and registrations held in memory until written (past it "
        "they are dropped and counted)",
    ),
    Setting(
        "FLAGCORE_USAGE_FLUSH_INTERVAL_SECONDS",
        "usage_flush_interval",
        _duration(0, 60),
        default="1",
        section=_LOAD,
        help="seconds SDK metrics and registrations gather in memory before one "
        "transaction writes them (sooner once 1,000 entries wait)",
    ),
    Setting(
        "FLAGCORE_USAGE_WRITE_WAIT_SECONDS",
        "usage_write_wait",
        _duration(0, 60),
        default="0.5",
        section=_LOAD,
        help="seconds an SDK metrics post waits for the store to say which names are "
        "flags before its names are held unfiltered",
    ),
    Setting(
        "FLAGCORE_RETENTION_INTERVAL_SECONDS",
        "retention_interval",
        _amount,
        default="60",
        section=_LOAD,
        help="seconds between prunings of old data (0: never)",
    ),
    Setting(
        "FLAGCORE_METRICS_RETENTION_HOURS",
        "retention.metrics_hours",
        _amount_up_to(8784, "hours"),
        default="720",
        section=_LOAD,
        help="hours SDK metrics are kept in hour buckets (0 to 8784), then rolled up into "
        "day buckets (0: hours forever)",
    ),
    Setting(
        "FLAGCORE_CLIENT_INSTANCE_RETENTION_DAYS",
        "retention.client_instance_days",
        _amount,
        default="7",
        section=_LOAD,
        help="days an SDK instance is kept after it was last seen (0: forever)",
    ),
    Setting(
        "FLAGCORE_SIGNAL_RETENTION_DAYS",
        "retention.signal_days",
        _amount,
        default="7",
        section=_LOAD,
        help="days signals are kept (0: forever)",
    ),
    Setting(
        "FLAGCORE_SIGNALS_KEPT_PER_ENDPOINT",
        "retention.signals_per_endpoint",
        _count,
        default="1000",
        section=_LOAD,
        help="newest signals kept per signal endpoint (0: no bound)",
    ),
    Setting(
        "FLAGCORE_EVENT_RETENTION_DAYS",
        "retention.event_days",
        _amount,
        default="90",
        section=_LOAD,
        help="days events are kept (0: forever; the newest is always kept)",
    ),
    Setting(
        "FLAGCORE_GC_PAUSE",
        "gc_pause",
        _on_off,
        default="on",
        section=_LOAD,
        help="pause the cyclic garbage collector while a client payload is built on a cache "
        "miss: on or off",
    ),
    Setting(
        "FLAGCORE_UI_SECRET",
        "ui_secret",
        _secret,
        default="",
        section=_UI,
        help="secret that signs the admin UI's session cookies; none: a random one per process, "
        "so sessions end at a restart",
    ),
    Setting(
        "FLAGCORE_UI_SESSION_HOURS",
        "ui_session_seconds",
        _hours_as_seconds,
        default="8",
        section=_UI,
        help="hours an admin UI session lasts",
    ),
    Setting(
        "FLAGCORE_OIDC_ISSUER",
        "oidc_issuer",
        _provider_url,
        default="",
        section=_UI,
        help="OpenID provider's issuer URL (its /.well-known/openid-configuration is read); "
        "none: no sign-in with a provider",
    ),
    Setting(
        "FLAGCORE_OIDC_CLIENT_ID",
        "oidc_client_id",
        _optional_text,
        default="",
        section=_UI,
        help="client id registered at the OpenID provider",
    ),
    Setting(
        "FLAGCORE_OIDC_CLIENT_SECRET",
        "oidc_client_secret",
        _client_secret,
        default="",
        section=_UI,
        help="client secret registered at the OpenID provider (never logged)",
    ),
    Setting(
        "FLAGCORE_OIDC_PROVIDER_NAME",
        "oidc_provider_name",
        _provider_name,
        default="OpenID Connect",
        section=_UI,
        help='the sign-in page\'s button says "Sign in with" this name',
    ),
    Setting(
        "FLAGCORE_OIDC_REDIRECT_BASE_URL",
        "oidc_redirect_base_url",
        _provider_url,
        default="",
        section=_UI,
        help="this server's address as browsers reach it (the callback is "
        "<it>/ui/sign-in/oidc/callback); none: the request's own",
    ),
    Setting(
        "FLAGCORE_OIDC_SCOPES",
        "oidc_scopes",
        _scopes,
        default="openid email profile",
        section=_UI,
        help="scopes asked of the OpenID provider, space separated",
    ),
    Setting(
        "FLAGCORE_OIDC_DEFAULT_ROOT_ROLE",
        "oidc_default_root_role",
        _root_role,
        default="Viewer",
        section=_UI,
        help="root role of a person's user made at their first sign-in with the provider",
    ),
    Setting(
        "FLAGCORE_OIDC_EMAIL_DOMAINS",
        "oidc_email_domains",
        _email_domains,
        default="",
        section=_UI,
        help="email domains allowed to sign in with the provider, comma separated; none: any",
    ),
    Setting(
        "FLAGCORE_OIDC_GROUP_CLAIM",
        "oidc_group_claim",
        _optional_text,
        default="",
        section=_UI,
        help="ID token claim listing a person's groups: mapped to groups (mappingsSSO) at "
        "each sign-in, and read by FLAGCORE_OIDC_GROUP_ROLES",
    ),
    Setting(
        "FLAGCORE_OIDC_GROUP_ROLES",
        "oidc_group_roles",
        _group_roles,
        default="",
        section=_UI,
        help="group=Role pairs, comma separated: the root role of a new user in that group",
    ),
    Setting(
        "FLAGCORE_PASSWORD_SIGN_IN",
        "password_sign_in",
        _on_off,
        default="on",
        section=_UI,
        help="whether people may sign in with a password (off: only with the provider)",
    ),
    Setting(
        "FLAGCORE_WORKERS",
        "workers",
        _between(1, MAX_WORKERS, "not a worker count"),
        flag="--workers",
        metavar="N",
        default="1",
        section=_PROCESSES,
        help="server processes answering on the one port, each using a core",
    ),
    Setting(
        "FLAGCORE_LOOP",
        "event_loop",
        _choice("auto", "uvloop", "asyncio"),
        flag="--loop",
        metavar="auto|uvloop|asyncio",
        default="auto",
        section=_PROCESSES,
        help="event loop: auto uses uvloop when installed",
    ),
    Setting(
        "FLAGCORE_METRICS_PORT",
        "metrics_port",
        _port,
        flag="--metrics-port",
        metavar="N",
        default="",
        section=_OBSERVE,
        help="serve /internal-backstage/prometheus on this port only, not on the main one (0 "
        "picks a free one); none: on the main port",
    ),
    Setting(
        "FLAGCORE_LOG_FORMAT",
        "log_format",
        _one_of("text", "json"),
        flag="--log-format",
        metavar="text|json",
        default="text",
        section=_OBSERVE,
        help="log lines as text or one JSON object each",
    ),
    Setting(
        "FLAGCORE_ACCESS_LOG",
        "access_log",
        _one_of("off", "default", "all"),
        flag="--access-log",
        metavar="off|default|all",
        default="default",
        section=_OBSERVE,
        help="request lines: default for writes, errors, refusals, sign-ins and slow requests "
        "plus a count of the rest every 60 s; all for every request; off for none (as "
        "--no-access-log)",
    ),
    Setting(
        "FLAGCORE_LOG_LEVEL",
        "log_level",
        _one_of("debug", "info", "warning", "error"),
        flag="--log-level",
        metavar="debug|info|warning|error",
        default="info",
        section=_OBSERVE,
        help="least severe level logged; requests are info",
    ),
    Setting(
        "FLAGCORE_PREVIEW_SAMPLING",
        "preview_sampling",
        _on_off,
        default="on",
        section=_PREVIEW,
        help="keep a sample of the contexts sent to the Frontend API and OFREP for previews of "
        "changes: on or off",
    ),
    Setting(
        "FLAGCORE_PREVIEW_SAMPLE_SIZE",
        "preview_sample_size",
        _between(1, 100_000, "contexts"),
        default="10000",
        section=_PREVIEW,
        help="contexts kept per environment from traffic, and the most lines an uploaded sample "
        "may have",
    ),
    Setting(
        "FLAGCORE_PREVIEW_DENY_FIELDS",
        "preview_denied_fields",
        _field_names,
        default="email,remoteAddress",
        section=_PREVIEW,
        help="context field names (top level or properties) never stored in a sample, sampled "
        "or uploaded; comma list",
    ),
    Setting(
        "FLAGCORE_PREVIEW_SAMPLE_FLUSH_SECONDS",
        "preview_sample_flush_interval",
        _duration(0.01, 3600),
        default="10",
        section=_PREVIEW,
        help="seconds sampled contexts wait in memory before one transaction writes them",
    ),
    Setting(
        "FLAGCORE_PREVIEW_SAMPLE_RETENTION_DAYS",
        "retention.context_sample_days",
        _amount,
        default="7",
        section=_PREVIEW,
        help="days a context sampled from traffic is kept (0: forever; uploads stay until "
        "replaced)",
    ),
    Setting(
        "FLAGCORE_INTEGRATION_ALLOW_LIST",
        "integration_allow_list",
        _allow_list,
        default="",
        section=_INTEGRATIONS,
        help="hosts or addresses integrations may send to though not public (loopback, "
        "private, link-local), comma separated",
    ),
    Setting(
        "FLAGCORE_INTEGRATION_RETRY_SECONDS",
        "integration_retry_seconds",
        _duration(0, 86_400),
        default="600",
        section=_INTEGRATIONS,
        help="how long a delivery is retried before it is marked failed",
    ),
    Setting(
        "FLAGCORE_INTEGRATION_TIMEOUT_SECONDS",
        "integration_timeout",
        _duration(0.1, 60),
        default="10",
        section=_INTEGRATIONS,
        help="seconds to connect, and to wait for a receiver's answer, per attempt",
    ),
    Setting(
        "FLAGCORE_INTEGRATION_UI_URL",
        "integration_ui_url",
        _ui_url,
        default="http://localhost:4242",
        section=_INTEGRATIONS,
        help="the address people reach this server's UI at, for links in integration messages",
    ),
    Setting(
        "FLAGCORE_PUBLIC_URL",
        "public_url",
        _public_url,
        default="",
        section=_UI,
        help="this server's address as browsers reach it (https://flags.example.com): "
        "invitation, reset and OpenID links are built on it, and https makes cookies "
        "Secure behind a TLS proxy; none: links from the request's Host (trusted "
        "networks only)",
    ),
    Setting(
        "FLAGCORE_SMTP_HOST",
        "smtp_host",
        _smtp_host,
        default="",
        section=_UI,
        help="mail server that sends invitations and password resets; none: no mail, the "
        "links are shown to the admin only",
    ),
    Setting(
        "FLAGCORE_SMTP_PORT",
        "smtp_port",
        _smtp_port,
        default="587",
        section=_UI,
        help="the mail server's port",
    ),
    Setting(
        "FLAGCORE_SMTP_USER",
        "smtp_user",
        _optional_text,
        default="",
        section=_UI,
        help="user to sign in to the mail server as (with FLAGCORE_SMTP_PASSWORD)",
    ),
    Setting(
        "FLAGCORE_SMTP_PASSWORD",
        "smtp_password",
        _secret,
        default="",
        section=_UI,
        help="the mail server user's password (never logged or shown)",
    ),
    Setting(
        "FLAGCORE_SMTP_FROM",
        "smtp_from",
        _mail_address,
        default="",
        section=_UI,
        help="the address mails come from (needed with a mail server)",
    ),
    Setting(
        "FLAGCORE_SMTP_STARTTLS",
        "smtp_starttls",
        _on_off,
        default="on",
        section=_UI,
        help="on: encrypt the connection with STARTTLS before anything is sent; off only "
        "for a server without it (a password then only to 127.0.0.1 or localhost)",
    ),
    Setting(
        "FLAGCORE_STALE_CHECK_INTERVAL_SECONDS",
        "stale_check_interval",
        _amount,
        default="3600",
        section=_LOAD,
        help="seconds between checks for flags older than their type's lifetime, each "
        "announced once (0: never)",
    ),
    Setting(
        "FLAGCORE_STALE_REMINDER_INTERVAL_SECONDS",
        "stale_reminder_interval",
        _amount_up_to(31_622_400, "seconds"),  # a leap year
        default="86400",
        section=_LOAD,
        help="seconds between the reminders naming each project's potentially stale flags, "
        "sent by one node at a stale check once due (0: never)",
    ),
    Setting(
        "FLAGCORE_INTEGRATION_SWEEP_SECONDS",
        "integration_sweep_interval",
        _duration(0.1, 3600),
        default="2",
        section=_INTEGRATIONS,
        help="seconds between looks at the integrations (made on another node, leases run "
        "out); with none on, flag changes cost no look at all",
    ),
    Setting(
        "FLAGCORE_SCHEDULE_CHECK_SECONDS",
        "schedule_check_interval",
        _duration(0.05, 60),
        default="0.5",
        section=_INTEGRATIONS,
        help="seconds between looks for scheduled change requests and release plan "
        "progressions that are due",
    ),
    Setting(
        "FLAGCORE_METRICS_DAILY_RETENTION_DAYS",
        "retention.metrics_daily_days",
        _amount_up_to(3660, "days"),
        default="365",
        section=_LOAD,
        help="days SDK metrics are kept in day buckets once rolled up (0 to 3660; 0: forever)",
    ),
    Setting(
        "FLAGCORE_SAFE_TO_ARCHIVE_DAYS",
        "safe_to_archive_days",
        _between(1, 3660, "not a number of days"),
        default="30",
        section=_LOAD,
        help="days of one answer in every environment (or of no evaluation) before a flag "
        "is suggested safe to archive (1 to 3660)",
    ),
)
