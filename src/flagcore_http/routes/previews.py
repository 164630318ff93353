"""Who will this flip: a proposed change previewed on the environment's context sample,
and a sample uploaded as JSON lines (issue 30; docs/preview.md). flagcore's own paths.

The preview is read on the store worker (`Previews.preview_input`) and scored on another
thread: 10,000 contexts under two sets of rules must not hold up the one thread that
serves every SDK's cache miss and every write. This node's sampled contexts are written
first, so a preview sees what the node saw.
"""

from __future__ import annotations

from typing import Any, Final

from aiohttp import web

from flagcore.errors import ErrorDetail, InvalidInput, LimitExceeded
from flagcore.service import ProposedChange
from flagcore.service.playground import check_context
from flagcore.wire import ContextSampleAnswer, PlaygroundContext, PreviewAnswer
from flagcore_http.answering import answered
from flagcore_http.bodies import parse_json, read_body, read_up_to
from flagcore_http.calls import actor, call, service
from flagcore_http.context_sampling import flush_context_samples
from flagcore_http.contract import documented
from flagcore_http.keys import CONFIG
from flagcore_http.preview_scoring import scored_in_turn
from flagcore_http.wire import PreviewBody, structure

__all__ = ["MAX_SAMPLE_UPLOAD_BYTES", "SAMPLE_MEDIA_TYPES", "routes"]

routes = web.RouteTableDef()

MAX_SAMPLE_UPLOAD_BYTES: Final = 16 * 1024 * 1024
"""An uploaded sample's most bytes: 10,000 contexts of 1.6 kB (a real one is ~200 B)."""
SAMPLE_MEDIA_TYPES: Final = (
    "application/x-ndjson",
    "application/jsonl",
    "application/x-jsonlines",
    "application/json",  # a file of one context is JSON too
)
_MAX_LINE_ERRORS = 10


@routes.post("/api/admin/projects/{project}/features/{name}/environments/{environment}/preview")
@documented({200: PreviewAnswer}, body=PreviewBody, errors=(404,))
async def preview_change(request: web.Request) -> web.Response:
    """What the proposed ``enabled``, ``strategies`` or ``variants`` would do to the
    environment's sampled contexts: off → on, on → off, variant moves; nothing saved."""
    body = await read_body(request, PreviewBody)
    await flush_context_samples(request.app)
    change = ProposedChange(body.enabled, body.strategies, body.variants)
    read = await call(
        request,
        service(request).previews.preview_input,
        request.match_info["project"],
        request.match_info["environment"],
        request.match_info["name"],
        change,
    )
    return answered(await scored_in_turn(request.app, read.scored))


@routes.post("/api/admin/environments/{environment}/context-sample")
@documented({200: ContextSampleAnswer}, errors=(404,))
async def upload_context_sample(request: web.Request) -> web.Response:
    """Replace the environment's uploaded sample with the JSON lines of the body (one
    context a line, as the playground takes it; ``application/x-ndjson``); a bad line is
    a 400 whose path is ``$[<line index>]``. Deny-listed fields are never stored."""
    if request.content_type not in SAMPLE_MEDIA_TYPES:
        raise web.HTTPUnsupportedMediaType(
            text=f"a sample is JSON lines ({', '.join(SAMPLE_MEDIA_TYPES)}), "
            f"not {request.content_type or 'no content type'}"
        )
    raw = await _bounded_body(request)
    config = request.app[CONFIG]
    contexts = _contexts(raw, config.preview_sample_size)
    stored = await call(
        request,
        service(request).previews.replace_context_sample,
        request.match_info["environment"],
        contexts,
        denied=config.preview_denied_fields,
        actor=actor(request),
    )
    return answered(stored)


async def _bounded_body(request: web.Request) -> bytes:
    length = request.content_length
    if length is not None and length > MAX_SAMPLE_UPLOAD_BYTES:
        raise _too_large()
    raw = await read_up_to(request.content, MAX_SAMPLE_UPLOAD_BYTES)
    if len(raw) > MAX_SAMPLE_UPLOAD_BYTES:
        raise _too_large()
    return raw


def _too_large() -> LimitExceeded:
    return LimitExceeded(
        f"an uploaded sample has at most {MAX_SAMPLE_UPLOAD_BYTES} bytes",
        "context_sample_bytes",
        MAX_SAMPLE_UPLOAD_BYTES,
    )


def _contexts(raw: bytes, most: int) -> list[dict[str, Any]]:
    """Each non-blank line checked as a context; every bad line named (the first ten)."""
    lines = raw.split(b"\n")
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise InvalidInput("the sample has no lines", [ErrorDetail("no contexts", "$")])
    if len(lines) > most:
        raise LimitExceeded(
            f"an uploaded sample has at most {most} lines, not {len(lines)}",
            "context_sample_lines",
            most,
            f"$[{most}]",
        )
    contexts: list[dict[str, Any]] = []
    problems: list[ErrorDetail] = []
    for index, line in enumerate(lines):
        where = f"$[{index}]"
        try:
            read = structure(parse_json(line, what="the line"), PlaygroundContext, "the line")
            contexts.append(check_context(read, where))
        except InvalidInput as error:
            for detail in error.details or (ErrorDetail(error.message, where),):
                path = detail.path or where
                if not path.startswith(where):
                    path = where + path.removeprefix("$")
                problems.append(ErrorDetail(f"line {index + 1}: {detail.message}", path))
            if len(problems) >= _MAX_LINE_ERRORS:
                break
    if problems:
        raise InvalidInput(problems[0].message, problems[:_MAX_LINE_ERRORS])
    return contexts
