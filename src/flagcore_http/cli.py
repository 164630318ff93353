"""``flagcore serve``: the HTTP server on a SQLite file or a PostgreSQL database.

Settings come from flags, then ``FLAGCORE_*`` environment variables, then defaults, and
are all checked before anything is opened: a wrong one stops the start with one line on
stderr that names it. The port is bound before the database is opened, and tokens are
made only once the socket listens, so a failed start neither leaves a new database file
behind nor makes a token nobody saw. SIGINT and SIGTERM stop it gracefully: no new
connections, in-flight requests finish, the database closes cleanly.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.metadata
import logging
import os
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

import attrs
from aiohttp import web

from flagcore.entities import ApiToken
from flagcore.errors import FlagcoreError
from flagcore.ports import Store
from flagcore.service import Service, TokenSpec
from flagcore_http import explain_command  # flagcore explain (issue 19, branch explain)
from flagcore_http.app import create_app
from flagcore_http.config import AuthMode, ConfigError, InitToken, ServerConfig
from flagcore_http.connections import (
    ConnectionLimit,
    ListeningSite,
    connection_budget,
    listening_socket,
)
from flagcore_http.logs import AccessLog, configure_logging
from flagcore_http.metrics import METRICS, metrics_app

__all__ = ["StartupTokens", "main", "prepare_tokens", "serve"]


# How `flagcore_http.calls.actor` names whoever made a change without a token (--auth none).
ANONYMOUS = "anonymous"


class StartError(Exception):
    """The server cannot start; the message is the one line the operator sees."""


@attrs.frozen
class StartupTokens:
    """What the start did about tokens, to be told to the operator."""

    new_admin_secret: str | None = attrs.field(default=None, repr=False)
    made_without_auth: tuple[ApiToken, ...] = ()


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
    return StartupTokens(created.secret if created else None, made_without_auth)


def _database_files(db: str) -> list[Path]:
    return [Path(db + suffix) for suffix in ("", "-wal", "-shm", "-journal")]


def _say(text: str, *, error: bool = False) -> None:
    print(text, file=sys.stderr if error else sys.stdout, flush=True)


def _warn_about(config: ServerConfig, tokens: StartupTokens) -> None:
    for token in config.init_admin_tokens + config.init_client_tokens:
        if token.secret_is_short:
            _say(
                f"warning: {token.origin}: the secret part is short and easy to guess; "
                "use a long random one outside a trial",
                error=True,
            )
    if tokens.made_without_auth:
        names = ", ".join(sorted({t.name for t in tokens.made_without_auth})[:20])
        _say(
            f"WARNING: {len(tokens.made_without_auth)} API token(s) were created while "
            f"authentication was off (--auth none), by anyone who could connect, and they "
            f"still work: {names}. Review them (GET /api/admin/api-tokens) and delete any "
            "you did not make (DELETE /api/admin/api-tokens/<id>, the id as listed).",
            error=True,
        )


def is_postgres(db: str) -> bool:
    return db.startswith(("postgresql://", "postgres://"))


def database_name(db: str) -> str:
    """How the start line names the database: a PostgreSQL URL without its password."""
    if not is_postgres(db):
        return db
    from flagcore_store_postgres.store import describe

    return describe(db)


def open_store(config: ServerConfig) -> Store:
    """The store ``--db`` names: a ``postgresql://`` URL, or else a SQLite path."""
    if not is_postgres(config.db):
        from flagcore_store_sqlite import SqliteStore

        return SqliteStore(config.db)
    try:
        from flagcore_store_postgres import PostgresSettings, PostgresStore
    except ImportError:
        raise StartError(
            "--db names a PostgreSQL database, but psycopg is not installed; "
            "install flagcore[postgres]"
        ) from None
    settings = PostgresSettings(
        pool_size=config.db_pool_size,
        pool_timeout=config.db_pool_timeout,
        connect_timeout=config.db_connect_timeout,
        revision_check_interval=config.db_revision_check_interval,
    )
    return PostgresStore(config.db, settings)


async def serve(config: ServerConfig, *, ready: asyncio.Event | None = None) -> None:
    """Run the server until SIGINT or SIGTERM; `StartError` if it cannot start."""
    try:
        sock = listening_socket(config.host, config.port)
    except OSError as error:
        reason = os.strerror(error.errno) if error.errno else str(error)
        raise StartError(
            f"cannot listen on {config.host}:{config.port}: {reason}; choose another port "
            "with --port or FLAGCORE_PORT (0 picks a free one), or another address with "
            "--host or FLAGCORE_HOST"
        ) from None
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(sock.close)
        # --- observe (issue 18 §2): the metrics port is bound before the database opens ---
        metrics_sock = _metrics_socket(config)
        if metrics_sock is not None:
            cleanup.callback(metrics_sock.close)
        new_database = (
            config.db != ":memory:" and not is_postgres(config.db) and not Path(config.db).exists()
        )
        try:
            store = await asyncio.to_thread(open_store, config)
        except FlagcoreError as error:
            raise StartError(f"{error.message}; choose another with --db or FLAGCORE_DB") from None
        cleanup.callback(store.close)
        service = Service(store, pause_gc=config.gc_pause)
        try:
            tokens = prepare_tokens(service, config)
        except FlagcoreError as error:
            store.close()
            if new_database:  # a failed first start leaves nothing behind
                for path in _database_files(config.db):
                    path.unlink(missing_ok=True)
            raise StartError(error.message) from None
        await _run(service, config, sock, tokens, ready, metrics_sock)
    _say("flagcore stopped")


async def _run(
    service: Service,
    config: ServerConfig,
    sock: socket.socket,
    tokens: StartupTokens,
    ready: asyncio.Event | None,
    metrics_sock: socket.socket | None = None,
) -> None:
    maximum, note = connection_budget(config.max_connections)
    app = create_app(service, config)
    runner = web.AppRunner(
        app,
        handle_signals=False,
        access_log_class=AccessLog,
        access_log=logging.getLogger("flagcore_http.access") if config.access_log else None,
        # aiohttp's keep-alive timer is its header timeout too (see connections.py).
        keepalive_timeout=config.header_timeout,
        shutdown_timeout=config.shutdown_timeout,
    )
    await runner.setup()
    stack = contextlib.AsyncExitStack()
    try:
        await ListeningSite(runner, sock, ConnectionLimit(maximum)).start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        host, port = sock.getsockname()[:2]
        _say(f"flagcore listening on http://{host}:{port} (database {database_name(config.db)})")
        if metrics_sock is not None:  # observe (issue 18 §2)
            metrics_runner = await _serve_metrics(app, metrics_sock)
            stack.push_async_callback(metrics_runner.cleanup)
        if tokens.new_admin_secret is not None:
            _say(f"admin API token, shown once: {tokens.new_admin_secret}")
            _say(f"  use it as: export ADMIN_TOKEN='{tokens.new_admin_secret}'")
        if config.auth is AuthMode.NONE:
            _say("authentication is off (--auth none): anyone who can connect is admin")
        if note is not None:
            _say(f"warning: {note}", error=True)
        _warn_about(config, tokens)
        if ready is not None:
            ready.set()
        await stop.wait()
        _say("flagcore stopping: finishing in-flight requests")
    finally:
        await stack.aclose()
        await runner.cleanup()


# --- observe (issue 18 §2): metrics on their own port ---
def _metrics_socket(config: ServerConfig) -> socket.socket | None:
    if config.metrics_port is None:
        return None
    try:
        return listening_socket(config.host, config.metrics_port)
    except OSError as error:
        reason = os.strerror(error.errno) if error.errno else str(error)
        raise StartError(
            f"cannot listen on {config.host}:{config.metrics_port} for metrics: {reason}; "
            "choose another port with --metrics-port or FLAGCORE_METRICS_PORT"
        ) from None


async def _serve_metrics(app: web.Application, sock: socket.socket) -> web.AppRunner:
    """Serve ``/internal-backstage/prometheus`` alone on ``sock``; say where."""
    runner = web.AppRunner(metrics_app(app[METRICS]), handle_signals=False, access_log=None)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    host, port = sock.getsockname()[:2]
    _say(f"metrics on http://{host}:{port}/internal-backstage/prometheus")
    return runner


_ENVIRONMENT_HELP = """\
environment variables (flags win over them):
  FLAGCORE_HOST, FLAGCORE_PORT, FLAGCORE_DB, FLAGCORE_AUTH (token or none),
  FLAGCORE_HEADER_TIMEOUT, FLAGCORE_BODY_TIMEOUT, FLAGCORE_MAX_CONNECTIONS,
  FLAGCORE_DB_POOL_SIZE, FLAGCORE_DB_POOL_TIMEOUT, FLAGCORE_DB_CONNECT_TIMEOUT,
  FLAGCORE_DB_REVISION_CHECK_INTERVAL, FLAGCORE_WORKERS, FLAGCORE_LOOP,
  FLAGCORE_METRICS_PORT, FLAGCORE_LOG_FORMAT, FLAGCORE_LOG_LEVEL
                        the same as the flags above
  FLAGCORE_INIT_ADMIN_API_TOKENS
                        comma-separated admin tokens to create at start: *:*.secret
  FLAGCORE_INIT_CLIENT_API_TOKENS
                        comma-separated client tokens to create at start:
                        project:environment.secret (* for all projects), e.g.
                        default:development.secret

On first start (token authentication, no admin token yet) it makes an admin token and
prints it once. Lost it? Start again with FLAGCORE_INIT_ADMIN_API_TOKENS='*:*.<secret>':
init tokens are added to an existing database too. See docs/http.md.
"""


def _version() -> str:
    try:
        return importlib.metadata.version("flagcore")
    except importlib.metadata.PackageNotFoundError:  # running from a source tree
        return "unknown"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flagcore", description="Unleash-compatible feature flags"
    )
    parser.add_argument("--version", action="version", version=f"flagcore {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser(
        "serve",
        help="run the HTTP server on a SQLite or PostgreSQL database",
        description="Run the HTTP server (Unleash's API) on a SQLite or PostgreSQL database.",
        epilog=_ENVIRONMENT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument(
        "--host", metavar="ADDRESS", help="address to listen on (default 127.0.0.1; FLAGCORE_HOST)"
    )
    run.add_argument(
        "--port", metavar="N", help="port (default 4242; FLAGCORE_PORT; 0 picks a free one)"
    )
    run.add_argument(
        "--db",
        metavar="PATH|URL",
        help="SQLite file, or postgresql://user:password@host:5432/database for several "
        "nodes over one PostgreSQL (default ./flagcore.db; FLAGCORE_DB)",
    )
    run.add_argument(
        "--db-pool-size",
        metavar="N",
        help="PostgreSQL connections at most (default 10; FLAGCORE_DB_POOL_SIZE)",
    )
    run.add_argument(
        "--db-pool-timeout",
        metavar="SECONDS",
        help="seconds a request waits for a PostgreSQL connection before a 503 "
        "(default 5; FLAGCORE_DB_POOL_TIMEOUT)",
    )
    run.add_argument(
        "--db-connect-timeout",
        metavar="SECONDS",
        help="seconds one PostgreSQL connection attempt may take "
        "(default 5; FLAGCORE_DB_CONNECT_TIMEOUT)",
    )
    run.add_argument(
        "--db-revision-check-interval",
        metavar="SECONDS",
        help="seconds between revision checks, the safety net behind LISTEN/NOTIFY "
        "(default 2; FLAGCORE_DB_REVISION_CHECK_INTERVAL)",
    )
    run.add_argument(
        "--auth", metavar="{token,none}", help="token (default) or none (FLAGCORE_AUTH)"
    )
    run.add_argument(
        "--header-timeout",
        metavar="SECONDS",
        help="seconds a client has to send complete request headers, and that an idle "
        "connection stays open (default 10; FLAGCORE_HEADER_TIMEOUT)",
    )
    run.add_argument(
        "--body-timeout",
        metavar="SECONDS",
        help="seconds a client has to send a request body (default 30; FLAGCORE_BODY_TIMEOUT)",
    )
    run.add_argument(
        "--max-connections",
        metavar="N",
        help="open connections at most, streams included; more get 503 (default 10000, "
        "lowered to fit the open-file limit; FLAGCORE_MAX_CONNECTIONS)",
    )
    run.add_argument(
        "--frontend-origins",
        metavar="ORIGINS",
        help="browser origins allowed on the Frontend API and OFREP, comma-separated "
        "(default *; FLAGCORE_FRONTEND_ORIGINS)",
    )
    run.add_argument(
        "--trust-forwarded-for",
        metavar="true|false",
        help="take the caller's address from the last X-Forwarded-For entry, behind a proxy "
        "that sets it (default false; FLAGCORE_TRUST_FORWARDED_FOR)",
    )
    run.add_argument(
        "--sdk-fetch-mode",
        metavar="polling|streaming",
        help="what polling SDKs are told to use with the fetch-mode header "
        "(default polling; FLAGCORE_SDK_FETCH_MODE)",
    )
    # --- rate limits: whose X-Forwarded-For is believed (docs/security.md) ---
    run.add_argument(
        "--trusted-proxies",
        metavar="ADDRESSES",
        help="proxy addresses or networks (comma-separated) whose X-Forwarded-For names the "
        "caller for rate limits (default none; FLAGCORE_TRUSTED_PROXIES)",
    )
    run.add_argument(
        "--no-access-log", action="store_true", help="do not log requests (on stderr by default)"
    )
    # --- fastpath: worker processes and event loop (docs/performance.md) ---
    run.add_argument(
        "--workers",
        metavar="N",
        help="server processes answering on the one port, each using a core "
        "(default 1; FLAGCORE_WORKERS)",
    )
    run.add_argument(
        "--loop",
        metavar="auto|uvloop|asyncio",
        help="event loop: auto uses uvloop when installed (default auto; FLAGCORE_LOOP)",
    )
    # --- observe (issue 18 §2) ---
    run.add_argument(
        "--metrics-port",
        metavar="N",
        help="serve /internal-backstage/prometheus on this port only, not on the main one "
        "(default: on the main port; FLAGCORE_METRICS_PORT; 0 picks a free one)",
    )
    run.add_argument(
        "--log-format",
        metavar="text|json",
        help="log lines as text or one JSON object each (default text; FLAGCORE_LOG_FORMAT)",
    )
    run.add_argument(
        "--log-level",
        metavar="debug|info|warning|error",
        help="least severe level logged; requests are info (default info; FLAGCORE_LOG_LEVEL)",
    )
    copy = commands.add_parser(
        "copy",
        help="copy everything from one database to another (SQLite or PostgreSQL)",
        description="Copy every row (ids and revision kept) from one database to another, in "
        "one transaction on the target; ends by comparing counts and a digest of both sides.",
    )
    copy.add_argument("--from", dest="source", metavar="PATH|URL", required=True)
    copy.add_argument("--to", dest="target", metavar="PATH|URL", required=True)
    copy.add_argument(
        "--force", action="store_true", help="replace everything in a non-empty target"
    )
    explain_command.add_parser(commands)  # flagcore explain (issue 19, branch explain)
    # Moving in from Unleash and out again (branch importer): flagcore import / export.
    from flagcore_http.import_command import add_commands

    add_commands(commands)
    return parser


def _open_for_copy(db: str, *, source: bool) -> Store:
    if not is_postgres(db) and db != ":memory:":
        if len(db) > 4096 or any(ord(c) < 32 for c in db):
            raise StartError("the SQLite path is too long or has control characters")
        if source and not Path(db).is_file():
            raise StartError(f"there is no SQLite database at {db!r} to copy from")
    if is_postgres(db):
        from flagcore_store_postgres import PostgresStore

        return PostgresStore(db, listen=False)
    return open_store(ServerConfig(db=db))


def _progress_bar(table: str, done: int, total: int) -> None:
    width = 30
    filled = width * done // total if total else width
    sys.stderr.write(f"\r[{'#' * filled}{' ' * (width - filled)}] {done}/{total} rows ({table})")
    sys.stderr.flush()


def copy_command(source_db: str, target_db: str, *, force: bool) -> int:
    """``flagcore copy``: everything from one store into another, in one transaction on the
    target, ids and revision kept; ends by comparing counts and a digest of both sides."""
    from flagcore_sql import SqlTransaction
    from flagcore_sql.copying import clear, copy_rows, counts, digest, is_empty

    if source_db == target_db:
        raise StartError("--from and --to name the same database")
    source = _open_for_copy(source_db, source=True)
    try:
        target = _open_for_copy(target_db, source=False)
    except BaseException:
        source.close()
        raise
    progress = _progress_bar if sys.stderr.isatty() else None
    try:
        with source.transaction(write=False) as read, target.transaction() as write:
            if not isinstance(read, SqlTransaction) or not isinstance(write, SqlTransaction):
                raise StartError("copy works between SQLite and PostgreSQL databases")
            if not is_empty(write):
                if not force:
                    raise StartError(
                        f"the target {database_name(target_db)} is not empty; "
                        "use --force to replace everything in it"
                    )
                clear(write)
            copy_rows(read, write, progress)
            if progress is not None:
                sys.stderr.write("\n")
            source_counts, target_counts = counts(read), counts(write)
            source_digest, target_digest = digest(read), digest(write)
            if source_counts != target_counts or source_digest != target_digest:
                raise StartError(
                    "the copy differs from the source (counts or digest); nothing was written"
                )
    finally:
        source.close()
        target.close()
    rows = sum(source_counts.values())
    listed = ", ".join(f"{table} {n}" for table, n in source_counts.items() if n)
    _say(f"copied {rows} rows from {database_name(source_db)} to {database_name(target_db)}")
    _say(f"counts match: {listed or 'no rows'}")
    _say(f"digest matches: sha256 {source_digest}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "explain":  # flagcore explain (issue 19, branch explain)
        return explain_command.run(args)
    # Moving in from Unleash and out again (branch importer).
    if args.command in ("import", "export"):
        from flagcore_http.import_command import run_command

        return run_command(args, os.environ)
    if args.command == "copy":
        try:
            return copy_command(args.source, args.target, force=args.force)
        except (StartError, FlagcoreError) as error:
            _say(f"flagcore: {error}", error=True)
            return 1
    try:
        config = ServerConfig.from_env(
            os.environ,
            host=args.host,
            port=args.port,
            db=args.db,
            auth=args.auth,
            header_timeout=args.header_timeout,
            body_timeout=args.body_timeout,
            max_connections=args.max_connections,
            frontend_origins=args.frontend_origins,
            trust_forwarded_for=args.trust_forwarded_for,
            sdk_fetch_mode=args.sdk_fetch_mode,
            db_pool_size=args.db_pool_size,
            db_pool_timeout=args.db_pool_timeout,
            db_connect_timeout=args.db_connect_timeout,
            db_revision_check_interval=args.db_revision_check_interval,
            access_log=False if args.no_access_log else None,
            # --- fastpath ---
            workers=args.workers,
            event_loop=args.loop,
            trusted_proxies=args.trusted_proxies,  # rate limits
            # --- observe (issue 18 §2) ---
            metrics_port=args.metrics_port,
            log_format=args.log_format,
            log_level=args.log_level,
        )
    except ConfigError as error:
        _say(f"flagcore: {error}", error=True)
        return 2
    configure_logging(log_format=config.log_format, level=config.log_level)
    try:
        # --- fastpath: the event loop, and N worker processes (flagcore_http.workers) ---
        from flagcore_http.workers import choose_event_loop, serve_workers

        choose_event_loop(config.event_loop)
        if config.workers > 1:
            return serve_workers(config)
        asyncio.run(serve(config))
    except (StartError, FlagcoreError, OSError) as error:
        _say(f"flagcore: {error}", error=True)
        return 1
    return 0
