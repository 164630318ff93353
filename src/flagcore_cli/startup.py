"""What a server start does before it listens for requests, in one process or many
(`flagcore_cli.serve`, `flagcore_cli.workers`): init tokens, a first admin token, and the
one-line errors and warnings the operator sees."""

from __future__ import annotations

import errno
import os
import socket

import attrs

from flagcore.entities import ApiToken
from flagcore.errors import FlagcoreError, ServiceUnavailable, StorageError
from flagcore.service import Service, TokenSpec
from flagcore_cli.output import say
from flagcore_cli.stores import StartError
from flagcore_http.config import AuthMode, InitToken, ServerConfig

__all__ = [
    "ANONYMOUS",
    "StartupTokens",
    "cannot_listen",
    "init_token_failure",
    "prepare_tokens",
    "sign_in_link",
    "tell_about",
    "warn_about",
]

# How `flagcore_http.calls.actor` names whoever made a change without a token (--auth none).
ANONYMOUS = "anonymous"


def init_token_failure(error: FlagcoreError) -> StartError:
    """A start stopped by the init tokens: exit 2 when an entry names a project or
    environment that does not exist (the setting is wrong), 1 when the store failed."""
    setting_is_wrong = not isinstance(error, StorageError | ServiceUnavailable)
    return StartError(error.message, exit_code=2 if setting_is_wrong else 1)


def cannot_listen(host: str, port: int, error: OSError, flag: str, variable: str) -> StartError:
    """The one line for a socket that cannot listen on ``host:port`` (``flag`` and
    ``variable`` set the port). A host that is no address of this machine is named as such:
    getaddrinfo's errors carry negative numbers `os.strerror` calls "Unknown error -2"."""
    where = f"cannot listen on {host}:{port}"
    if isinstance(error, socket.gaierror) or error.errno == errno.EADDRNOTAVAIL:
        number = error.errno or 0
        reason = os.strerror(number) if number > 0 else error.strerror or "no such address"
        return StartError(
            f"{where}: {host!r} is not an address of this machine ({reason}); set --host or "
            "FLAGCORE_HOST to one of its addresses, such as 127.0.0.1, 0.0.0.0 (every IPv4 "
            "address) or :: (every address)"
        )
    reason = os.strerror(error.errno) if error.errno else str(error)
    return StartError(
        f"{where}: {reason}; choose another port with {flag} or {variable} (0 picks a free "
        "one), or another address with --host or FLAGCORE_HOST"
    )


@attrs.frozen
class StartupTokens:
    """What the start did about tokens, to be told to the operator."""

    new_admin_secret: str | None = attrs.field(default=None, repr=False)
    made_without_auth: tuple[ApiToken, ...] = ()
    # The first start of a database with no user: the admin user's one-time link token.
    first_admin_link: str | None = attrs.field(default=None, repr=False)


def sign_in_link(host: str, port: int, token: str, public_url: str | None = None) -> str:
    """Where the first admin sets their password: on the public URL when configured,
    else on the listening address (a wildcard address as localhost)."""
    if public_url is not None:
        return f"{public_url}/ui/set-password?token={token}"
    shown = "localhost" if host in ("0.0.0.0", "::", "") else host
    if ":" in shown:
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/ui/set-password?token={token}"


def tell_about(tokens: StartupTokens, host: str, port: int, public_url: str | None = None) -> None:
    """The secrets a start made, shown once on stdout (never in the log stream)."""
    if tokens.new_admin_secret is not None:
        say(f"admin API token, shown once: {tokens.new_admin_secret}")
        say(f"  use it as: export ADMIN_TOKEN='{tokens.new_admin_secret}'")
    if tokens.first_admin_link is not None:
        say(
            "first sign-in as user 'admin', a one-time link valid for 24 hours: "
            + sign_in_link(host, port, tokens.first_admin_link, public_url)
        )


def _spec(token: InitToken) -> TokenSpec:
    prefix = "init-admin" if token.environment is None else "init-client"
    return TokenSpec(
        token.type, token.secret, token.projects, token.environment, prefix, token.origin
    )


def prepare_tokens(service: Service, config: ServerConfig) -> StartupTokens:
    """Create the configured init tokens; make an admin token when none can be trusted.

    Under ``--auth none`` nothing more happens. With token authentication, tokens made by
    anyone while authentication was off are reported, and when every admin token is one
    of them a new one is made, so the operator always has a way in.
    """
    service.tokens.ensure_tokens(
        [_spec(t) for t in config.init_admin_tokens + config.init_client_tokens]
    )
    if config.auth is AuthMode.NONE:
        return StartupTokens()
    made_without_auth = tuple(service.tokens.tokens_created_by(ANONYMOUS))
    created = service.tokens.ensure_admin_token(untrusted_actor=ANONYMOUS)
    first_admin = service.users.ensure_first_admin()
    return StartupTokens(
        created.secret if created else None,
        made_without_auth,
        first_admin.token if first_admin else None,
    )


def warn_about(config: ServerConfig, tokens: StartupTokens) -> None:
    for token in config.init_admin_tokens + config.init_client_tokens:
        if token.secret_is_short:
            say(
                f"warning: {token.origin}: the secret part is short and easy to guess; "
                "use a long random one outside a trial",
                error=True,
            )
    if tokens.made_without_auth:
        names = ", ".join(sorted({t.name for t in tokens.made_without_auth})[:20])
        say(
            f"WARNING: {len(tokens.made_without_auth)} API token(s) were created while "
            f"authentication was off (--auth none), by anyone who could connect, and they "
            f"still work: {names}. Review them (GET /api/admin/api-tokens) and delete any "
            "you did not make (DELETE /api/admin/api-tokens/<id>, the id as listed).",
            error=True,
        )
