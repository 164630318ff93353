"""Previews scored one at a time per server.

Scoring a preview evaluates up to twice 10,000 contexts with two engines (a tenth of a
second to a few seconds for a change request of many flags), on a thread that still holds
the GIL most of the time. Any signed-in person may ask for one, so the server scores one
at a time: more callers wait their turn (each holds one of the bounded connections)
rather than take every core from the SDK polls (docs/security.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from aiohttp import web

__all__ = ["PREVIEW_SLOT", "scored_in_turn"]

_T = TypeVar("_T")

PREVIEW_SLOT = web.AppKey("preview_slot", asyncio.Semaphore)


async def scored_in_turn(app: web.Application, score: Callable[[], _T]) -> _T:
    """``score()`` on another thread, when no other preview is being scored here."""
    async with app[PREVIEW_SLOT]:
        return await asyncio.to_thread(score)
