"""Safe-to-archive suggestions (issue 32, flagcore's own):
``GET /api/admin/projects/<p>/safe-to-archive``."""

from __future__ import annotations

from aiohttp import web

from flagcore.wire import ArchiveSuggestionAnswer, ArchiveSuggestionsAnswer
from flagcore_http.answering import answered
from flagcore_http.calls import call, service
from flagcore_http.contract import documented
from flagcore_http.keys import CONFIG
from flagcore_http.usage_buffer import flush_usage

__all__ = ["routes"]

routes = web.RouteTableDef()


@routes.get("/api/admin/projects/{project}/safe-to-archive")
@documented({200: ArchiveSuggestionsAnswer})
async def safe_to_archive(request: web.Request) -> web.Response:
    """The project's flags that SDK reports of the last N days and code scans agree
    nothing needs (N: ``FLAGCORE_SAFE_TO_ARCHIVE_DAYS``)."""
    await flush_usage(request.app)  # what SDKs posted to this node counts at once
    found = await call(
        request,
        service(request).cleanup.safe_to_archive,
        request.match_info["project"],
        days=request.app[CONFIG].safe_to_archive_days,
    )
    return answered(
        ArchiveSuggestionsAnswer(
            tuple(ArchiveSuggestionAnswer(s.flag, s.project, s.reasons) for s in found)
        )
    )
