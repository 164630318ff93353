"""``flagcore serve --workers N``: N server processes answering on one port.

One Python process answers on one core; past that, more processes. How it runs:

1. The parent checks the port and binds N listening sockets to it with ``SO_REUSEPORT``
   (the first picks the port when it is 0), so the kernel spreads new connections over
   the workers and a taken port stops the start before anything else happens.
2. The parent opens the database once: migrations run and first-run tokens are made there,
   never in N processes at once; then it closes it again (no connection crosses a fork).
3. It forks N workers. Each opens the database itself, keeps its own caches, and answers on
   its own socket. A worker tells the parent it listens through a pipe; once every worker
   does, the parent prints the start lines (where it listens, a new admin token), once.
4. SIGINT or SIGTERM to the parent is passed to every worker; each finishes its in-flight
   requests and exits, then the parent. A worker that exits on its own (a crash) stops the
   others and the parent exits 1, for the service manager to restart the whole server.

Every worker sees every write at once: the store's ``revision()`` is asked on each SDK
request and is fresh across processes (SQLite compares its WAL-index header, PostgreSQL
follows LISTEN/NOTIFY). Streams follow the same revision from each worker's hub (at most
its check interval, 100 ms, behind). Work that must run once is kept to one worker:
retention pruning runs in worker 0 only; instance writes are per-worker batches of
idempotent upserts. See docs/performance.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import select
import signal
import socket
import sys
import time
from pathlib import Path

import attrs
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
from flagcore_http.connections import ConnectionLimit, ListeningSite, connection_budget
from flagcore_http.logs import close_logging
from flagcore_http.request_log import REQUEST_LOG

__all__ = ["choose_event_loop", "reuseport_sockets", "serve_workers"]

_log = logging.getLogger("flagcore_http")

# How long the parent waits for every worker to listen (opening a large database included).
_START_TIMEOUT_S = 60.0
_READY = b"r"
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def choose_event_loop(choice: str) -> str:
    """Install the event loop ``choice`` names (``auto``: uvloop when installed); its name.

    ``flagcore[server]`` installs uvloop where it has wheels (CPython outside Windows), so
    the server a user starts is the one measured; see docs/performance.md for what it
    changes. ``uvloop`` when it is not installed is a start error, not a silent fallback.
    """
    if choice == "asyncio":
        return "asyncio"
    try:
        import uvloop
    except ImportError:
        if choice == "uvloop":
            raise OSError(
                "--loop uvloop: uvloop is not installed; install flagcore[uvloop] "
                "or use --loop asyncio"
            ) from None
        return "asyncio"
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return "uvloop"


def reuseport_sockets(host: str, port: int, count: int) -> list[socket.socket]:
    """``count`` sockets listening on ``host:port`` with ``SO_REUSEPORT`` (port 0: one picked).

    A plain bind is tried first when a port is named: sockets with ``SO_REUSEPORT`` may
    share a port with another server's that set it too, and joining someone else's server
    must fail like any taken port.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    if port != 0:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((host, port))
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.create_server((host, port), family=family, backlog=128, reuse_port=True)
            sockets.append(sock)
            port = sock.getsockname()[1]
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def serve_workers(config: ServerConfig) -> int:
    """Run ``config.workers`` worker processes until SIGINT or SIGTERM; the exit code.

    Raises `flagcore_cli.stores.StartError` when the server cannot start.
    """
    if config.db == ":memory:":
        raise StartError(
            "--workers needs a database file or PostgreSQL: each worker's :memory: database "
            "would be its own, and a write through one worker would never reach the others"
        )
    try:
        sockets = reuseport_sockets(config.host, config.port, config.workers)
    except OSError as error:
        raise cannot_listen(config.host, config.port, error, "--port", "FLAGCORE_PORT") from None
    try:
        tokens = _prepare_database(config)
        if config.ui_secret is None:
            # One signing secret for all workers: a session made by one is valid on all.
            config = attrs.evolve(config, ui_secret=secrets.token_hex(32))
        maximum, note = connection_budget(config.max_connections)  # raised once, inherited
        config = attrs.evolve(config, max_connections=maximum)
        return _supervise(config, sockets, tokens, note)
    finally:
        for sock in sockets:
            sock.close()


def _prepare_database(config: ServerConfig) -> StartupTokens:
    """Migrations and first-run tokens, once, in the parent (as `serve` does)."""
    new_database = (
        config.db != ":memory:" and not is_postgres(config.db) and not Path(config.db).exists()
    )
    try:
        store = open_store(config)
    except FlagcoreError as error:
        raise StartError(f"{error.message}; choose another with --db or FLAGCORE_DB") from None
    try:
        tokens = prepare_tokens(Service(store, pause_gc=config.gc_pause), config)
    except FlagcoreError as error:
        store.close()
        if new_database:  # a failed first start leaves nothing behind
            for path in database_files(config.db):
                path.unlink(missing_ok=True)
        raise init_token_failure(error) from None
    store.close()  # no connection may cross the fork
    return tokens


def _supervise(
    config: ServerConfig,
    sockets: list[socket.socket],
    tokens: StartupTokens,
    note: str | None,
) -> int:
    read_end, write_end = os.pipe()
    children: dict[int, int] = {}  # pid -> worker index
    stopping: list[bool] = []

    def stop(_signum: int, _frame: object) -> None:
        if not stopping:
            stopping.append(True)
            say("flagcore stopping: finishing in-flight requests")
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    previous = {s: signal.signal(s, stop) for s in _STOP_SIGNALS}
    try:
        for index, sock in enumerate(sockets):
            sys.stdout.flush()
            sys.stderr.flush()
            # Signals wait while forking: a worker must not run the parent's handler (which
            # would signal its siblings) before it has set its own.
            signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
            pid = os.fork()
            if pid == 0:  # the worker; it never returns
                os.close(read_end)
                for other in sockets:
                    if other is not sock:
                        other.close()
                _worker_process(config, sock, index, write_end)
            children[pid] = index
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
        os.close(write_end)
        if not _all_ready(read_end, len(children)):
            asked_to_stop = bool(stopping)
            stop(signal.SIGTERM, None)
            _reap(children)
            if asked_to_stop:  # SIGINT or SIGTERM during the start: a clean stop
                say("flagcore stopped")
                return 0
            say("flagcore: a worker could not start (see above)", error=True)
            return 1
        host, port = sockets[0].getsockname()[:2]
        for sock in sockets:  # the workers hold them now
            sock.close()
        say(
            f"flagcore listening on http://{host}:{port} "
            f"(database {database_name(config.db)}, {len(children)} workers)"
        )
        tell_about(tokens, host, port, config.public_url)
        if config.auth is AuthMode.NONE:
            say("authentication is off (--auth none): anyone who can connect is admin")
        if note is not None:
            say(f"warning: {note}", error=True)
        warn_about(config, tokens)
        failed = _reap(children, stopping)
    finally:
        os.close(read_end)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    say("flagcore stopped")
    return 1 if failed else 0


def _all_ready(read_end: int, count: int) -> bool:
    """Whether ``count`` workers said they listen before the pipe closed or time ran out."""
    got = 0
    deadline = time.monotonic() + _START_TIMEOUT_S
    while got < count:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        readable, _, _ = select.select([read_end], [], [], remaining)
        if not readable:
            return False
        chunk = os.read(read_end, count)
        if not chunk:  # every worker exited or signalled; some exited first
            return False
        got += chunk.count(_READY)
    return True


def _reap(children: dict[int, int], stopping: list[bool] | None = None) -> bool:
    """Wait for every worker; the first that exits unasked stops the rest. Whether any
    worker failed (exited unasked, or not with 0)."""
    failed = False
    while children:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        index = children.pop(pid, None)
        if index is None:
            continue
        code = os.waitstatus_to_exitcode(status)
        if stopping is not None and not stopping:
            _log.error(
                "worker %d (pid %d) exited unasked (%d): stopping the server", index, pid, code
            )
            failed = True
            stopping.append(True)
            for other in children:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(other, signal.SIGTERM)
        elif code != 0:
            failed = True
    return failed


def _stop_with_parent(parent: int) -> None:
    """Have the kernel send this worker SIGTERM when the parent dies (Linux's
    ``PR_SET_PDEATHSIG``), so a parent killed with SIGKILL leaves no worker serving on."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: a supervisor must stop the workers
        return
    if os.getppid() != parent:  # the parent died before the request was made
        os.kill(os.getpid(), signal.SIGTERM)


def _worker_process(config: ServerConfig, sock: socket.socket, index: int, ready: int) -> None:
    """The body of worker ``index``: serve on ``sock`` until SIGTERM, then exit."""
    parent = os.getppid()
    code = 1
    try:
        for signum in _STOP_SIGNALS:
            signal.signal(signum, signal.SIG_DFL)  # until the loop's own handlers are set
        _stop_with_parent(parent)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
        if index != 0:
            # Retention runs in one worker: N workers pruning the same rows only compete.
            config = attrs.evolve(config, retention_interval=0.0)
        asyncio.run(_serve_worker(config, sock, ready))
        code = 0
    except BaseException as error:  # a worker reports and exits, always
        print(f"flagcore: worker {index}: {error}", file=sys.stderr, flush=True)
    finally:
        close_logging()  # os._exit runs no exit handlers: the queued lines are written now
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


async def _serve_worker(config: ServerConfig, sock: socket.socket, ready: int) -> None:
    store = await asyncio.to_thread(open_store, config)
    try:
        service = Service(store, pause_gc=config.gc_pause)
        app = create_app(service, config)
        request_log = app[REQUEST_LOG]  # each worker counts its own summary
        runner = web.AppRunner(
            app,
            handle_signals=False,
            **request_log.runner_options(),
            keepalive_timeout=config.header_timeout,
            shutdown_timeout=config.shutdown_timeout,
        )
        await runner.setup()
        request_log.start()
        try:
            await ListeningSite(runner, sock, ConnectionLimit(config.max_connections)).start()
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, stop.set)
            os.write(ready, _READY)
            os.close(ready)
            await stop.wait()
        finally:
            try:
                await runner.cleanup()
            finally:
                request_log.stop()
    finally:
        store.close()
