"""Code references (issue 32): ``flagcore scan --upload`` stores a scan's result here,
and each flag's references are read back for its page and for integrations.

flagcore's own shape (Unleash has none), documented in docs/lifecycle.md.
"""

from __future__ import annotations

from aiohttp import web

from flagcore.wire import CodeScanAnswer, FlagCodeReferencesAnswer, write_answer
from flagcore_http.answering import answered
from flagcore_http.bodies import read_body
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import documented
from flagcore_http.wire import CodeScanBody

__all__ = ["routes"]

routes = web.RouteTableDef()

CODE_REFERENCES = "/api/admin/code-references"


@routes.post(CODE_REFERENCES)
@documented({200: CodeScanAnswer}, body=CodeScanBody)
async def store_code_scan(request: web.Request) -> web.Response:
    """Replace what the body's ``source`` reported before with this scan's references."""
    body = await read_body(request, CodeScanBody)
    scan = await call(
        request,
        service(request).code_references.store_code_scan,
        body.source,
        body.references,
        actor=actor(request),
    )
    return answered(CodeScanAnswer.of(scan))


@routes.get(CODE_REFERENCES)
@documented({200: tuple[CodeScanAnswer, ...]})
async def list_code_scans(request: web.Request) -> web.Response:
    """Each source's last scan: when, how many references to how many names."""
    scans = await call(request, service(request).code_references.list_code_scans)
    return web.json_response([write_answer(CodeScanAnswer.of(scan)) for scan in scans])


@routes.get(CODE_REFERENCES + "/{flag}")
@documented({200: FlagCodeReferencesAnswer})
async def flag_code_references(request: web.Request) -> web.Response:
    """Where the sources' last scans found this name (a flag or not: typos show too)."""
    flag = request.match_info["flag"]
    found = await call(request, service(request).code_references.references_to, flag)
    return answered(FlagCodeReferencesAnswer.of(flag, found))
