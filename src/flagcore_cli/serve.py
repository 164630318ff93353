"""``flagcore serve`` in one process: the HTTP server on a SQLite file or a PostgreSQL
database (``--workers`` above 1 runs `flagcore_cli.workers` instead).

The port is bound before the database is opened, and tokens are made only once the socket
listens, so a failed start neither leaves a new database file behind nor makes a token
nobody saw. SIGINT and SIGTERM stop it gracefully: no new connections, in-flight requests
finish, the database closes cleanly.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from pathlib import Path

from aiohttp import web

from flagcore.errors import FlagcoreError
from flagcore.service import Service
from flagcore_cli.output import say
from flagcore_cli.startup import (
    StartupTokens,
    cannot_listen,
    init_token_failure,
    prepare_tokens,
    tell_about,
    warn_about,
)
from flagcore_cli.stores import (
    StartError,
    database_files,
    database_name,
    is_postgres,
    open_store,
)
from flagcore_http.app import create_app
from flagcore_http.config import AuthMode, ServerConfig
from flagcore_http.connections import (
    ConnectionLimit,
    ListeningSite,
    connection_budget,
    listening_socket,
)
from flagcore_http.metrics import METRICS, metrics_app
from flagcore_http.request_log import REQUEST_LOG

__all__ = ["serve"]


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
                for path in database_files(config.db):
                    path.unlink(missing_ok=True)
            raise init_token_failure(error) from None
        await _run(service, config, sock, tokens, ready, metrics_sock)
    say("flagcore stopped")


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
    request_log = app[REQUEST_LOG]
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
        say(f"flagcore listening on http://{host}:{port} (database {database_name(config.db)})")
        if metrics_sock is not None:  # observe (issue 18 §2)
            metrics_runner = await _serve_metrics(app, metrics_sock)
            stack.push_async_callback(metrics_runner.cleanup)
        tell_about(tokens, host, port, config.public_url)
        if config.auth is AuthMode.NONE:
            say("authentication is off (--auth none): anyone who can connect is admin")
        if note is not None:
            say(f"warning: {note}", error=True)
        warn_about(config, tokens)
        if ready is not None:
            ready.set()
        await stop.wait()
        say("flagcore stopping: finishing in-flight requests")
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
    say(f"metrics on http://{host}:{port}/internal-backstage/prometheus")
    return runner
