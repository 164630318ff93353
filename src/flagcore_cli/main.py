"""``flagcore``: the command line (serve, copy, import, export, explain, scan).

Settings come from flags, then ``FLAGCORE_*`` environment variables, then defaults, and
are all checked before anything is opened: a wrong one stops the start with one line on
stderr that names it (`flagcore_cli.serve` for what a start does).
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import importlib.metadata
import os
import re
import shutil
import textwrap
from collections.abc import Sequence
from typing import Any

from flagcore.errors import FlagcoreError
from flagcore_cli import edge_command, explain_command, import_command, scan_command
from flagcore_cli.copy_command import copy_command
from flagcore_cli.output import say
from flagcore_cli.serve import serve
from flagcore_cli.stores import StartError
from flagcore_cli.workers import choose_event_loop, serve_workers
from flagcore_http.config import SETTINGS, ConfigError, ServerConfig, Setting
from flagcore_http.logs import close_logging, configure_logging

__all__ = ["build_parser", "main"]


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


def build_parser() -> argparse.ArgumentParser:
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
    explain_command.add_parser(commands)
    import_command.add_commands(commands)  # flagcore import / export
    edge_command.add_parser(commands)
    scan_command.add_parser(commands)
    # Each command's parser, for `_parse` to refuse an unknown option with its usage.
    if isinstance(commands.choices, dict):
        for command in commands.choices.values():
            command.set_defaults(command_parser=command)
    return parser


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The arguments; an unknown one is refused by the usage of the command it was given
    to (``flagcore serve --prot`` shows serve's usage, names ``--prot`` and the option it
    is closest to), not by the top-level usage argparse would print."""
    parser = build_parser()
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


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    if args.command == "explain":
        return explain_command.run(args)
    if args.command == "edge":
        return edge_command.run(args)
    if args.command == "scan":
        return scan_command.run(args)
    if args.command in ("import", "export"):
        return import_command.run_command(args, os.environ)
    if args.command == "copy":
        try:
            return copy_command(args.source, args.target, force=args.force)
        except StartError as error:
            say(f"flagcore: {error}", error=True)
            return error.exit_code
        except FlagcoreError as error:
            say(f"flagcore: {error}", error=True)
            return 1
    try:
        flags = {s.field: getattr(args, s.field) for s in SETTINGS if s.flag is not None}
        if args.no_access_log:
            flags["access_log"] = _no_access_log(flags["access_log"])
        config = ServerConfig.from_env(os.environ, **flags)
    except ConfigError as error:
        say(f"flagcore: {error}", error=True)
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
        # The event loop, and N worker processes (flagcore_cli.workers).
        choose_event_loop(config.event_loop)
        if config.workers > 1:
            return serve_workers(config)
        asyncio.run(serve(config))
    except StartError as error:
        say(f"flagcore: {error}", error=True)
        return error.exit_code
    except (FlagcoreError, OSError) as error:
        say(f"flagcore: {error}", error=True)
        return 1
    return 0
