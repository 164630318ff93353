"""Reading Server-Sent Events from a byte stream, with every line and event bounded."""

from __future__ import annotations

from collections.abc import AsyncIterator

import attrs

__all__ = ["MAX_EVENT_BYTES", "ServerSentEvent", "read_events"]

# A hydration of a very large project is a few MB; past this the server is not one we trust.
MAX_EVENT_BYTES = 64 * 1024 * 1024


@attrs.frozen
class ServerSentEvent:
    event: str
    data: str
    id: str | None


class EventTooLarge(ValueError):
    pass


async def _lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """Lines from chunks as they arrive; a line may not outgrow `MAX_EVENT_BYTES`."""
    pending = b""
    async for chunk in chunks:
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            yield line
        if len(pending) > MAX_EVENT_BYTES:
            raise EventTooLarge(f"an event over {MAX_EVENT_BYTES} bytes")
    if pending:
        yield pending


async def read_events(chunks: AsyncIterator[bytes]) -> AsyncIterator[ServerSentEvent]:
    """The events of an SSE stream (comments and keep-alives skipped), as the spec reads
    them: ``event``, ``id`` and ``data`` fields, multi-line data joined by newlines."""
    event = "message"
    event_id: str | None = None
    data: list[str] = []
    size = 0
    async for raw in _lines(chunks):
        size += len(raw)
        if size > MAX_EVENT_BYTES:
            raise EventTooLarge(f"an event over {MAX_EVENT_BYTES} bytes")
        line = raw.decode("utf-8", "replace").rstrip("\r")
        if not line:
            if data:
                yield ServerSentEvent(event, "\n".join(data), event_id)
            event, data, size = "message", [], 0
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
        elif name == "id" and "\0" not in value:
            event_id = value
