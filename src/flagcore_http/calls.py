"""Running service calls off the event loop, on the app's single store worker thread."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, TypeVar

from aiohttp import web

from flagcore.service import Service
from flagcore_http.keys import SERVICE, TOKEN, WORKER

__all__ = ["actor", "call", "service"]

_T = TypeVar("_T")


def service(request: web.Request) -> Service:
    return request.app[SERVICE]


async def call(request: web.Request, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """Run ``fn`` on the store worker: the event loop never waits on the disk."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(request.app[WORKER], functools.partial(fn, *args, **kwargs))


def actor(request: web.Request) -> str:
    """Who does it, for the event log: the token's name, never its secret."""
    token = request.get(TOKEN)
    return f"token:{token.name}" if token is not None else "anonymous"
