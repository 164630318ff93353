"""The preview's traffic sample: contexts sent to the Frontend API and OFREP, kept in
memory per environment and written in batches (issue 30; docs/preview.md).

The routes offer each context to the app's `ContextSampler` (`flagcore.context_sample`:
a random draw per context once an environment's reservoir is full, nothing serialised
or written on the request path). What it keeps waits in memory, bounded, until
`context_sample_flush` writes it in one transaction every ``preview_sample_flush_interval``
seconds, and once more at shutdown; a crash loses at most one interval of sampling,
never a stored sample.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable

from aiohttp import web

from flagcore.errors import FlagcoreError
from flagcore.service import ContextSampler
from flagcore_http.config import ServerConfig
from flagcore_http.keys import SERVICE, WORKER

__all__ = [
    "CONTEXT_SAMPLER",
    "context_sample_flush",
    "flush_context_samples",
    "sampler_for",
]

_log = logging.getLogger(__name__)

CONTEXT_SAMPLER = web.AppKey("context_sampler", ContextSampler)


def sampler_for(config: ServerConfig) -> ContextSampler:
    """A sampler with the server's settings."""
    return ContextSampler(
        enabled=config.preview_sampling,
        size=config.preview_sample_size,
        denied=config.preview_denied_fields,
    )


async def flush_context_samples(app: web.Application) -> None:
    """Write what the sampler took (what a preview calls first, so it sees this node's
    latest sample). A store failure is logged; those contexts are not retried."""
    taken = app[CONTEXT_SAMPLER].take()
    if not taken:
        return
    try:
        write = app[SERVICE].previews.write_sampled_contexts
        await asyncio.get_running_loop().run_in_executor(app[WORKER], write, taken)
    except FlagcoreError as error:
        _log.warning("could not write %d sampled contexts: %s", len(taken), error)


def context_sample_flush(
    interval: float,
) -> Callable[[web.Application], AsyncIterator[None]]:
    """A cleanup context: writes the sample every ``interval`` seconds, and once more at
    shutdown."""

    async def lifetime(app: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(_flush_loop(app, interval))
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await flush_context_samples(app)

    return lifetime


async def _flush_loop(app: web.Application, interval: float) -> None:
    while True:
        await asyncio.sleep(interval)
        try:
            await flush_context_samples(app)
        except Exception:  # a sample is not worth stopping the writes for: log, go on
            _log.exception("writing sampled contexts failed")
