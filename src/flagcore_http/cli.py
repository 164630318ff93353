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
import difflib
import errno
import importlib.metadata
import os
import re
import shutil
import signal
import socket
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
from aiohttp import web

from flagcore.entities import ApiToken
from flagcore.errors import FlagcoreError, ServiceUnavailable, StorageError
from flagcore.ports import Store
from flagcore.service import Service, TokenSpec
from flagcore_http import explain_command  # flagcore explain (issue 19, branch explain)
from flagcore_http.app import create_app
from flagcore_http.config import (
    SETTINGS,
    AuthMode,
    ConfigError,
    InitToken,
    ServerConfig,
    Setting,
)
from flagcore_http.connections import (
    ConnectionLimit,
    ListeningSite,
    connection_budget,
    listening_socket,
)
from flagcore_http.logs import close_logging, configure_logging
from flagcore_http.metrics import METRICS, metrics_app
from flagcore_http.request_log import RequestLog

__all__ = ["StartupTokens", "main", "prepare_tokens", "serve"]


# How `flagcore_http.calls.actor` names whoever made a change without a token (--auth none).
ANONYMOUS = "anonymous"


class StartError(Exception):
    """The server cannot start; the message is the one line the operator sees, and
    ``exit_code`` the status: 2 for a setting that cannot be used (as `ConfigError`),
    1 for anything else (a taken port, a database that cannot be opened)."""

    def __init__(self, message: str, *, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


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
        raise cannot_listen(config.host, config.port, error, "--port", "FLAGCORE_PORT") from None
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
            raise init_token_failure(error) from None
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
    request_log = RequestLog(config.access_log)
    runner = web.AppRunner(
        app,
        handle_signals=False,
        **request_log.runner_options(),
        # aiohttp's keep-alive timer is its header timeout too (see connections.py).
        keepalive_timeout=config.header_timeout,
        shutdown_timeout=config.shutdown_timeout,
    )
    await runner.setup()
    stack = contextlib.AsyncExitStack()
    request_log.start()
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
        try:
            await runner.cleanup()
        finally:
            request_log.stop()  # the last summary, once in-flight requests are done


# --- observe (issue 18 §2): metrics on their own port ---
def _metrics_socket(config: ServerConfig) -> socket.socket | None:
    if config.metrics_port is None:
        return None
    try:
        return listening_socket(config.host, config.metrics_port)
    except OSError as error:
        port, flag, variable = config.metrics_port, "--metrics-port", "FLAGCORE_METRICS_PORT"
        raise cannot_listen(config.host, port, error, flag, variable) from None


async def _serve_metrics(app: web.Application, sock: socket.socket) -> web.AppRunner:
    """Serve ``/internal-backstage/prometheus`` alone on ``sock``; say where."""
    runner = web.AppRunner(metrics_app(app[METRICS]), handle_signals=False, access_log=None)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    host, port = sock.getsockname()[:2]
    _say(f"metrics on http://{host}:{port}/internal-backstage/prometheus")
    return runner


_FIRST_RUN_HELP = """\
On first start (token authentication, no admin token yet) it makes an admin token and
prints it once. Lost it? Start again with FLAGCORE_INIT_ADMIN_API_TOKENS='*:*.<secret>':
init tokens are added to an existing database too. See docs/http.md.
"""
_HELP_INDENT = 24  # where argparse starts an option's help


def _setting_help(setting: Setting) -> str:
    """What ``--help`` says of a setting: its help, default, and (for a flag) its variable."""
    default = setting.default or "none"
    named = "" if setting.flag is None else f"; {setting.variable}"
    return f"{setting.help} (default {default}{named})"


def _variables_help() -> str:
    """The ``serve --help`` epilog: every setting that has no flag, by section, from
    `flagcore_http.config.SETTINGS` (the flags name their variables in their own help)."""
    width = max(min(shutil.get_terminal_size().columns, 100) - 2, 60)
    indent = " " * _HELP_INDENT
    lines = textwrap.wrap(
        "environment variables: each flag above reads the variable its help names (the flag "
        "wins); these settings have a variable only:",
        width,
    )
    sections: dict[str, list[Setting]] = {}
    for setting in SETTINGS:
        if setting.flag is None:
            sections.setdefault(setting.section, []).append(setting)
    for section, settings in sections.items():
        lines += ["", f"{section}:"]
        for setting in settings:
            lines.append(f"  {setting.variable}")
            help_text = _setting_help(setting)
            lines += textwrap.wrap(
                help_text, width, initial_indent=indent, subsequent_indent=indent
            )
    return "\n".join(lines) + "\n\n" + _FIRST_RUN_HELP


def _add_setting_flags(run: argparse.ArgumentParser) -> None:
    """One flag per setting that has one, grouped by section, from `SETTINGS`."""
    groups: dict[str, Any] = {}
    for setting in SETTINGS:
        if setting.flag is None:
            continue
        group = groups.get(setting.section)
        if group is None:
            group = groups[setting.section] = run.add_argument_group(setting.section)
        group.add_argument(
            setting.flag,
            dest=setting.field,
            metavar=setting.metavar,
            help=_setting_help(setting).replace("%", "%%"),
        )


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
        epilog=_variables_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_setting_flags(run)
    run.add_argument(
        "--no-access-log", action="store_true", help="no request lines: --access-log off"
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
    # Each command's parser, for `_parse` to refuse an unknown option with its usage.
    if isinstance(commands.choices, dict):
        for command in commands.choices.values():
            command.set_defaults(command_parser=command)
    return parser


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The arguments; an unknown one is refused by the usage of the command it was given
    to (``flagcore serve --prot`` shows serve's usage, names ``--prot`` and the option it
    is closest to), not by the top-level usage argparse would print."""
    parser = _parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        command = args.command_parser
        assert isinstance(command, argparse.ArgumentParser)
        known = _OPTION.findall(command.format_usage())
        near = difflib.get_close_matches(unknown[0].partition("=")[0], known, n=1)
        hint = f" (did you mean {near[0]}?)" if unknown[0].startswith("-") and near else ""
        command.error(f"unrecognized arguments: {' '.join(unknown)}{hint}")
    return args


_OPTION = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")


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
    args = _parse(argv)
    if args.command == "explain":  # flagcore explain (issue 19, branch explain)
        return explain_command.run(args)
    # Moving in from Unleash and out again (branch importer).
    if args.command in ("import", "export"):
        from flagcore_http.import_command import run_command

        return run_command(args, os.environ)
    if args.command == "copy":
        try:
            return copy_command(args.source, args.target, force=args.force)
        except StartError as error:
            _say(f"flagcore: {error}", error=True)
            return error.exit_code
        except FlagcoreError as error:
            _say(f"flagcore: {error}", error=True)
            return 1
    try:
        flags = {s.field: getattr(args, s.field) for s in SETTINGS if s.flag is not None}
        if args.no_access_log:
            flags["access_log"] = _no_access_log(flags["access_log"])
        config = ServerConfig.from_env(os.environ, **flags)
    except ConfigError as error:
        _say(f"flagcore: {error}", error=True)
        return 2
    configure_logging(log_format=config.log_format, level=config.log_level)
    try:
        return _serve_command(config)
    finally:
        close_logging()  # every queued line written before the process ends


def _no_access_log(level: str | None) -> str:
    """``--no-access-log`` is ``--access-log off``; with another level it is a contradiction."""
    if level is not None and level.strip().lower() != "off":
        raise ConfigError(
            f"--access-log={level.strip()!r} and --no-access-log contradict each other; "
            "give one of them"
        )
    return "off"


def _serve_command(config: ServerConfig) -> int:
    try:
        # --- fastpath: the event loop, and N worker processes (flagcore_http.workers) ---
        from flagcore_http.workers import choose_event_loop, serve_workers

        choose_event_loop(config.event_loop)
        if config.workers > 1:
            return serve_workers(config)
        asyncio.run(serve(config))
    except StartError as error:
        _say(f"flagcore: {error}", error=True)
        return error.exit_code
    except (FlagcoreError, OSError) as error:
        _say(f"flagcore: {error}", error=True)
        return 1
    return 0
