"""A real HTTP receiver on 127.0.0.1 for integration tests: it keeps every request it
gets and answers from a script (a status per request, then 200s)."""

from __future__ import annotations

import asyncio
import gzip
import json
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

    def json(self) -> Any:
        # aiohttp's server inflates a gzipped body (New Relic's) as it reads it.
        raw = gzip.decompress(self.body) if self.body[:2] == b"\x1f\x8b" else self.body
        return json.loads(raw)


@attrs.define
class Receiver:
    url: str = ""
    received: list[Received] = attrs.field(factory=list)
    # Answers for the next requests, in order: a status, or (status, headers); then 200.
    script: list[Any] = attrs.field(factory=list)
    hang: bool = False  # never answer (until the test ends)
    _changed: asyncio.Event = attrs.field(factory=asyncio.Event)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.received.append(Received(request.path, dict(request.headers), body))
        self._changed.set()
        if self.hang:
            await asyncio.sleep(3600)
        answer = self.script.pop(0) if self.script else 200
        status, headers = answer if isinstance(answer, tuple) else (answer, {})
        return web.Response(status=status, headers=headers, text="ok")

    async def wait_for(self, done: Callable[[list[Received]], bool], seconds: float = 30) -> None:
        """Until ``done(received)`` holds (a bound, not a speed: a failure is a hang)."""
        async with asyncio.timeout(seconds):
            while not done(self.received):
                self._changed.clear()
                await self._changed.wait()


@asynccontextmanager
async def receiving(path: str = "/hook") -> AsyncIterator[Receiver]:
    receiver = Receiver()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", receiver.handle)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    receiver.url = f"http://127.0.0.1:{port}{path}"
    try:
        yield receiver
    finally:
        await runner.cleanup()
