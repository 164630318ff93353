"""``flagcore import`` and ``flagcore export``: moving in from Unleash, and out again.

- ``flagcore import FILE``: an Unleash feature export into one project and environment.
- ``flagcore import --from-unleash URL --token TOKEN``: a running Unleash (or flagcore)
  read through its admin API (projects, environments, strategy definitions, tag types,
  segments, every project's flags with every environment's rules, tags) and copied in
  one transaction.
- ``flagcore export``: the same format, for Unleash's import.

Both imports are all or nothing and idempotent (`flagcore.service.importing`). Exit codes:
0 done, 1 could not run (database, network), 2 refused input (one line per problem, with
its JSON path), 3 refused because existing flags or segments differ (``--overwrite``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from flagcore.entities import (
    Tag,
)
from flagcore.errors import Conflict, ErrorDetail, FlagcoreError, InvalidInput
from flagcore.service import CopyReport, ImportReport, Service
from flagcore.wire import FeatureExport, read_export, write_export
from flagcore_cli.output import progress_bar, say
from flagcore_cli.stores import StartError, is_postgres, open_store
from flagcore_client.unleash_admin import UnleashUnreadable, read_unleash
from flagcore_http.bodies import parse_json
from flagcore_http.config import ServerConfig

__all__ = ["add_commands", "run_command"]

# An export of 10,000 flags is ~15 MB; a file or an answer larger than this is refused
# before it is parsed.
MAX_FILE_BYTES = 100_000_000
_DEFAULT_DB = "flagcore.db"


class CommandError(Exception):
    """The command cannot run; the message is the one line the operator sees."""


def add_commands(commands: Any) -> None:
    """Add ``import`` and ``export`` to the CLI's subcommands."""
    run = commands.add_parser(
        "import",
        help="import an Unleash export file, or copy a running Unleash",
        description="Import Unleash's feature export (FILE) into a project and environment, "
        "or copy a running Unleash through its admin API (--from-unleash). All or nothing; "
        "running it again changes nothing. Exit 2: refused input; 3: flags or segments "
        "exist with another definition (see --overwrite).",
    )
    run.add_argument("file", nargs="?", metavar="FILE", help="the export file (JSON)")
    run.add_argument("--from-unleash", metavar="URL", help="copy the Unleash at URL instead")
    run.add_argument(
        "--token", metavar="TOKEN", help="an admin API token of that Unleash (UNLEASH_API_TOKEN)"
    )
    run.add_argument("--project", default="default", help="target project (default default)")
    run.add_argument(
        "--environment", default="development", help="target environment (default development)"
    )
    run.add_argument(
        "--overwrite",
        action="store_true",
        help="replace flags (and segments) that exist here with another definition",
    )
    run.add_argument("--dry-run", action="store_true", help="show what would change; keep nothing")
    _db_argument(run)
    out = commands.add_parser(
        "export",
        help="write flags in Unleash's export format",
        description="Write the flags of one environment in Unleash's feature export format.",
    )
    out.add_argument("--environment", default="development")
    out.add_argument("--project", help="only this project's flags")
    out.add_argument("--feature", action="append", metavar="NAME", help="only these flags")
    out.add_argument("--tag", metavar="TYPE:VALUE", help="only flags with this tag")
    out.add_argument("--output", "-o", metavar="FILE", help="write here (default stdout)")
    _db_argument(out)


def _db_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        metavar="PATH|URL",
        help="SQLite file or postgresql:// URL (default ./flagcore.db; FLAGCORE_DB)",
    )


def run_command(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """Run ``import`` or ``export``; the exit code."""
    db = args.db or environ.get("FLAGCORE_DB") or _DEFAULT_DB
    try:
        if args.command == "export":
            return _export(args, db)
        return _import(args, db, environ)
    except CommandError as error:
        say(f"flagcore: {error}", error=True)
        return 1
    except InvalidInput as error:
        say(f"flagcore: refused, nothing was written ({_problems(error)}):", error=True)
        _say_details(error)
        return 2
    except Conflict as error:
        say(f"flagcore: refused: {error.message}", error=True)
        _say_details(error)
        return 3
    except FlagcoreError as error:
        say(f"flagcore: {error.message}", error=True)
        return 1


def _problems(error: FlagcoreError) -> str:
    count = len(error.details) or 1
    return "1 problem" if count == 1 else f"{count} problems"


def _say_details(error: FlagcoreError) -> None:
    """One line per problem: its JSON path, then what is wrong."""
    for detail in error.details or (ErrorDetail(error.message),):
        say(f"  {detail.path or '-'}: {detail.message}", error=True)


@contextmanager
def _service(db: str, *, must_exist: bool, keep_new: bool = True) -> Iterator[Service]:
    if not is_postgres(db) and db != ":memory:":
        if len(db) > 4096 or any(ord(c) < 32 for c in db):
            raise CommandError("the SQLite path is too long or has control characters")
        if must_exist and not Path(db).is_file():
            raise CommandError(f"there is no database at {db!r}; choose one with --db")
    new_file = not is_postgres(db) and db != ":memory:" and not Path(db).exists()
    try:
        store = open_store(ServerConfig(db=db))
    except StartError as error:
        raise CommandError(str(error)) from None
    # A refused import (or a dry run) into a new database leaves no file behind.
    try:
        yield Service(store)
    except BaseException:
        store.close()
        if new_file:
            _remove(db)
        raise
    store.close()
    if new_file and not keep_new:
        _remove(db)


def _remove(db: str) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(db + suffix).unlink(missing_ok=True)


def _import(args: argparse.Namespace, db: str, environ: Mapping[str, str]) -> int:
    if args.from_unleash:
        if args.file:
            raise CommandError("give either FILE or --from-unleash, not both")
        # The environment keeps the token out of the process list and shell history.
        token = args.token or environ.get("UNLEASH_API_TOKEN")
        if not token:
            raise CommandError(
                "--from-unleash needs an admin API token: --token or UNLEASH_API_TOKEN"
            )
        progress = progress_bar if sys.stderr.isatty() else None
        try:
            source = read_unleash(args.from_unleash, token, progress, parse=_parse_answer)
        except UnleashUnreadable as error:
            raise CommandError(str(error)) from None
        with _service(db, must_exist=False, keep_new=not args.dry_run) as service:
            copied = service.importing.copy_instance(
                source, overwrite=args.overwrite, dry_run=args.dry_run, actor="flagcore-import"
            )
        _print_copy(copied, sys.stdout)
        return 0
    if not args.file:
        raise CommandError("give an export FILE, or --from-unleash URL --token TOKEN")
    export = _read_file(Path(args.file))
    with _service(db, must_exist=False, keep_new=not args.dry_run) as service:
        report = service.importing.import_export(
            args.project,
            args.environment,
            export,
            overwrite=args.overwrite,
            dry_run=args.dry_run,
            actor="flagcore-import",
        )
    _print_import(report, sys.stdout)
    return 0


def _read_file(path: Path) -> FeatureExport:
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise CommandError(f"cannot read {str(path)[:200]!r}: {error.strerror}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise CommandError(f"{str(path)[:200]!r} is over {MAX_FILE_BYTES:,} bytes")
    return read_export(parse_json(raw, what="the file"), "the file")


def _print_import(report: ImportReport, out: TextIO) -> None:
    verb = "would import" if report.dry_run else "imported"
    where = f"{report.project}/{','.join(report.environments)}"
    out.write(
        f"{verb} into {where}: {len(report.created)} created, {len(report.updated)} updated, "
        f"{len(report.unchanged)} unchanged\n"
    )
    if report.tag_types_created:
        out.write(f"tag types created: {', '.join(report.tag_types_created)}\n")
    if report.dry_run:
        for name in report.created:
            out.write(f"  create {name}\n")
        for name in report.updated:
            out.write(f"  update {name}\n")
        out.write("dry run: nothing was written\n")


def _print_copy(report: CopyReport, out: TextIO) -> None:
    verb = "would copy" if report.dry_run else "copied"
    out.write(f"{verb} from Unleash:\n")
    for kind, counts in report.kinds.items():
        out.write(
            f"  {kind}: {len(counts.created)} created, {len(counts.updated)} updated, "
            f"{len(counts.unchanged)} unchanged\n"
        )
    if report.dry_run:
        for kind, counts in report.kinds.items():
            for name in counts.created:
                out.write(f"  create {kind[:-1] if kind.endswith('s') else kind} {name}\n")
            for name in counts.updated:
                out.write(f"  update {kind[:-1] if kind.endswith('s') else kind} {name}\n")
        out.write("dry run: nothing was written\n")


def _export(args: argparse.Namespace, db: str) -> int:
    tag = None
    if args.tag is not None:
        kind, colon, value = args.tag.partition(":")
        if not colon:
            raise CommandError("--tag is TYPE:VALUE")
        tag = Tag(kind, value)
    with _service(db, must_exist=True) as service:
        exported = service.exporting.export_flags(
            args.environment, names=args.feature, project=args.project, tag=tag
        )
    text = json.dumps(write_export(exported), indent=2, ensure_ascii=False) + "\n"
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as error:
            raise CommandError(f"cannot write {args.output[:200]!r}: {error.strerror}") from None
        say(f"exported {len(exported.features)} flags of {args.environment} to {args.output}")
    else:
        sys.stdout.write(text)
    return 0


def _parse_answer(raw: bytes, what: str) -> Any:
    """An Unleash answer read as strictly as a request body (`parse_json`)."""
    return parse_json(raw, what=what)
