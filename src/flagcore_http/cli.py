"""``flagcore serve``: the HTTP server on the embedded SQLite store.

Settings come from flags, then ``FLAGCORE_*`` environment variables, then defaults. On
first start without tokens it creates an admin token and prints it once. SIGINT and
SIGTERM stop it gracefully: no new connections, in-flight requests finish, the database
closes cleanly.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence

from aiohttp import web

from flagcore.entities import TokenType
from flagcore.errors import FlagcoreError
from flagcore.service import Service
from flagcore_http.app import create_app
from flagcore_http.config import AuthMode, ServerConfig

__all__ = ["main", "prepare_tokens", "serve"]


def prepare_tokens(service: Service, config: ServerConfig) -> str | None:
    """Create the configured initial tokens; make an admin token if there is none.

    Returns the secret of a token made here, to be shown once.
    """
    for index, secret in enumerate(config.init_admin_tokens):
        if service.authenticate(secret) is None:
            service.create_token(f"init-admin-{index + 1}", TokenType.ADMIN, secret=secret)
    for index, secret in enumerate(config.init_client_tokens):
        if service.authenticate(secret) is None:
            scope, _, _ = secret.partition(".")
            project, _, environment = scope.partition(":")
            service.create_token(
                f"init-client-{index + 1}",
                TokenType.CLIENT,
                projects=("*",) if project in ("*", "[]") else (project,),
                environment=environment,
                secret=secret,
            )
    if config.auth is AuthMode.NONE:
        return None
    if any(token.type is TokenType.ADMIN for token in service.list_tokens()):
        return None
    return service.create_token("admin", TokenType.ADMIN).secret


async def serve(config: ServerConfig, *, ready: asyncio.Event | None = None) -> None:
    from flagcore_store_sqlite import SqliteStore

    store = SqliteStore(config.db)
    try:
        service = Service(store)
        new_secret = prepare_tokens(service, config)
        runner = web.AppRunner(
            create_app(service, config),
            handle_signals=False,
            access_log=logging.getLogger("flagcore_http.access") if config.access_log else None,
            access_log_format='%a "%r" %s %b %Tfs',
        )
        await runner.setup()
        site = web.TCPSite(
            runner, config.host, config.port, shutdown_timeout=config.shutdown_timeout
        )
        await site.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        port = runner.addresses[0][1] if runner.addresses else config.port
        print(
            f"flagcore listening on http://{config.host}:{port} (database {config.db})", flush=True
        )
        if new_secret is not None:
            print(f"admin API token, shown once: {new_secret}", flush=True)
        if config.auth is AuthMode.NONE:
            print(
                "authentication is off (--auth none): anyone who can connect is admin", flush=True
            )
        if ready is not None:
            ready.set()
        await stop.wait()
        print("flagcore stopping: finishing in-flight requests", flush=True)
        await runner.cleanup()
    finally:
        store.close()
    print("flagcore stopped", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="flagcore", description="Unleash-compatible feature flags"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("serve", help="run the HTTP server on a SQLite database")
    run.add_argument("--host", help="address to listen on (default 127.0.0.1; FLAGCORE_HOST)")
    run.add_argument(
        "--port", type=int, help="port (default 4242; FLAGCORE_PORT; 0 picks a free one)"
    )
    run.add_argument("--db", help="SQLite file (default ./flagcore.db; FLAGCORE_DB)")
    run.add_argument("--auth", choices=[m.value for m in AuthMode], help="token (default) or none")
    run.add_argument(
        "--no-access-log", action="store_true", help="do not log requests (on stderr by default)"
    )
    run.add_argument(
        "--frontend-origins",
        help="browser origins allowed on the Frontend API and OFREP, comma-separated "
        "(default *; FLAGCORE_FRONTEND_ORIGINS)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        config = ServerConfig.from_env(
            host=args.host,
            port=args.port,
            db=args.db,
            auth=args.auth,
            access_log=False if args.no_access_log else None,
            frontend_origins=args.frontend_origins,
        )
        asyncio.run(serve(config))
    except (FlagcoreError, ValueError, OSError) as error:
        print(f"flagcore: {error}", file=sys.stderr)
        return 1
    return 0
