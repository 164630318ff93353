"""Unleash's export and import on its paths: ``/api/admin/features-batch/{export,validate,
import}``. The format
and its rules live in the core (`flagcore.wire.read_export`, ``service.importing``,
``service.exporting``); the bodies are `flagcore_http.wire`'s classes (`ExportBody`,
`ImportTarget`, `ImportBody`), the export under ``data`` read by the same reader."""

from __future__ import annotations

from aiohttp import web

from flagcore.entities import Tag
from flagcore.errors import Conflict, ErrorDetail, FlagcoreError, InvalidInput
from flagcore.service import ImportCheck, ImportReport
from flagcore.wire import (
    ExportFileAnswer,
    ImportCheckAnswer,
    ImportItemAnswer,
    ImportReportAnswer,
    write_export,
)
from flagcore_http.answering import answered
from flagcore_http.bodies import read_body
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import documented
from flagcore_http.wire import ExportBody, ImportBody, ImportTarget, TagBody

__all__ = ["routes"]

routes = web.RouteTableDef()

BATCH = "/api/admin/features-batch"


def _under_data(error: FlagcoreError) -> FlagcoreError:
    """The same error with its paths (relative to the export) under ``$.data``."""
    if type(error) not in (InvalidInput, Conflict):
        return error
    details = [ErrorDetail(d.message, _data_path(d.path)) for d in error.details]
    return type(error)(error.message.replace(": $", ": $.data", 1), details)


def _data_path(path: str | None) -> str | None:
    """A JSON path relative to the export, as a path in the request body (under ``data``)."""
    return "$.data" + path[1:] if path and path[:1] == "$" else path


@routes.post(BATCH + "/export")
@documented({200: ExportFileAnswer}, body=ExportBody, errors=(404,))
async def export_flags(request: web.Request) -> web.Response:
    """Unleash's body: ``{"features": [names], "environment", "downloadFile"?, "tag"?,
    "project"?}``; ``tag`` is ``{"type", "value"}`` or ``"type:value"``."""
    body = await read_body(request, ExportBody)
    exported = await call(
        request,
        service(request).exporting.export_flags,
        body.environment,
        names=None if body.features is None else list(body.features),
        project=body.project,
        tag=_tag(body.tag),
    )
    headers = {}
    if body.download_file:
        headers["Content-Disposition"] = f'attachment; filename="export-{body.environment}.json"'
    return web.json_response(write_export(exported), headers=headers)


def _tag(tag: TagBody | str | None) -> Tag | None:
    if tag is None:
        return None
    if isinstance(tag, str):
        kind, _, text = tag.partition(":")
        return Tag(kind, text)
    return Tag(tag.type, tag.value)


@routes.post(BATCH + "/validate")
@documented({200: ImportCheckAnswer}, body=ImportTarget, errors=(404,))
async def validate_import(request: web.Request) -> web.Response:
    """As Unleash: 200 ``{"errors", "warnings", "permissions"}``, each a list of
    ``{"message", "affectedItems"}``. An export that cannot be read at all is a 400."""
    body = await read_body(request, ImportTarget)
    check: ImportCheck = await call(
        request, service(request).importing.validate, body.project, body.environment, body.data
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
@documented({200: ImportReportAnswer}, body=ImportBody, errors=(404, 409))
async def import_flags(request: web.Request) -> web.Response:
    """Unleash's body ``{"project", "environment", "data"}``, plus ``"overwrite"`` (replace
    flags that exist with another definition) and ``"dryRun"``. All or nothing: 400 with
    every problem's path, 409 naming conflicting flags; 200 with what changed."""
    body = await read_body(request, ImportBody)
    try:
        report: ImportReport = await call(
            request,
            service(request).importing.import_export,
            body.project,
            body.environment,
            body.data,
            overwrite=body.overwrite,
            dry_run=body.dry_run,
            actor=actor(request),
        )
    except FlagcoreError as error:
        if any(d.path and d.path.startswith("$") for d in error.details):
            raise _under_data(error) from None
        raise
    return answered(
        ImportReportAnswer(
            report.project,
            body.environment,
            report.dry_run,
            report.created,
            report.updated,
            report.unchanged,
            report.tag_types_created,
        )
    )
