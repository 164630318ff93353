"""The node's sender of integrations: it follows the event log and sends each
integration what it is owed (`flagcore.service` ``integration_outbox`` keeps the cursor
and the lease; `flagcore_http.integration_sending` makes each attempt).

One task per integration, so one that keeps failing (retrying for up to
``FLAGCORE_INTEGRATION_RETRY_SECONDS``) delays no other. Each attempt is preceded by a
renewal of the lease, long enough to cover the attempt and the wait before the next, so
while this node is up no other node takes the integration over. Retries back off
exponentially with jitter (a 429's ``Retry-After`` is honoured); once the time is up the
delivery is logged ``failed`` and the cursor moves on, so one bad event does not stop
the ones after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import os
import random
import socket
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from aiohttp import web

from flagcore.entities import Event, Integration, IntegrationDelivery
from flagcore.errors import FlagcoreError
from flagcore.service import Service
from flagcore_http.config import ServerConfig
from flagcore_http.integration_sending import Attempt, send_once
from flagcore_http.keys import CONFIG, SERVICE, WORKER

__all__ = ["DELIVERY", "IntegrationSender", "integration_delivery"]

_log = logging.getLogger("flagcore_http.integrations")
_T = TypeVar("_T")

_FIRST_BACKOFF_S = 0.5
_MAX_BACKOFF_S = 60.0
_POLL_S = 0.1  # how often the store's revision is compared (a cheap read on the loop)
_LEASE_MARGIN_S = 15.0


class IntegrationSender:
    """This node's deliveries: one task per integration it holds the lease of."""

    def __init__(self, app: web.Application) -> None:
        self._app = app
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._tasks: dict[int, asyncio.Task[None]] = {}
        # Whether any integration is on, as of the last sweep (or `wake`): with none, a
        # moved revision costs no store read.
        self._any_enabled = True

    def wake(self) -> None:
        """An integration was made or changed here: follow the event log from now on."""
        self._any_enabled = True

    @property
    def _service(self) -> Service:
        return self._app[SERVICE]

    @property
    def _config(self) -> ServerConfig:
        return self._app[CONFIG]

    async def _on_worker(self, fn: Callable[..., _T], *args: Any) -> _T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._app[WORKER], lambda: fn(*args))

    def _lease(self, wait: float = 0.0) -> dt.timedelta:
        return dt.timedelta(seconds=wait + 2 * self._config.integration_timeout + _LEASE_MARGIN_S)

    async def run(self) -> None:
        """Look for owed deliveries when the revision moves (if any integration is on),
        and every ``FLAGCORE_INTEGRATION_SWEEP_SECONDS`` (leases run out elsewhere,
        integrations made on another node)."""
        revision = self._service.storage.revision
        outbox = self._service.integration_outbox
        loop = asyncio.get_running_loop()
        seen = -1
        next_sweep = 0.0
        while True:
            now_revision = revision()
            sweep = loop.time() >= next_sweep
            if sweep or (now_revision != seen and self._any_enabled):
                seen = now_revision
                if sweep:
                    next_sweep = loop.time() + self._config.integration_sweep_interval
                    with contextlib.suppress(FlagcoreError):  # the store is down: next sweep
                        self._any_enabled = await self._on_worker(outbox.any_integration_enabled)
                if self._any_enabled:
                    await self._start_due()
            await asyncio.sleep(_POLL_S)

    async def _start_due(self) -> None:
        outbox = self._service.integration_outbox
        try:
            due = await self._on_worker(outbox.integrations_due, self.holder)
        except FlagcoreError as error:  # the store is down: looked at again later
            _log.warning("integrations: could not read what is owed: %s", error)
            return
        for integration_id in due:
            task = self._tasks.get(integration_id)
            if task is None or task.done():
                self._tasks[integration_id] = asyncio.create_task(self._drain(integration_id))

    async def _drain(self, integration_id: int) -> None:
        outbox = self._service.integration_outbox
        try:
            while True:
                leased = await self._on_worker(
                    outbox.lease_integration, integration_id, self.holder, self._lease()
                )
                if leased is None or not leased.events:
                    return
                for event in leased.events:
                    delivery = await self._deliver(leased.integration, event)
                    if delivery is None:
                        return  # the lease was lost: another node sends from here
                    recorded = await self._on_worker(
                        outbox.record_integration_delivery, self.holder, delivery
                    )
                    if not recorded:
                        return
        except FlagcoreError as error:  # the store is down: taken up again by `run`
            _log.warning("integration %d: delivery paused: %s", integration_id, error)
        except Exception:  # a fault of ours must not end the node's deliveries silently
            _log.exception("integration %d: delivery stopped by an error", integration_id)

    async def _deliver(self, integration: Integration, event: Event) -> IntegrationDelivery | None:
        """Attempts until one is answered, a final refusal, or the retry time is up;
        None when the lease is lost on the way."""
        loop = asyncio.get_running_loop()
        give_up_at = loop.time() + self._config.integration_retry_seconds
        backoff = _FIRST_BACKOFF_S
        attempts = 0
        while True:
            attempts += 1
            attempt = await send_once(integration, event, self._config)
            final = not attempt.retry
            wait = 0.0
            if not final:
                wait = attempt.retry_after or backoff * random.uniform(0.5, 1.5)
                backoff = min(backoff * 2, _MAX_BACKOFF_S)
                final = loop.time() + wait > give_up_at
            if final:
                return _delivery(integration, event, attempt, attempts)
            _log.info(
                "integration %d: event %d attempt %d: %s; again in %.1f s",
                integration.id,
                event.id,
                attempts,
                attempt.detail,
                wait,
            )
            renewed = await self._on_worker(
                self._service.integration_outbox.renew_integration_lease,
                integration.id,
                self.holder,
                self._lease(wait),
            )
            if not renewed:
                return None
            await asyncio.sleep(wait)

    async def stop(self) -> None:
        """Stop sending and give the leases up, so another node carries on at once (an
        event being sent is sent again there: the cursor had not moved past it)."""
        for task in self._tasks.values():
            task.cancel()
        for integration_id, task in list(self._tasks.items()):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            with contextlib.suppress(FlagcoreError):
                await self._on_worker(
                    self._service.integration_outbox.release_integration_lease,
                    integration_id,
                    self.holder,
                )
        self._tasks.clear()


def _delivery(
    integration: Integration, event: Event, attempt: Attempt, attempts: int
) -> IntegrationDelivery:
    return IntegrationDelivery(
        0,
        integration.id,
        event.id,
        event.type,
        "delivered" if attempt.delivered else "failed",
        attempts,
        attempt.status_code,
        attempt.detail,
    )


DELIVERY = web.AppKey("integration_sender", IntegrationSender)


async def integration_delivery(app: web.Application) -> AsyncIterator[None]:
    """A cleanup context: ``app[DELIVERY]`` runs while the app does (stopped before the
    store worker, whose calls it makes)."""
    sender = app[DELIVERY]
    task = asyncio.create_task(sender.run())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await sender.stop()
