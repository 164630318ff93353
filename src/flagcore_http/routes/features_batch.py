"""Unleash's export and import on its paths: ``/api/admin/features-batch/{export,validate,
import}``. The format
and its rules live in the core (`flagcore.wire.read_export`, ``service.importing``,
``service.exporting``); these handlers read the envelope."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from flagcore.entities import Tag
from flagcore.errors import Conflict, ErrorDetail, FlagcoreError, InvalidInput
from flagcore.service import ImportCheck, ImportReport
from flagcore.wire import (
    ExportFileAnswer,
    FeatureExport,
    ImportCheckAnswer,
    ImportItemAnswer,
    ImportReportAnswer,
    json_type,
    read_export,
    write_export,
)
from flagcore_http import shapes
from flagcore_http.answering import answered
from flagcore_http.bodies import read_json
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import documented

__all__ = ["routes"]

routes = web.RouteTableDef()

BATCH = "/api/admin/features-batch"


def _field(body: dict[str, Any], key: str, kind: type, *, required: bool) -> Any:
    value = body.get(key)
    if value is None and not required:
        return None
    if type(value) is not kind:
        wanted = {str: "a string", bool: "a boolean", list: "an array", dict: "an object"}[kind]
        got = "nothing" if key not in body else json_type(value)
        raise InvalidInput(
            f"{key} must be {wanted}; got {got}",
            [ErrorDetail(f"expected {wanted}, got {got}", f"$.{key}")],
        )
    return value


async def _object(request: web.Request) -> dict[str, Any]:
    body = await read_json(request)
    if type(body) is not dict:
        raise InvalidInput(
            "the body must be a JSON object", [ErrorDetail(f"got {json_type(body)}", "$")]
        )
    return body


def _under_data(error: FlagcoreError) -> FlagcoreError:
    """The same error with its paths (relative to the export) under ``$.data``."""
    if type(error) not in (InvalidInput, Conflict):
        return error
    details = [ErrorDetail(d.message, _data_path(d.path)) for d in error.details]
    return type(error)(error.message.replace(": $", ": $.data", 1), details)


def _data_path(path: str | None) -> str | None:
    """A JSON path relative to the export, as a path in the request body (under ``data``)."""
    return "$.data" + path[1:] if path and path[:1] == "$" else path


def _read_data(body: dict[str, Any]) -> FeatureExport:
    if "data" not in body:
        raise InvalidInput(
            "data (the export) is required", [ErrorDetail("required field missing", "$.data")]
        )
    try:
        return read_export(body["data"])
    except InvalidInput as error:
        raise _under_data(error) from None


@routes.post(BATCH + "/export")
@documented({200: ExportFileAnswer}, body=shapes.EXPORT_QUERY, errors=(404,))
async def export_flags(request: web.Request) -> web.Response:
    """Unleash's body: ``{"features": [names], "environment", "downloadFile"?, "tag"?,
    "project"?}``; ``tag`` is ``{"type", "value"}`` or ``"type:value"``."""
    body = await _object(request)
    names = _field(body, "features", list, required=False)
    if names is not None and not all(type(n) is str for n in names):
        raise InvalidInput(
            "features must be a list of flag names",
            [ErrorDetail("expected strings", "$.features")],
        )
    environment = _field(body, "environment", str, required=True)
    project = _field(body, "project", str, required=False)
    download = _field(body, "downloadFile", bool, required=False)
    exported = await call(
        request,
        service(request).exporting.export_flags,
        environment,
        names=names,
        project=project,
        tag=_tag(body.get("tag")),
    )
    headers = {}
    if download:
        headers["Content-Disposition"] = f'attachment; filename="export-{environment}.json"'
    return web.json_response(write_export(exported), headers=headers)


def _tag(value: Any) -> Tag | None:
    if value is None:
        return None
    if type(value) is dict and type(value.get("type")) is str and type(value.get("value")) is str:
        return Tag(value["type"], value["value"])
    if type(value) is str and ":" in value:
        kind, _, text = value.partition(":")
        return Tag(kind, text)
    raise InvalidInput(
        'tag must be {"type", "value"} or "type:value"',
        [ErrorDetail("expected a tag", "$.tag")],
    )


def _target(body: dict[str, Any]) -> tuple[str, str]:
    return (
        _field(body, "project", str, required=True),
        _field(body, "environment", str, required=True),
    )


@routes.post(BATCH + "/validate")
@documented({200: ImportCheckAnswer}, body=shapes.import_body(), errors=(404,))
async def validate_import(request: web.Request) -> web.Response:
    """As Unleash: 200 ``{"errors", "warnings", "permissions"}``, each a list of
    ``{"message", "affectedItems"}``. An export that cannot be read at all is a 400."""
    body = await _object(request)
    project, environment = _target(body)
    export = _read_data(body)
    check: ImportCheck = await call(
        request, service(request).importing.validate, project, environment, export
    )
    return answered(
        ImportCheckAnswer(
            tuple(_item(d) for d in (*check.errors, *check.conflicts)),
            tuple(ImportItemAnswer(w, ()) for w in check.warnings),
        )
    )


def _item(detail: ErrorDetail) -> ImportItemAnswer:
    path = _data_path(detail.path)
    return ImportItemAnswer(detail.message, (path,) if path else ())


@routes.post(BATCH + "/import")
@documented(
    {200: ImportReportAnswer},
    body=shapes.import_body(shapes.IMPORT_OPTIONS),
    errors=(404, 409),
)
async def import_flags(request: web.Request) -> web.Response:
    """Unleash's body ``{"project", "environment", "data"}``, plus ``"overwrite"`` (replace
    flags that exist with another definition) and ``"dryRun"``. All or nothing: 400 with
    every problem's path, 409 naming conflicting flags; 200 with what changed."""
    body = await _object(request)
    project, environment = _target(body)
    overwrite = _field(body, "overwrite", bool, required=False) or False
    dry_run = _field(body, "dryRun", bool, required=False) or False
    export = _read_data(body)
    try:
        report: ImportReport = await call(
            request,
            service(request).importing.import_export,
            project,
            environment,
            export,
            overwrite=overwrite,
            dry_run=dry_run,
            actor=actor(request),
        )
    except FlagcoreError as error:
        if any(d.path and d.path.startswith("$") for d in error.details):
            raise _under_data(error) from None
        raise
    return answered(
        ImportReportAnswer(
            report.project,
            environment,
            report.dry_run,
            report.created,
            report.updated,
            report.unchanged,
            report.tag_types_created,
        )
    )
