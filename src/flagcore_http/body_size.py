"""Smaller body limits for the routes SDKs post to on their own (metrics, registrations).

Every route refuses a body past ``client_max_size`` (1 MB). SDK usage needs far less: a
report counts the flags an application evaluated in one interval, a registration names
its strategies. Unleash refuses any body past 100 kB on these routes (its JSON parser's
default). A post of 770 kB costs about 5 ms of the event loop to read and check, and the
frontend token that may send it ships in every browser bundle; so usage posts have their
own limit (``FLAGCORE_SDK_USAGE_MAX_BODY_BYTES``), refused from the ``Content-Length``
before anything is read, the connection then closed (`flagcore_http.closing`), and for a
body sent in chunks, as soon as the bytes read pass it (`flagcore_http.bodies.read_json`).
"""

from __future__ import annotations

from aiohttp import web

from flagcore.errors import ErrorDetail
from flagcore_http.closing import closing_when_sent
from flagcore_http.errors import error_response

__all__ = ["oversized"]


def oversized(request: web.Request, max_bytes: int) -> web.Response | None:
    """None when the declared body is within ``max_bytes``; else the 413 to answer at
    once, before the body is read."""
    length = request.content_length
    if length is None or length <= max_bytes:
        return None
    refused = error_response(
        413,
        "ContentTooLarge",
        f"The request body is too large: {length} bytes, over the limit of {max_bytes} "
        "for SDK usage (FLAGCORE_SDK_USAGE_MAX_BODY_BYTES).",
        [ErrorDetail(f"at most {max_bytes} (sdk_usage_max_body_bytes)", "$")],
    )
    return closing_when_sent(request, refused)
