"""Answers decided from the headers alone, after which the connection closes unread.

An answer given before a request's body is read (not signed in, a body too large, an
encoding refused, a rate limit) must not wait for that body: aiohttp would read and drop
the rest of it for up to 10 s before closing, which is a slow client's whole point. Used by
`body_deadline`, the UI's pages and `rate_limits`; it imports nothing of flagcore_http so
any of them can.
"""

from __future__ import annotations

from aiohttp import web

__all__ = ["body_unread", "closing_when_sent"]


def body_unread(request: web.Request) -> bool:
    """Whether some of the request's body has not been read (or not even sent) yet."""
    return request.body_exists and not request.content.is_eof()


def closing_when_sent(request: web.Request, response: web.Response) -> web.Response:
    """``response``, closing the connection once sent if the request's body is unread.

    An answer decided from the headers alone (not signed in, a body too large) must not
    wait for the body: aiohttp would read and drop the rest of it for up to 10 s before
    closing, which is the slow client's whole point.
    """
    if not body_unread(request):
        return response
    return _ClosingResponse(request, response)


class _ClosingResponse(web.Response):
    """A copy of an answer after which the connection closes, its unread body never read."""

    def __init__(self, request: web.Request, answer: web.Response) -> None:
        headers = {k: v for k, v in answer.headers.items() if k.lower() != "content-length"}
        super().__init__(body=answer.body, status=answer.status, headers=headers)
        self.force_close()  # "Connection: close"
        self._transport_to_close = request.transport

    async def write_eof(self, data: bytes = b"") -> None:
        await super().write_eof(data)
        # Closing the transport sends what is written, then ends the connection.
        if self._transport_to_close is not None:
            self._transport_to_close.close()
