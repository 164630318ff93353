"""A real HTTP receiver on 127.0.0.1 for integration tests: it keeps every request it
gets (with when it arrived) and answers from a script (a status per request, then 200s):
a status, ``(status, headers)``, `Slow` (an answer late past a timeout) or `Huge` (a body
far larger than a sender should read)."""

from __future__ import annotations

import asyncio
import gzip
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
from aiohttp import web


@attrs.frozen
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float = 0.0  # time.monotonic() when it arrived

    def json(self) -> Any:
        # aiohttp's server inflates a gzipped body (New Relic's) as it reads it.
        raw = gzip.decompress(self.body) if self.body[:2] == b"\x1f\x8b" else self.body
        return json.loads(raw)


@attrs.frozen
class Slow:
    """Answer ``status`` only after ``seconds`` (the sender's read timeout is shorter)."""

    seconds: float
    status: int = 200


@attrs.frozen
class Huge:
    """Answer 200 with a body of ``size`` bytes, written as long as the sender takes it."""

    size: int


@attrs.define
class Receiver:
    url: str = ""
    received: list[Received] = attrs.field(factory=list)
    # Answers for the next requests, in order: a status, (status, headers), Slow or Huge;
    # then 200.
    script: list[Any] = attrs.field(factory=list)
    hang: bool = False  # never answer (until the test ends)
    # What a `Huge` answer managed to write before the sender hung up, once it stopped.
    huge_written: int | None = None
    _changed: asyncio.Event = attrs.field(factory=asyncio.Event)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.received.append(Received(request.path, dict(request.headers), body, time.monotonic()))
        self._changed.set()
        if self.hang:
            await asyncio.sleep(3600)
        answer = self.script.pop(0) if self.script else 200
        if isinstance(answer, Huge):
            return await self._huge(request, answer.size)
        if isinstance(answer, Slow):
            await asyncio.sleep(answer.seconds)
            answer = answer.status
        status, headers = answer if isinstance(answer, tuple) else (answer, {})
        return web.Response(status=status, headers=headers, text="ok")

    async def _huge(self, request: web.Request, size: int) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Length": str(size)})
        await response.prepare(request)
        chunk = b"x" * 65_536
        written = 0
        try:
            while written < size:
                await response.write(chunk[: size - written])
                written += min(len(chunk), size - written)
            await response.write_eof()
        except (ConnectionError, asyncio.CancelledError):
            pass  # the sender hung up: what it took is counted
        finally:
            self.huge_written = written
            self._changed.set()
        return response

    async def wait_for(self, done: Callable[[list[Received]], bool], seconds: float = 30) -> None:
        """Until ``done(received)`` holds (a bound, not a speed: a failure is a hang)."""
        await self.wait_until(lambda: done(self.received), seconds)

    async def wait_until(self, done: Callable[[], bool], seconds: float = 30) -> None:
        """Until ``done()`` holds, looked at each time a request arrives or an answer ends."""
        async with asyncio.timeout(seconds):
            while not done():
                self._changed.clear()
                await self._changed.wait()


@asynccontextmanager
async def receiving(
    path: str = "/hook", host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[Receiver]:
    receiver = Receiver()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", receiver.handle)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    port = runner.addresses[0][1]
    shown = f"[{host}]" if ":" in host else host
    receiver.url = f"http://{shown}:{port}{path}"
    try:
        yield receiver
    finally:
        await runner.cleanup()
