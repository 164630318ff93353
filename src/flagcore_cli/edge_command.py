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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
from aiohttp import web

from flagcore.errors import FlagcoreError
from flagcore_cli.output import say
from flagcore_cli.workers import reuseport_sockets
from flagcore_edge import Edge, EdgeConfig, create_edge_app
from flagcore_http.logs import close_logging, configure_logging

__all__ = ["SETTINGS", "add_parser", "edge_settings", "run"]

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _list(text: str | None) -> tuple[str, ...]:
    return tuple(part.strip() for part in (text or "").split(",") if part.strip())


@attrs.frozen
class _Setting:
    """One setting: its flag(s), its ``FLAGCORE_EDGE_*`` variable, how its text is read,
    its default. A flag wins over the variable, the variable over the default."""

    dest: str
    flags: tuple[str, ...]
    kind: str  # text, int, float, path, list, switch, choice
    default: Any
    help: str
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    flag_value: Any = True  # what a switch flag sets

    @property
    def variable(self) -> str:
        return "FLAGCORE_EDGE_" + self.dest.upper()


_ON = {"1", "true", "yes", "on"}
_OFF = {"0", "false", "no", "off"}
SETTINGS = (
    _Setting(
        "upstream", ("--upstream",), "text", None, "the upstream's API URL, as SDKs get it", "URL"
    ),
    _Setting(
        "upstream_tokens",
        ("--upstream-token",),
        "list",
        (),
        "a client token to follow from the start (repeat, or comma-separate)",
        "TOKEN",
    ),
    _Setting("port", ("--port",), "int", 3063, "0: any free port (printed)", "N"),
    _Setting("host", ("--host",), "text", "127.0.0.1", "the interface to listen on", "HOST"),
    _Setting(
        "data_dir", ("--data-dir",), "path", Path("edge-data"), "where the snapshot lives", "DIR"
    ),
    _Setting("interval", ("--interval",), "float", 10.0, "seconds between polls", "S"),
    _Setting(
        "upstream_streaming",
        ("--no-upstream-streaming",),
        "switch",
        True,
        "poll only (by default the upstream's stream, where offered, triggers a poll)",
        flag_value=False,
    ),
    _Setting(
        "upstream_timeout",
        ("--upstream-timeout",),
        "float",
        10.0,
        "seconds per upstream request",
        "S",
    ),
    _Setting(
        "token_ttl",
        ("--token-ttl",),
        "float",
        3600.0,
        "seconds a frontend token's check holds",
        "S",
    ),
    _Setting(
        "refused_ttl", ("--refused-ttl",), "float", 60.0, "seconds an unknown token is refused", "S"
    ),
    _Setting("max_tokens", ("--max-tokens",), "int", 1000, "client tokens followed", "N"),
    _Setting(
        "metrics_interval",
        ("--metrics-interval",),
        "float",
        60.0,
        "seconds between usage sends",
        "S",
    ),
    _Setting(
        "max_held_usage",
        ("--max-held-usage",),
        "int",
        10_000,
        "usage reports held for the upstream; past it a report gets 503",
        "N",
    ),
    _Setting("offline", ("--offline",), "switch", False, "no upstream: serve --bootstrap"),
    _Setting("bootstrap", ("--bootstrap",), "path", None, "offline: the file to serve", "FILE"),
    _Setting(
        "client_tokens",
        ("--tokens", "--client-tokens"),
        "list",
        (),
        "offline: client tokens, comma-separated",
        "LIST",
    ),
    _Setting(
        "frontend_tokens", ("--frontend-tokens",), "list", (), "offline: frontend tokens", "LIST"
    ),
    _Setting(
        "reload_interval",
        ("--reload-interval",),
        "float",
        0.0,
        "offline: seconds between looks at --bootstrap for a change (0: never)",
        "S",
    ),
    _Setting("log_format", ("--log-format",), "choice", "text", "", choices=("text", "json")),
    _Setting("workers", ("--workers",), "int", 1, "processes on one port (SO_REUSEPORT)", "N"),
)


def add_parser(commands: Any) -> None:
    edge = commands.add_parser(
        "edge",
        help="serve SDKs from an upstream Unleash or flagcore server (Unleash Edge's job)",
        description="Follow an upstream's client API per token and serve SDKs and browsers "
        "from memory and a snapshot file (docs/edge.md). Each flag may be given as the "
        "environment variable its help names instead (the flag wins).",
    )
    for setting in SETTINGS:
        shown = "" if setting.default in (None, ()) else f" (default {setting.default})"
        variable = setting.variable
        if setting.kind == "switch":
            shown, variable = "", f"{variable}=on|off"
        text = f"{setting.help}{shown}; {variable}".lstrip("; ").replace("%", "%%")
        if setting.kind == "switch":
            edge.add_argument(
                *setting.flags,
                dest=setting.dest,
                action="store_const",
                const=setting.flag_value,
                default=None,
                help=text,
            )
        elif setting.kind == "list":
            edge.add_argument(
                *setting.flags,
                dest=setting.dest,
                action="append",
                default=None,
                metavar=setting.metavar,
                help=text,
            )
        else:
            edge.add_argument(
                *setting.flags,
                dest=setting.dest,
                default=None,
                metavar=setting.metavar,
                choices=setting.choices or None,
                help=text,
            )


def _read(setting: _Setting, text: str, where: str) -> Any:
    """``text`` (from the flag or the variable ``where`` names) as the setting's kind."""
    try:
        if setting.kind == "int":
            return int(text)
        if setting.kind == "float":
            return float(text)
    except ValueError:
        kind = "a whole number" if setting.kind == "int" else "a number"
        raise ValueError(f"{where} must be {kind}, not {text[:50]!r}") from None
    if setting.kind == "path":
        return Path(text)
    if setting.kind == "list":
        return _list(text)
    if setting.kind == "switch":
        if text.strip().lower() in _ON:
            return True
        if text.strip().lower() in _OFF:
            return False
        raise ValueError(f"{where} must be on or off (1/0, true/false), not {text[:50]!r}")
    if setting.choices and text not in setting.choices:
        raise ValueError(f"{where} must be one of {', '.join(setting.choices)}, not {text[:50]!r}")
    return text


def _values(args: argparse.Namespace, environ: Mapping[str, str]) -> dict[str, Any]:
    """Each setting from its flag, else its variable, else its default."""
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        given = getattr(args, setting.dest, None)
        flag = setting.flags[0]
        if given is not None and setting.kind == "list":
            values[setting.dest] = tuple(t for text in given for t in _list(text))
        elif given is not None and setting.kind == "switch":
            values[setting.dest] = given
        elif given is not None:
            values[setting.dest] = _read(setting, given, flag)
        elif setting.variable in environ:
            values[setting.dest] = _read(setting, environ[setting.variable], setting.variable)
        else:
            values[setting.dest] = setting.default
    return values


def edge_settings(
    args: argparse.Namespace, environ: Mapping[str, str] = os.environ
) -> tuple[EdgeConfig, int]:
    """The edge's settings and its number of worker processes; `ValueError` naming the
    flag (or variable) of a wrong one."""
    values = _values(args, environ)
    if values["offline"]:
        if values["bootstrap"] is None or not (
            values["client_tokens"] or values["frontend_tokens"]
        ):
            raise ValueError("--offline needs --bootstrap FILE and --tokens (or --frontend-tokens)")
    elif not values["upstream"] or not values["upstream_tokens"]:
        raise ValueError("give --upstream URL and at least one --upstream-token (or --offline)")
    elif values["reload_interval"]:
        raise ValueError("--reload-interval is for --offline (an upstream is followed anyway)")
    if values["workers"] < 1:
        raise ValueError("--workers must be 1 or more")
    if not 0 <= values["port"] <= 65535:
        raise ValueError("--port must be from 0 to 65535")
    if values["max_tokens"] < 1 or values["max_held_usage"] < 1:
        raise ValueError("--max-tokens and --max-held-usage must be 1 or more")
    for name in ("interval", "token_ttl", "refused_ttl", "metrics_interval", "upstream_timeout"):
        if not values[name] > 0 or values[name] == float("inf"):
            raise ValueError(f"--{name.replace('_', '-')} must be a number of seconds over 0")
    if not 0 <= values["reload_interval"] < float("inf"):
        raise ValueError("--reload-interval must be 0 (never) or a number of seconds")
    config = EdgeConfig(
        data_dir=values["data_dir"],
        upstream=values["upstream"],
        upstream_tokens=values["upstream_tokens"],
        host=values["host"],
        port=values["port"],
        interval=values["interval"],
        upstream_streaming=values["upstream_streaming"],
        request_timeout=values["upstream_timeout"],
        token_ttl=values["token_ttl"],
        refused_ttl=values["refused_ttl"],
        max_tokens=values["max_tokens"],
        metrics_interval=values["metrics_interval"],
        metrics_capacity=values["max_held_usage"],
        offline=values["offline"],
        bootstrap=values["bootstrap"],
        offline_tokens=values["client_tokens"],
        offline_frontend_tokens=values["frontend_tokens"],
        reload_interval=values["reload_interval"],
        log_format=values["log_format"],
    )
    return config, values["workers"]


async def _serve(config: EdgeConfig, sock: socket.socket | None = None) -> None:
    """One edge process; ``sock`` is a worker's share of the port (`_serve_workers`)."""
    edge = Edge(config)
    if config.offline:
        edge.load_bootstrap()
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
        config, workers = edge_settings(args)
    except ValueError as error:
        say(f"flagcore edge: {error}", error=True)
        return 2
    if workers > 1:
        try:
            return _serve_workers(config, workers)
        except OSError as error:
            say(f"flagcore edge: {error}", error=True)
            return 1
    configure_logging(log_format=config.log_format)
    try:
        asyncio.run(_serve(config))
    except (OSError, ValueError) as error:
        say(f"flagcore edge: {error}", error=True)
        return 1
    except FlagcoreError as error:  # a bootstrap file the importer refuses
        say(f"flagcore edge: {error.message}", error=True)
        return 1
    finally:
        close_logging()
    return 0
