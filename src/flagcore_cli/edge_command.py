"""``flagcore edge``: serve SDKs from an upstream Unleash or flagcore server (or, offline,
from a file), as Unleash Edge does (`flagcore_edge`, docs/edge.md)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from aiohttp import web

from flagcore import MemoryStore
from flagcore.model import ClientFeatures
from flagcore.service import Service
from flagcore.wire import read_client_features, read_export
from flagcore_cli.output import say
from flagcore_cli.workers import reuseport_sockets
from flagcore_edge import Edge, EdgeConfig, create_edge_app
from flagcore_http.bodies import parse_json
from flagcore_http.logs import close_logging, configure_logging

__all__ = ["add_parser", "run"]

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _list(text: str | None) -> tuple[str, ...]:
    return tuple(part.strip() for part in (text or "").split(",") if part.strip())


def add_parser(commands: Any) -> None:
    edge = commands.add_parser(
        "edge",
        help="serve SDKs from an upstream Unleash or flagcore server (Unleash Edge's job)",
        description="Follow an upstream's client API per token and serve SDKs and browsers "
        "from memory and a snapshot file (docs/edge.md).",
    )
    edge.add_argument("--upstream", metavar="URL", help="the upstream's API URL, as SDKs get it")
    edge.add_argument(
        "--upstream-token",
        action="append",
        default=[],
        metavar="TOKEN",
        help="a client token to follow from the start (repeat, or comma-separate)",
    )
    edge.add_argument("--port", type=int, default=3063, help="default 3063, 0: any free port")
    edge.add_argument("--host", default="127.0.0.1")
    edge.add_argument("--data-dir", type=Path, default=Path("edge-data"), metavar="DIR")
    edge.add_argument("--interval", type=float, default=10.0, help="seconds between polls")
    edge.add_argument(
        "--no-upstream-streaming",
        action="store_true",
        help="poll only (by default the upstream's stream, where offered, triggers a poll)",
    )
    edge.add_argument(
        "--token-ttl", type=float, default=3600.0, help="seconds a frontend token's check holds"
    )
    edge.add_argument(
        "--refused-ttl", type=float, default=60.0, help="seconds an unknown token is refused"
    )
    edge.add_argument("--max-tokens", type=int, default=1000, help="client tokens followed")
    edge.add_argument(
        "--metrics-interval", type=float, default=60.0, help="seconds between usage sends"
    )
    edge.add_argument("--offline", action="store_true", help="no upstream: serve --bootstrap")
    edge.add_argument("--bootstrap", type=Path, metavar="FILE")
    edge.add_argument(
        "--tokens",
        "--client-tokens",
        dest="tokens",
        metavar="LIST",
        help="offline: client tokens, comma-separated",
    )
    edge.add_argument(
        "--frontend-tokens", metavar="LIST", help="offline: frontend tokens, comma-separated"
    )
    edge.add_argument("--log-format", choices=("text", "json"), default="text")
    edge.add_argument(
        "--workers", type=int, default=1, help="processes on one port (SO_REUSEPORT), default 1"
    )


def _config(args: argparse.Namespace) -> EdgeConfig:
    tokens = tuple(t for given in args.upstream_token for t in _list(given))
    if args.offline:
        if args.bootstrap is None or not (args.tokens or args.frontend_tokens):
            raise ValueError("--offline needs --bootstrap FILE and --tokens (or --frontend-tokens)")
    elif not args.upstream or not tokens:
        raise ValueError("give --upstream URL and at least one --upstream-token (or --offline)")
    if args.workers < 1:
        raise ValueError("--workers must be 1 or more")
    for name in ("interval", "token_ttl", "refused_ttl", "metrics_interval"):
        if getattr(args, name) <= 0:
            raise ValueError(f"--{name.replace('_', '-')} must be more than 0")
    return EdgeConfig(
        data_dir=args.data_dir,
        upstream=args.upstream,
        upstream_tokens=tokens,
        host=args.host,
        port=args.port,
        interval=args.interval,
        upstream_streaming=not args.no_upstream_streaming,
        token_ttl=args.token_ttl,
        refused_ttl=args.refused_ttl,
        max_tokens=args.max_tokens,
        metrics_interval=args.metrics_interval,
        offline=args.offline,
        bootstrap=args.bootstrap,
        offline_tokens=_list(args.tokens),
        offline_frontend_tokens=_list(args.frontend_tokens),
        log_format=args.log_format,
    )


def read_bootstrap(path: Path) -> ClientFeatures:
    """A client-features payload, or an Unleash feature export (imported into project
    ``default`` of its environment through the service, then read as SDKs see it)."""
    data = parse_json(path.read_bytes(), what="the bootstrap file")
    if isinstance(data, dict) and "featureStrategies" in data:
        export = read_export(data, "the bootstrap file")
        named = [e.environment for e in export.feature_environments if e.environment]
        environment = named[0] if named else "development"
        service = Service(MemoryStore())
        service.importing.import_export("default", environment, export)
        return service.client.client_features(environment)
    if not isinstance(data, dict) or not isinstance(data.get("features"), list):
        raise ValueError("the bootstrap file is neither client features nor an Unleash export")
    return read_client_features(data).snapshot


async def _serve(config: EdgeConfig, sock: socket.socket | None = None) -> None:
    """One edge process; ``sock`` is a worker's share of the port (`_serve_workers`)."""
    edge = Edge(config)
    if config.offline:
        assert config.bootstrap is not None
        edge.load_offline(
            read_bootstrap(config.bootstrap),
            config.offline_tokens,
            config.offline_frontend_tokens,
        )
    else:
        edge.load_kept()
    runner = web.AppRunner(create_edge_app(edge), access_log=None)
    await runner.setup()
    announce = sock is None
    if sock is None:
        sock = socket.create_server((config.host, config.port))
    await web.SockSite(runner, sock).start()
    port = sock.getsockname()[1]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in _STOP_SIGNALS:
        loop.add_signal_handler(sig, stop.set)
    # The kept snapshot is served from the first request; the upstream is asked next.
    if announce:
        say(f"flagcore edge listening on http://{config.host}:{port}")
    try:
        await edge.start()
        await stop.wait()
    finally:
        with contextlib.suppress(Exception):
            await edge.stop()  # usage held is sent before the process ends
        await runner.cleanup()
    if announce:
        say("flagcore edge stopped")


def _serve_workers(config: EdgeConfig, count: int) -> int:
    """``--workers N``: the server's worker model (`flagcore_cli.workers.reuseport_sockets`:
    N sockets on one port, the kernel spreading connections), one forked edge per socket.
    Each worker follows its tokens and holds its usage itself; they share the snapshot
    file (each write is a whole file, renamed into place)."""
    sockets = reuseport_sockets(config.host, config.port, count)
    children: list[int] = []
    for sock in sockets:
        sys.stdout.flush()
        sys.stderr.flush()
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        pid = os.fork()
        if pid == 0:  # the worker; it never returns
            code = 1
            try:
                for other in sockets:
                    if other is not sock:
                        other.close()
                signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
                configure_logging(log_format=config.log_format)
                asyncio.run(_serve(config, sock))
                code = 0
            finally:
                close_logging()
                os._exit(code)
        children.append(pid)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    host, port = sockets[0].getsockname()[:2]
    for sock in sockets:  # the workers hold them now
        sock.close()

    def stop(_signum: int, _frame: object) -> None:
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGTERM)

    for sig in _STOP_SIGNALS:
        signal.signal(sig, stop)
    say(f"flagcore edge listening on http://{host}:{port} ({count} workers)")
    failed = False
    for child in children:
        _pid, status = os.waitpid(child, 0)
        failed = failed or os.waitstatus_to_exitcode(status) != 0
    say("flagcore edge stopped")
    return 1 if failed else 0


def run(args: argparse.Namespace) -> int:
    try:
        config = _config(args)
    except ValueError as error:
        say(f"flagcore edge: {error}", error=True)
        return 2
    if args.workers > 1:
        try:
            return _serve_workers(config, args.workers)
        except OSError as error:
            say(f"flagcore edge: {error}", error=True)
            return 1
    configure_logging(log_format=config.log_format)
    try:
        asyncio.run(_serve(config))
    except (OSError, ValueError) as error:
        say(f"flagcore edge: {error}", error=True)
        return 1
    finally:
        close_logging()
    return 0
