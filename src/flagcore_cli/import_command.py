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
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO, TypeVar

import attrs

from flagcore import wire
from flagcore.entities import (
    Environment,
    Project,
    StrategyDefinition,
    StrategyParameter,
    Tag,
    TagType,
)
from flagcore.errors import Conflict, ErrorDetail, FlagcoreError, InvalidInput
from flagcore.model import Segment
from flagcore.service import CopyReport, ImportReport, InstanceCopy, Service
from flagcore.wire import FeatureExport, read_export, structure, write_export
from flagcore_cli.output import progress_bar, say
from flagcore_cli.stores import StartError, is_postgres, open_store
from flagcore_http.bodies import parse_json
from flagcore_http.config import ServerConfig

__all__ = ["add_commands", "read_unleash", "run_command"]

# An export of 10,000 flags is ~15 MB; a file or an answer larger than this is refused
# before it is parsed.
MAX_FILE_BYTES = 100_000_000
REQUEST_TIMEOUT_S = 15.0
_DEFAULT_DB = "flagcore.db"
_T = TypeVar("_T")


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
        source = read_unleash(args.from_unleash, token, progress)
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


# --- reading a running Unleash -------------------------------------------------------

# Rows of the admin API's answers, read strictly with the core's converter (extra keys,
# which Unleash has many of, are ignored).


@attrs.frozen
class _ProjectRow:
    id: str
    name: str
    description: str | None = None


@attrs.frozen
class _EnvironmentRow:
    name: str
    type: str = "development"
    sort_order: int = 0


@attrs.frozen
class _ParameterRow:
    name: str
    type: str = "string"
    description: str | None = None
    required: bool = False


@attrs.frozen
class _DefinitionRow:
    name: str
    description: str | None = None
    title: str | None = None
    display_name: str | None = None
    parameters: tuple[_ParameterRow, ...] = ()
    editable: bool = True
    deprecated: bool = False


@attrs.frozen
class _TagTypeRow:
    name: str
    description: str | None = None


_ROW_NAMES: dict[type, Mapping[str, str]] = {
    **wire.WIRE_NAMES,
    _ProjectRow: {},
    _EnvironmentRow: {"sort_order": "sortOrder"},
    _ParameterRow: {},
    _DefinitionRow: {"display_name": "displayName"},
    _TagTypeRow: {},
}
_ROWS = wire.converter.copy()
for _cls in (_ProjectRow, _EnvironmentRow, _ParameterRow, _DefinitionRow, _TagTypeRow):
    wire.register_class(_ROWS, _cls, _ROW_NAMES[_cls])


def _row(data: Any, cls: type[_T], what: str) -> _T:
    return wire.structure_with(_ROWS, _ROW_NAMES, data, cls, what)


def _definition(row: _DefinitionRow) -> StrategyDefinition:
    return StrategyDefinition(
        row.name,
        row.description,
        tuple(
            StrategyParameter(p.name, p.type, p.description or "", p.required)
            for p in row.parameters
        ),
        editable=row.editable,
        deprecated=row.deprecated,
        title=row.title or row.display_name,
    )


Progress = Callable[[str, int, int], None]


class _Unleash:
    """GETs on an Unleash's admin API, each bounded in time and size."""

    def __init__(self, url: str, token: str) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise CommandError(f"--from-unleash needs an http(s) URL; got {url[:200]!r}")
        self.base = url.rstrip("/")
        self.token = token

    def get(self, path: str) -> Any:
        request = urllib.request.Request(
            self.base + path, headers={"Authorization": self.token, "Accept": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
                raw = response.read(MAX_FILE_BYTES + 1)
        except urllib.error.HTTPError as error:
            hint = " (is the token an admin token?)" if error.code in (401, 403) else ""
            raise CommandError(
                f"Unleash at {self.base} answered {error.code} to GET {path}{hint}"
            ) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise CommandError(f"cannot reach Unleash at {self.base}: {reason}") from None
        if len(raw) > MAX_FILE_BYTES:
            raise CommandError(f"GET {path} answered over {MAX_FILE_BYTES:,} bytes")
        try:
            return parse_json(raw, what=f"GET {path}")
        except InvalidInput as error:
            raise CommandError(f"GET {path} did not answer JSON: {error.message}") from None


def _list(answer: Any, key: str, path: str) -> list[Any]:
    items = answer.get(key) if type(answer) is dict else None
    if type(items) is not list:
        raise InvalidInput(
            f"GET {path} answered without a list {key!r}", [ErrorDetail("missing", f"$.{key}")]
        )
    return items


def read_unleash(url: str, token: str, progress: Progress | None = None) -> InstanceCopy:
    """Everything ``flagcore import --from-unleash`` copies, read through the admin API
    paths Unleash 8.2 serves (and flagcore serves too)."""
    unleash = _Unleash(url, token)
    projects = [
        _row(p, _ProjectRow, "a project")
        for p in _list(unleash.get("/api/admin/projects"), "projects", "/api/admin/projects")
    ]
    environments = [
        Environment(e.name, e.type, e.sort_order)
        for e in (
            _row(item, _EnvironmentRow, "an environment")
            for item in _list(
                unleash.get("/api/admin/environments"), "environments", "/api/admin/environments"
            )
        )
    ]
    definitions = [
        _definition(_row(item, _DefinitionRow, "a strategy definition"))
        for item in _list(unleash.get("/api/admin/strategies"), "strategies", "strategies")
    ]
    tag_types = [
        TagType(t.name, t.description)
        for t in (
            _row(item, _TagTypeRow, "a tag type")
            for item in _list(unleash.get("/api/admin/tag-types"), "tagTypes", "tag-types")
        )
    ]
    segments = [
        structure(item, Segment, "a segment")
        for item in _list(unleash.get("/api/admin/segments"), "segments", "segments")
    ]
    flags: dict[str, dict[str, FeatureExport]] = {}
    names_by_project = {
        p.id: [
            _name(item)
            for item in _list(
                unleash.get(f"/api/admin/projects/{_quote(p.id)}/features"), "features", "features"
            )
        ]
        for p in projects
    }
    total = sum(len(names) for names in names_by_project.values())
    done = 0
    for project in projects:
        details = []
        for name in names_by_project[project.id]:
            base = f"/api/admin/projects/{_quote(project.id)}/features/{_quote(name)}"
            detail = unleash.get(base)
            tags = _list(unleash.get(f"/api/admin/features/{_quote(name)}/tags"), "tags", "tags")
            details.append((detail, tags))
            done += 1
            if progress is not None:
                progress("flags", done, total)
        flags[project.id] = {
            e.name: _export_of(project.id, e.name, details, segments) for e in environments
        }
    return InstanceCopy(
        projects=tuple(Project(p.id, p.name, p.description) for p in projects),
        environments=tuple(environments),
        strategy_definitions=tuple(definitions),
        tag_types=tuple(tag_types),
        segments=tuple(segments),
        flags=flags,
    )


def _quote(part: str) -> str:
    return urllib.parse.quote(part, safe="")


def _name(item: Any) -> str:
    name = item.get("name") if type(item) is dict else None
    if type(name) is not str:
        raise InvalidInput("a flag without a name", [ErrorDetail("missing", "$.features[].name")])
    return name


def _sort_order(strategy: dict[str, Any]) -> int:
    order = strategy.get("sortOrder")
    return order if type(order) is int else 0


def _export_of(
    project: str,
    environment: str,
    details: Sequence[tuple[Any, list[Any]]],
    segments: Sequence[Segment],
) -> FeatureExport:
    """One environment of one project's flags as an export file, read strictly (a problem
    names the project, environment and JSON path)."""
    data: dict[str, list[Any]] = {
        "features": [],
        "featureStrategies": [],
        "featureEnvironments": [],
        "featureTags": [],
        "segments": [{"id": s.id, "name": s.name} for s in segments],
        "dependencies": [],
    }
    for detail, tags in details:
        if type(detail) is not dict:
            continue
        name = detail.get("name")
        data["features"].append(
            {key: detail.get(key) for key in ("name", "type", "description", "stale")}
            | {"impressionData": detail.get("impressionData")}
        )
        for state in detail.get("environments") or []:
            if type(state) is not dict or state.get("name") != environment:
                continue
            strategies = [s for s in state.get("strategies") or [] if type(s) is dict]
            strategies.sort(key=_sort_order)
            data["featureStrategies"] += [{**s, "featureName": name} for s in strategies]
            data["featureEnvironments"].append(
                {
                    "featureName": name,
                    "enabled": state.get("enabled"),
                    "variants": state.get("variants"),
                }
            )
        data["featureTags"] += [
            {"featureName": name, "tagType": t.get("type"), "tagValue": t.get("value")}
            for t in tags
            if type(t) is dict
        ]
        if detail.get("dependencies"):
            data["dependencies"].append(
                {"feature": name, "dependencies": detail.get("dependencies")}
            )
    return read_export(data, f"project {project}, environment {environment}")
